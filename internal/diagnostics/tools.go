//go:build conformance

package diagnostics

//lint:file-ignore SA1019 the suite's scenarios exercise sampling and roots, deprecated since 2026-07-28 (SEP-2577) but still in the protocol

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/cobranca/cobranca/internal/failure"
	"github.com/cobranca/cobranca/internal/pipeline"
	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// inputs are the input requests the tools ask, encoded once at start.
type inputs struct {
	name, step1, step2, confirmForm, context, capital, greeting, roots pipeline.Input
}

func newInputs() (*inputs, error) {
	in := &inputs{}
	var errs []error
	set := func(dst *pipeline.Input, method string, params any) {
		b, err := json.Marshal(params)
		if err != nil {
			errs = append(errs, fmt.Errorf("diagnostics: %s params: %w", method, err))
		}
		*dst = pipeline.Input{Method: method, Params: b}
	}
	form := func(message, field, typ string) *mcp.ElicitParams {
		return &mcp.ElicitParams{Mode: "form", Message: message, RequestedSchema: &jsonschema.Schema{
			Type:       "object",
			Properties: map[string]*jsonschema.Schema{field: {Type: typ}},
			Required:   []string{field},
		}}
	}
	sample := func(prompt string, maxTokens int64) *mcp.CreateMessageParams {
		return &mcp.CreateMessageParams{MaxTokens: maxTokens, Messages: []*mcp.SamplingMessage{
			{Role: "user", Content: &mcp.TextContent{Text: prompt}},
		}}
	}
	set(&in.name, "elicitation/create", form("What is your name?", "name", "string"))
	set(&in.confirmForm, "elicitation/create", form("Please confirm", "ok", "boolean"))
	set(&in.context, "elicitation/create", form("What context should the prompt use?", "context", "string"))
	set(&in.step1, "elicitation/create", form("Step 1: What is your name?", "name", "string"))
	set(&in.step2, "elicitation/create", form("Step 2: What is your favorite color?", "color", "string"))
	set(&in.capital, "sampling/createMessage", sample("What is the capital of France?", 100))
	set(&in.greeting, "sampling/createMessage", sample("Generate a greeting", 50))
	set(&in.roots, "roots/list", &mcp.ListRootsParams{})
	return in, errors.Join(errs...)
}

// round is what the pipeline verified of the previous round, if any: the
// client's answers and the payload the tool sealed into its state.
type round struct {
	responses map[string]json.RawMessage
	payload   []byte
	retry     bool
}

func roundFrom(ctx context.Context) round {
	responses, payload, ok := pipeline.InputsFrom(ctx)
	return round{responses: responses, payload: payload, retry: ok}
}

// accepted reads the answer id to an elicitation: its content when the
// person accepted, nil when they declined or cancelled, or no answer at all
// (ok false). An answer that is not an elicitation result is an error.
func (r round) accepted(id string) (content map[string]any, ok bool, err error) {
	raw, sent := r.responses[id]
	if !r.retry || !sent {
		return nil, false, nil
	}
	var res mcp.ElicitResult
	if err := json.Unmarshal(raw, &res); err != nil {
		return nil, false, badResponse(id, "an elicitation result {action, content}", err)
	}
	switch res.Action {
	case "accept":
		if res.Content == nil {
			return nil, false, badResponse(id, "an elicitation result whose accepted content is an object", nil)
		}
		return res.Content, true, nil
	case "decline", "cancel":
		return nil, true, nil
	}
	return nil, false, badResponse(id, `an elicitation result whose action is "accept", "decline" or "cancel"`, nil)
}

// acceptedString is the string field of an accepted elicitation answer
// ("" when declined, absent or empty).
func (r round) acceptedString(id, field string) (string, bool, error) {
	content, ok, err := r.accepted(id)
	if err != nil || !ok {
		return "", ok, err
	}
	v, isString := content[field].(string)
	if _, present := content[field]; present && !isString {
		return "", false, badResponse(id, "an elicitation result whose "+field+" is a string", nil)
	}
	return v, true, nil
}

