package pipeline

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/cobranca/cobranca/internal/approval"
	"github.com/cobranca/cobranca/internal/auditlog"
	"github.com/cobranca/cobranca/internal/auth"
	"github.com/cobranca/cobranca/internal/failure"
	"github.com/cobranca/cobranca/internal/reqstate"
	"github.com/cobranca/cobranca/internal/store"
)

// approvalInput is the id of the approval's input request.
const approvalInput = "approval"

// approvalBinding stands for the arguments in the binding of an approval's
// request state (the approval holds their digest).
const approvalBinding = "approval"

// requester is who asks for a call, as an approval records it.
func requester(pr *auth.Principal) approval.Requester {
	if pr == nil {
		return approval.Requester{}
	}
	return approval.Requester{Subject: pr.Subject, Client: pr.ClientID, Actor: pr.Actor}
}

// approval decides a critical call. It reports the id of the approved action
// the call executes, or ends the call with res: the request to approve it
// (a pending action recorded, or found still pending), or the refusal.
//
// A 2026-07-28 client's retry names its approval in the request state; an
// older client's retry is matched to the approval of the same call
// (requester, tool, and the digest of the arguments with the key): for it,
// other arguments are another call, with an approval of its own.
func (p *Pipeline) approval(ctx context.Context, cl *callState, opened *reqstate.Opened) (id string, res Result, ended bool) {
	c, t, a := cl.call, cl.tool, cl.args
	if err := a.fingerprint(); err != nil {
		return "", cl.fail(err), true
	}
	if c.Client.InputRequests && !c.Client.ElicitationURL {
		res := cl.protocolError(&failure.Error{Code: failure.MissingClientCapability, Message: "this call needs a person's approval at a URL: declare the elicitation capability (url mode)"})
		res.RequiredCapabilities = map[string]any{"elicitation": map[string]any{"url": map[string]any{}}}
		return "", res, true
	}
	who := requester(c.Principal)
	var act *approval.Action
	var err error
	switch {
	case opened != nil:
		if len(opened.Payload) < 2 || opened.Payload[0] != markApprove {
			return "", cl.protocolError(&failure.Error{Code: failure.RequestStateInvalid, Field: "requestState", Message: "is not the state of this call's approval"}), true
		}
		act, err = p.approvals.Get(ctx, p.db, string(opened.Payload[1:]))
		switch {
		case errors.Is(err, approval.ErrNotFound):
			return "", cl.protocolError(&failure.Error{Code: failure.RequestStateInvalid, Field: "requestState", Message: "names no approval"}), true
		case err != nil:
			return "", cl.fail(storeDown(err)), true
		case act.Requester != who || act.Tool != t.Contract.Name:
			return "", cl.protocolError(&failure.Error{Code: failure.RequestStateInvalid, Field: "requestState", Message: "names an approval of another caller or tool"}), true
		case act.Digest != a.bound:
			return "", cl.fail(&failure.Error{Code: failure.ApprovalMismatch, Field: "arguments", Message: "are not those of the call approval " + act.ID + " is for (the idempotencyKey included); nothing was done"}), true
		}
	default:
		act, err = p.approvals.Find(ctx, p.db, who, t.Contract.Name, a.bound)
		if err != nil && !errors.Is(err, approval.ErrNotFound) {
			return "", cl.fail(storeDown(err)), true
		}
	}
	if act != nil && act.State == approval.Executed {
		// Run by another replica's retry since this call looked at its key
		// (step 5): the approval is marked executed in the transaction that
		// stores that call's answer under the key, which is this call's too.
		if a.key != "" {
			if res, ended := p.peek(ctx, cl); ended {
				return "", res, true
			}
		}
		if opened == nil {
			act = nil // used up: this call, made again without a key, is a new one
		}
	}
	if act == nil {
		// A person is asked to approve only a call that cites its dry run,
		// where the tool's is mandatory; the approval then binds the plan.
		if err := p.citedDryRun(ctx, p.db, cl); err != nil {
			return "", cl.fail(err), true
		}
		preview, err := safely(t, func() (string, error) { return t.Preview(ctx, p.db, a.value) })
		if err != nil {
			return "", cl.fail(err), true
		}
		// Asking a person is what the critical budget counts: once per
		// approval asked for, not per call (a dry run, a poll of a pending
		// approval, the approved retry, a repeat and a call its preview
		// refuses — its plan moved, it would do nothing — spend only the
		// write budget, step 4).
		if p.limits != nil {
			if err := p.limits.Approval(ctx, budgetKey(c.Principal)); err != nil {
				return "", cl.fail(err), true
			}
		}
		if act, err = p.approvals.Create(ctx, p.db, t.Contract.Name, a.bound, preview, t.Contract.SideEffects.Changes, who); err != nil {
			return "", cl.fail(storeDown(err)), true
		}
	}
	if fe := refusal(act); fe != nil {
		return "", cl.fail(fe), true
	}
	if act.State == approval.Approved {
		return act.ID, Result{}, false
	}
	return "", p.askApproval(cl, act), true
}

