//go:build conformance

package diagnostics

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"image/png"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/cobranca/cobranca/internal/auth"
	"github.com/cobranca/cobranca/internal/failure"
	"github.com/cobranca/cobranca/internal/pipeline"
	"github.com/cobranca/cobranca/internal/reqstate"
)

// newPipeline serves the diagnostic tools on a real pipeline with a real
// request-state key ring.
func newPipeline(t *testing.T) *pipeline.Pipeline {
	t.Helper()
	tools, err := Tools()
	if err != nil {
		t.Fatal(err)
	}
	ring, err := reqstate.NewRing(reqstate.Key{ID: "k1", Secret: []byte(strings.Repeat("s", 32))})
	if err != nil {
		t.Fatal(err)
	}
	p, err := pipeline.New(pipeline.Options{Tools: tools, States: ring})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

var (
	caller   = &auth.Principal{Subject: "conformance", Scopes: []string{Scope}}
	everyCap = pipeline.Client{Protocol: "2026-07-28", InputRequests: true, Elicitation: true, Sampling: true, Roots: true}
)

func call(tool string, client pipeline.Client, state string, responses map[string]string) pipeline.Call {
	c := pipeline.Call{Principal: caller, RequestID: "r1", Tool: tool, Args: json.RawMessage(`{}`), Client: client, State: state}
	if responses != nil {
		c.Responses = map[string]json.RawMessage{}
		for k, v := range responses {
			c.Responses[k] = json.RawMessage(v)
		}
	}
	return c
}

const (
	acceptName  = `{"action":"accept","content":{"name":"Alice"}}`
	acceptOK    = `{"action":"accept","content":{"ok":true}}`
	acceptColor = `{"action":"accept","content":{"color":"blue"}}`
	sampled     = `{"role":"assistant","content":{"type":"text","text":"Paris."},"model":"m","stopReason":"endTurn"}`
	roots       = `{"roots":[{"uri":"file:///test/root","name":"Test Root"}]}`
)

// asked checks that res asks for exactly the inputs want (id → method) and
// returns its state.
func asked(t *testing.T, res pipeline.Result, want map[string]string) string {
	t.Helper()
	if res.Kind != pipeline.InputRequired || res.State == "" {
		t.Fatalf("result %+v (err %v), want input required with a state", res, res.Err)
	}
	got := map[string]string{}
	for id, in := range res.Inputs {
		got[id] = in.Method
		if !json.Valid(in.Params) {
			t.Errorf("input %s: params %s are not JSON", id, in.Params)
		}
	}
	if !maps.Equal(got, want) {
		t.Fatalf("inputs %v, want %v", got, want)
	}
	return res.State
}

func completed(t *testing.T, res pipeline.Result, wantText string) {
	t.Helper()
	if res.Kind != pipeline.Complete || !strings.Contains(res.Summary, wantText) || res.Structured != nil {
		t.Fatalf("result %+v (err %v), want complete, text containing %q", res, res.Err, wantText)
	}
}

// TestRoundTrips: every tool asks what the suite expects, and completes on
// the retry that answers it under the state it was given.
func TestRoundTrips(t *testing.T) {
	p := newPipeline(t)
	ctx := context.Background()
	tests := []struct {
		tool    string
		inputs  map[string]string // id → method
		answers map[string]string
		text    string
	}{
		{"test_input_required_result_elicitation", map[string]string{"user_name": "elicitation/create"}, map[string]string{"user_name": acceptName}, "Hello, Alice!"},
		{"test_input_required_result_sampling", map[string]string{"capital_question": "sampling/createMessage"}, map[string]string{"capital_question": sampled}, "Paris."},
		{"test_input_required_result_list_roots", map[string]string{"client_roots": "roots/list"}, map[string]string{"client_roots": roots}, "1 root(s)"},
		{"test_input_required_result_request_state", map[string]string{"confirm": "elicitation/create"}, map[string]string{"confirm": acceptOK}, "state-ok"},
		{"test_input_required_result_tampered_state", map[string]string{"confirm": "elicitation/create"}, map[string]string{"confirm": acceptOK}, "state-ok"},
		{"test_input_required_result_multiple_inputs",
			map[string]string{"user_name": "elicitation/create", "greeting": "sampling/createMessage", "client_roots": "roots/list"},
			map[string]string{"user_name": acceptName, "greeting": sampled, "client_roots": roots}, "Paris. Alice (1 root(s) visible)"},
		{"test_input_required_result_capabilities",
			map[string]string{"user_name": "elicitation/create", "greeting": "sampling/createMessage", "client_roots": "roots/list"},
			map[string]string{"user_name": acceptName, "greeting": sampled, "client_roots": roots}, "were answered"},
		{"test_missing_capability", map[string]string{"completion": "sampling/createMessage"}, map[string]string{"completion": sampled}, "the tool ran"},
		{"test_streaming_elicitation", map[string]string{"confirm": "elicitation/create"}, map[string]string{"confirm": acceptOK}, "answered in the retry"},
		{PromptName, map[string]string{"user_context": "elicitation/create"}, map[string]string{"user_context": `{"action":"accept","content":{"context":"test context"}}`}, "Context: test context"},
	}
	for _, tt := range tests {
		t.Run(tt.tool, func(t *testing.T) {
			state := asked(t, p.Do(ctx, call(tt.tool, everyCap, "", nil)), tt.inputs)
			completed(t, p.Do(ctx, call(tt.tool, everyCap, state, tt.answers)), tt.text)
		})
	}
	t.Run("test_error_handling", func(t *testing.T) {
		if res := p.Do(ctx, call("test_error_handling", everyCap, "", nil)); res.Kind != pipeline.ToolError || res.Err.Code != IntentionalError {
			t.Errorf("result %+v (err %v), want the tool error %s", res, res.Err, IntentionalError)
		}
	})
	t.Run("test_tool_with_progress", func(t *testing.T) {
		var got []int64
		c := call("test_tool_with_progress", everyCap, "", nil)
		c.Progress = func(done, total int64, _ string) {
			if total != 100 {
				t.Errorf("progress %d of %d, want of 100", done, total)
			}
			got = append(got, done)
		}
		completed(t, p.Do(ctx, c), "Progress reported")
		if !slices.Equal(got, []int64{0, 50, 100}) {
			t.Errorf("progress reported %v, want [0 50 100]", got)
		}
	})
	t.Run("test_logging_tool", func(t *testing.T) {
		completed(t, p.Do(ctx, call("test_logging_tool", everyCap, "", nil)), "no log notifications")
	})
}

// TestMultiRound: the second round has a new state; its payload, sealed,
// says which round the retry answers, and the first round's state cannot
// stand for the second's.
func TestMultiRound(t *testing.T) {
	p := newPipeline(t)
	ctx := context.Background()
	const tool = "test_input_required_result_multi_round"
	s1 := asked(t, p.Do(ctx, call(tool, everyCap, "", nil)), map[string]string{"step1": "elicitation/create"})
	s2 := asked(t, p.Do(ctx, call(tool, everyCap, s1, map[string]string{"step1": acceptName})), map[string]string{"step2": "elicitation/create"})
	if s2 == s1 {
		t.Fatal("the second round reuses the first round's state")
	}
	// Round 1's state with round 2's answer is round 1 again: it asks step 2.
	asked(t, p.Do(ctx, call(tool, everyCap, s1, map[string]string{"step2": acceptColor})), map[string]string{"step2": "elicitation/create"})
	completed(t, p.Do(ctx, call(tool, everyCap, s2, map[string]string{"step2": acceptColor})), "favourite colour blue")
}

// TestStatesRefused: a state that does not verify — altered, another
// tool's, another caller's — is a protocol error and the tool does not run;
// answers with no state at all are never read: the tool asks afresh.
func TestStatesRefused(t *testing.T) {
	p := newPipeline(t)
	ctx := context.Background()
	const tool = "test_input_required_result_tampered_state"
	state := asked(t, p.Do(ctx, call(tool, everyCap, "", nil)), map[string]string{"confirm": "elicitation/create"})
	other := asked(t, p.Do(ctx, call("test_input_required_result_request_state", everyCap, "", nil)), map[string]string{"confirm": "elicitation/create"})
	answer := map[string]string{"confirm": acceptOK}
	stranger := call(tool, everyCap, state, answer)
	stranger.Principal = &auth.Principal{Subject: "someone-else", Scopes: []string{Scope}}
	otherArgs := call(tool, everyCap, state, answer)
	otherArgs.Args = json.RawMessage(`{"x":1}`)
	cases := map[string]pipeline.Call{
		"tampered (the suite's way)": call(tool, everyCap, state+"-TAMPERED", answer),
		"one character changed":      call(tool, everyCap, flip(state), answer),
		"another tool's state":       call(tool, everyCap, other, answer),
		"another caller":             stranger,
	}
	for name, c := range cases {
		res := p.Do(ctx, c)
		if res.Kind != pipeline.ProtocolError || res.Err == nil || res.Err.Code != failure.RequestStateInvalid {
			t.Errorf("%s: result %+v (err %v), want protocol error %s", name, res, res.Err, failure.RequestStateInvalid)
		}
	}
	asked(t, p.Do(ctx, call(tool, everyCap, "", answer)), map[string]string{"confirm": "elicitation/create"})
	// Arguments the tool refuses are refused before any state is looked at.
	if res := p.Do(ctx, otherArgs); res.Kind != pipeline.ToolError || res.Err.Code != failure.InvalidArguments {
		t.Errorf("other arguments: result %+v (err %v), want tool error invalid_arguments", res, res.Err)
	}
	completed(t, p.Do(ctx, call(tool, everyCap, state, answer)), "state-ok")
}

func flip(s string) string {
	b := []byte(s)
	i := len(b) / 2
	if b[i] == 'A' {
		b[i] = 'B'
	} else {
		b[i] = 'A'
	}
	return string(b)
}

// TestAnswersChecked: an answer that is not the result its request asks for
// is a tool error naming it; a missing or empty answer is asked again, under
// a new state; extra answers are ignored.
func TestAnswersChecked(t *testing.T) {
	p := newPipeline(t)
	ctx := context.Background()
	const tool = "test_input_required_result_elicitation"
	first := map[string]string{"user_name": "elicitation/create"}
	state := asked(t, p.Do(ctx, call(tool, everyCap, "", nil)), first)
	bad := map[string]string{
		"a number":       `12345`,
		"unknown action": `{"action":"maybe"}`,
		"name not text":  `{"action":"accept","content":{"name":7}}`,
		"no content":     `{"action":"accept"}`,
	}
	for name, answer := range bad {
		res := p.Do(ctx, call(tool, everyCap, state, map[string]string{"user_name": answer}))
		if res.Kind != pipeline.ToolError || res.Err.Code != InvalidInputResponse || res.Err.Field != "inputResponses.user_name" {
			t.Errorf("%s: result %+v (err %v), want tool error %s naming inputResponses.user_name", name, res, res.Err, InvalidInputResponse)
		}
	}
	for name, answers := range map[string]map[string]string{
		"wrong key": {"wrong_key": `{"action":"accept","content":{"data":"wrong"}}`},
		"declined":  {"user_name": `{"action":"decline"}`},
		"empty":     {"user_name": `{"action":"accept","content":{"name":""}}`},
	} {
		if again := asked(t, p.Do(ctx, call(tool, everyCap, state, answers)), first); again == state {
			t.Errorf("%s: asked again under the same state", name)
		}
	}
	extra := map[string]string{"user_name": acceptName, "unknown_extra_key": `{"action":"accept","content":{"foo":"bar"}}`, "another": `7`}
	completed(t, p.Do(ctx, call(tool, everyCap, state, extra)), "Hello, Alice!")
}

// TestCapabilities: a tool never asks for input the client did not declare
// it can give: test_missing_capability is refused with -32021's capability,
// test_input_required_result_capabilities asks only for what is declared.
func TestCapabilities(t *testing.T) {
	p := newPipeline(t)
	ctx := context.Background()
	none := pipeline.Client{Protocol: "2026-07-28", InputRequests: true}
	res := p.Do(ctx, call("test_missing_capability", none, "", nil))
	if res.Kind != pipeline.ProtocolError || res.Err.Code != failure.MissingClientCapability || !maps.Equal(mapKeys(res.RequiredCapabilities), map[string]bool{"sampling": true}) {
		t.Errorf("missing sampling: result %+v (err %v), want protocol error %s requiring sampling", res, res.Err, failure.MissingClientCapability)
	}
	for _, tt := range []struct {
		client pipeline.Client
		want   []string
	}{
		{pipeline.Client{Protocol: "2026-07-28", InputRequests: true, Sampling: true}, []string{"greeting"}},
		{pipeline.Client{Protocol: "2026-07-28", InputRequests: true, Elicitation: true, Roots: true}, []string{"client_roots", "user_name"}},
	} {
		res := p.Do(ctx, call("test_input_required_result_capabilities", tt.client, "", nil))
		if got := slices.Sorted(maps.Keys(res.Inputs)); res.Kind != pipeline.InputRequired || !slices.Equal(got, tt.want) {
			t.Errorf("client %+v: result kind %v inputs %v, want input required for %v", tt.client, res.Kind, got, tt.want)
		}
	}
	completed(t, p.Do(ctx, call("test_input_required_result_capabilities", none, "", nil)), "nothing to ask")
}

func mapKeys(m map[string]any) map[string]bool {
	out := map[string]bool{}
	for k := range m {
		out[k] = true
	}
	return out
}

// TestContracts: every diagnostic tool is low tier, read-only, behind Scope,
// named as the suite calls it; a caller without Scope is denied.
func TestContracts(t *testing.T) {
	p := newPipeline(t)
	for _, c := range p.Contracts() {
		if (!strings.HasPrefix(c.Name, "test_") && c.Name != JSONSchemaTool) || c.RiskLevel != "low" || c.HasSideEffects() || !slices.Equal(c.Permissions, []string{Scope}) {
			t.Errorf("contract %s: tier %s, permissions %v", c.Name, c.RiskLevel, c.Permissions)
		}
		res := p.Do(context.Background(), pipeline.Call{Principal: &auth.Principal{Subject: "s", Scopes: []string{"collections:read"}}, Tool: c.Name, Args: json.RawMessage(`{"phone":"1","arg1":"a","arg2":"b","resourceUri":"test://r"}`), Client: everyCap})
		if res.Kind != pipeline.Denied {
			t.Errorf("%s without %s: result kind %v, want denied", c.Name, Scope, res.Kind)
		}
	}
	if n := len(p.Contracts()); n != 25 {
		t.Errorf("%d diagnostic tools, want 25", n)
	}
}

// TestTextFixtures: the suite's text tools and prompts answer its texts,
// arguments substituted; test_simple_text also when called without
// arguments (MCP makes them optional; it requires none).
func TestTextFixtures(t *testing.T) {
	p := newPipeline(t)
	ctx := context.Background()
	c := call("test_simple_text", everyCap, "", nil)
	c.Args = nil
	completed(t, p.Do(ctx, c), "This is a simple text response for testing.")
	completed(t, p.Do(ctx, call("test_simple_prompt", everyCap, "", nil)), "This is a simple prompt for testing.")
	c = call("test_prompt_with_arguments", everyCap, "", nil)
	c.Args = json.RawMessage(`{"arg1":"testValue1","arg2":"testValue2"}`)
	completed(t, p.Do(ctx, c), "Prompt with arguments: arg1='testValue1', arg2='testValue2'")
	for _, args := range []string{``, `{"arg1":"a"}`, `{"arg1":"a","arg2":"b","arg3":"c"}`, `{"arg1":1,"arg2":"b"}`} {
		c.Args = json.RawMessage(args)
		if res := p.Do(ctx, c); res.Kind != pipeline.ToolError || res.Err.Code != failure.InvalidArguments {
			t.Errorf("test_prompt_with_arguments %s: %+v (err %v), want invalid_arguments", args, res, res.Err)
		}
	}
	if !slices.Equal(Prompts, []string{PromptName, "test_simple_prompt", "test_prompt_with_arguments", "test_prompt_with_image", "test_prompt_with_embedded_resource"}) {
		t.Errorf("prompts %v", Prompts)
	}
}

// TestJSONSchema2020: json_schema_2020_12_tool lists its input schema with
// every keyword the suite reads back ($schema, $defs with $anchor,
// additionalProperties false, allOf/anyOf, if/then/else), and the pipeline
// validates calls against it: $ref, the composition and the condition hold.
func TestJSONSchema2020(t *testing.T) {
	p := newPipeline(t)
	var schema map[string]any
	for _, c := range p.Contracts() {
		if c.Name != JSONSchemaTool {
			continue
		}
		b, err := json.Marshal(c.InputSchema)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, &schema); err != nil {
			t.Fatal(err)
		}
	}
	defs, _ := schema["$defs"].(map[string]any)
	address, _ := defs["address"].(map[string]any)
	allOf, _ := schema["allOf"].([]any)
	if schema["$schema"] != "https://json-schema.org/draft/2020-12/schema" || address["$anchor"] != "addressDef" ||
		schema["additionalProperties"] != false || len(allOf) != 1 || schema["if"] == nil || schema["then"] == nil || schema["else"] == nil {
		t.Fatalf("listed input schema %v lacks a keyword the suite reads back", schema)
	}
	ctx := context.Background()
	c := call(JSONSchemaTool, everyCap, "", nil)
	for args, want := range map[string]string{
		`{"name":"Ana","phone":"555","contactMethod":"phone"}`:                   "by phone",
		`{"email":"a@example.com","address":{"street":"Rua 1","city":"Lisboa"}}`: "by e-mail",
	} {
		c.Args = json.RawMessage(args)
		completed(t, p.Do(ctx, c), want)
	}
	for _, args := range []string{
		`{}`, // neither phone nor email (allOf/anyOf)
		`{"contactMethod":"phone","email":"a@example.com"}`, // then: phone required
		`{"phone":"555"}`, // else: email required
		`{"email":"a@example.com","address":{"city":1}}`, // $ref: city is a string
		`{"email":"a@example.com","fax":"1"}`,            // additionalProperties
	} {
		c.Args = json.RawMessage(args)
		if res := p.Do(ctx, c); res.Kind != pipeline.ToolError || res.Err.Code != failure.InvalidArguments {
			t.Errorf("%s %s: %+v (err %v), want invalid_arguments", JSONSchemaTool, args, res, res.Err)
		}
	}
}