// sampled is the text of the answer id to a sampling request (ok false:
// no answer).
func (r round) sampled(id string) (string, bool, error) {
	raw, sent := r.responses[id]
	if !r.retry || !sent {
		return "", false, nil
	}
	var res mcp.CreateMessageResult
	if err := json.Unmarshal(raw, &res); err != nil || res.Content == nil || res.Role == "" {
		return "", false, badResponse(id, "a sampling result {role, content, model}", err)
	}
	if t, isText := res.Content.(*mcp.TextContent); isText {
		return t.Text, true, nil
	}
	return "(a non-text completion)", true, nil
}

// rootCount is how many roots the answer id to roots/list lists (ok false:
// no answer).
func (r round) rootCount(id string) (int, bool, error) {
	raw, sent := r.responses[id]
	if !r.retry || !sent {
		return 0, false, nil
	}
	var res mcp.ListRootsResult
	if err := json.Unmarshal(raw, &res); err != nil || res.Roots == nil {
		return 0, false, badResponse(id, "a roots/list result {roots: [...]}", err)
	}
	for i, root := range res.Roots {
		if root == nil || root.URI == "" {
			return 0, false, badResponse(id, fmt.Sprintf("a roots/list result whose roots[%d] has a uri", i), nil)
		}
	}
	return len(res.Roots), true, nil
}

// oneRound is a tool of one round: it asks input id, and once the retry's
// answer reads (read's ok) and done accepts it, answers done's text. An
// answer that is not what was asked is the tool's failure; none, or one
// done does not accept, is asked again (SEP-2322: re-request what is
// missing), under a new state.
func oneRound[T any](ctx context.Context, id string, input pipeline.Input, read func(round, string) (T, bool, error),
	done func(T) (string, bool)) (pipeline.Effect, error) {
	v, ok, err := read(roundFrom(ctx), id)
	if err != nil {
		return pipeline.Effect{}, err
	}
	if s, complete := done(v); ok && complete {
		return text(s)
	}
	return ask(nil, map[string]pipeline.Input{id: input})
}

// field reads the string field of an accepted elicitation answer.
func field(name string) func(round, string) (string, bool, error) {
	return func(r round, id string) (string, bool, error) { return r.acceptedString(id, name) }
}

// elicitation asks a name, and greets it. An answer missing, declined or
// empty is asked again (SEP-2322: re-request what is missing).
func (in *inputs) elicitation(ctx context.Context) (pipeline.Effect, error) {
	return oneRound(ctx, "user_name", in.name, field("name"), func(name string) (string, bool) {
		return "Hello, " + name + "!", name != ""
	})
}

func (in *inputs) sampling(ctx context.Context) (pipeline.Effect, error) {
	return oneRound(ctx, "capital_question", in.capital, round.sampled, func(answer string) (string, bool) {
		return "Sampling response: " + answer, true
	})
}

func (in *inputs) listRoots(ctx context.Context) (pipeline.Effect, error) {
	return oneRound(ctx, "client_roots", in.roots, round.rootCount, func(n int) (string, bool) {
		return fmt.Sprintf("The client listed %d root(s).", n), true
	})
}

// confirm asks for a confirmation; it runs again only once the pipeline has
// verified the round's request state, which is what state-ok reports.
func (in *inputs) confirm(ctx context.Context) (pipeline.Effect, error) {
	return oneRound(ctx, "confirm", in.confirmForm, round.accepted, func(content map[string]any) (string, bool) {
		if content == nil {
			return "state-ok: the request state verified; the confirmation was declined.", true
		}
		return "state-ok: the request state verified and the confirmation was accepted.", true
	})
}

func (in *inputs) multipleInputs(ctx context.Context) (pipeline.Effect, error) {
	r := roundFrom(ctx)
	name, named, err1 := r.acceptedString("user_name", "name")
	greeting, greeted, err2 := r.sampled("greeting")
	roots, listed, err3 := r.rootCount("client_roots")
	if err := errors.Join(err1, err2, err3); err != nil {
		return pipeline.Effect{}, err
	}
	if named && name != "" && greeted && listed {
		return text(fmt.Sprintf("%s %s (%d root(s) visible)", greeting, name, roots))
	}
	return ask(nil, map[string]pipeline.Input{"user_name": in.name, "greeting": in.greeting, "client_roots": in.roots})
}

