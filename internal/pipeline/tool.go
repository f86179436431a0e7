package pipeline

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/cobranca/cobranca/internal/contract"
	"github.com/cobranca/cobranca/internal/failure"
	"github.com/cobranca/cobranca/internal/outbox"
	"github.com/cobranca/cobranca/internal/schema"
	"github.com/cobranca/cobranca/internal/store"
	"github.com/google/jsonschema-go/jsonschema"
)

// Effect is what a tool's logic returns: the structured result and a one-line
// summary for the text content (counts only, never names or payload).
type Effect struct {
	Structured any
	Summary    string
	// Text, for a tool without an output schema (the conformance suite's
	// diagnostic tools), is its text content; Structured is then nil.
	Text string
	// Details are counts for the audit event: integers by type, so that no
	// payload can reach the audit log through them.
	Details map[string]int64
	// Unchanged: the call found its effect already made (natural
	// idempotency: the same link, the same draft; a status the record
	// already has) and changed nothing. The transaction still commits — an
	// idempotency key keeps the answer — and the audit event's outcome is
	// unchanged instead of allowed.
	Unchanged bool
	// PlanHash, from the DryRun of a tool whose dry run is mandatory, is the
	// plan: a SHA-256 in lower-case hex over exactly what the call would do
	// (the tool's answer carries it too, for the caller to cite). The
	// pipeline records it; Execute recomputes it in its transaction and
	// answers failure.PlanChanged when it differs from PlanHashFrom.
	PlanHash string
	// AppendCanonicalArgs, when the logic has the decoded arguments at hand,
	// appends their canonical encoding (RFC 8785) to a buffer: the audit log
	// digests that instead of canonicalizing the raw arguments a second time.
	AppendCanonicalArgs func([]byte) []byte
	// Media, from a text-only read (the conformance suite's content
	// fixtures), is the content answered after Text: images, audio,
	// embedded resources. A tool with side effects or a structured result
	// cannot answer it (checkOutput): a key stores text and structure only.
	Media []Media
	// Done, when set, is called once the pipeline is done with the effect
	// and the arguments it was made from — the result encoded and checked,
	// the call audited — for a read or a dry run that answers it: a tool
	// gives back there what it borrowed for the call (the bulk tool's
	// pooled invoice array). Nothing of the effect or the arguments may be
	// used after it.
	Done func()
}

// Logic runs one read-only call on raw JSON arguments, decoding and
// validating them itself.
type Logic func(ctx context.Context, args json.RawMessage) (Effect, error)

// MediaKind is the kind of a Media content.
type MediaKind string

// The kinds of Media, named as MCP names the content.
const (
	Image    MediaKind = "image"
	Audio    MediaKind = "audio"
	Resource MediaKind = "resource" // an embedded resource: URI, and Text or Data
)

// Media is one content of a result beyond its text.
type Media struct {
	Kind     MediaKind
	MIMEType string
	Data     []byte // image, audio, or a binary resource
	URI      string // resource
	Text     string // a text resource
}

// Decoder reads a tool's arguments: the JSON object at the start of b, which
// may run on past it. It returns the decoded arguments and the object's
// length in bytes, or a *failure.Error for arguments the caller can correct.
// A Decoder must be pure and take time linear in what it reads: the MCP
// front may run it on arguments that turn out to be another tool's, and
// then drops the result. Hand-written Decoders serve the bulk tool, where a
// measurement pays for them; every other tool uses Strict.
type Decoder func(b []byte) (args any, n int, err error)

// Run does a read-only call's work on arguments its tool's Decoder accepted.
type Run func(ctx context.Context, args any) (Effect, error)

// Read does a read-only call's work on arguments its tool's Decoder
// accepted, reading the store through q (the pipeline's DB).
type Read func(ctx context.Context, q store.Querier, args any) (Effect, error)

