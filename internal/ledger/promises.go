package ledger

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/cobranca/cobranca/internal/failure"
	"github.com/cobranca/cobranca/internal/ident"
	"github.com/cobranca/cobranca/internal/store"
	"github.com/cobranca/cobranca/internal/value"
)

// The prefixes of promises' and disputes' ids (ident).
const (
	PromisePrefix = "prm_"
	DisputePrefix = "dsp_"
)

// Channels are how a promise to pay was made.
var Channels = []string{"phone", "email", "chat", "in_person", "letter", "other"}

// The outcomes of a dispute.
const (
	OutcomeUpheld   = "upheld"   // the customer was right
	OutcomeRejected = "rejected" // the debt stands
)

// PromiseRecord is a customer's promise to pay an invoice: how much, by
// when, how it was made, and a note.
type PromiseRecord struct {
	InvoiceID   string `json:"invoiceId"`
	AmountCents int64  `json:"amountCents"`
	PromisedFor string `json:"promisedFor"` // YYYY-MM-DD
	Channel     string `json:"channel"`     // one of Channels
	Note        string `json:"note,omitempty"`
}

// Validate checks a promise made on today (YYYY-MM-DD): the invoice id, an
// amount from 1 to value.MaxAmountCents, a date from today on, a
// channel of Channels, a note under the text rule. The failure names the
// field, never its value.
func (r PromiseRecord) Validate(today string) *failure.Error {
	bad := func(field, msg string) *failure.Error {
		return &failure.Error{Code: failure.InvalidArguments, Field: field, Message: msg}
	}
	if p := idProblem(r.InvoiceID); p != "" {
		return bad("invoiceId", p)
	}
	if r.AmountCents < 1 || r.AmountCents > value.MaxAmountCents {
		return bad("amountCents", "must be a whole number of minor units from 1 to "+strconv.FormatInt(value.MaxAmountCents, 10))
	}
	if fe := checkDate("promisedFor", r.PromisedFor); fe != nil {
		return bad("promisedFor", fe.Message)
	}
	if r.PromisedFor < today {
		return bad("promisedFor", "must not be before today ("+today+")")
	}
	if !slices.Contains(Channels, r.Channel) {
		return bad("channel", fmt.Sprintf("must be one of %v", Channels))
	}
	if r.Note != "" {
		if p := value.TextProblem(r.Note); p != "" {
			return bad("note", p)
		}
	}
	return nil
}

// Promise is a recorded promise to pay.
type Promise struct {
	ID string
	PromiseRecord
	By Actor
	At time.Time
}

// Dispute is a customer's dispute of an invoice: open while Outcome is "".
type Dispute struct {
	ID, InvoiceID  string
	Reason         DisputeReason
	Note           string
	OpenedBy       Actor
	OpenedAt       time.Time
	Outcome        string // "", OutcomeUpheld, OutcomeRejected
	ResolutionNote string
	ResolvedBy     Actor
	ResolvedAt     time.Time
}

// lockInvoice reads the invoice id locked for update, or its failure
// CodeInvoiceNotFound.
func lockInvoice(ctx context.Context, tx store.Tx, id string) (StoredInvoice, error) {
	m, err := lockInvoices(ctx, tx, []string{id})
	if err != nil {
		return StoredInvoice{}, err
	}
	inv, ok := m[id]
	if !ok {
		return StoredInvoice{}, notFound(id)
	}
	return inv, nil
}

// RecordPromise records r (validated here, on now's UTC date) made to by,
// as the invoice's latest promise. The invoice must be known
// (CodeInvoiceNotFound) and not settled (CodeInvoiceSettled). The
// invoice's row is locked and changed, so a send checking it waits.
func RecordPromise(ctx context.Context, tx store.Tx, r PromiseRecord, by Actor, now time.Time) (Promise, error) {
	if fe := r.Validate(now.UTC().Format(time.DateOnly)); fe != nil {
		return Promise{}, fe
	}
	if by.Subject == "" {
		return Promise{}, errors.New("ledger: record promise: no subject")
	}
	inv, err := lockInvoice(ctx, tx, r.InvoiceID)
	if err != nil {
		return Promise{}, fmt.Errorf("ledger: record promise: %w", err)
	}
	if inv.State.Settled() {
		return Promise{}, &failure.Error{Code: CodeInvoiceSettled, Field: "invoiceId",
			Message: fmt.Sprintf("invoice %s is %s: nothing is to be promised; nothing was recorded", r.InvoiceID, stateWords(inv.State))}
	}
	p := Promise{ID: ident.New(PromisePrefix), PromiseRecord: r, By: by, At: micros(now.UnixMicro())}
	if _, err := tx.Exec(ctx, `INSERT INTO ledger_promise (id, invoice_id, amount_cents, promised_for, channel, note, recorded_by, recorded_by_actor, created_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`, p.ID, r.InvoiceID, r.AmountCents, r.PromisedFor, r.Channel, r.Note, by.Subject, by.Actor, p.At.UnixMicro()); err != nil {
		return Promise{}, fmt.Errorf("ledger: record promise: %w", err)
	}
	if _, err := tx.Exec(ctx, `UPDATE ledger_invoice SET promise_id = $2, promised_for = $3, updated_at = $4 WHERE id = $1`,
		r.InvoiceID, p.ID, r.PromisedFor, p.At.UnixMicro()); err != nil {
		return Promise{}, fmt.Errorf("ledger: record promise: %w", err)
	}
	return p, nil
}