// The rounds of multiRound, as its payload seals them into the request
// state of the round it asks.
const (
	afterStep1 = "2"
	afterStep2 = "3"
)

// multiRound asks a name, then a colour: the second round's state is a new
// one (sealed afresh by the pipeline, its payload saying which round).
func (in *inputs) multiRound(ctx context.Context) (pipeline.Effect, error) {
	r := roundFrom(ctx)
	switch {
	case r.retry && string(r.payload) == afterStep1:
		if _, _, err := r.accepted("step1"); err != nil {
			return pipeline.Effect{}, err
		}
		return ask([]byte(afterStep2), map[string]pipeline.Input{"step2": in.step2})
	case r.retry && string(r.payload) == afterStep2:
		color, ok, err := r.acceptedString("step2", "color")
		switch {
		case err != nil:
			return pipeline.Effect{}, err
		case ok:
			return text("Multi-round complete: favourite colour " + color + ".")
		}
		return ask([]byte(afterStep2), map[string]pipeline.Input{"step2": in.step2})
	}
	return ask([]byte(afterStep1), map[string]pipeline.Input{"step1": in.step1})
}

// capabilities asks only for what the client declared it can answer.
func (in *inputs) capabilities(ctx context.Context) (pipeline.Effect, error) {
	r := roundFrom(ctx)
	if r.retry {
		_, _, err1 := r.acceptedString("user_name", "name")
		_, _, err2 := r.sampled("greeting")
		_, _, err3 := r.rootCount("client_roots")
		if err := errors.Join(err1, err2, err3); err != nil {
			return pipeline.Effect{}, err
		}
		return text("The input requests the client's capabilities cover were answered.")
	}
	client, _ := pipeline.ClientFrom(ctx)
	asks := map[string]pipeline.Input{}
	if client.Elicitation {
		asks["user_name"] = in.name
	}
	if client.Sampling {
		asks["greeting"] = in.greeting
	}
	if client.Roots {
		asks["client_roots"] = in.roots
	}
	if len(asks) == 0 {
		return text("The client declared no capability an input request needs: nothing to ask.")
	}
	return ask(nil, asks)
}

// missingCapability needs a sampling completion: the pipeline refuses the
// call (-32021) when the client did not declare sampling.
func (in *inputs) missingCapability(ctx context.Context) (pipeline.Effect, error) {
	return oneRound(ctx, "completion", in.capital, round.sampled, func(string) (string, bool) {
		return "The client declared sampling and answered; the tool ran.", true
	})
}

func (in *inputs) streamingElicitation(ctx context.Context) (pipeline.Effect, error) {
	return oneRound(ctx, "confirm", in.confirmForm, round.accepted, func(map[string]any) (string, bool) {
		return "The elicitation was asked in the result and answered in the retry.", true
	})
}

// promptContext asks the context a prompt should use, and answers it.
func (in *inputs) promptContext(ctx context.Context) (pipeline.Effect, error) {
	return oneRound(ctx, "user_context", in.context, field("context"), func(answer string) (string, bool) {
		return "Context: " + answer, answer != ""
	})
}

func logging(context.Context) (pipeline.Effect, error) {
	return text("Done; this server sends no log notifications.")
}

func failing(context.Context) (pipeline.Effect, error) {
	return pipeline.Effect{}, &failure.Error{Code: IntentionalError, Message: "This tool intentionally returns an error for testing"}
}

// progress reports 0, 50 and 100 of 100, about 50 ms apart, as the suite's
// scenario expects.
func progress(ctx context.Context) (pipeline.Effect, error) {
	for i, done := range []int64{0, 50, 100} {
		if i > 0 {
			select {
			case <-time.After(50 * time.Millisecond):
			case <-ctx.Done():
				return pipeline.Effect{}, ctx.Err()
			}
		}
		pipeline.ReportProgress(ctx, done, 100, "")
	}
	return text("Progress reported: 0, 50 and 100 of 100.")
}
