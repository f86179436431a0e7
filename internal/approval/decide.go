package approval

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/cobranca/cobranca/internal/auditlog"
	"github.com/cobranca/cobranca/internal/auth"
	"github.com/cobranca/cobranca/internal/contract"
	"github.com/cobranca/cobranca/internal/failure"
	"github.com/cobranca/cobranca/internal/store"
)

// Codes of the refusals a person deciding an approval can get. They are the approver's, never
// a tool's: an agent's retry never sees them.
const (
	CodeInvalidToken        failure.Code = "invalid_token"         // the token does not verify for this server
	CodeApproverIsAgent     failure.Code = "approver_is_agent"     // an agent's token: only a person decides
	CodeApproverLacksRole   failure.Code = "approver_lacks_role"   // a person without any of the contract's approverRoles
	CodeApproverIsRequester failure.Code = "approver_is_requester" // the person the agent acts for, where the contract wants someone else
	CodeNotFound            failure.Code = "approval_not_found"    // no approval has the id
	CodeDecided             failure.Code = "approval_decided"      // the approval is no longer pending
)

// The audit events of decisions. Their Tool field names the approval and its tool (Object).
const (
	EventApproved = "approval.approved"
	EventRejected = "approval.rejected"
)

// Verifier checks an access token of this server's issuer (auth.Authenticator).
type Verifier interface {
	Verify(ctx context.Context, token string) (*auth.Principal, error)
}

// Appender appends an audit event in a transaction (auditlog.Log).
type Appender interface {
	Append(ctx context.Context, tx store.Tx, ev auditlog.Event) error
}

// Decider lets people decide actions: the one check every surface that approves (the CLI, the
// approval page) runs.
type Decider struct {
	Store    *Store
	DB       store.DB
	Verifier Verifier
	Audit    Appender
	// Contract returns the contract of a served tool (nil for none).
	Contract func(tool string) *contract.Contract
	// StepUpACR is COBRANCA_STEPUP_ACR: the acr values a step-up accepts (any, when empty).
	StepUpACR []string
	Now       func() time.Time
}

// Object names, in an audit event's Tool field, the approval and the tool it is for.
func Object(a *Action) string { return "approval:" + a.ID + " tool:" + a.Tool }

// Decide approves (approve) or rejects the pending action id for the person whose access
// token is token: the token is verified, then DecideAs decides. A token that does not verify
// is CodeInvalidToken, and nothing is audited (nobody verified).
func (d *Decider) Decide(ctx context.Context, id, token string, approve bool) (*Action, error) {
	pr, err := d.Verifier.Verify(ctx, token)
	if err != nil {
		return nil, &failure.Error{Code: CodeInvalidToken, Field: "token", Message: "is not a valid access token of this server's issuer", Err: err}
	}
	return d.DecideAs(ctx, id, pr, approve)
}

// DecideAs approves (approve) or rejects the pending action id as pr, a verified principal
// (an access token's, from Decide; a signed-in person's, from the approval page), and audits
// the decision in its transaction. The person must be one (not an agent), hold one of the
// contract's approverRoles (RolesFor), pass the contract's step-up (StepUpFor) and, unless the
// contract lets them, not be the person the call was asked for. A refusal is a
// *failure.Error, audited as a rejected decision, and changes nothing; a step-up refusal wraps
// the *auth.StepUpError naming what to ask the issuer for.
func (d *Decider) DecideAs(ctx context.Context, id string, pr *auth.Principal, approve bool) (*Action, error) {
	event := EventRejected
	if approve {
		event = EventApproved
	}
	var a *Action
	err := d.DB.InTx(ctx, func(ctx context.Context, tx store.Tx) error {
		var err error
		if a, err = d.Store.Get(ctx, tx, id); err != nil {
			return err
		}
		if a.State != Pending {
			return decided(a)
		}
		if err := d.authorize(pr, a); err != nil {
			return err
		}
		a, err = d.Store.Decide(ctx, tx, id, approve, Approver{Subject: pr.Subject, ACR: pr.ACR, AuthTime: pr.AuthTime})
		if errors.Is(err, ErrDecided) {
			return decided(a)
		}
		if err != nil {
			return err
		}
		return d.Audit.Append(ctx, tx, d.event(event, auditlog.Allowed, pr, a, ""))
	})
	if errors.Is(err, ErrNotFound) {
		err = &failure.Error{Code: CodeNotFound, Field: "id", Message: "names no approval"}
	}
	if fe, ok := failure.As(err); ok {
		ev := d.event(event, auditlog.Rejected, pr, a, fe.Code)
		if aerr := d.DB.InTx(ctx, func(ctx context.Context, tx store.Tx) error { return d.Audit.Append(ctx, tx, ev) }); aerr != nil {
			return nil, errors.Join(err, aerr)
		}
		return nil, err
	}
	if err != nil {
		return nil, fmt.Errorf("approval %s: %w", id, err)
	}
	return a, nil
}

