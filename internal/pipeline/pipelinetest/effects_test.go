package pipelinetest_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/cobranca/cobranca/internal/auth"
	"github.com/cobranca/cobranca/internal/contract"
	"github.com/cobranca/cobranca/internal/contract/contracttest"
	"github.com/cobranca/cobranca/internal/failure"
	"github.com/cobranca/cobranca/internal/pipeline"
	"github.com/cobranca/cobranca/internal/pipeline/pipelinetest"
	"github.com/cobranca/cobranca/internal/store/storetest"
)

// TestEffectful: the test tool with side effects commits one row per call
// that runs, through the pipeline's transaction and idempotency keys: a
// repeat of a key replays and adds none, other arguments under it conflict.
func TestEffectful(t *testing.T) {
	db := storetest.SQLite(t)
	var ran int
	p := pipelinetest.Product(t, pipelinetest.WithStore(t, db, pipeline.Options{
		Tools: []pipeline.Tool{pipelinetest.Effectful(contracttest.New("test.writes", contract.Medium, "test:write"), func() { ran++ })}}))
	pr := &auth.Principal{Subject: "alice", Scopes: []string{"test:write"}}
	do := func(args string) pipeline.Result {
		return p.Do(context.Background(), pipeline.Call{Principal: pr, Tool: "test.writes", Args: json.RawMessage(args)})
	}
	for i, args := range []string{`{"idempotencyKey":"k1","n":1}`, `{"n":1,"idempotencyKey":"k1"}`} {
		if res := do(args); res.Kind != pipeline.Complete || string(res.Structured) != `{"ok":true}` {
			t.Fatalf("call %d with key k1: %+v, want complete", i+1, res)
		}
	}
	if res := do(`{"idempotencyKey":"k1","n":2}`); res.Kind != pipeline.ToolError || res.Err.Code != failure.IdempotencyConflict {
		t.Errorf("other arguments under k1: %+v, want idempotency_conflict", res)
	}
	if res := do(`{"idempotencyKey":"k2","n":2}`); res.Kind != pipeline.Complete {
		t.Errorf("call with key k2: %+v, want complete", res)
	}
	if n := pipelinetest.Effects(t, db, "test.writes"); n != 2 || ran != 2 {
		t.Errorf("%d effects committed, tool ran %d times; want 2 and 2 (k1 once, k2 once)", n, ran)
	}
}
