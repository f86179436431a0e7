package pipeline_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/cobranca/cobranca/internal/auth"
	"github.com/cobranca/cobranca/internal/contract"
	"github.com/cobranca/cobranca/internal/failure"
	"github.com/cobranca/cobranca/internal/pipeline"
	"github.com/google/jsonschema-go/jsonschema"
)

// TestSchemaFault: arguments the input schema refuses are answered with the
// JSON path of the member or item at fault and what it must be, said from
// the schema; never with the value (a payload) or jsonschema-go's own text.
func TestSchemaFault(t *testing.T) {
	one, three, ten := 1, 3, 10
	lo, hi := 1.0, 100.0
	paused := any("paused")
	closed := func() *jsonschema.Schema { return &jsonschema.Schema{Not: &jsonschema.Schema{}} }
	c := tierContract("test.schema", contract.Low)
	c.InputSchema = &jsonschema.Schema{
		Type: "object", AdditionalProperties: closed(), Required: []string{"customer", "items", "status"},
		Properties: map[string]*jsonschema.Schema{
			"customer": {Type: "object", AdditionalProperties: closed(), Required: []string{"name"}, Properties: map[string]*jsonschema.Schema{
				"name": {Type: "string", MinLength: &one, MaxLength: &ten, Pattern: `^[^\x00-\x1f\x{202e}]*$`},
			}},
			"items": {Type: "array", MinItems: &one, MaxItems: &three, Items: &jsonschema.Schema{
				Type: "object", AdditionalProperties: closed(), Required: []string{"amount"}, Properties: map[string]*jsonschema.Schema{
					"amount": {Type: "integer", Minimum: &lo, Maximum: &hi},
					"due":    {Type: "string", Format: "date", Pattern: `^\d{4}-\d{2}-\d{2}$`},
				},
			}},
			"status": {Type: "string", Enum: []any{"open", "paused"}},
			"until":  {Type: "string"},
		},
		If:   &jsonschema.Schema{Properties: map[string]*jsonschema.Schema{"status": {Const: &paused}}, Required: []string{"status"}},
		Then: &jsonschema.Schema{Required: []string{"until"}},
		Else: &jsonschema.Schema{Not: &jsonschema.Schema{Required: []string{"until"}}},
	}
	tool := pipeline.Tool{Contract: c, Decode: pipeline.Strict[map[string]any](),
		Run: func(context.Context, any) (pipeline.Effect, error) {
			return pipeline.Effect{Structured: map[string]any{"ok": true, "customer": "x"}}, nil
		}}
	// Exactly one of two members (draftIds or filter): required members with no const value.
	either := tierContract("test.either", contract.Low)
	either.InputSchema = &jsonschema.Schema{
		Type: "object", AdditionalProperties: closed(),
		Properties: map[string]*jsonschema.Schema{"draftIds": {Type: "array"}, "filter": {Type: "object"}},
		If:         &jsonschema.Schema{Required: []string{"draftIds"}},
		Then:       &jsonschema.Schema{Not: &jsonschema.Schema{Required: []string{"filter"}}},
		Else:       &jsonschema.Schema{Required: []string{"filter"}},
	}
	eitherTool := tool
	eitherTool.Contract = either
	p, err := pipeline.New(pipeline.Options{Tools: []pipeline.Tool{tool, eitherTool}})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ args, field, message string }{
		{`{}`, "filter", "is required when draftIds is not given"},
		{`{"draftIds":[],"filter":{}}`, "filter", "is allowed only when draftIds is not given"},
	} {
		res := p.Do(context.Background(), pipeline.Call{Principal: &auth.Principal{Subject: "a", Scopes: allScopes()}, Tool: either.Name, Args: json.RawMessage(tc.args)})
		if res.Kind != pipeline.ToolError || res.Err.Field != tc.field || res.Err.Message != tc.message {
			t.Errorf("%s: %s %+v, want invalid_arguments on %s: %s", tc.args, kindName(res.Kind), res.Err, tc.field, tc.message)
		}
	}
	const secret = "SECRET"
	good := `"customer":{"name":"Ana"},"items":[{"amount":5}],"status":"open"`
	// Whole numbers are integers however they are written (JSON Schema
	// says so; the tool reads the canonical form).
	for _, args := range []string{`{` + good + `}`, `{"customer":{"name":"Ana"},"items":[{"amount":100.0}],"status":"open"}`,
		`{"customer":{"name":"Ana"},"items":[{"amount":1e2}],"status":"open"}`} {
		res := p.Do(context.Background(), pipeline.Call{Principal: &auth.Principal{Subject: "a", Scopes: allScopes()}, Tool: c.Name, Args: json.RawMessage(args)})
		if res.Kind != pipeline.Complete {
			t.Errorf("%s: %s %+v, want complete", args, kindName(res.Kind), res.Err)
		}
	}
	for _, tc := range []struct{ args, field, message string }{
		{`[]`, "arguments", "must be an object"},
		{`{"items":[{"amount":5}],"status":"open"}`, "customer", "is required"},
		{`{` + good + `,"SECRET":1}`, "SECRET", "is not an argument of this tool"},
		{`{"customer":{"name":"Ana","SECRET":1},"items":[{"amount":5}],"status":"open"}`, "customer.SECRET", "is not a member of customer"},
		{`{"customer":{"name":"SECRET-SECRET"},"items":[{"amount":5}],"status":"open"}`, "customer.name", "must be 1 to 10 characters long"},
		{`{"customer":{"name":"SE\u202eCRET"},"items":[{"amount":5}],"status":"open"}`, "customer.name", "must match the pattern"},
		{`{"customer":{"name":7},"items":[{"amount":5}],"status":"open"}`, "customer.name", "must be a string"},
		{`{"customer":{"name":"Ana"},"items":[],"status":"open"}`, "items", "must hold 1 to 3 items"},
		{`{"customer":{"name":"Ana"},"items":[{"amount":5},{"amount":101}],"status":"open"}`, "items[1].amount", "must be between 1 and 100"},
		{`{"customer":{"name":"Ana"},"items":[{"amount":5.5}],"status":"open"}`, "items[0].amount", "must be an integer"},
		{`{"customer":{"name":"Ana"},"items":[{"amount":5,"due":"SECRET"}],"status":"open"}`, "items[0].due", "must be a calendar date written YYYY-MM-DD"},
		{`{"customer":{"name":"Ana"},"items":[{}],"status":"open"}`, "items[0].amount", "is required"},
		{`{"customer":{"name":"Ana"},"items":[{"amount":5}],"status":"SECRET"}`, "status", `must be one of "open", "paused"`},
		{`{"customer":{"name":"Ana"},"items":[{"amount":5}],"status":"paused"}`, "until", `is required when status is "paused"`},
		{`{"customer":{"name":"Ana"},"items":[{"amount":1e400}],"status":"open"}`, "arguments", "must be one JSON object"},
		{`{` + good + `,"until":"SECRET"}`, "until", `is allowed only when status is "paused"`},
	} {
		res := p.Do(context.Background(), pipeline.Call{Principal: &auth.Principal{Subject: "a", Scopes: allScopes()}, Tool: c.Name, Args: json.RawMessage(tc.args)})
		if res.Kind != pipeline.ToolError || res.Err.Code != failure.InvalidArguments || res.Err.Field != tc.field || !strings.HasPrefix(res.Err.Message, tc.message) {
			t.Errorf("%s: %s %+v, want invalid_arguments on %s: %s", tc.args, kindName(res.Kind), res.Err, tc.field, tc.message)
			continue
		}
		if strings.Contains(res.Err.Message, secret) || strings.Contains(res.Err.Message, "validating") {
			t.Errorf("%s: message %q repeats the value or the validator's text", tc.args, res.Err.Message)
		}
	}
}