// StepUpFor returns the step-up a person deciding a call of tool must pass, and whether its
// contract asks for one: the acr values of COBRANCA_STEPUP_ACR within the contract's max age.
// The approval page asks the issuer for exactly this (acr_values, max_age).
func (d *Decider) StepUpFor(tool string) (auth.StepUp, bool) {
	c := d.Contract(tool)
	if c == nil || !c.StepUpAuth.Required {
		return auth.StepUp{}, false
	}
	return auth.StepUp{ACRValues: slices.Clone(d.StepUpACR), MaxAge: time.Duration(c.StepUpAuth.MaxAgeSeconds) * time.Second}, true
}

// RolesFor returns the roles a person must hold (any one) to decide a call of tool: its
// contract's approverRoles (none for a tool no longer served). The approval page shows them.
func (d *Decider) RolesFor(tool string) []string {
	if c := d.Contract(tool); c != nil {
		return slices.Clone(c.ApproverRoles)
	}
	return nil
}

func decided(a *Action) error {
	return &failure.Error{Code: CodeDecided, Field: "id", Message: "is " + string(a.State) + ", no longer pending: nothing was changed"}
}

// authorize checks that pr may decide a.
func (d *Decider) authorize(pr *auth.Principal, a *Action) error {
	if pr.IsAgent() {
		return &failure.Error{Code: CodeApproverIsAgent, Field: "token", Message: "is an agent's: only a person approves or rejects a call"}
	}
	c := d.Contract(a.Tool)
	if c == nil {
		return &failure.Error{Code: CodeDecided, Field: "id", Message: "is for a tool this server no longer serves: nothing was changed"}
	}
	if !pr.HasAnyRole(c.ApproverRoles) {
		if len(c.ApproverRoles) == 0 { // only a critical contract names roles, and it must
			return &failure.Error{Code: CodeApproverLacksRole, Field: "id", Message: "is for a tool whose contract names no role that may decide it: nothing was changed"}
		}
		return &failure.Error{Code: CodeApproverLacksRole, Field: "token",
			Message: "is a person's without the role deciding this call needs (" + strings.Join(c.ApproverRoles, " or ") + "): ask someone who holds it. Nothing was changed"}
	}
	// The requester rule compares subjects exactly, byte for byte, as OpenID Connect Core §2
	// says sub is compared: "ana" and "Ana" are two people to it. Both come from the one
	// issuer, whose sub names one person for good; an issuer that gives a person two subjects
	// lets that person approve their own call, and no rule here can tell.
	if pr.Subject == a.Requester.Subject && !c.RequesterMayApprove {
		return &failure.Error{Code: CodeApproverIsRequester, Field: "token", Message: "is the requester's: another person must decide this call"}
	}
	if req, ok := d.StepUpFor(a.Tool); ok {
		now := time.Now()
		if d.Now != nil {
			now = d.Now()
		}
		if err := auth.CheckStepUp(req, pr, now); err != nil {
			return &failure.Error{Code: failure.InsufficientUserAuthentication, Field: "token", Message: req.Message() + "; sign in again and retry. Nothing was changed", Err: err}
		}
	}
	return nil
}

func (d *Decider) event(name string, outcome auditlog.Outcome, pr *auth.Principal, a *Action, code failure.Code) auditlog.Event {
	ev := auditlog.Event{Name: name, Subject: pr.Subject, Actor: pr.Actor, ClientID: pr.ClientID, ACR: pr.ACR, Outcome: outcome, FailureCode: string(code)}
	if a != nil {
		ev.Tool = Object(a)
	}
	return ev
}
