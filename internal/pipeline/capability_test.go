package pipeline_test

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"testing"

	"github.com/cobranca/cobranca/internal/auth"
	"github.com/cobranca/cobranca/internal/contract"
	"github.com/cobranca/cobranca/internal/failure"
	"github.com/cobranca/cobranca/internal/pipeline"
	"github.com/cobranca/cobranca/internal/pipeline/pipelinetest"
	"github.com/google/jsonschema-go/jsonschema"
)

// asker is a text-only read that asks the client for the inputs its
// arguments name, and reports on the retry what its client declared.
func asker(t *testing.T) pipeline.Tool {
	t.Helper()
	c, err := contract.Finish(contract.Contract{
		Name: "test.ask", Title: "Ask", Description: "Asks for the inputs named.", Category: "test",
		ContractVersion: "1.0.0",
		RiskLevel:       contract.Low,
		InputSchema: &jsonschema.Schema{Type: "object", Properties: map[string]*jsonschema.Schema{
			"methods": {Type: "array", Items: &jsonschema.Schema{Type: "string"}},
		}},
		OutputSchema: &jsonschema.Schema{},
		Permissions:  []string{"test:run"},
		SideEffects:  contract.SideEffects{OnRepeat: "asks again"},
		AuditEvent:   "test.asked",
		FailureModes: []contract.FailureMode{{Code: failure.InvalidArguments, Meaning: "m"}},
		Idempotency:  contract.Idempotency{Kind: "inherent"},
		DryRun:       contract.ModeNone,
	})
	if err != nil {
		t.Fatal(err)
	}
	type args struct {
		Methods []string `json:"methods"`
	}
	return pipeline.Tool{Contract: c, Decode: pipeline.Strict[args](), Run: func(ctx context.Context, a any) (pipeline.Effect, error) {
		if _, _, retry := pipeline.InputsFrom(ctx); retry {
			client, _ := pipeline.ClientFrom(ctx)
			return pipeline.Effect{Text: fmt.Sprintf("client %+v", client)}, nil
		}
		in := map[string]pipeline.Input{}
		for i, m := range a.(*args).Methods {
			in[fmt.Sprint(i)] = pipeline.Input{Method: m, Params: json.RawMessage(`{}`)}
		}
		return pipeline.Effect{}, &pipeline.NeedInput{Inputs: in}
	}}
}

// TestInputNeedsDeclaredCapability: a tool's input requests reach only a
// client that declared the capability each needs; otherwise the call is
// the protocol error missing_client_capability naming exactly the
// capabilities missing, and nothing is asked. A method no capability
// covers is the tool's fault. The tool reads the client's declaration with
// ClientFrom, and a text-only tool completes with its text alone.
func TestInputNeedsDeclaredCapability(t *testing.T) {
	p := pipelinetest.Product(t, pipeline.Options{Tools: []pipeline.Tool{asker(t)}})
	ctx := context.Background()
	pr := &auth.Principal{Subject: "s", Scopes: []string{"test:run"}}
	do := func(client pipeline.Client, args, state string, responses map[string]json.RawMessage) pipeline.Result {
		return p.Do(ctx, pipeline.Call{Principal: pr, RequestID: "r", Tool: "test.ask", Args: json.RawMessage(args), Client: client, State: state, Responses: responses})
	}
	all := `{"methods":["elicitation/create","sampling/createMessage","roots/list"]}`
	tests := []struct {
		client pipeline.Client
		want   []string // the capabilities reported missing
	}{
		{pipeline.Client{InputRequests: true}, []string{"elicitation", "roots", "sampling"}},
		{pipeline.Client{InputRequests: true, Elicitation: true, Roots: true}, []string{"sampling"}},
		{pipeline.Client{InputRequests: true, Sampling: true}, []string{"elicitation", "roots"}},
	}
	for _, tt := range tests {
		res := do(tt.client, all, "", nil)
		if got := slices.Sorted(maps.Keys(res.RequiredCapabilities)); res.Kind != pipeline.ProtocolError || res.Err.Code != failure.MissingClientCapability || !slices.Equal(got, tt.want) || len(res.Inputs) > 0 {
			t.Errorf("client %+v: result kind %v err %v requires %v, want protocol error %s requiring %v", tt.client, res.Kind, res.Err, got, failure.MissingClientCapability, tt.want)
		}
	}
	every := pipeline.Client{Protocol: "2026-07-28", InputRequests: true, Elicitation: true, Sampling: true, Roots: true}
	if res := do(every, `{"methods":["tasks/result"]}`, "", nil); res.Kind != pipeline.ToolError || res.Err.Code != failure.Internal {
		t.Errorf("a method no capability covers: result kind %v err %v, want tool error %s", res.Kind, res.Err, failure.Internal)
	}
	res := do(every, all, "", nil)
	if res.Kind != pipeline.InputRequired || len(res.Inputs) != 3 || res.State == "" {
		t.Fatalf("every capability declared: result kind %v err %v inputs %v, want input required for all three", res.Kind, res.Err, res.Inputs)
	}
	res = do(every, all, res.State, map[string]json.RawMessage{"0": json.RawMessage(`{"action":"cancel"}`)})
	if want := fmt.Sprintf("client %+v", every); res.Kind != pipeline.Complete || res.Summary != want || res.Structured != nil {
		t.Errorf("retry: result kind %v err %v summary %q structured %s, want complete %q with no structured result", res.Kind, res.Err, res.Summary, res.Structured, want)
	}
}
