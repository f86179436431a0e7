package pipeline

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"time"

	"github.com/cobranca/cobranca/internal/auditlog"
	"github.com/cobranca/cobranca/internal/auth"
	"github.com/cobranca/cobranca/internal/failure"
	"github.com/cobranca/cobranca/internal/request"
	"go.opentelemetry.io/otel/trace"
)

// callState is one call on its way through Do: what every ending needs to
// answer and audit it.
type callState struct {
	p     *Pipeline
	ctx   context.Context
	call  Call
	tool  *compiled
	args  *args
	start time.Time
	info  *request.Info
	// confirmed, for a call a person confirmed in-band, is the digest of
	// the preview the person saw (as sealed in the state; possibly empty).
	confirmed *[]byte
	// approval, for a critical call, is the approved action it executes.
	approval string
	// missing, for a dry run its dryRunPermissions allow, are the scopes
	// of the contract's permissions the caller lacks.
	missing []string
	// units is what the call costs of its tier budget, when its contract
	// weighs it by its size and it was sized (spendCost); zero otherwise.
	units int64
	// traced: the request records a span, so the call's steps have spans
	// of their own (trace.go); span is the open step's.
	traced bool
	span   trace.Span
}

func (p *Pipeline) begin(ctx context.Context, c Call) *callState {
	info := request.From(ctx)
	if c.RequestID == "" {
		c.RequestID = info.ID
	}
	return &callState{p: p, ctx: ctx, call: c, start: p.now(), info: info, traced: recordingSpan(ctx)}
}

// record is the audit record of the call so far, ending with outcome.
func (cl *callState) record(outcome auditlog.Outcome, code failure.Code) CallRecord {
	rec := CallRecord{
		Contract: cl.tool.Contract, Principal: cl.call.Principal, RequestID: cl.call.RequestID,
		Outcome: outcome, Code: code, Args: cl.call.Args, Duration: cl.p.now().Sub(cl.start),
	}
	rec.Details = cl.details(nil)
	return rec
}

// detailUnits is the audit detail that says what a call weighted by its size
// cost of its tier budget, in units (contract.Cost).
const detailUnits = "budgetUnits"

// details are the tool's counts d for the audit event, with the call's cost
// in units when it was weighed by its size.
func (cl *callState) details(d map[string]int64) map[string]int64 {
	if cl.units == 0 {
		return d
	}
	out := make(map[string]int64, len(d)+1)
	maps.Copy(out, d)
	out[detailUnits] = cl.units
	return out
}

// finish audits rec (outside any transaction), counts the call and answers
// res; when the event cannot be kept, the answer says so instead.
func (cl *callState) finish(rec CallRecord, res Result) Result {
	cl.info.Outcome, cl.info.Code = string(rec.Outcome), string(rec.Code)
	if rec.Outcome == auditlog.InputRequired {
		cl.endStep("") // asking a person is no failure of the step that asks
	} else {
		cl.endStep(string(rec.Code)) // the step that decided the call
	}
	if cl.tool == nil {
		return res
	}
	if cl.p.auditor != nil {
		ctx := cl.step(cl.ctx, stepAudit)
		if err := cl.p.auditor.RecordCall(ctx, rec); err != nil {
			cl.endStep(string(failure.Unavailable))
			res = cl.auditFailed(err, res)
		}
		cl.endStep("")
	}
	cl.observe()
	return res
}

// auditFailed is the answer when the call's event could not be written.
// A read is still answered (docs/security-model.md, "The audit log": low-tier reads go on while the
// store is down, their events wait in the spool; an error here means even
// the spool could not keep it, and the log line is all that is left). A call
// of a tool with side effects is never answered as if its event existed:
// nothing was done (the effect, if any, rolled back with the event), and
// the answer says so. An event the store could never take is a server fault
// whatever the tier.
func (cl *callState) auditFailed(err error, res Result) Result {
	cl.p.log.ErrorContext(cl.ctx, "audit write failed", "request_id", cl.call.RequestID, "tool", cl.tool.Contract.Name, "err", err)
	var fe *failure.Error
	switch {
	case errors.Is(err, auditlog.ErrUnstorable):
		fe = internalError(cl.call.RequestID)
	case cl.tool.Contract.HasSideEffects():
		fe = &failure.Error{Code: failure.Unavailable, Message: "the audit log is unavailable, nothing was done; retry later (ref " + cl.call.RequestID + ")", RetryAfter: time.Second}
	default:
		return res
	}
	cl.info.Outcome, cl.info.Code = string(auditlog.Failed), string(fe.Code)
	return Result{Kind: ToolError, Err: fe}
}

func (cl *callState) observe() {
	if cl.p.observe != nil {
		cl.p.observe.ObserveCall(cl.tool.Contract.Name, string(cl.tool.Contract.RiskLevel), cl.info.Outcome, cl.p.now().Sub(cl.start))
	}
}

// fail answers err as a tool error: a code outside the contract's failure
// modes, and every non-domain error, becomes an internal error with a
// reference; the full error is logged once.
func (cl *callState) fail(err error) Result {
	fe, outcome := cl.classify(err)
	return cl.finish(cl.record(outcome, fe.Code), Result{Kind: ToolError, Err: fe})
}