// refusal is the answer to a call whose approval cannot run it (nil for
// one pending or approved).
func refusal(act *approval.Action) *failure.Error {
	switch act.State {
	case approval.Pending, approval.Approved:
		return nil
	case approval.Rejected:
		return &failure.Error{Code: failure.ApprovalRejected, Message: "a person rejected this call (approval " + act.ID + "); nothing was done"}
	case approval.Executed:
		return &failure.Error{Code: failure.ApprovalExpired, Message: "approval " + act.ID + " was used by the call it approved; nothing was done. To ask again, call with a new idempotencyKey"}
	}
	return &failure.Error{Code: failure.ApprovalExpired, Message: "approval " + act.ID + " expired before the call ran; nothing was done. To ask again, call with a new idempotencyKey"}
}

// approvalURL is where a person decides act.
func (p *Pipeline) approvalURL(act *approval.Action) string {
	return p.publicURL + "/approvals/" + act.ID
}

// askApproval answers a call whose approval is pending: a URL-mode
// elicitation with a request state naming the approval, or, for a client
// that cannot be asked (older than 2026-07-28), approval_required with the
// approval's id and URL.
func (p *Pipeline) askApproval(cl *callState, act *approval.Action) Result {
	url := p.approvalURL(act)
	message := "A person must approve " + cl.tool.Contract.Title + " (approval " + act.ID + ") at " + url + " before " + act.Expires.UTC().Format(time.RFC3339) + "; then retry exactly this call. Nothing was done."
	if !cl.call.Client.InputRequests {
		return cl.fail(&failure.Error{Code: failure.ApprovalRequired, Message: message})
	}
	// The state outlives the approval, so that a retry past its expiry is
	// told approval_expired rather than that its state expired.
	b, err := p.binding(cl.call, cl.args)
	if err != nil {
		return cl.fail(err)
	}
	state, err := p.states.Seal(b, append([]byte{markApprove}, act.ID...), act.Expires.Add(p.stateTTL))
	if err != nil {
		return cl.fail(err)
	}
	params, err := json.Marshal(map[string]any{"mode": "url", "message": message, "url": url, "elicitationId": act.ID})
	if err != nil {
		return cl.fail(err)
	}
	return cl.finish(cl.record(auditlog.InputRequired, failure.ApprovalRequired), Result{
		Kind: InputRequired, State: state,
		Inputs: map[string]Input{approvalInput: {Method: "elicitation/create", Params: params}},
	})
}

// executing checks, in the transaction of the call's effect, that its
// approval still runs it, and marks it executed there: the call runs once,
// whichever replica runs it. A failure is the call's answer.
func (p *Pipeline) executing(ctx context.Context, tx store.Tx, id string) error {
	act, err := p.approvals.Executing(ctx, tx, id)
	if err != nil {
		return err
	}
	if fe := refusal(act); fe != nil {
		return fe
	}
	if act.State != approval.Approved {
		return &failure.Error{Code: failure.ApprovalRequired, Message: "approval " + act.ID + " is pending again; nothing was done"}
	}
	s := p.approvals.MarkExecutedStmt(id)
	n, err := tx.Exec(ctx, s.SQL, s.Args...)
	if err != nil {
		return err
	}
	if n != 1 {
		return errors.New("approval " + id + ": not marked executed")
	}
	return nil
}

// storeDown is the answer when the store cannot keep or read an approval.
func storeDown(err error) *failure.Error {
	return &failure.Error{Code: failure.Unavailable, Message: "the store could not check the approval; nothing was done, retry later", RetryAfter: time.Second, Err: err}
}
