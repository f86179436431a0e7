package collections

import (
	"context"
	"fmt"
	"time"

	"github.com/cobranca/cobranca/internal/contract"
	"github.com/cobranca/cobranca/internal/customers"
	"github.com/cobranca/cobranca/internal/failure"
	"github.com/cobranca/cobranca/internal/ledger"
	"github.com/cobranca/cobranca/internal/pipeline"
	"github.com/cobranca/cobranca/internal/store"
	"github.com/cobranca/cobranca/internal/value"
	"github.com/google/jsonschema-go/jsonschema"
)

// What a customer said about an invoice, as records: a promise to pay (record_promise), a
// dispute opened and resolved (open_dispute, resolve_dispute). Each stops or resumes chasing
// the invoice: a send re-reads them when it happens.

// The names of the promise and dispute tools.
const (
	RecordPromiseName  = "collections.record_promise"
	OpenDisputeName    = "collections.open_dispute"
	ResolveDisputeName = "collections.resolve_dispute"
)

// record_promise's arguments are a ledger.PromiseRecord (idempotencyKey is the pipeline's):
// one struct, one set of JSON names, one Validate.

// checkPromise holds the promise to the ledger's rule (PromiseRecord.Validate) but for the date's
// being today or later, which needs the call's clock (recordPromiseExecute checks it).
func checkPromise(r *ledger.PromiseRecord) error {
	if fe := r.Validate(""); fe != nil { // "": every date is today or later
		return fe
	}
	return nil
}

// nilIfNone is fe as an error: nil when fe is (a nil *failure.Error is no error).
func nilIfNone(fe *failure.Error) error {
	if fe == nil {
		return nil
	}
	return fe
}

// promiseResult is record_promise's answer.
type promiseResult struct {
	PromiseID   string `json:"promiseId"`
	InvoiceID   string `json:"invoiceId"`
	AmountCents int64  `json:"amountCents"`
	Currency    string `json:"currency"`
	PromisedFor string `json:"promisedFor"`
	Channel     string `json:"channel"`
	Recorded    bool   `json:"recorded"`
	RecordedAt  string `json:"recordedAt"`
}

// recordPromiseExecute records the promise, or finds it the invoice's current one already.
// RecordPromise locks the invoice and refuses a settled one; the amount is held to what the
// invoice has open as read here.
func recordPromiseExecute(ctx context.Context, tx store.Tx, v any) (pipeline.Effect, error) {
	rec := *v.(*ledger.PromiseRecord)
	now := pipeline.Now(ctx)
	if fe := rec.Validate(customers.Today(now)); fe != nil {
		return pipeline.Effect{}, fe
	}
	by, err := actorOf(ctx)
	if err != nil {
		return pipeline.Effect{}, err
	}
	inv, err := ledger.GetInvoice(ctx, tx, rec.InvoiceID)
	if err != nil {
		return pipeline.Effect{}, ledgerFailure(err, argInvoiceID)
	}
	if p := inv.Promise; p != nil && p.PromiseRecord == rec && !inv.State.Settled() {
		return pipeline.Effect{
			Structured: promiseOut(*p, inv.Currency, false),
			Summary:    "The invoice's promise to pay is already this one; nothing changed.",
			Details:    map[string]int64{"promises": 0},
			Unchanged:  true,
		}, nil
	}
	if !inv.State.Settled() && rec.AmountCents > inv.OpenCents {
		return pipeline.Effect{}, &failure.Error{Code: failure.InvalidArguments, Field: "amountCents",
			Message: "is more than the invoice has open (" + value.FormatMoney(inv.OpenCents, inv.Currency) + ")"}
	}
	p, err := ledger.RecordPromise(ctx, tx, rec, by, now)
	if err != nil {
		return pipeline.Effect{}, ledgerFailure(err, argInvoiceID)
	}
	return pipeline.Effect{
		Structured: promiseOut(p, inv.Currency, true),
		Summary:    "Promise to pay recorded; the invoice is not chased before its date.",
		Details:    map[string]int64{"promises": 1},
	}, nil
}

func promiseOut(p ledger.Promise, currency string, recorded bool) *promiseResult {
	return &promiseResult{PromiseID: p.ID, InvoiceID: p.InvoiceID, AmountCents: p.AmountCents, Currency: currency,
		PromisedFor: p.PromisedFor, Channel: p.Channel, Recorded: recorded, RecordedAt: p.At.UTC().Format(time.RFC3339Nano)}
}

// openDisputeArgs are open_dispute's arguments (idempotencyKey is the pipeline's).
type openDisputeArgs struct {
	InvoiceID string `json:"invoiceId"`
	Reason    string `json:"reason"`
	Note      string `json:"note"`
}