func (cl *callState) classify(err error) (*failure.Error, auditlog.Outcome) {
	c := cl.tool.Contract
	fe, ok := failure.As(err)
	if !ok || !c.Allows(fe.Code) {
		cl.p.log.ErrorContext(cl.ctx, "tool call failed", "request_id", cl.call.RequestID, "tool", c.Name, "err", err)
		return internalError(cl.call.RequestID), auditlog.Failed
	}
	switch fe.Code {
	case failure.Internal, failure.Unavailable:
		cl.p.log.ErrorContext(cl.ctx, "tool call failed", "request_id", cl.call.RequestID, "tool", c.Name, "err", err)
		return &failure.Error{Code: fe.Code, Message: fe.Message + " (ref " + cl.call.RequestID + ")", RetryAfter: fe.RetryAfter}, auditlog.Failed
	case failure.RateLimited:
		return fe, auditlog.RateLimited
	case failure.ApprovalRequired, failure.InsufficientUserAuthentication, failure.ConfirmationRequired, failure.PersonRequired, failure.PersonLacksRole:
		return fe, auditlog.Denied
	}
	return fe, auditlog.Rejected
}

// protocolError answers a failure of the request itself.
func (cl *callState) protocolError(fe *failure.Error) Result {
	res := Result{Kind: ProtocolError, Err: fe}
	if cl.tool == nil {
		cl.info.Outcome, cl.info.Code = string(auditlog.Rejected), string(fe.Code)
		cl.endStep(string(fe.Code))
		return res
	}
	return cl.finish(cl.record(auditlog.Rejected, fe.Code), res)
}

// denied answers a caller without the tool's scopes.
func (cl *callState) denied(missing []string) Result {
	return cl.finish(cl.record(auditlog.Denied, failure.InsufficientScope), Result{Kind: Denied, Missing: missing,
		Err: &failure.Error{Code: failure.InsufficientScope, Message: "the token lacks a scope this tool requires"}})
}

// complete checks eff's result against the output schema and answers it
// (a read, or a dry run: nothing to commit).
func (cl *callState) complete(eff Effect, err error, buf []byte) Result {
	if eff.Done != nil {
		defer eff.Done()
	}
	if err != nil {
		return cl.fail(err)
	}
	body, err := cl.checkOutput(eff, buf)
	if err != nil {
		return cl.fail(err)
	}
	outcome := auditlog.Allowed
	if cl.args != nil && cl.args.dryRun {
		outcome = auditlog.DryRun
	}
	rec := cl.record(outcome, "")
	rec.Result, rec.Details, rec.AppendCanonicalArgs = body, cl.details(eff.Details), eff.AppendCanonicalArgs
	return cl.finish(rec, Result{Kind: Complete, Structured: body, Summary: summaryOf(eff), Media: eff.Media})
}

func summaryOf(eff Effect) string {
	if eff.Text != "" {
		return eff.Text
	}
	return eff.Summary
}

// jsonAppender is implemented by results that encode themselves without
// reflection, byte for byte as encoding/json would (portfolio.Analysis).
type jsonAppender interface {
	AppendJSON([]byte) []byte
}

// checkOutput encodes the structured result (into dst when it encodes
// itself and dst is not nil) and validates it against the output schema. A
// violation is a server bug: the caller gets an internal error, never the
// offending result.
func (cl *callState) checkOutput(eff Effect, dst []byte) ([]byte, error) {
	t := cl.tool
	if len(eff.Media) > 0 && (eff.Structured != nil || t.Contract.HasSideEffects()) {
		return nil, fmt.Errorf("tool %s answered media: only a text-only read can", t.Contract.Name)
	}
	if eff.Structured == nil {
		if t.fast != nil || t.output != nil {
			return nil, fmt.Errorf("tool %s returned no structured result", t.Contract.Name)
		}
		return nil, nil
	}
	var body []byte
	if ap, ok := eff.Structured.(jsonAppender); ok {
		if dst == nil {
			dst = make([]byte, 0, 32<<10)
		}
		body = ap.AppendJSON(dst)
	} else {
		var err error
		if body, err = json.Marshal(eff.Structured); err != nil {
			return nil, fmt.Errorf("marshal result: %w", err)
		}
	}
	switch {
	case t.fast != nil:
		if err := t.fast.Validate(body); err != nil {
			return nil, fmt.Errorf("result violates the output schema of %s: %w", t.Contract.Name, err)
		}
	case t.output != nil:
		var v any
		if err := json.Unmarshal(body, &v); err != nil {
			return nil, fmt.Errorf("result of %s: %w", t.Contract.Name, err)
		}
		if err := t.output.Validate(v); err != nil {
			return nil, fmt.Errorf("result violates the output schema of %s: %w", t.Contract.Name, err)
		}
	default:
		return nil, fmt.Errorf("tool %s declares no output schema but returned a structured result", t.Contract.Name)
	}
	return body, nil
}

// Refused audits a call of the tool name (served, or forbidden) that its transport refused
// before Do could run it (a malformed request, a header, a scope checked at
// the HTTP level), so that the trail has every call whatever its fate. A
// write error is logged: the answer is already given.
func (p *Pipeline) Refused(ctx context.Context, pr *auth.Principal, name string, outcome auditlog.Outcome, code failure.Code) {
	cl := p.begin(ctx, Call{Principal: pr, Tool: name})
	cl.tool = p.tools[name]
	if cl.tool == nil {
		cl.tool = p.hidden[name]
	}
	cl.info.Outcome, cl.info.Code = string(outcome), string(code)
	if cl.tool == nil {
		return
	}
	cl.info.Tool = name
	cl.observe()
	if p.auditor == nil {
		return
	}
	actx := cl.step(ctx, stepAudit)
	defer cl.endStep("")
	if err := p.auditor.RecordCall(actx, cl.record(outcome, code)); err != nil {
		p.log.ErrorContext(ctx, "audit write failed", "request_id", cl.call.RequestID, "tool", name, "err", err)
		cl.endStep(string(failure.Unavailable))
	}
}
