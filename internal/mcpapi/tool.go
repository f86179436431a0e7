package mcpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/cobranca/cobranca/internal/auditlog"
	"github.com/cobranca/cobranca/internal/auth"
	"github.com/cobranca/cobranca/internal/contract"
	"github.com/cobranca/cobranca/internal/failure"
	"github.com/cobranca/cobranca/internal/limits"
	"github.com/cobranca/cobranca/internal/request"
	"github.com/cobranca/cobranca/internal/schema"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Outcome is how a tool call ended: the audit log's outcomes, which the
// access log and the metrics use as they are.
type Outcome = auditlog.Outcome

const (
	OutcomeOK          = auditlog.Allowed     // ran and succeeded
	OutcomeRejected    = auditlog.Rejected    // the arguments were refused
	OutcomeDenied      = auditlog.Denied      // policy refused the caller
	OutcomeRateLimited = auditlog.RateLimited // over a budget
	OutcomeFailed      = auditlog.Failed      // the server failed
)

// Effect is what a tool's logic returns: the structured result and a one-line
// summary for the text content (counts only, never names or payload).
type Effect struct {
	Structured any
	Summary    string
	// Details are counts for the audit event: integers by type, so that no
	// payload can reach the audit log through them.
	Details map[string]int64
	// AppendCanonicalArgs, when the logic has the decoded arguments at hand,
	// appends their canonical encoding (sorted keys, no space) to a buffer:
	// the audit log digests that instead of canonicalizing the raw arguments
	// a second time.
	AppendCanonicalArgs func([]byte) []byte
}

// Logic runs one tool call on raw JSON arguments. It decodes and validates
// its own arguments (so each payload is parsed once) and returns a
// *failure.Error for anything the caller can correct. It suits tools whose
// arguments are small: the request reader skips them and hands them over
// raw; a tool with large arguments gives a Decoder and a Run instead.
type Logic func(ctx context.Context, args json.RawMessage) (Effect, error)

// Decoder reads a tool's arguments where they sit in the request: the JSON
// object at the start of b, which may run on past it. It returns the decoded
// arguments and the object's length in bytes, or a *failure.Error for
// arguments the caller can correct (the length is then unknown). A tool with
// a Decoder has its arguments decoded once, by the request reader when it
// can (so the 77 KB of a large call are read in one pass, not first skipped
// and then decoded), and its Run gets what the Decoder made of them. A
// Decoder must be pure and take time linear in what it reads: the request
// reader may run it on arguments that turn out to be another tool's, and
// then drops the result.
type Decoder func(b []byte) (args any, n int, err error)

// Run does a call's work on arguments its tool's Decoder accepted.
type Run func(ctx context.Context, args any) (Effect, error)

// Tool is a contract together with the logic that honours it: either Logic,
// or Decode and Run.
type Tool struct {
	Contract *contract.Contract
	Logic    Logic
	Decode   Decoder
	Run      Run
}

// callArgs are one call's arguments: as sent, and what the tool's Decoder
// made of them when the request reader already ran it (decoded).
type callArgs struct {
	raw     json.RawMessage
	decoded bool
	value   any
	err     error
	// result, when not nil, is an empty buffer to encode the result into.
	result []byte
}

// run runs the tool's logic on a.
func (t *compiled) run(ctx context.Context, a callArgs) (Effect, error) {
	if t.Decode == nil {
		return t.Logic(ctx, a.raw)
	}
	if !a.decoded {
		var n int
		a.value, n, a.err = t.Decode(a.raw)
		if a.err == nil && len(bytes.TrimLeft(a.raw[n:], " \t\r\n")) > 0 {
			// The SDK hands over exactly one JSON value; the decoder
			// stopping short of it is a server bug.
			a.err = fmt.Errorf("tool %s: decoder read %d of %d bytes of arguments", t.Contract.Name, n, len(a.raw))
		}
	}
	if a.err != nil {
		return Effect{}, a.err
	}
	return t.Run(ctx, a.value)
}

// CallRecord is what the pipeline knows about a finished call; the Auditor
// turns it into an audit event.
type CallRecord struct {
	Contract  *contract.Contract
	RequestID string
	Outcome   Outcome
	Code      failure.Code
	Args      json.RawMessage // to digest, never to store
	// AppendCanonicalArgs, when set, writes Args in canonical form
	// (Effect.AppendCanonicalArgs).
	AppendCanonicalArgs func([]byte) []byte
	Result              []byte // the structured result as sent, to digest
	Details             map[string]int64
	Duration            time.Duration
}

// CallObserver counts calls for the metrics endpoint (internal/metrics).
type CallObserver interface {
	ObserveCall(tool, tier, outcome string, d time.Duration)
}