func (a *openDisputeArgs) check() error {
	if fe := idProblem(argInvoiceID, a.InvoiceID); fe != nil {
		return fe
	}
	return nilIfNone(textProblem("note", a.Note))
}

// resolveDisputeArgs are resolve_dispute's arguments (idempotencyKey is the pipeline's).
type resolveDisputeArgs struct {
	InvoiceID string `json:"invoiceId"`
	Outcome   string `json:"outcome"`
	Note      string `json:"note"`
}

func (a *resolveDisputeArgs) check() error {
	if fe := idProblem(argInvoiceID, a.InvoiceID); fe != nil {
		return fe
	}
	return nilIfNone(textProblem("note", a.Note))
}

// disputeResult is open_dispute's and resolve_dispute's answer: the dispute as it is now.
type disputeResult struct {
	DisputeID  string `json:"disputeId"`
	InvoiceID  string `json:"invoiceId"`
	Reason     string `json:"reason"`
	OpenedAt   string `json:"openedAt"`
	Outcome    string `json:"outcome,omitempty"`
	ResolvedAt string `json:"resolvedAt,omitempty"`
}

func disputeOut(d ledger.Dispute) *disputeResult {
	out := &disputeResult{DisputeID: d.ID, InvoiceID: d.InvoiceID, Reason: string(d.Reason), OpenedAt: d.OpenedAt.UTC().Format(time.RFC3339Nano), Outcome: d.Outcome}
	if !d.ResolvedAt.IsZero() {
		out.ResolvedAt = d.ResolvedAt.UTC().Format(time.RFC3339Nano)
	}
	return out
}

func openDisputeExecute(ctx context.Context, tx store.Tx, v any) (pipeline.Effect, error) {
	a := v.(*openDisputeArgs)
	by, err := actorOf(ctx)
	if err != nil {
		return pipeline.Effect{}, err
	}
	d, err := ledger.OpenDispute(ctx, tx, a.InvoiceID, ledger.DisputeReason(a.Reason), a.Note, by, pipeline.Now(ctx))
	if err != nil {
		return pipeline.Effect{}, ledgerFailure(err, argInvoiceID)
	}
	return pipeline.Effect{
		Structured: disputeOut(d),
		Summary:    "Dispute opened; the invoice is not chased while it is open.",
		Details:    map[string]int64{"disputesOpened": 1},
	}, nil
}

func resolveDisputeExecute(ctx context.Context, tx store.Tx, v any) (pipeline.Effect, error) {
	a := v.(*resolveDisputeArgs)
	by, err := actorOf(ctx)
	if err != nil {
		return pipeline.Effect{}, err
	}
	d, err := ledger.ResolveDispute(ctx, tx, a.InvoiceID, a.Outcome, a.Note, by, pipeline.Now(ctx))
	if err != nil {
		return pipeline.Effect{}, ledgerFailure(err, argInvoiceID)
	}
	return pipeline.Effect{
		Structured: disputeOut(d),
		Summary:    fmt.Sprintf("Dispute resolved: %s.", d.Outcome),
		Details:    map[string]int64{"disputesResolved": 1},
	}, nil
}

func recordPromiseContract() contract.Contract {
	return contract.Contract{
		Name:            RecordPromiseName,
		ContractVersion: "1.0.0",
		Title:           "Record a promise to pay",
		Description: "Use when a customer promised to pay an open invoice by a date (today or later), and how they said it " +
			"(phone, e-mail, chat, in person, letter, other): records the promise as the invoice's current one (the latest " +
			"wins). While a promise is pending — its date not passed, the invoice not settled — no reminder about the invoice " +
			"is sent; one prepared before is refused draft_stale when sent.",
		Category:     "collections",
		RiskLevel:    contract.Medium,
		InputSchema:  recordPromiseInputSchema(),
		OutputSchema: recordPromiseOutputSchema(),
		Permissions:  []string{PromisesWriteScope},
		SideEffects: contract.SideEffects{
			Changes: []string{
				"Records the promise (amount, date, channel, note), who recorded it, through which agent, and when: it becomes the " +
					"invoice's promise; earlier ones are kept, never changed.",
			},
			OnRepeat: "A repeat with the same idempotencyKey and arguments returns the first answer and records nothing again. The " +
				"invoice's current promise sent again (same amount, date, channel and note) under any key records nothing and " +
				"answers it (recorded: false, audited unchanged); any other promise is recorded and becomes the current one.",
		},
		AuditEvent: "ledger.promise.recorded",
		FailureModes: []contract.FailureMode{
			{Code: failure.InvalidArguments, Meaning: "An argument does not match the input schema, or breaks a rule it cannot " +
				"state: an invoiceId or note with a character the text rule refuses, white space around the invoiceId, a date " +
				"not on the calendar or before today (UTC), an amount more than the invoice has open; field names it. Nothing " +
				"was recorded."},
			invoiceNotFoundMode,
			{Code: ledger.CodeInvoiceSettled, Meaning: "The invoice is paid, void or written off: nothing is left to promise. Nothing was recorded."},
		},
		Idempotency: contract.Idempotency{Kind: "key", Description: "idempotencyKey is required: a retry with the same key and " +
			"arguments returns the first answer. Besides, the invoice's current promise is not recorded twice."},
		DryRun: contract.ModeNone,
	}
}