// Execute does a call's work in the pipeline's transaction: every change it
// makes commits with the call's audit event and idempotency record, or not
// at all.
type Execute func(ctx context.Context, tx store.Tx, args any) (Effect, error)

// Preview says, in words a person reads before confirming, exactly what a
// call would change, reading the store through q where what changes depends
// on what is stored (a customer's current status). It must not change
// anything. The pipeline calls it twice for a call a person confirms: with
// its DB, for the person to read; then, once the person accepted, with the
// call's transaction (q is a store.Tx), before Execute — the call runs only
// if the preview is still the same, so a Preview given a Tx must lock what it
// reads (SELECT … FOR UPDATE) for Execute to find it unchanged.
type Preview func(ctx context.Context, q store.Querier, args any) (string, error)

// Size counts the items of a call its contract's cost rule weighs it by
// (contract.Cost), reading the store through q where the count depends on
// what is stored (the drafts a filter selects). It must change nothing and
// be cheap next to the call's work, which it prices: it runs before it. A
// count above what the call may take is fine: the call refuses it after.
type Size func(ctx context.Context, q store.Querier, args any) (int, error)

// Tool is a contract together with the logic that honours it:
//   - a read: Logic, or Decode and Run, or Decode and Read when it reads
//     the store;
//   - a tool with side effects: Decode and Execute, and Preview when a person
//     confirms it (high tier) — the pipeline owns its transaction;
//   - DryRun when the contract offers a dry run;
//   - Size when the contract weighs calls by their size (Contract.Cost).
type Tool struct {
	Contract *contract.Contract
	Logic    Logic
	Decode   Decoder
	Run      Run
	Read     Read
	Execute  Execute
	Preview  Preview
	// DryRun says what a call would do, changing nothing; it reads the
	// store, where what would be done depends on it, through q (the
	// pipeline's DB; nil when the pipeline has none).
	DryRun Read
	// Size counts a call's items for its contract's cost rule.
	Size Size
	// FastOutput checks the result with internal/schema's hand-written
	// checker over the bytes about to be sent (the bulk tool); otherwise
	// jsonschema-go validates it.
	FastOutput bool
	// Outbox, for a tool whose contract has external side effects (mail),
	// is the transactional outbox its Execute enqueues them in: they leave
	// only once the call's transaction commits. compile refuses an external
	// tool without one.
	Outbox *outbox.Outbox
	// View, for a contract that names a result view (Contract.View), is
	// that view's HTML document: one self-contained page (no external
	// script, style or request) a host that renders MCP Apps shows the
	// tool's structuredContent in. compile refuses one without the other.
	View []byte
}

// compiled is a tool ready to serve.
type compiled struct {
	Tool
	fast   *schema.Validator
	output *jsonschema.Resolved // nil for a text-only tool
	// input checks the arguments of a Strict tool against its input schema;
	// faults says where arguments it refuses are at fault.
	input  *jsonschema.Resolved
	faults faultFinder
	// rerun: the tool is naturally idempotent (contract idempotency kind
	// natural): a repeat of an idempotency key runs it again, and its
	// answer is never stored under the key.
	rerun bool
}