// Auditor records one audit event per tool call, whatever its outcome.
type Auditor interface {
	RecordCall(ctx context.Context, rec CallRecord) error
}

// TierLimits enforces the per-principal budget of a tool's risk tier
// (internal/limits). It returns a *failure.Error rate_limited when the budget
// is spent, or unavailable when it cannot be checked.
type TierLimits interface {
	Tier(ctx context.Context, principalKey string, risk contract.Risk) error
	// Budgeted reports whether Tier spends a budget for the risk tier.
	Budgeted(risk contract.Risk) bool
}

// compiled is a tool ready to serve: its compiled output schema and handler.
type compiled struct {
	Tool
	output *schema.Validator
}

func compile(t Tool) (*compiled, error) {
	twoStep := t.Decode != nil && t.Run != nil
	if (t.Logic != nil) == twoStep || (t.Decode == nil) != (t.Run == nil) {
		return nil, fmt.Errorf("tool %s: give it either Logic, or Decode and Run", t.Contract.Name)
	}
	// The output schema is checked by internal/schema, over the bytes about
	// to be sent; a schema it cannot check completely stops the start.
	out, err := schema.Compile(t.Contract.OutputSchema)
	if err != nil {
		return nil, fmt.Errorf("tool %s: output schema: %w", t.Contract.Name, err)
	}
	if _, err := t.Contract.InputSchema.Resolve(nil); err != nil {
		return nil, fmt.Errorf("tool %s: input schema: %w", t.Contract.Name, err)
	}
	return &compiled{Tool: t, output: out}, nil
}

// pipeline is the one path every tool call takes: run the logic, check the
// result against the output schema, keep the error codes inside the contract,
// audit, and shape the MCP result.
type pipeline struct {
	log     *slog.Logger
	auditor Auditor
	now     func() time.Time
	limits  TierLimits   // nil: no tier budgets
	observe CallObserver // nil: no metrics
}

func (p *pipeline) call(ctx context.Context, t *compiled, args callArgs) *mcp.CallToolResult {
	start := p.now()
	info := request.From(ctx)
	info.Tool = t.Contract.Name
	rec := CallRecord{Contract: t.Contract, RequestID: info.ID, Args: args.raw}

	// The tier budget is spent before any work; a refusal is audited like
	// any other outcome (rate_limited, or failed when it cannot be checked).
	err := p.tier(ctx, t)
	var eff Effect
	if err == nil {
		eff, err = t.run(ctx, args)
	}
	var res *mcp.CallToolResult
	if err == nil {
		var body []byte
		body, err = p.checkOutput(t, eff.Structured, args.result)
		if err == nil {
			rec.Outcome, rec.Result, rec.Details, rec.AppendCanonicalArgs = OutcomeOK, body, eff.Details, eff.AppendCanonicalArgs
			res = &mcp.CallToolResult{
				Content:           []mcp.Content{&mcp.TextContent{Text: eff.Summary}},
				StructuredContent: json.RawMessage(body),
			}
		}
	}
	if err != nil {
		var fe *failure.Error
		fe, rec.Outcome = p.classify(ctx, t, err)
		rec.Code = fe.Code
		res = errorResult(fe)
	}
	info.Outcome, info.Code = string(rec.Outcome), string(rec.Code)
	rec.Duration = p.now().Sub(start)
	if p.observe != nil {
		defer func() {
			p.observe.ObserveCall(t.Contract.Name, string(t.Contract.RiskLevel), info.Outcome, p.now().Sub(start))
		}()
	}
	if p.auditor != nil {
		if aerr := p.auditor.RecordCall(ctx, rec); aerr != nil {
			p.log.ErrorContext(ctx, "audit write failed", "request_id", info.ID, "tool", t.Contract.Name, "err", aerr)
			// A tool that changes nothing is still answered (DESIGN.md §8:
			// low-tier reads may go on while the store is down): an error
			// here means even the spool could not keep its event, and the
			// log above is all that is left of it. A call with side effects
			// is not answered as a success without its audit event: the
			// trail must never miss an effect.
			// An event the store could never take (auditlog.ErrUnstorable) is a server
			// fault, not an outage: no call is answered without its event, whatever its tier.
			if errors.Is(aerr, auditlog.ErrUnstorable) {
				fe := internalError(info.ID)
				info.Outcome, info.Code = string(OutcomeFailed), string(fe.Code)
				return errorResult(fe)
			}
			if len(t.Contract.SideEffects.Changes) > 0 {
				fe := &failure.Error{Code: failure.Unavailable, Message: "the audit log is unavailable; retry later (ref " + info.ID + ")", RetryAfter: time.Second}
				info.Outcome, info.Code = string(OutcomeFailed), string(fe.Code)
				return errorResult(fe)
			}
		}
	}
	return res
}

