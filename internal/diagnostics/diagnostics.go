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

// IntentionalError is the failure of test_error_handling, every call.
const IntentionalError failure.Code = "intentional_error"

// InvalidInputResponse is the failure of a retry whose answer to one of the
// tool's input requests is not the result that request asks for.
const InvalidInputResponse failure.Code = "invalid_input_response"

// spec is one diagnostic tool: its name, what it is for, and its logic.
type spec struct {
	name, title, description string
	run                      func(ctx context.Context) (pipeline.Effect, error)
}

// specs lists the diagnostic tools, in listing order, their logic bound to
// the input requests they ask.
func specs(in *inputs) []spec {
	return []spec{
		{"test_input_required_result_elicitation", "Ask a name (elicitation)",
			"Asks the caller's name with one form elicitation (input-required result), then greets the name answered.", in.elicitation},
		{"test_input_required_result_sampling", "Ask a completion (sampling)",
			"Asks the client for one LLM completion (sampling/createMessage) in an input-required result, then answers with the completion's text.", in.sampling},
		{"test_input_required_result_list_roots", "Ask the roots (roots/list)",
			"Asks the client for its roots (roots/list) in an input-required result, then says how many it listed.", in.listRoots},
		{"test_input_required_result_request_state", "Round-trip a request state",
			"Asks for a confirmation with a sealed request state; the retry runs only if the state verifies, and answers state-ok.", in.confirm},
		{"test_input_required_result_multiple_inputs", "Ask three inputs at once",
			"Asks for an elicitation, a sampling completion and the roots in one input-required result, and completes when all three are answered.", in.multipleInputs},
		{"test_input_required_result_multi_round", "Ask in two rounds",
			"Asks a name, then (under a new sealed request state) a colour, then completes: three calls, two input-required rounds.", in.multiRound},
		{"test_input_required_result_tampered_state", "Refuse a tampered request state",
			"Asks for a confirmation with a sealed request state; a retry whose state was altered is refused by the pipeline (JSON-RPC -32602) and never runs.", in.confirm},
		{"test_input_required_result_capabilities", "Ask only what the client can answer",
			"Asks only for the inputs the client's declared capabilities cover (elicitation, sampling, roots), and completes at once when it declared none.", in.capabilities},
		{"test_missing_capability", "Require the sampling capability",
			"Asks the client for a sampling completion; a client that did not declare sampling gets MissingRequiredClientCapabilityError (-32021) and nothing runs.", in.missingCapability},
		{"test_streaming_elicitation", "Ask in the result, never on the stream",
			"Asks for an elicitation inside its input-required result: the response carries no server-to-client request.", in.streamingElicitation},
		{PromptName, "Ask the prompt's context",
			"Asks, with one form elicitation, the context a prompt should use, then answers it; served as a prompt too (prompts/get), to show input-required results beyond tools/call.", in.promptContext},
		{"test_logging_tool", "Send no log notification",
			"Answers at once; the server sends MCP log notifications to no one, so the response carries none.", logging},
		{"test_error_handling", "Fail, always", "Fails every call: a tool error (isError) whose text says so.", failing},
		{"test_tool_with_progress", "Report progress", "Reports progress 0, 50 and 100 of 100 to a caller that asked for it, then answers.", progress},
	}
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
		c, err := contract.Finish(contract.Contract{
			Name:            s.name,
			ContractVersion: "1.0.0",
			Title:           s.title,
			Description:     s.description + " A conformance diagnostic; absent from production builds.",
			Category:        contract.CategoryDiagnostic,
			RiskLevel:       contract.Low,
			InputSchema:     &jsonschema.Schema{Type: "object", Properties: map[string]*jsonschema.Schema{}, AdditionalProperties: &jsonschema.Schema{Not: &jsonschema.Schema{}}},
			// Text only: the answer is one text content, no structured result.
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
		run := s.run
		tools = append(tools, pipeline.Tool{
			Contract: c,
			Decode:   pipeline.Strict[noArgs](),
			Run:      func(ctx context.Context, _ any) (pipeline.Effect, error) { return run(ctx) },
		})
	}
	return tools, errors.Join(errs...)
}

var failureModes = []contract.FailureMode{
	{Code: failure.InvalidArguments, Meaning: "The tool takes no arguments; field names the one sent."},
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
