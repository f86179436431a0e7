package pipelinetest_test

import (
	"context"
	"encoding/json"
	"strings"
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

// TestEffectfulConfirmedAndDryRun: on the high tier the test tool is
// confirmed with EffectPreview, and with a dry run offered (WithDryRun) one
// changes nothing.
func TestEffectfulConfirmedAndDryRun(t *testing.T) {
	db := storetest.SQLite(t)
	high := contracttest.New("test.confirmed", contract.High, "test:write")
	medium := contracttest.WithDryRun(contracttest.New("test.dry", contract.Medium, "test:write"))
	p := pipelinetest.Product(t, pipelinetest.WithStore(t, db, pipeline.Options{
		Tools: []pipeline.Tool{pipelinetest.Effectful(high, nil), pipelinetest.Effectful(medium, nil)}}))
	agent := &auth.Principal{Subject: "alice", Actor: "bot", Kind: auth.KindAgent, Scopes: []string{"test:write"}}
	res := p.Do(context.Background(), pipeline.Call{Principal: agent, Tool: high.Name, Args: json.RawMessage(`{"idempotencyKey":"k1"}`),
		Client: pipeline.Client{Protocol: "2025-11-25"}})
	if res.Kind != pipeline.ToolError || res.Err.Code != failure.ConfirmationRequired || !strings.Contains(res.Err.Message, pipelinetest.EffectPreview(high)) {
		t.Errorf("high-tier call by an agent on 2025-11-25: %+v, want confirmation_required with the preview %q", res, pipelinetest.EffectPreview(high))
	}
	res = p.Do(context.Background(), pipeline.Call{Principal: agent, Tool: medium.Name, Args: json.RawMessage(`{"idempotencyKey":"k1","dryRun":true}`)})
	if res.Kind != pipeline.Complete || string(res.Structured) != `{"dryRun":true,"ok":true}` {
		t.Errorf("dry run: %+v, want complete {\"dryRun\":true,\"ok\":true}", res)
	}
	for _, c := range []*contract.Contract{high, medium} {
		if n := pipelinetest.Effects(t, db, c.Name); n != 0 {
			t.Errorf("%s: %d effects, want none", c.Name, n)
		}
	}
}