func openDisputeContract() contract.Contract {
	return contract.Contract{
		Name:            OpenDisputeName,
		ContractVersion: "1.0.0",
		Title:           "Open a dispute on an invoice",
		Description: "Use when a customer contests an invoice: records why, from a fixed list (wrong_amount, not_received, " +
			"damaged_or_defective, duplicate, already_paid, cancelled, pricing, other), and what they said. While the " +
			"dispute is open the invoice is not chased (a reminder prepared before is refused draft_stale when sent); " +
			"resolve_dispute closes it. An invoice has at most one open dispute.",
		Category:     "collections",
		RiskLevel:    contract.Medium,
		InputSchema:  openDisputeInputSchema(),
		OutputSchema: disputeOutputSchema(false),
		Permissions:  []string{DisputesWriteScope},
		SideEffects: contract.SideEffects{
			Changes: []string{"Opens a dispute on the invoice (reason, note, who opened it, through which agent, and when); a dispute is never removed."},
			OnRepeat: "A repeat with the same idempotencyKey and arguments returns the first answer and opens nothing again. " +
				"Under another key, while the invoice's dispute is open, it is refused " + string(ledger.CodeDisputeOpen) + ".",
		},
		AuditEvent: "ledger.dispute.opened",
		FailureModes: []contract.FailureMode{
			disputeInvalidMode,
			invoiceNotFoundMode,
			{Code: ledger.CodeDisputeOpen, Meaning: "The invoice already has an open dispute (the message says since when): " +
				"resolve it first. Nothing was done."},
		},
		Idempotency: contract.Idempotency{Kind: "key", Description: "idempotencyKey is required: a retry with the same key and " +
			"arguments returns the first answer. Besides, an invoice has one open dispute at a time."},
		DryRun: contract.ModeNone,
	}
}

func resolveDisputeContract() contract.Contract {
	return contract.Contract{
		Name:            ResolveDisputeName,
		ContractVersion: "1.0.0",
		Title:           "Resolve an invoice's dispute",
		Description: "Use when the open dispute on an invoice is decided: upheld (the customer was right: correct the invoice " +
			"with record_invoices — a new amount, or void — as the operator's system does) or rejected (the debt stands), " +
			"with a note saying why. Once resolved, the invoice may be chased again if it is still open.",
		Category:     "collections",
		RiskLevel:    contract.Medium,
		InputSchema:  resolveDisputeInputSchema(),
		OutputSchema: disputeOutputSchema(true),
		Permissions:  []string{DisputesWriteScope},
		SideEffects: contract.SideEffects{
			Changes: []string{"Closes the invoice's open dispute with its outcome, note, who resolved it, through which agent, and when; it is kept, never removed."},
			OnRepeat: "A repeat with the same idempotencyKey and arguments returns the first answer and changes nothing. Under " +
				"another key, once the dispute is resolved, it is refused " + string(ledger.CodeNoOpenDispute) + ".",
		},
		AuditEvent: "ledger.dispute.resolved",
		FailureModes: []contract.FailureMode{
			disputeInvalidMode,
			invoiceNotFoundMode,
			{Code: ledger.CodeNoOpenDispute, Meaning: "The invoice has no open dispute (none was opened, or it is resolved " +
				"already). Nothing was done."},
		},
		Idempotency: contract.Idempotency{Kind: "key", Description: "idempotencyKey is required: a retry with the same key and " +
			"arguments returns the first answer. Besides, a dispute is resolved once."},
		DryRun: contract.ModeNone,
	}
}

// disputeInvalidMode is the dispute tools' invalid_arguments.
var disputeInvalidMode = contract.FailureMode{Code: failure.InvalidArguments, Meaning: "An argument does not match the input " +
	"schema, or breaks a rule it cannot state: an invoiceId or note with a character the text rule refuses, white space " +
	"around the invoiceId; field names it. Nothing was done."}

