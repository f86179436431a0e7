//go:build conformance

// Package diagnostics holds the tools the official MCP conformance suite
// (@modelcontextprotocol/conformance, the 2026-07-28 scenarios
// server-stateless and input-required-result-*) calls by its own names. They
// are real tools of the real pipeline: each has a contract (low tier, the
// scope Scope, its failure modes), asks the client for input with the
// pipeline's NeedInput, and reads the answers only after the pipeline has
// verified the round's sealed request state (internal/reqstate): a forged,
// tampered, replayed or other caller's state never reaches them.
//
// Every file of the package is built only with -tags conformance, so a
// production build has none of it (cmd/cobranca's tests prove it).
package diagnostics

import (
	"context"
	"errors"

	"github.com/cobranca/cobranca/internal/contract"
	"github.com/cobranca/cobranca/internal/failure"
	"github.com/cobranca/cobranca/internal/pipeline"
	"github.com/google/jsonschema-go/jsonschema"
)

// Scope is the permission every diagnostic tool requires.
const Scope = "conformance:diagnose"

// PromptName is the diagnostic tool also served as a prompt (mcpapi's
// Options.Prompts): the suite asks prompts/get of it.
const PromptName = "test_input_required_result_prompt"

// Prompts are the diagnostic tools also served as prompts (mcpapi's
// Options.Prompts), by the names the suite's prompts/get scenarios use.
var Prompts = []string{PromptName, "test_simple_prompt", "test_prompt_with_arguments", "test_prompt_with_image", "test_prompt_with_embedded_resource"}

// IntentionalError is the failure of test_error_handling, every call.
const IntentionalError failure.Code = "intentional_error"

// InvalidInputResponse is the failure of a retry whose answer to one of the
// tool's input requests is not the result that request asks for.
const InvalidInputResponse failure.Code = "invalid_input_response"

// spec is one diagnostic tool: its name, what it is for, and its logic.
// Most take no arguments (run); one with an input schema reads them
// (decode, then runArgs).
type spec struct {
	name, title, description string
	run                      func(ctx context.Context) (pipeline.Effect, error)
	input                    *jsonschema.Schema
	decode                   pipeline.Decoder
	runArgs                  func(ctx context.Context, args any) (pipeline.Effect, error)
}

// specs lists the diagnostic tools, in listing order, their logic bound to
// the input requests they ask.
func specs(in *inputs) []spec {
	return []spec{
		plain("test_input_required_result_elicitation", "Ask a name (elicitation)",
			"Asks the caller's name with one form elicitation (input-required result), then greets the name answered.", in.elicitation),
		plain("test_input_required_result_sampling", "Ask a completion (sampling)",
			"Asks the client for one LLM completion (sampling/createMessage) in an input-required result, then answers with the completion's text.", in.sampling),
		plain("test_input_required_result_list_roots", "Ask the roots (roots/list)",
			"Asks the client for its roots (roots/list) in an input-required result, then says how many it listed.", in.listRoots),
		plain("test_input_required_result_request_state", "Round-trip a request state",
			"Asks for a confirmation with a sealed request state; the retry runs only if the state verifies, and answers state-ok.", in.confirm),
		plain("test_input_required_result_multiple_inputs", "Ask three inputs at once",
			"Asks for an elicitation, a sampling completion and the roots in one input-required result, and completes when all three are answered.", in.multipleInputs),
		plain("test_input_required_result_multi_round", "Ask in two rounds",
			"Asks a name, then (under a new sealed request state) a colour, then completes: three calls, two input-required rounds.", in.multiRound),
		plain("test_input_required_result_tampered_state", "Refuse a tampered request state",
			"Asks for a confirmation with a sealed request state; a retry whose state was altered is refused by the pipeline (JSON-RPC -32602) and never runs.", in.confirm),
		plain("test_input_required_result_capabilities", "Ask only what the client can answer",
			"Asks only for the inputs the client's declared capabilities cover (elicitation, sampling, roots), and completes at once when it declared none.", in.capabilities),
		plain("test_missing_capability", "Require the sampling capability",
			"Asks the client for a sampling completion; a client that did not declare sampling gets MissingRequiredClientCapabilityError (-32021) and nothing runs.", in.missingCapability),
		plain("test_streaming_elicitation", "Ask in the result, never on the stream",
			"Asks for an elicitation inside its input-required result: the response carries no server-to-client request.", in.streamingElicitation),
		plain(PromptName, "Ask the prompt's context",
			"Asks, with one form elicitation, the context a prompt should use, then answers it; served as a prompt too (prompts/get), to show input-required results beyond tools/call.", in.promptContext),
		plain("test_logging_tool", "Send no log notification",
			"Answers at once; the server sends MCP log notifications to no one, so the response carries none.", logging),
		plain("test_error_handling", "Fail, always", "Fails every call: a tool error (isError) whose text says so.", failing),
		{name: "test_tool_with_progress", title: "Report progress", description: "Reports progress 0, 50 and 100 of 100 to a caller that asked for it, then answers.", run: progress},
		{name: "test_simple_text", title: "Answer a text", description: "Answers one fixed text; takes no arguments (they may be omitted).", run: simpleText},
		{name: "test_simple_prompt", title: "A simple prompt", description: "Answers one fixed text; served as a prompt too.", run: simplePrompt},
		{name: "test_prompt_with_arguments", title: "A prompt with arguments", description: "Answers a text naming its two arguments; served as a prompt too.",
			input: promptArgsSchema(), decode: pipeline.Strict[promptArgs](), runArgs: promptWithArguments},
		{name: "test_image_content", title: "Answer an image", description: "Answers a 1×1 red PNG image.", run: imageContent},
		{name: "test_audio_content", title: "Answer audio", description: "Answers 10 ms of silence as audio/wav.", run: audioContent},
		{name: "test_embedded_resource", title: "Answer an embedded resource", description: "Answers one embedded text resource.", run: embeddedResource},
		{name: "test_multiple_content_types", title: "Answer mixed content", description: "Answers a text, an image and an embedded resource.", run: multipleContent},
		{name: "test_prompt_with_image", title: "A prompt with an image", description: "Answers an image and a text asking to analyse it; served as a prompt too.", run: promptWithImage},
		{name: "test_prompt_with_embedded_resource", title: "A prompt with an embedded resource", description: "Answers the resource its argument names, embedded, and a text asking to process it; served as a prompt too.",
			input: resourceArgsSchema(), decode: pipeline.Strict[resourceArgs](), runArgs: promptWithResource},
		{name: HeaderTool, title: "An argument mirrored in a header", description: "Echoes its region, an argument marked x-mcp-header: the client sends it in an Mcp-Param-Region header too, and the transport refuses a call whose header is missing or differs (SEP-2243).",
			input: headerArgsSchema(), decode: pipeline.Strict[headerArgs](), runArgs: echoRegion},
		{name: JSONSchemaTool, title: "A JSON Schema 2020-12 input", description: "Takes arguments described with JSON Schema 2020-12 keywords ($defs, $ref, $anchor, allOf/anyOf, if/then/else) and says which contact method they name.",
			input: jsonSchema2020(), decode: pipeline.Strict[contactArgs](), runArgs: contact},
	}
}