// compile refuses, at start, a tool whose contract asks for something no
// check implements, or whose logic does not fit its contract.
func compile(t Tool, p *Pipeline) (*compiled, error) {
	c := t.Contract
	if c == nil {
		return nil, errors.New("a tool has no contract")
	}
	var errs []error
	bad := func(format string, a ...any) {
		errs = append(errs, fmt.Errorf("tool %s: "+format, append([]any{c.Name}, a...)...))
	}
	reads := 0
	for _, set := range []bool{t.Logic != nil, t.Run != nil, t.Read != nil} {
		if set {
			reads++
		}
	}
	read := reads > 0
	switch {
	case c.HasSideEffects() && (t.Execute == nil || t.Decode == nil || read):
		bad("a tool with side effects gives Decode and Execute, and no Logic or Run")
	case !c.HasSideEffects() && (t.Execute != nil || t.Preview != nil):
		bad("a read-only tool gives no Execute or Preview")
	case !c.HasSideEffects() && reads != 1:
		bad("a read gives one of Logic, Decode and Run, or Decode and Read")
	case (t.Run != nil || t.Read != nil) && t.Decode == nil:
		bad("Run and Read need a Decode")
	}
	if t.Read != nil && p.db == nil {
		bad("reads the store, and the pipeline has no store")
	}
	if c.SideEffects.External && t.Outbox == nil {
		// An external effect (mail, payment) cannot be rolled back with the
		// transaction: it must wait in the outbox until the commit.
		bad("has external side effects and enqueues them in no outbox (Tool.Outbox) to hold them until the commit")
	}
	if t.Outbox != nil && !c.SideEffects.External {
		bad("gives an Outbox, and its contract declares no external side effects")
	}
	switch {
	case c.View != "" && len(t.View) == 0:
		bad("its contract names the view %s: give its HTML (Tool.View)", c.View)
	case c.View == "" && len(t.View) > 0:
		bad("gives a view's HTML, and its contract names no view (Contract.View)")
	}
	if t.Read != nil && t.FastOutput {
		bad("FastOutput serves the bulk tool's Run, not a Read")
	}
	if c.HasSideEffects() && p.db == nil {
		bad("has side effects, and the pipeline has no store to run them in")
	}
	if c.HasSideEffects() && p.keys == nil {
		bad("has side effects, and the pipeline has no idempotency key store")
	}
	switch c.Confirmation {
	case contract.ConfirmNone, contract.ConfirmAdvised:
	case contract.ConfirmInBand:
		if t.Preview == nil {
			bad("in-band confirmation needs a Preview")
		}
		if p.states == nil {
			bad("in-band confirmation needs request-state keys (COBRANCA_REQUEST_STATE_KEYS)")
		}
	case contract.ConfirmOutOfBand:
		if t.Preview == nil {
			bad("out-of-band approval needs a Preview (what the person approves)")
		}
		if p.approvals == nil || p.publicURL == "" {
			bad("out-of-band approval needs the approval store and the public URL people open approvals at")
		}
	case contract.ConfirmHumanOnly:
		// Forbidden: never served (New skips it), so never called.
	default:
		bad("confirmation %q has no check in the pipeline", c.Confirmation)
	}
	switch c.DryRun {
	case contract.ModeNone:
		if t.DryRun != nil {
			bad("gives DryRun but its contract offers none")
		}
	case contract.ModeOptional:
		if t.DryRun == nil {
			bad("its contract offers a dry run: give DryRun")
		}
	case contract.ModeMandatory:
		// The pipeline records each dry run (with the plan hash DryRun
		// returns) and lets through only a call citing one (dryrun.go);
		// Execute recomputes the plan (PlanHashFrom) and answers plan_changed.
		if t.DryRun == nil {
			bad("its contract makes a dry run mandatory: give DryRun, returning Effect.PlanHash")
		}
		if p.keys == nil {
			bad("a mandatory dry run is recorded in the store: the pipeline has no idempotency key store")
		}
	default:
		bad("dryRun %q has no check in the pipeline yet", c.DryRun)
	}
	switch {
	case c.Cost != nil && t.Size == nil:
		bad("its contract weighs calls by their size (cost): give Size, which counts their %s", c.Cost.Items)
	case c.Cost == nil && t.Size != nil:
		bad("gives Size, and its contract has no cost rule to weigh calls by")
	case c.Cost != nil && t.Decode == nil:
		bad("a cost rule counts decoded arguments: give Decode")
	}
	if t.Decode != nil && !t.FastOutput && !c.Allows(failure.InvalidArguments) {
		bad("a Strict decoder answers %s: list it in the contract's failure modes", failure.InvalidArguments)
	}
	ct := &compiled{Tool: t, rerun: c.Idempotency.Kind == "natural"}
	if t.FastOutput {
		v, err := compiledSchemas.compileFast(c.OutputSchema)
		if err != nil {
			bad("output schema: %v", err)
		}
		ct.fast = v
	} else if c.OutputSchema != nil && !c.TextOnly() {
		r, err := compiledSchemas.resolve(c.OutputSchema)
		if err != nil {
			bad("output schema: %v", err)
		}
		ct.output = r
	}
	in, err := compiledSchemas.resolve(c.InputSchema)
	if err != nil {
		bad("input schema: %v", err)
	}
	if t.Decode != nil && !t.FastOutput {
		ct.input = in
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return ct, nil
}

// Strict returns the Decoder of arguments of type T: encoding/json, with
// unknown fields refused and a single object required, every refusal an
// invalid_arguments failure naming the field.
func Strict[T any]() Decoder {
	return func(b []byte) (any, int, error) {
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.DisallowUnknownFields()
		v := new(T)
		if err := dec.Decode(v); err != nil {
			return nil, 0, decodeError(err)
		}
		return v, int(dec.InputOffset()), nil
	}
}

// decodeError turns an encoding/json error into the caller's failure.
func decodeError(err error) *failure.Error {
	var te *json.UnmarshalTypeError
	var se *json.SyntaxError
	switch {
	case errors.As(err, &te):
		field := te.Field
		if field == "" {
			field = "arguments"
		}
		return &failure.Error{Code: failure.InvalidArguments, Field: field, Message: "must be " + jsonType(te.Type.Kind().String()), Err: err}
	case errors.As(err, &se):
		return &failure.Error{Code: failure.InvalidArguments, Field: "arguments", Message: "are not well-formed JSON", Err: err}
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		name := strings.Trim(strings.TrimPrefix(err.Error(), "json: unknown field "), `"`)
		return &failure.Error{Code: failure.InvalidArguments, Field: name, Message: "is not an argument of this tool", Err: err}
	}
	return &failure.Error{Code: failure.InvalidArguments, Field: "arguments", Message: "must be a JSON object", Err: err}
}

func jsonType(kind string) string {
	switch kind {
	case "string":
		return "a string"
	case "bool":
		return "a boolean"
	case "slice", "array":
		return "an array"
	case "struct", "map", "ptr":
		return "an object"
	}
	return "a number"
}

// safely runs fn, a piece of t's own code, turning a panic into an error:
// a bug in one tool fails its call (an internal error, audited), never the
// process and every call in flight with it.
func safely[T any](t *compiled, fn func() (T, error)) (v T, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("tool %s panicked: %s\n%s", t.Contract.Name, panicText(r), debug.Stack())
		}
	}()
	return fn()
}

// panicText is what the log may say of a panic's value: a runtime error's
// message (an index, a nil map: no data), else only the value's type — a
// tool's own panic value may carry a payload, which never reaches the logs.
func panicText(r any) string {
	if re, ok := r.(runtime.Error); ok {
		return re.Error()
	}
	return fmt.Sprintf("a value of type %T", r)
}

// safeDecode is t's Decoder, its panics turned into errors.
func (t *compiled) safeDecode(b []byte) (v any, n int, err error) {
	defer func() {
		if r := recover(); r != nil {
			v, n, err = nil, 0, fmt.Errorf("tool %s: decoder panicked: %s\n%s", t.Contract.Name, panicText(r), debug.Stack())
		}
	}()
	return t.Decode(b)
}

// decode runs t's Decoder on raw and checks it read all of it.
func (t *compiled) decode(raw []byte) (any, error) {
	v, n, err := t.safeDecode(raw)
	if err != nil {
		return nil, err
	}
	if len(bytes.TrimLeft(raw[n:], " \t\r\n")) > 0 {
		return nil, fmt.Errorf("tool %s: decoder read %d of %d bytes of arguments", t.Contract.Name, n, len(raw))
	}
	return v, nil
}
