package pipeline

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/cobranca/cobranca/internal/auditlog"
	"github.com/cobranca/cobranca/internal/contract"
	"github.com/cobranca/cobranca/internal/failure"
	"github.com/cobranca/cobranca/internal/reqstate"
	"github.com/google/jsonschema-go/jsonschema"
)

// NeedInput is what a tool's Run returns as its error to ask the client for
// input (the conformance suite's diagnostic tools do). The pipeline seals
// Payload into the request state; on the retry, once the state verifies,
// the tool reads the answers and the payload with InputsFrom.
type NeedInput struct {
	Inputs  map[string]Input
	Payload []byte // at most MaxPayload bytes
}

func (*NeedInput) Error() string { return "input required" }

// MaxPayload bounds a NeedInput's payload: the state's room, less the
// pipeline's own mark.
const MaxPayload = reqstate.MaxPayload - 1

// The first byte of a sealed payload says who asked: the pipeline's
// confirmation, or the tool. A confirmation's state never opens a tool's
// round, nor the other way round.
const (
	markConfirm byte = 'c'
	markTool    byte = 't'
	markApprove byte = 'a'
)

// confirmInput is the id of the confirmation's input request.
const confirmInput = "confirm"

type inputsKey struct{}

type inputs struct {
	responses map[string]json.RawMessage
	payload   []byte
}

func withInputs(ctx context.Context, responses map[string]json.RawMessage, payload []byte) context.Context {
	if len(payload) > 0 && payload[0] == markTool {
		payload = payload[1:]
	}
	return context.WithValue(ctx, inputsKey{}, inputs{responses: responses, payload: payload})
}

// InputsFrom returns the client's answers and the payload of the round the
// tool asked for (NeedInput), once the pipeline verified the round's state.
func InputsFrom(ctx context.Context) (responses map[string]json.RawMessage, payload []byte, ok bool) {
	in, ok := ctx.Value(inputsKey{}).(inputs)
	return in.responses, in.payload, ok
}

type clientKey struct{}

// ClientFrom returns what the caller's client declared for this call, for a
// tool whose input requests depend on it.
func ClientFrom(ctx context.Context) (Client, bool) {
	c, ok := ctx.Value(clientKey{}).(Client)
	return c, ok
}

// capability is the client capability an input request's method needs, as
// MCP's ClientCapabilities spells it; "" for a method no capability covers.
func capability(method string) string {
	switch method {
	case "elicitation/create":
		return "elicitation"
	case "sampling/createMessage":
		return "sampling"
	case "roots/list":
		return "roots"
	}
	return ""
}

// declared reports whether the client declared capability.
func (c Client) declared(capability string) bool {
	switch capability {
	case "elicitation":
		return c.Elicitation
	case "sampling":
		return c.Sampling
	case "roots":
		return c.Roots
	}
	return false
}

// binding is what a request state of this call is bound to.
func (p *Pipeline) binding(c Call, a *args) (reqstate.Binding, error) {
	if err := a.fingerprint(); err != nil {
		return reqstate.Binding{}, err
	}
	b := reqstate.Binding{Principal: callerKey(c.Principal), Tool: c.Tool, ArgsDigest: a.binding}
	if t := p.tools[c.Tool]; t != nil && t.Contract.Confirmation == contract.ConfirmOutOfBand {
		// An approval's state names the approval, which holds the call's
		// digest: a retry with other arguments opens it and is refused
		// approval_mismatch, rather than told its state does not verify.
		b.ArgsDigest = approvalBinding
	}
	return b, nil
}

// openState verifies the retry's request state: sealed by a key of the
// ring, for this caller, tool and arguments, not expired. Spending its
// nonce is the transaction's (execute) or, for a round that changes
// nothing, done here in one of its own.
func (p *Pipeline) openState(c Call, a *args) (*reqstate.Opened, error) {
	if p.states == nil {
		return nil, &failure.Error{Code: failure.RequestStateInvalid, Field: "requestState", Message: "this server issues no request states"}
	}
	b, err := p.binding(c, a)
	if err != nil {
		return nil, err
	}
	o, err := p.states.Open(c.State, b, p.now())
	if err != nil {
		return nil, err
	}
	return &o, nil
}

// stateError is the protocol error for a request state that does not open.
func stateError(err error) *failure.Error {
	if fe, ok := failure.As(err); ok {
		return fe
	}
	var re *reqstate.Error
	msg := "does not verify"
	if errors.As(err, &re) {
		msg = re.Message
	}
	return &failure.Error{Code: failure.RequestStateInvalid, Field: "requestState", Message: msg, Err: err}
}

// seal returns a new request state for this call carrying payload.
func (p *Pipeline) seal(c Call, a *args, payload []byte) (string, error) {
	b, err := p.binding(c, a)
	if err != nil {
		return "", err
	}
	return p.states.Seal(b, payload, p.now().Add(p.stateTTL))
}