// plain is a spec of a tool that takes no arguments.
func plain(name, title, description string, run func(ctx context.Context) (pipeline.Effect, error)) spec {
	return spec{name: name, title: title, description: description, run: run}
}

// noArgs are the arguments of every diagnostic tool: none.
type noArgs struct{}

// Tools returns the diagnostic tools, in listing order.
func Tools() ([]pipeline.Tool, error) {
	in, err := newInputs()
	if err != nil {
		return nil, err
	}
	var tools []pipeline.Tool
	var errs []error
	for _, s := range specs(in) {
		input := s.input
		if input == nil {
			input = &jsonschema.Schema{Type: "object", Properties: map[string]*jsonschema.Schema{}, AdditionalProperties: &jsonschema.Schema{Not: &jsonschema.Schema{}}}
		}
		c, err := contract.Finish(contract.Contract{
			Name:            s.name,
			ContractVersion: "1.0.0",
			Title:           s.title,
			Description:     s.description + " A conformance diagnostic; absent from production builds.",
			Category:        contract.CategoryDiagnostic,
			RiskLevel:       contract.Low,
			InputSchema:     input,
			// Text only: the answer is text content (and media), no structured result.
			OutputSchema: &jsonschema.Schema{},
			Permissions:  []string{Scope},
			SideEffects:  contract.SideEffects{OnRepeat: "Asks again, or answers again; nothing is changed."},
			AuditEvent:   "diagnostics." + s.name,
			FailureModes: failureModes,
			Idempotency:  contract.Idempotency{Kind: "inherent", Description: "Reads nothing and changes nothing."},
			DryRun:       contract.ModeNone,
		})
		if err != nil {
			errs = append(errs, err)
			continue
		}
		t := pipeline.Tool{Contract: c, Decode: s.decode, Run: s.runArgs}
		if s.input == nil {
			run := s.run
			t.Decode = pipeline.Strict[noArgs]()
			t.Run = func(ctx context.Context, _ any) (pipeline.Effect, error) { return run(ctx) }
		}
		tools = append(tools, t)
	}
	return tools, errors.Join(errs...)
}

var failureModes = []contract.FailureMode{
	{Code: failure.InvalidArguments, Meaning: "An argument the tool does not take, or one its input schema refuses; field names it."},
	{Code: IntentionalError, Meaning: "test_error_handling fails every call, by design; nothing was done."},
	{Code: InvalidInputResponse, Meaning: "An answer in inputResponses is not the result its input request asks for (field names it); nothing was done."},
	{Code: failure.RequestStateInvalid, Meaning: "The retry's requestState is forged, altered, expired, already used, or another call's (a JSON-RPC error -32602); the tool did not run."},
	{Code: failure.MissingClientCapability, Meaning: "The client did not declare a capability the tool's input requests need (a JSON-RPC error -32021, with the capabilities in its data); the tool did not run."},
}

// ask is a round of input requests: the tool's answer when it needs them.
func ask(payload []byte, inputs map[string]pipeline.Input) (pipeline.Effect, error) {
	return pipeline.Effect{}, &pipeline.NeedInput{Inputs: inputs, Payload: payload}
}

func text(s string) (pipeline.Effect, error) { return pipeline.Effect{Text: s}, nil }

// badResponse is the failure of an answer that is not what was asked.
func badResponse(id, what string, err error) error {
	return &failure.Error{Code: InvalidInputResponse, Field: "inputResponses." + id, Message: "must be " + what, Err: err}
}
