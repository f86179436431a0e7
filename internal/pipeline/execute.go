package pipeline

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/cobranca/cobranca/internal/auditlog"
	"github.com/cobranca/cobranca/internal/failure"
	"github.com/cobranca/cobranca/internal/idempotency"
	"github.com/cobranca/cobranca/internal/limits"
	"github.com/cobranca/cobranca/internal/reqstate"
	"github.com/cobranca/cobranca/internal/store"
)

// inProgressRetry is when to come back after request_in_progress.
const inProgressRetry = 500 * time.Millisecond

// stored is a response kept for an idempotency key's repeats.
type stored struct {
	Structured json.RawMessage `json:"s,omitempty"`
	Summary    string          `json:"t"`
}

// ending is how the transaction of a call ended, when it was not committed
// with the effect.
type ending struct {
	res    Result
	rec    CallRecord
	failed error
}

// execute runs a call of a tool with side effects in one transaction:
// reserve the key, spend the request state's nonce, run the tool, check its
// output, append the audit event, store the response, commit. If any step
// fails nothing happened, and the answer says so.
func (p *Pipeline) execute(ctx context.Context, cl *callState, opened *reqstate.Opened) Result {
	a := cl.args
	var principal string
	if pr := cl.call.Principal; pr != nil {
		principal = limits.PrincipalKey(pr.Subject, pr.ClientID)
	}
	var fp []byte
	key := idempotency.Key{Principal: principal, Tool: cl.tool.Contract.Name, Key: a.key}
	if a.key != "" {
		if err := a.fingerprint(); err != nil {
			return cl.fail(err)
		}
		fp = a.digest[:]
	}
	var out Result
	var end *ending
	err := p.db.InTx(ctx, func(ctx context.Context, tx store.Tx) error {
		end, out = nil, Result{}
		// A request state opens one round: spent first, so that a replayed
		// state is refused even where the key would replay the answer.
		if opened != nil {
			if err := p.keys.SpendNonce(ctx, tx, opened.Nonce[:], stateExpiry(opened)); err != nil {
				if errors.Is(err, idempotency.ErrSpent) {
					end = &ending{res: Result{Kind: ProtocolError, Err: &failure.Error{Code: failure.RequestStateInvalid, Field: "requestState", Message: "was already used"}}}
					return errRollback
				}
				return err
			}
		}
		if a.key != "" {
			r, err := p.keys.Begin(ctx, tx, key, fp)
			if err != nil {
				return err
			}
			switch r.State {
			case idempotency.Replay:
				var s stored
				if err := json.Unmarshal(r.Response, &s); err != nil {
					return err
				}
				rec := cl.record(auditlog.Replayed, "")
				rec.Result = s.Structured
				end = &ending{res: Result{Kind: Complete, Structured: s.Structured, Summary: s.Summary}, rec: rec}
				return errRollback
			case idempotency.Conflict:
				end = &ending{failed: &failure.Error{Code: failure.IdempotencyConflict, Field: "idempotencyKey", Message: "was already used for this tool with other arguments; nothing was done"}}
				return errRollback
			case idempotency.InProgress:
				end = &ending{failed: &failure.Error{Code: failure.RequestInProgress, Field: "idempotencyKey", Message: "the first call with this key is still running; retry to get its answer", RetryAfter: inProgressRetry}}
				return errRollback
			}
		}
		eff, err := cl.tool.Execute(ctx, tx, a.value)
		if err != nil {
			end = &ending{failed: err}
			return errRollback
		}
		body, err := cl.checkOutput(eff, nil)
		if err != nil {
			end = &ending{failed: err}
			return errRollback
		}
		rec := cl.record(auditlog.Allowed, "")
		rec.Result, rec.Details, rec.AppendCanonicalArgs = body, eff.Details, eff.AppendCanonicalArgs
		if p.auditor != nil {
			if err := p.auditor.AppendCall(ctx, tx, rec); err != nil {
				return &auditError{err}
			}
		}
		if a.key != "" {
			resp, err := json.Marshal(stored{Structured: body, Summary: summaryOf(eff)})
			if err != nil {
				return err
			}
			if err := p.keys.Complete(ctx, tx, key, fp, resp); err != nil {
				return err
			}
		}
		out = Result{Kind: Complete, Structured: body, Summary: summaryOf(eff)}
		return nil
	})
	switch {
	case err == nil:
		cl.info.Outcome, cl.info.Code = string(auditlog.Allowed), ""
		cl.observe()
		return out
	case end != nil && end.failed != nil:
		return cl.fail(end.failed)
	case end != nil && end.res.Kind == ProtocolError:
		return cl.protocolError(end.res.Err)
	case end != nil:
		return cl.finish(end.rec, end.res)
	}
	// The transaction failed: nothing was done.
	var ae *auditError
	if errors.As(err, &ae) {
		return cl.auditFailed(ae.err, Result{})
	}
	if ctx.Err() != nil {
		return cl.fail(&failure.Error{Code: failure.Unavailable, Message: "the call was cancelled before it committed; nothing was done", Err: err})
	}
	return cl.fail(&failure.Error{Code: failure.Unavailable, Message: "the store could not run the call; nothing was done, retry later", RetryAfter: time.Second, Err: err})
}

// errRollback ends a transaction that must not commit, with its answer
// already decided.
var errRollback = errors.New("rolled back")

// auditError is an audit append that failed inside the transaction.
type auditError struct{ err error }

func (e *auditError) Error() string { return "audit: " + e.err.Error() }
func (e *auditError) Unwrap() error { return e.err }

// spendOnce spends the nonce of a read's request state in a transaction of
// its own, so that a state opens one round only. It reports whether the
// call ends here, with res.
func (p *Pipeline) spendOnce(ctx context.Context, cl *callState, opened *reqstate.Opened) (res Result, ended bool) {
	if p.db == nil {
		return Result{}, false // no shared store: expiry alone bounds a state's use
	}
	err := p.db.InTx(ctx, func(ctx context.Context, tx store.Tx) error {
		return p.keys.SpendNonce(ctx, tx, opened.Nonce[:], stateExpiry(opened))
	})
	switch {
	case err == nil:
		return Result{}, false
	case errors.Is(err, idempotency.ErrSpent):
		return cl.protocolError(&failure.Error{Code: failure.RequestStateInvalid, Field: "requestState", Message: "was already used"}), true
	}
	return cl.fail(&failure.Error{Code: failure.Unavailable, Message: "the store could not check the request state; retry later", RetryAfter: time.Second, Err: err}), true
}