func (p *pipeline) tier(ctx context.Context, t *compiled) error {
	if p.limits == nil {
		return nil
	}
	var key string
	if pr, ok := auth.PrincipalFrom(ctx); ok {
		key = limits.PrincipalKey(pr.Subject, pr.ClientID)
	}
	return p.limits.Tier(ctx, key, t.Contract.RiskLevel)
}

// jsonAppender is implemented by results that encode themselves without
// reflection, byte for byte as encoding/json would (portfolio.Analysis).
type jsonAppender interface {
	AppendJSON([]byte) []byte
}

// refused audits a call refused before it ran (a missing scope), so that the
// audit trail has every tool call whatever its fate. It never fails the
// answer already given: a write error is logged.
func (p *pipeline) refused(ctx context.Context, t *compiled, outcome Outcome, code failure.Code) {
	info := request.From(ctx)
	info.Outcome, info.Code = string(outcome), string(code)
	if t == nil {
		return
	}
	if p.observe != nil {
		p.observe.ObserveCall(t.Contract.Name, string(t.Contract.RiskLevel), string(outcome), 0)
	}
	if p.auditor == nil {
		return
	}
	rec := CallRecord{Contract: t.Contract, RequestID: info.ID, Outcome: outcome, Code: code}
	if err := p.auditor.RecordCall(ctx, rec); err != nil {
		p.log.ErrorContext(ctx, "audit write failed", "request_id", info.ID, "tool", t.Contract.Name, "err", err)
	}
}

// checkOutput marshals the structured result, into dst when v encodes itself
// and dst is not nil, and validates it against the tool's output schema. A
// violation is a server bug: it is logged and the caller gets an internal
// error, never the offending result.
func (p *pipeline) checkOutput(t *compiled, v any, dst []byte) ([]byte, error) {
	var body []byte
	if ap, ok := v.(jsonAppender); ok {
		if dst == nil {
			dst = make([]byte, 0, 32<<10)
		}
		body = ap.AppendJSON(dst)
	} else {
		var err error
		if body, err = json.Marshal(v); err != nil {
			return nil, fmt.Errorf("marshal result: %w", err)
		}
	}
	if err := t.output.Validate(body); err != nil {
		return nil, fmt.Errorf("result violates the output schema of %s: %w", t.Contract.Name, err)
	}
	return body, nil
}

// internalError is what the caller sees of a server fault: a reference to the log line.
func internalError(requestID string) *failure.Error {
	return &failure.Error{Code: failure.Internal, Message: "internal error (ref " + requestID + ")"}
}

// classify turns err into the failure the caller sees. Codes outside the
// contract's failure modes, and every non-domain error, become an internal
// error with a reference; the full error is logged once.
func (p *pipeline) classify(ctx context.Context, t *compiled, err error) (*failure.Error, Outcome) {
	info := request.From(ctx)
	fe, ok := failure.As(err)
	if !ok || !t.Contract.Allows(fe.Code) {
		p.log.ErrorContext(ctx, "tool call failed", "request_id", info.ID, "tool", t.Contract.Name, "err", err)
		return internalError(info.ID), OutcomeFailed
	}
	switch fe.Code {
	case failure.Internal, failure.Unavailable:
		p.log.ErrorContext(ctx, "tool call failed", "request_id", info.ID, "tool", t.Contract.Name, "err", err)
		return &failure.Error{Code: fe.Code, Message: fe.Message + " (ref " + info.ID + ")", RetryAfter: fe.RetryAfter}, OutcomeFailed
	case failure.RateLimited:
		return fe, OutcomeRateLimited
	}
	return fe, OutcomeRejected
}

// ErrorMetaKey is the reverse-DNS _meta key under which a tool error result
// carries its failure.Detail: {code, message, field?, retryAfterMs?}.
//
// An error result has no structuredContent. The official TypeScript SDK 1.x
// client and the Inspector validate a structuredContent that is present
// against the tool's outputSchema, isError or not, and would throw on an
// error shape; every client tolerates its absence when isError is true. The
// outputSchema thus stays the strict success shape, the text content says
// "code: field: message" for a model, and a program reads the code from
// _meta.
const ErrorMetaKey = "io.cobranca/error"

func errorResult(fe *failure.Error) *mcp.CallToolResult {
	return &mcp.CallToolResult{
		Meta:    mcp.Meta{ErrorMetaKey: fe.Detail()},
		IsError: true,
		Content: []mcp.Content{&mcp.TextContent{Text: fe.Text()}},
	}
}
