package pipeline

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"time"

	"github.com/cobranca/cobranca/internal/auditlog"
	"github.com/cobranca/cobranca/internal/contract"
	"github.com/cobranca/cobranca/internal/failure"
	"github.com/cobranca/cobranca/internal/idempotency"
	"github.com/cobranca/cobranca/internal/reqstate"
	"github.com/cobranca/cobranca/internal/store"
)

// inProgressRetry is when to come back after request_in_progress.
const inProgressRetry = 500 * time.Millisecond

// ending is how the transaction of a call ended when it was not committed
// with the effect: a failure, or a repeat's stored response.
type ending struct {
	failed error
	replay []byte
	// reconfirm: what the call would do now is not what the person
	// confirmed; preview is what it would do.
	reconfirm bool
	preview   string
}

// execute runs a call of a tool with side effects in one transaction:
// reserve the key, run the tool, check its output, append the audit event,
// store the response, commit. If any step fails nothing happened, and the
// answer says so. The transaction does not follow the caller's
// cancellation: a client that leaves while it commits must not be told
// "nothing was done" of a call that committed; txTimeout bounds it instead.
func (p *Pipeline) execute(ctx context.Context, cl *callState) Result {
	a := cl.args
	var fp []byte
	key := idempotency.Key{Principal: callerKey(cl.call.Principal), Tool: cl.tool.Contract.Name, Key: a.key}
	if a.key != "" {
		if err := a.fingerprint(); err != nil {
			return cl.fail(err)
		}
		fp = a.digest[:]
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), txTimeout)
	defer cancel()
	var out Result
	var end *ending
	var done auditlog.Outcome // how a committed call is audited
	err := p.db.InTx(ctx, func(ctx context.Context, tx store.Tx) error {
		end, out = nil, Result{}
		replayed := false // a naturally idempotent tool's key, already complete
		if a.key != "" {
			r, err := p.keys.Begin(ctx, tx, key, fp)
			if err != nil {
				return err
			}
			switch r.State {
			case idempotency.Replay: // the first call committed since peek looked
				if !cl.tool.rerun {
					end = &ending{replay: r.Response}
					return errRollback
				}
				// A naturally idempotent tool runs again and answers as
				// it does by itself; its answer was never stored.
				replayed = true
			case idempotency.Conflict:
				end = &ending{failed: conflictError()}
				return errRollback
			case idempotency.InProgress:
				end = &ending{failed: inProgressError()}
				return errRollback
			}
		}
		if cl.approval != "" {
			if err := p.executing(ctx, tx, cl.approval); err != nil {
				if _, ok := failure.As(err); !ok {
					return err
				}
				end = &ending{failed: err}
				return errRollback
			}
		}
		if cl.approval == "" && cl.confirmed == nil {
			// A call no person approved or confirmed runs only on the plan
			// of its caller's dry run, where the tool's is mandatory.
			if err := p.citedDryRun(ctx, tx, cl); err != nil {
				if _, ok := failure.As(err); !ok {
					return err
				}
				end = &ending{failed: err}
				return errRollback
			}
		}
		if cl.confirmed != nil {
			// The person confirmed a preview read before this transaction:
			// the call runs only if it still does exactly that, as read now,
			// in the transaction (a Preview given a Tx locks what it reads).
			preview, err := safely(cl.tool, func() (string, error) { return cl.tool.Preview(ctx, tx, a.value) })
			if err != nil {
				end = &ending{failed: err}
				return errRollback
			}
			if d := previewDigest(preview); !bytes.Equal(d[:], *cl.confirmed) {
				end = &ending{reconfirm: true, preview: preview}
				return errRollback
			}
		}
		eff, err := safely(cl.tool, func() (Effect, error) { return cl.tool.Execute(ctx, tx, a.value) })
		if err != nil {
			end = &ending{failed: err}
			return errRollback
		}
		body, err := cl.checkOutput(eff, nil)
		if err != nil {
			end = &ending{failed: err}
			return errRollback
		}
		outcome := auditlog.Allowed
		if eff.Unchanged {
			outcome = auditlog.Unchanged
		}
		rec := cl.record(outcome, "")
		rec.Result, rec.Details, rec.AppendCanonicalArgs = body, cl.details(eff.Details), eff.AppendCanonicalArgs
		if p.auditor != nil {
			if err := p.auditor.AppendCall(ctx, tx, rec); err != nil {
				return &auditError{err}
			}
		}
		if a.key != "" && !replayed {
			// A naturally idempotent tool's answer is not kept (it may hold
			// a credential, a signed URL): the key keeps its fingerprint.
			stored := keep(nil, "")
			if !cl.tool.rerun {
				stored = keep(body, summaryOf(eff))
			}
			s, err := p.keys.CompleteStmt(tx, key, fp, stored)
			if err != nil {
				return err
			}
			tx.Defer(s) // with the audit event, in the commit's round trip
		}
		out = Result{Kind: Complete, Structured: body, Summary: summaryOf(eff)}
		done = outcome
		return nil
	})
	switch {
	case err == nil:
		cl.info.Outcome, cl.info.Code = string(done), ""
		cl.observe()
		return out
	case end != nil && end.failed != nil:
		return cl.fail(end.failed)
	case end != nil && end.reconfirm:
		return p.askConfirmation(cl, end.preview, true)
	case end != nil:
		return cl.replay(end.replay)
	}
	// The transaction failed: nothing was done.
	var ae *auditError
	if errors.As(err, &ae) {
		return cl.auditFailed(ae.err, Result{})
	}
	return cl.fail(&failure.Error{Code: failure.Unavailable, Message: "the store could not run the call; nothing was done, retry later", RetryAfter: time.Second, Err: err})
}