func recordPromiseDecode(b []byte) (any, int, error) { return checked(b, checkPromise) }

func openDisputeDecode(b []byte) (any, int, error) { return checked(b, (*openDisputeArgs).check) }

func resolveDisputeDecode(b []byte) (any, int, error) { return checked(b, (*resolveDisputeArgs).check) }

func recordPromiseInputSchema() *jsonschema.Schema {
	s := mustFor[ledger.PromiseRecord]()
	sealObject(s)
	s.Description = "The invoice, and what the customer promised."
	p := s.Properties
	p[argInvoiceID] = invoiceIDSchema("The invoice promised (its id in the ledger),")
	p["amountCents"] = ledgerAmountSchema("How much the customer promised to pay, in the invoice's currency: at most what it has open.")
	p["promisedFor"] = ledgerDateSchema("The day the customer promised to pay by: today (UTC) or later.")
	ch := p["channel"]
	ch.Enum = enum(ledger.Channels)
	ch.Description = "How the promise was made."
	p["note"] = textSchema("What the customer said, in short, as the person who heard it wrote it.")
	return s
}

func recordPromiseOutputSchema() *jsonschema.Schema {
	s := mustFor[promiseResult]()
	closeObject(s)
	s.Description = "The invoice's current promise to pay."
	p := s.Properties
	p["promiseId"].Description = "The promise's id."
	p[argInvoiceID].Description = "The invoice, as given."
	p["amountCents"] = ledgerAmountSchema("The amount promised.")
	currencyRules(p["currency"], "The invoice's currency (ISO 4217).")
	dated(p["promisedFor"], "The day promised.")
	p["channel"].Enum = enum(ledger.Channels)
	p["channel"].Description = "How the promise was made."
	p["recorded"].Description = "true: this call recorded it; false: it was the invoice's promise already, and nothing changed."
	at := p["recordedAt"]
	at.Format = "date-time"
	at.Description = "When the promise was recorded (RFC 3339, UTC)."
	return s
}

func openDisputeInputSchema() *jsonschema.Schema {
	s := mustFor[openDisputeArgs]()
	closeObject(s)
	s.Description = "The invoice, and why the customer contests it."
	s.Properties[argInvoiceID] = invoiceIDSchema("The invoice contested (its id in the ledger),")
	r := s.Properties["reason"]
	r.Enum = enum(ledger.DisputeReasons)
	r.Description = "Why, from the fixed list: wrong_amount, not_received, damaged_or_defective, duplicate, already_paid, cancelled, pricing, other."
	s.Properties["note"] = textSchema("What the customer said, in short, as the person who heard it wrote it.")
	return s
}

func resolveDisputeInputSchema() *jsonschema.Schema {
	s := mustFor[resolveDisputeArgs]()
	closeObject(s)
	s.Description = "The invoice whose open dispute is decided, the outcome and why."
	s.Properties[argInvoiceID] = invoiceIDSchema("The invoice (its id in the ledger),")
	o := s.Properties["outcome"]
	o.Enum = []any{ledger.OutcomeUpheld, ledger.OutcomeRejected}
	o.Description = "upheld: the customer was right; rejected: the debt stands."
	s.Properties["note"] = textSchema("Why it was decided so.")
	return s
}

func disputeOutputSchema(resolved bool) *jsonschema.Schema {
	s := mustFor[disputeResult]()
	sealObject(s)
	p := s.Properties
	s.Description = "The dispute, as opened."
	if resolved {
		s.Description = "The dispute, as resolved."
		s.Required = append(s.Required, "outcome", "resolvedAt")
	} else {
		delete(p, "outcome")
		delete(p, "resolvedAt")
	}
	p["disputeId"].Description = "The dispute's id."
	p[argInvoiceID].Description = "The invoice, as given."
	p["reason"].Enum = enum(ledger.DisputeReasons)
	p["reason"].Description = "Why the customer contests it."
	for _, name := range []string{"openedAt", "resolvedAt"} {
		if at, ok := p[name]; ok {
			at.Format = "date-time"
		}
	}
	p["openedAt"].Description = "When it was opened (RFC 3339, UTC)."
	if resolved {
		p["outcome"].Enum = []any{ledger.OutcomeUpheld, ledger.OutcomeRejected}
		p["outcome"].Description = "upheld: the customer was right; rejected: the debt stands."
		p["resolvedAt"].Description = "When it was resolved (RFC 3339, UTC)."
	}
	return s
}
