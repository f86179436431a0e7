package collections

import (
	"context"
	"errors"
	"fmt"

	"github.com/cobranca/cobranca/internal/contract"
	"github.com/cobranca/cobranca/internal/customers"
	"github.com/cobranca/cobranca/internal/failure"
	"github.com/cobranca/cobranca/internal/pipeline"
	"github.com/cobranca/cobranca/internal/reminders"
	"github.com/cobranca/cobranca/internal/store"
	"github.com/google/jsonschema-go/jsonschema"
)

// SetContactStatusName is the name of the tool that sets a customer's
// contact status.
const SetContactStatusName = "collections.set_contact_status"

// setContactStatusArgs are the tool's arguments (idempotencyKey is the
// pipeline's).
type setContactStatusArgs struct {
	CustomerID  string `json:"customerId"`
	Status      string `json:"status"`
	PausedUntil string `json:"pausedUntil,omitempty"`
	Reason      string `json:"reason"`
}

// setContactStatusResult is the tool's structured result.
type setContactStatusResult struct {
	CustomerID      string `json:"customerId"`
	PreviousStatus  string `json:"previousStatus"`
	Status          string `json:"status"`
	PausedUntil     string `json:"pausedUntil,omitempty"`
	Changed         bool   `json:"changed"`
	DraftsDiscarded int64  `json:"draftsDiscarded"`
}

func setContactStatusContract() contract.Contract {
	return contract.Contract{
		Name:            SetContactStatusName,
		ContractVersion: "1.0.0",
		Title:           "Set a customer's contact status",
		Description: "Use when a person decided that a customer may be contacted again (contactable), must not be contacted " +
			"before a date (paused, with pausedUntil), or must never be contacted (do_not_contact), and why. " +
			"A person confirms the exact change first. do_not_contact also discards the customer's open reminder drafts. " +
			"Setting the status the customer already has changes nothing.",
		Category:     "collections",
		RiskLevel:    contract.High,
		InputSchema:  setContactStatusInputSchema(),
		OutputSchema: setContactStatusOutputSchema(),
		Permissions:  []string{"customers:write"},
		SideEffects: contract.SideEffects{
			Changes: []string{
				"the customer's contact status, pause date and reason, who set them and when",
				"with do_not_contact, the customer's open reminder drafts become discarded",
			},
			Destructive: true, // the previous status and reason are overwritten
			OnRepeat: "A repeat with the same idempotencyKey and arguments returns the first answer and changes nothing. " +
				"Setting the status (and pause date) the customer already has, with any key, changes nothing, keeps the " +
				"stored reason and answers changed: false, draftsDiscarded: 0 (audited as unchanged).",
		},
		AuditEvent: "collections.contact_status.set",
		FailureModes: []contract.FailureMode{
			notFoundMode,
		},
		Idempotency: contract.Idempotency{Kind: "key", Description: "idempotencyKey is required: a retry with the same key " +
			"and arguments returns the first answer. The change is also naturally idempotent: a status the customer already has is not set again."},
		DryRun: contract.ModeNone,
	}
}

func setContactStatusInputSchema() *jsonschema.Schema {
	paused := string(customers.Paused)
	return &jsonschema.Schema{
		Type:                 "object",
		Description:          "The customer, its new contact status and why.",
		AdditionalProperties: &jsonschema.Schema{Not: &jsonschema.Schema{}},
		Required:             []string{argCustomerID, "reason", "status"},
		Properties: map[string]*jsonschema.Schema{
			argCustomerID: customerIDSchema(),
			"status":      statusSchema("The new contact status."),
			"pausedUntil": pausedUntilSchema("With status paused, and only then: the first day the customer may be contacted " +
				"again (ISO calendar date, YYYY-MM-DD), later than today (UTC)."),
			"reason": textSchema("Why the status changes, as the person said it; shown to the person who confirms and kept with the status."),
		},
		// pausedUntil is required with paused and refused otherwise.
		If:   &jsonschema.Schema{Properties: map[string]*jsonschema.Schema{"status": {Const: jsonschema.Ptr[any](paused)}}, Required: []string{"status"}},
		Then: &jsonschema.Schema{Required: []string{"pausedUntil"}},
		Else: &jsonschema.Schema{Not: &jsonschema.Schema{Required: []string{"pausedUntil"}}},
	}
}

func setContactStatusOutputSchema() *jsonschema.Schema {
	return &jsonschema.Schema{
		Type:                 "object",
		Description:          "What the customer's contact status was and is.",
		AdditionalProperties: &jsonschema.Schema{Not: &jsonschema.Schema{}},
		Required:             []string{argCustomerID, "changed", "draftsDiscarded", "previousStatus", "status"},
		Properties: map[string]*jsonschema.Schema{
			argCustomerID:     {Type: "string", Description: "The customer's id, as given."},
			"previousStatus":  statusSchema("The status before the call."),
			"status":          statusSchema("The status now."),
			"pausedUntil":     pausedUntilSchema("With status paused: the first day the customer may be contacted again."),
			"changed":         {Type: "boolean", Description: "false when the customer already had this status (and pause date): nothing was written."},
			"draftsDiscarded": {Type: "integer", Minimum: ptr(0.0), Description: "How many open reminder drafts of the customer were discarded (do_not_contact)."},
		},
	}
}