// txTimeout bounds the transaction of a call with side effects.
const txTimeout = 30 * time.Second

// keep encodes a response kept for an idempotency key's repeats: the
// summary's length (uvarint), the summary, then the structured result's
// bytes exactly as sent (nothing re-encodes them: a repeat answers them
// byte for byte).
func keep(body []byte, summary string) []byte {
	b := binary.AppendUvarint(make([]byte, 0, binary.MaxVarintLen64+len(summary)+len(body)), uint64(len(summary)))
	return append(append(b, summary...), body...)
}

// unstore decodes what keep encoded.
func unstore(b []byte) (body []byte, summary string, err error) {
	n, w := binary.Uvarint(b)
	if w <= 0 || n > uint64(len(b)-w) {
		return nil, "", errors.New("stored response is malformed")
	}
	summary = string(b[w : w+int(n)])
	if body = b[w+int(n):]; len(body) == 0 {
		body = nil
	}
	return body, summary, nil
}

// errRollback ends a transaction that must not commit, with its answer
// already decided.
var errRollback = errors.New("rolled back")

// auditError is an audit append that failed inside the transaction.
type auditError struct{ err error }

func (e *auditError) Error() string { return "audit: " + e.err.Error() }
func (e *auditError) Unwrap() error { return e.err }

// auditFailed is the Fail of an audit event's deferred INSERT.
func auditFailed(err error) error { return &auditError{err} }

// spendOnce spends the nonce of an opened request state in a transaction
// of its own, so that a state opens one round only. It reports whether the
// call ends here, with res.
func (p *Pipeline) spendOnce(ctx context.Context, cl *callState, opened *reqstate.Opened) (res Result, ended bool) {
	if p.db == nil {
		return Result{}, false // no shared store: expiry alone bounds a state's use
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), txTimeout)
	defer cancel()
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

// peek looks a call's idempotency key up, changing nothing (the
// transaction is rolled back): it reports whether the call ends here — a
// repeat answered with the stored response, a conflict, a key in use — or
// goes on (a fresh key). A dry run only learns of a conflict.
func (p *Pipeline) peek(ctx context.Context, cl *callState) (res Result, ended bool) {
	a := cl.args
	if err := a.fingerprint(); err != nil {
		return cl.fail(err), true
	}
	key := idempotency.Key{Principal: callerKey(cl.call.Principal), Tool: cl.tool.Contract.Name, Key: a.key}
	var r idempotency.Reservation
	err := p.db.InTx(ctx, func(ctx context.Context, tx store.Tx) error {
		var err error
		if r, err = p.keys.Begin(ctx, tx, key, a.digest[:]); err != nil {
			return err
		}
		return errRollback
	})
	if !errors.Is(err, errRollback) {
		return cl.fail(&failure.Error{Code: failure.Unavailable, Message: "the store could not check the idempotency key; nothing was done, retry later", RetryAfter: time.Second, Err: err}), true
	}
	switch {
	case r.State == idempotency.Conflict:
		return cl.fail(conflictError()), true
	case a.dryRun:
		return Result{}, false
	case r.State == idempotency.Replay && !cl.tool.rerun:
		return cl.replay(r.Response), true
	case r.State == idempotency.InProgress:
		return cl.fail(inProgressError()), true
	}
	return Result{}, false
}

func conflictError() *failure.Error {
	return &failure.Error{Code: failure.IdempotencyConflict, Field: contract.ArgIdempotencyKey, Message: "was already used for this tool with other arguments; nothing was done"}
}

func inProgressError() *failure.Error {
	return &failure.Error{Code: failure.RequestInProgress, Field: contract.ArgIdempotencyKey, Message: "the first call with this key is still running; retry to get its answer", RetryAfter: inProgressRetry}
}

// replay answers a repeat with the response stored for its key, byte for
// byte, and audits it as replayed: no new effect.
func (cl *callState) replay(stored []byte) Result {
	body, summary, err := unstore(stored)
	if err != nil {
		return cl.fail(err)
	}
	rec := cl.record(auditlog.Replayed, "")
	rec.Result = body
	return cl.finish(rec, Result{Kind: Complete, Structured: body, Summary: summary})
}
