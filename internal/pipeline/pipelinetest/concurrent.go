package pipelinetest

import (
	"sync"
	"testing"

	"github.com/cobranca/cobranca/internal/failure"
	"github.com/cobranca/cobranca/internal/pipeline"
)

// Race makes n calls at once and checks what concurrent duplicates of one idempotency key may
// answer: every complete answer the same, every other one request_in_progress with a time to
// retry. It returns the one answer (nil when none completed) and how many were in progress.
func Race(t testing.TB, n int, call func() pipeline.Result) (answer []byte, inProgress int) {
	t.Helper()
	results := make([]pipeline.Result, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { results[i] = call() })
	}
	wg.Wait()
	for _, r := range results {
		switch {
		case r.Kind == pipeline.Complete:
			if answer == nil {
				answer = r.Structured
			} else if string(r.Structured) != string(answer) {
				t.Errorf("answers differ: %s and %s", r.Structured, answer)
			}
		case r.Kind == pipeline.ToolError && r.Err.Code == failure.RequestInProgress && r.Err.RetryAfter > 0:
			inProgress++
		default:
			t.Errorf("answer of kind %d: %+v; want complete, or request_in_progress", r.Kind, r.Err)
		}
	}
	t.Logf("%d complete, %d request_in_progress", n-inProgress, inProgress)
	return answer, inProgress
}