// askInput answers a tool's NeedInput: input_required with a sealed state.
func (p *Pipeline) askInput(cl *callState, need *NeedInput) Result {
	if p.states == nil {
		return cl.fail(errors.New("a tool asked for client input and the pipeline has no request-state keys"))
	}
	if len(need.Payload) > MaxPayload {
		return cl.fail(fmt.Errorf("tool %s: input payload of %d bytes", cl.tool.Contract.Name, len(need.Payload)))
	}
	if !cl.call.Client.InputRequests {
		return cl.fail(errors.New("a tool asked for client input from a client that cannot answer input requests"))
	}
	// A server must not rely on a capability the client did not declare
	// (MCP 2026-07-28): the call is refused with the capabilities it needs.
	required := map[string]any{}
	for _, in := range need.Inputs {
		cap := capability(in.Method)
		if cap == "" {
			return cl.fail(fmt.Errorf("tool %s: an input request of method %q, which no client capability covers", cl.tool.Contract.Name, in.Method))
		}
		if !cl.call.Client.declared(cap) {
			required[cap] = map[string]any{}
		}
	}
	if len(required) > 0 {
		res := cl.protocolError(&failure.Error{Code: failure.MissingClientCapability, Message: "this call asks the client for input it did not declare it can give: declare " + strings.Join(slices.Sorted(maps.Keys(required)), ", ")})
		res.RequiredCapabilities = required
		return res
	}
	state, err := p.seal(cl.call, cl.args, append([]byte{markTool}, need.Payload...))
	if err != nil {
		return cl.fail(err)
	}
	return cl.finish(cl.record(auditlog.InputRequired, ""), Result{Kind: InputRequired, Inputs: need.Inputs, State: state})
}

// confirmation decides a high-tier call by an agent. It reports whether the
// person accepted (the call goes on), and then the digest of the preview the
// person was shown, as sealed in the round's state; otherwise res is the
// answer: the confirmation request, or the refusal.
func (p *Pipeline) confirmation(ctx context.Context, cl *callState, c Call, opened *reqstate.Opened) (accepted bool, seen []byte, res Result) {
	if opened != nil && (len(opened.Payload) == 0 || opened.Payload[0] != markConfirm) {
		return false, nil, cl.protocolError(&failure.Error{Code: failure.RequestStateInvalid, Field: "requestState", Message: "is not the state of this call's confirmation"})
	}
	if opened != nil {
		if raw, ok := c.Responses[confirmInput]; ok {
			switch answer(raw) {
			case accept:
				return true, opened.Payload[1:], Result{}
			case decline:
				return false, nil, cl.fail(&failure.Error{Code: failure.ConfirmationDeclined, Message: "the person declined; nothing was done"})
			default:
				return false, nil, cl.protocolError(&failure.Error{Code: failure.RequestStateInvalid, Field: "inputResponses." + confirmInput, Message: "is not an elicitation result {action, content:{confirm: boolean}}"})
			}
		}
		// A round answered without the confirmation: ask again.
	}
	preview, err := safely(cl.tool, func() (string, error) { return cl.tool.Preview(ctx, p.db, cl.args.value) })
	if err != nil {
		return false, nil, cl.fail(err)
	}
	return false, nil, p.askConfirmation(cl, preview, false)
}

// askConfirmation asks the caller's client to show the person preview and
// have it confirmed: an input round whose sealed state carries the
// preview's digest, so that the call runs only if, when it runs, it would
// still do exactly what the person saw (execute compares). changed: the
// person confirmed an earlier preview, which no longer holds.
func (p *Pipeline) askConfirmation(cl *callState, preview string, changed bool) Result {
	c := cl.call
	if !c.Client.InputRequests {
		return cl.fail(&failure.Error{Code: failure.ConfirmationRequired, Message: "a person must confirm this call, and this client cannot be asked in-band (its MCP revision is older than 2026-07-28); nothing was done. It would: " + preview})
	}
	if !c.Client.ElicitationForm {
		res := cl.protocolError(&failure.Error{Code: failure.MissingClientCapability, Message: "this call needs a person's confirmation: declare the elicitation capability (form mode)"})
		res.RequiredCapabilities = map[string]any{"elicitation": map[string]any{"form": map[string]any{}}}
		return res
	}
	digest := previewDigest(preview)
	state, err := p.seal(c, cl.args, append([]byte{markConfirm}, digest[:]...))
	if err != nil {
		return cl.fail(err)
	}
	message := "Confirm " + cl.tool.Contract.Title + ": " + preview
	if changed {
		message = "What this call would do has changed since it was confirmed; nothing was done. " + message
	}
	params, err := json.Marshal(map[string]any{
		"mode":            "form",
		"message":         message,
		"requestedSchema": confirmSchema,
	})
	if err != nil {
		return cl.fail(err)
	}
	return cl.finish(cl.record(auditlog.InputRequired, failure.ConfirmationRequired), Result{
		Kind: InputRequired, State: state,
		Inputs: map[string]Input{confirmInput: {Method: "elicitation/create", Params: params}},
	})
}

// previewDigest is what a confirmation's state holds of the preview shown.
func previewDigest(preview string) [sha256.Size]byte { return sha256.Sum256([]byte(preview)) }

// confirmSchema is the form a person answers: one checkbox.
var confirmSchema = &jsonschema.Schema{
	Type: "object",
	Properties: map[string]*jsonschema.Schema{
		"confirm": {Type: "boolean", Title: "Confirm", Description: "Check to let the call make exactly the change shown."},
	},
	Required: []string{"confirm"},
}

type verdict int

const (
	malformed verdict = iota
	accept
	decline
)

// answer reads an elicitation result: accepted with confirm true; declined,
// cancelled, or accepted with confirm false, is a no; anything else (an
// unknown action, an accept without a boolean confirm) is malformed.
func answer(raw json.RawMessage) verdict {
	var r struct {
		Action  string         `json:"action"`
		Content map[string]any `json:"content"`
	}
	if err := json.Unmarshal(raw, &r); err != nil {
		return malformed
	}
	switch r.Action {
	case "accept":
		switch ok, isBool := r.Content["confirm"].(bool); {
		case !isBool:
			return malformed // the form's one field is a boolean
		case ok:
			return accept
		}
		return decline // accepted with the box unchecked
	case "decline", "cancel":
		return decline
	}
	return malformed
}

// stateExpiry is how long a spent nonce must be remembered: as long as its
// state could still open.
func stateExpiry(o *reqstate.Opened) time.Time { return o.Expires.Add(reqstate.Leeway) }
