package pipeline_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/cobranca/cobranca/internal/auth"
	"github.com/cobranca/cobranca/internal/contract"
	"github.com/cobranca/cobranca/internal/contract/contracttest"
	"github.com/cobranca/cobranca/internal/pipeline"
	"github.com/cobranca/cobranca/internal/pipeline/pipelinetest"
	"github.com/cobranca/cobranca/internal/store/storetest"
)

// TestReportProgress: a tool's reports reach the call's Progress, in order, from inside its
// transaction; a call without one (the client sent no progress token) runs the same, told
// nothing.
func TestReportProgress(t *testing.T) {
	db := storetest.SQLite(t)
	c := contracttest.New("test.progress", contract.Medium, "test:write")
	p := pipelinetest.Product(t, pipelinetest.WithStore(t, db, pipeline.Options{Tools: []pipeline.Tool{pipelinetest.Progressing(c, 3, nil)}}))
	pr := &auth.Principal{Subject: "ana", Scopes: []string{"test:write"}}
	var got []string
	for i, progress := range []func(done, total int64, message string){
		func(done, total int64, message string) {
			got = append(got, fmt.Sprintf("%d/%d %s", done, total, message))
		},
		nil,
	} {
		res := p.Do(context.Background(), pipeline.Call{Principal: pr, Tool: c.Name, Args: json.RawMessage(fmt.Sprintf(`{"idempotencyKey":"k%d"}`, i)), Progress: progress})
		if res.Kind != pipeline.Complete {
			t.Fatalf("call %d: %v %+v", i, res.Kind, res.Err)
		}
	}
	want := []string{"1/3 step 1 of 3", "2/3 step 2 of 3", "3/3 step 3 of 3"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("reports %q, want %q", got, want)
	}
	if n := pipelinetest.Effects(t, db, c.Name); n != 2 {
		t.Errorf("%d effects, want 2", n)
	}
	pipeline.ReportProgress(context.Background(), 1, 1, "outside any call") // does nothing, and does not panic
}
