package ticker

import (
	"context"
	"slices"
	"testing"
	"testing/synctest"
	"time"
)

// TestRun: fn runs on every tick, not before the first, and Run returns once ctx ends and
// calls fn no more. In a synctest bubble the clock moves only when every goroutine waits, so
// the counts are exact and the test takes no real time.
func TestRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		var calls []time.Duration
		start := time.Now()
		done := make(chan struct{})
		go func() {
			Run(ctx, 10*time.Millisecond, func(context.Context) { calls = append(calls, time.Since(start)) })
			close(done)
		}()
		time.Sleep(35 * time.Millisecond)
		synctest.Wait()
		want := []time.Duration{10 * time.Millisecond, 20 * time.Millisecond, 30 * time.Millisecond}
		if !slices.Equal(calls, want) {
			t.Fatalf("after 35ms fn ran at %v, want %v", calls, want)
		}
		cancel()
		synctest.Wait()
		select {
		case <-done:
		default:
			t.Fatal("Run did not return once its context ended")
		}
		time.Sleep(time.Second)
		synctest.Wait()
		if len(calls) != len(want) {
			t.Errorf("fn ran %d times after Run returned", len(calls)-len(want))
		}
	})
}