// setContactStatusDecode reads the arguments and checks everything but the
// pause date's being later than today, which needs the call's clock
// (Preview and Execute check it).
func setContactStatusDecode(b []byte) (any, int, error) {
	v, n, err := pipeline.Strict[setContactStatusArgs]()(b)
	if err != nil {
		return nil, 0, err
	}
	a := v.(*setContactStatusArgs)
	if p := customers.IDProblem(a.CustomerID); p != "" {
		return nil, 0, &failure.Error{Code: failure.InvalidArguments, Field: argCustomerID, Message: p}
	}
	if fe := a.change().Validate(""); fe != nil { // "" : every date is later
		return nil, 0, fe
	}
	return a, n, nil
}

// change is the change a asks for, by no one yet.
func (a *setContactStatusArgs) change() customers.Change {
	return customers.Change{Status: customers.Status(a.Status), PausedUntil: a.PausedUntil, Reason: a.Reason}
}

// setContactStatusPreview is what the person confirms: the customer (id and
// name), its current and new status, the reason, and the drafts a
// do_not_contact discards. Customer text is quoted, as data.
func setContactStatusPreview(ctx context.Context, q store.Querier, v any) (string, error) {
	a := v.(*setContactStatusArgs)
	ch := a.change()
	today := customers.Today(pipeline.Now(ctx))
	if fe := ch.Validate(today); fe != nil {
		return "", fe
	}
	// In the call's transaction (the pipeline checking the confirmed preview
	// still holds), the customer is locked until Execute changes it.
	var c customers.Customer
	var err error
	if tx, ok := q.(store.Tx); ok {
		c, err = customers.GetForUpdate(ctx, tx, a.CustomerID)
	} else {
		c, err = customers.Get(ctx, q, a.CustomerID)
	}
	if err != nil {
		return "", customerError(err)
	}
	who := fmt.Sprintf("customer %s (%s)", quote(c.ID), quote(c.Name))
	if ch.Same(c, today) {
		return fmt.Sprintf("leave %s as it is: it already has the status %s; nothing would change.", who, inEffectText(c, today)), nil
	}
	s := fmt.Sprintf("change the contact status of %s from %s to %s, for the reason %s",
		who, inEffectText(c, today), statusText(ch.Status, ch.PausedUntil), quote(ch.Reason))
	if ch.Status == customers.DoNotContact {
		open, err := reminders.OpenDrafts(ctx, q, c.ID)
		if err != nil {
			return "", err
		}
		s += fmt.Sprintf("; and discard its %d open reminder draft(s)", len(open))
	}
	return s + ".", nil
}

// inEffectText is the status c has in effect on today, as the preview
// shows it: a pause that is over is contactable, and says when it ended.
func inEffectText(c customers.Customer, today string) string {
	if s, ended := c.InEffect(today); ended != "" {
		return string(s) + " (a pause ended on " + ended + ")"
	}
	return statusText(c.Status, c.PausedUntil)
}

// statusText is a status as the preview shows it.
func statusText(s customers.Status, pausedUntil string) string {
	if s == customers.Paused {
		return string(s) + " until " + pausedUntil
	}
	return string(s)
}

// setContactStatusExecute sets the status in the pipeline's transaction,
// the customer locked from the read to the write; do_not_contact discards
// the open drafts in the same transaction.
func setContactStatusExecute(ctx context.Context, tx store.Tx, v any) (pipeline.Effect, error) {
	a := v.(*setContactStatusArgs)
	now := pipeline.Now(ctx)
	ch := a.change()
	if fe := ch.Validate(customers.Today(now)); fe != nil {
		return pipeline.Effect{}, fe
	}
	pr := pipeline.PrincipalFrom(ctx)
	if pr == nil { // the pipeline refuses a call without a caller before this
		return pipeline.Effect{}, errors.New("set contact status: no caller")
	}
	ch.SetBy, ch.SetByActor = pr.Subject, pr.Actor
	c, err := customers.GetForUpdate(ctx, tx, a.CustomerID)
	if err != nil {
		return pipeline.Effect{}, customerError(err)
	}
	today := customers.Today(now)
	previous, _ := c.InEffect(today)
	out := setContactStatusResult{CustomerID: c.ID, PreviousStatus: string(previous), Status: string(ch.Status), PausedUntil: ch.PausedUntil}
	if ch.Same(c, today) {
		return pipeline.Effect{
			Structured: &out,
			Summary:    "The customer already had this contact status; nothing changed.",
			Details:    map[string]int64{"changed": 0, "draftsDiscarded": 0},
			Unchanged:  true,
		}, nil
	}
	if _, err := customers.SetStatus(ctx, tx, c.ID, ch, now); err != nil {
		return pipeline.Effect{}, customerError(err)
	}
	out.Changed = true
	if ch.Status == customers.DoNotContact {
		if out.DraftsDiscarded, err = reminders.DiscardOpen(ctx, tx, c.ID, now); err != nil {
			return pipeline.Effect{}, err
		}
	}
	return pipeline.Effect{
		Structured: &out,
		Summary: fmt.Sprintf("Contact status changed from %s to %s; %d open reminder draft(s) discarded.",
			out.PreviousStatus, out.Status, out.DraftsDiscarded),
		Details: map[string]int64{"changed": 1, "draftsDiscarded": out.DraftsDiscarded},
	}, nil
}