func stateWords(s State) string {
	switch s {
	case StatePartiallyPaid:
		return "partially paid"
	case StateWrittenOff:
		return "written off"
	}
	return string(s)
}

// checkNote holds a dispute's free text to the text rule ("" allowed).
func checkNote(field, note string) *failure.Error {
	if note == "" {
		return nil
	}
	if p := value.TextProblem(note); p != "" {
		return &failure.Error{Code: failure.InvalidArguments, Field: field, Message: p}
	}
	return nil
}

// OpenDispute opens a dispute of the invoice for reason, with a note. The
// invoice must be known (CodeInvoiceNotFound) and have no open dispute
// (CodeDisputeOpen).
func OpenDispute(ctx context.Context, tx store.Tx, invoiceID string, reason DisputeReason, note string, by Actor, now time.Time) (Dispute, error) {
	if _, err := ParseDisputeReason(string(reason)); err != nil {
		return Dispute{}, &failure.Error{Code: failure.InvalidArguments, Field: "reason", Message: err.Error()}
	}
	if fe := checkNote("note", note); fe != nil {
		return Dispute{}, fe
	}
	if by.Subject == "" {
		return Dispute{}, errors.New("ledger: open dispute: no subject")
	}
	inv, err := lockInvoice(ctx, tx, invoiceID)
	if err != nil {
		return Dispute{}, fmt.Errorf("ledger: open dispute: %w", err)
	}
	if inv.Dispute != nil {
		return Dispute{}, &failure.Error{Code: CodeDisputeOpen, Field: "invoiceId",
			Message: fmt.Sprintf("invoice %s already has an open dispute (%s, opened on %s); nothing was recorded",
				invoiceID, inv.Dispute.ID, inv.Dispute.OpenedAt.Format(time.DateOnly))}
	}
	d := Dispute{ID: ident.New(DisputePrefix), InvoiceID: invoiceID, Reason: reason, Note: note, OpenedBy: by, OpenedAt: micros(now.UnixMicro())}
	if _, err := tx.Exec(ctx, `INSERT INTO ledger_dispute (id, invoice_id, reason, note, opened_by, opened_by_actor, opened_at)
VALUES ($1, $2, $3, $4, $5, $6, $7)`, d.ID, invoiceID, string(reason), note, by.Subject, by.Actor, d.OpenedAt.UnixMicro()); err != nil {
		return Dispute{}, fmt.Errorf("ledger: open dispute: %w", err)
	}
	if _, err := tx.Exec(ctx, `UPDATE ledger_invoice SET dispute_id = $2, updated_at = $3 WHERE id = $1`, invoiceID, d.ID, d.OpenedAt.UnixMicro()); err != nil {
		return Dispute{}, fmt.Errorf("ledger: open dispute: %w", err)
	}
	return d, nil
}

// ResolveDispute closes the invoice's open dispute with outcome
// (OutcomeUpheld or OutcomeRejected) and a note. Without an open dispute:
// CodeNoOpenDispute. What an upheld dispute changes (a void, a new amount)
// is the operator's next record.
func ResolveDispute(ctx context.Context, tx store.Tx, invoiceID, outcome, note string, by Actor, now time.Time) (Dispute, error) {
	if outcome != OutcomeUpheld && outcome != OutcomeRejected {
		return Dispute{}, &failure.Error{Code: failure.InvalidArguments, Field: "outcome", Message: `must be "upheld" or "rejected"`}
	}
	if fe := checkNote("note", note); fe != nil {
		return Dispute{}, fe
	}
	if by.Subject == "" {
		return Dispute{}, errors.New("ledger: resolve dispute: no subject")
	}
	inv, err := lockInvoice(ctx, tx, invoiceID)
	if err != nil {
		return Dispute{}, fmt.Errorf("ledger: resolve dispute: %w", err)
	}
	if inv.Dispute == nil {
		return Dispute{}, &failure.Error{Code: CodeNoOpenDispute, Field: "invoiceId", Message: fmt.Sprintf("invoice %s has no open dispute; nothing was changed", invoiceID)}
	}
	d := *inv.Dispute
	d.Outcome, d.ResolutionNote, d.ResolvedBy, d.ResolvedAt = outcome, note, by, micros(now.UnixMicro())
	if _, err := tx.Exec(ctx, `UPDATE ledger_dispute SET outcome = $2, resolution_note = $3, resolved_by = $4, resolved_by_actor = $5, resolved_at = $6
WHERE id = $1 AND outcome = ''`, d.ID, outcome, note, by.Subject, by.Actor, d.ResolvedAt.UnixMicro()); err != nil {
		return Dispute{}, fmt.Errorf("ledger: resolve dispute: %w", err)
	}
	if _, err := tx.Exec(ctx, `UPDATE ledger_invoice SET dispute_id = '', updated_at = $2 WHERE id = $1`, invoiceID, d.ResolvedAt.UnixMicro()); err != nil {
		return Dispute{}, fmt.Errorf("ledger: resolve dispute: %w", err)
	}
	return d, nil
}
