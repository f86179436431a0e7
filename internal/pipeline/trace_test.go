package pipeline_test

import (
	"context"
	"encoding/json"
	"slices"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/cobranca/cobranca/internal/auth"
	"github.com/cobranca/cobranca/internal/pipeline"
	"github.com/cobranca/cobranca/internal/store/storetest"
)

// TestStepSpans: a call made under a recording span gets one span per step
// it reaches, in order, each a child of that span, the step that refused
// marked with its code, the store's transaction under the step that ran it;
// a call made under no span gets none.
func TestStepSpans(t *testing.T) {
	e := newEnv(t, storetest.SQLite(t), envOpts{})
	rec := tracetest.NewSpanRecorder()
	tracer := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec)).Tracer("test")
	noScope := &auth.Principal{Subject: "ana", ClientID: "bot", Kind: auth.KindAgent, Scopes: []string{"test:low"}}
	type step struct{ name, code string }
	for _, tc := range []struct {
		name       string
		who        *auth.Principal
		tool       string
		args       string
		want       []step
		storeUnder string
	}{
		{"read", agent, "test.low", `{"customer":"c1"}`,
			[]step{{"pipeline.authorize", ""}, {"pipeline.validate", ""}, {"pipeline.run", ""}, {"pipeline.audit", ""}}, ""},
		{"write", agent, "test.medium", `{"customer":"c1","idempotencyKey":"k1"}`,
			[]step{{"pipeline.authorize", ""}, {"pipeline.validate", ""}, {"pipeline.execute", ""}}, "pipeline.execute"},
		{"unknown tool", agent, "test.nope", `{}`, []step{{"pipeline.authorize", "unknown_tool"}}, ""},
		{"forbidden tool", agent, "test.forbidden", `{}`, []step{{"pipeline.authorize", "unknown_tool"}, {"pipeline.audit", ""}}, ""},
		{"no scope", noScope, "test.medium", `{"customer":"c1","idempotencyKey":"k2"}`,
			[]step{{"pipeline.authorize", "insufficient_scope"}, {"pipeline.audit", ""}}, ""},
		{"invalid", agent, "test.medium", `{"customer":7,"idempotencyKey":"k3"}`,
			[]step{{"pipeline.authorize", ""}, {"pipeline.validate", "invalid_arguments"}, {"pipeline.audit", ""}}, ""},
		{"confirmation", agent, "test.high", `{"customer":"c1","idempotencyKey":"k4"}`,
			[]step{{"pipeline.authorize", ""}, {"pipeline.validate", ""}, {"pipeline.idempotency", ""}, {"pipeline.confirmation", ""}, {"pipeline.audit", ""}}, "pipeline.idempotency"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec.Reset()
			ctx, root := tracer.Start(context.Background(), "POST /mcp")
			e.p.Do(ctx, pipeline.Call{Principal: tc.who, RequestID: "r-" + tc.name, Tool: tc.tool, Args: json.RawMessage(tc.args), Client: modern})
			root.End()
			var got []step
			ids := map[string]string{}
			var storeParent string
			for _, s := range rec.Ended() {
				attrs := map[attribute.Key]string{}
				for _, kv := range s.Attributes() {
					attrs[kv.Key] = kv.Value.String()
				}
				switch {
				case s.Parent().SpanID() == root.SpanContext().SpanID():
					got = append(got, step{s.Name(), attrs["cobranca.code"]})
					ids[s.SpanContext().SpanID().String()] = s.Name()
					if attrs["cobranca.request_id"] != "r-"+tc.name || attrs["cobranca.step"] != s.Name() {
						t.Errorf("%s: attributes %v", s.Name(), attrs)
					}
					if tc.tool != "test.nope" && s.Name() != "pipeline.authorize" && attrs["cobranca.tool"] != tc.tool {
						t.Errorf("%s: tool %q, want %s", s.Name(), attrs["cobranca.tool"], tc.tool)
					}
					if tc.tool == "test.nope" && attrs["cobranca.tool"] != "" {
						t.Errorf("%s: tool %q: a name the caller made up", s.Name(), attrs["cobranca.tool"])
					}
				case s.Name() == "store.tx":
					storeParent = s.Parent().SpanID().String()
				}
			}
			// Spans end in order; a step ends when the next one starts.
			if !slices.Equal(got, tc.want) {
				t.Errorf("steps %v, want %v", got, tc.want)
			}
			if tc.storeUnder != "" && ids[storeParent] != tc.storeUnder {
				t.Errorf("store.tx under %q, want under %s", ids[storeParent], tc.storeUnder)
			}
		})
	}
	rec.Reset()
	e.p.Do(context.Background(), pipeline.Call{Principal: agent, RequestID: "r", Tool: "test.medium", Args: json.RawMessage(`{"customer":"c1","idempotencyKey":"k9"}`), Client: modern})
	if n := len(rec.Ended()); n != 0 {
		t.Errorf("a call under no span: %d spans, want none", n)
	}
}