// TestMediaFixtures: the content fixtures answer what the suite reads — a
// real PNG and WAV, embedded resources — through the pipeline.
func TestMediaFixtures(t *testing.T) {
	p := newPipeline(t)
	ctx := context.Background()
	do := func(tool, args string) pipeline.Result {
		c := call(tool, everyCap, "", nil)
		c.Args = json.RawMessage(args)
		res := p.Do(ctx, c)
		if res.Kind != pipeline.Complete {
			t.Fatalf("%s: %+v (err %v), want complete", tool, res, res.Err)
		}
		return res
	}
	img := do("test_image_content", `{}`)
	if len(img.Media) != 1 || img.Media[0].Kind != pipeline.Image || img.Media[0].MIMEType != "image/png" || img.Summary != "" {
		t.Fatalf("test_image_content: %+v", img)
	}
	if cfg, err := png.DecodeConfig(bytes.NewReader(img.Media[0].Data)); err != nil || cfg.Width != 1 || cfg.Height != 1 {
		t.Errorf("image: %+v, %v; want a 1×1 PNG", cfg, err)
	}
	audio := do("test_audio_content", `{}`)
	if len(audio.Media) != 1 || audio.Media[0].MIMEType != "audio/wav" || !bytes.HasPrefix(audio.Media[0].Data, []byte("RIFF")) ||
		string(audio.Media[0].Data[8:12]) != "WAVE" || int(binary.LittleEndian.Uint32(audio.Media[0].Data[4:8])) != len(audio.Media[0].Data)-8 {
		t.Errorf("test_audio_content: %+v, want one RIFF WAVE file whose size field holds", audio.Media)
	}
	if r := do("test_embedded_resource", `{}`); len(r.Media) != 1 || r.Media[0].Kind != pipeline.Resource || r.Media[0].URI == "" || r.Media[0].Text == "" {
		t.Errorf("test_embedded_resource: %+v", r.Media)
	}
	mixed := do("test_multiple_content_types", `{}`)
	if mixed.Summary == "" || len(mixed.Media) != 2 || mixed.Media[0].Kind != pipeline.Image || mixed.Media[1].Kind != pipeline.Resource {
		t.Errorf("test_multiple_content_types: %+v", mixed)
	}
	if r := do("test_prompt_with_embedded_resource", `{"resourceUri":"test://example-resource"}`); len(r.Media) != 1 || r.Media[0].URI != "test://example-resource" {
		t.Errorf("test_prompt_with_embedded_resource: %+v, want the resource its argument names", r.Media)
	}
	c := call("test_prompt_with_embedded_resource", everyCap, "", nil)
	if res := p.Do(ctx, c); res.Kind != pipeline.ToolError || res.Err.Code != failure.InvalidArguments {
		t.Errorf("test_prompt_with_embedded_resource without resourceUri: %+v, want invalid_arguments", res)
	}
}

// TestTemplateData: the template answers the id of its URI, one path
// segment, and nothing else.
func TestTemplateData(t *testing.T) {
	text, _, err := templateData("test://template/123/data")
	if err != nil || text != `{"data":"Data for ID: 123","id":"123","templateTest":true}` {
		t.Errorf("templateData = %s, %v", text, err)
	}
	for _, uri := range []string{"test://template//data", "test://template/1/2/data", "test://other/1/data", "test://template/1"} {
		if _, _, err := templateData(uri); err == nil {
			t.Errorf("templateData(%s) answered", uri)
		}
	}
	if n := len(Resources()); n != 3 {
		t.Errorf("%d resources, want 3", n)
	}
}
