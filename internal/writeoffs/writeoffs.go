// Package writeoffs keeps the write-offs of invoices: a person's record that an invoice's debt
// will not be collected — which invoice, of which stored customer, how much, why, who decided
// and how recently they signed in. An invoice is written off once; a write-off is never
// changed or removed (reversing one is a new accounting entry, not an edit).
//
// Only people write invoices off: the tool glue (internal/collections) declares the tool
// forbidden to agents, and the pipeline's admin entry point runs it. This package works in the
// transaction it is given and trusts its caller on who the person is.
package writeoffs

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/cobranca/cobranca/internal/customers"
	"github.com/cobranca/cobranca/internal/failure"
	"github.com/cobranca/cobranca/internal/ident"
	"github.com/cobranca/cobranca/internal/ledger"
	"github.com/cobranca/cobranca/internal/store"
	"github.com/cobranca/cobranca/internal/value"
)

// Prefix begins every write-off's id (ident).
const Prefix = "wo_"

// MaxAmountCents bounds a write-off's amount, in BRL cents: every tool's
// bound on an amount (value.MaxAmountCents, R$ 10 billion).
const MaxAmountCents int64 = value.MaxAmountCents

// CodeAlreadyWrittenOff: the invoice already has a write-off; the message names it.
const CodeAlreadyWrittenOff failure.Code = "invoice_already_written_off"

// The fields of a request, as the failures name them.
const (
	FieldInvoiceID   = "invoiceId"
	FieldCustomerID  = "customerId"
	FieldAmountCents = "amountCents"
	FieldReason      = "reason"
)

// ErrNotFound is returned when no write-off matches.
var ErrNotFound = errors.New("writeoffs: write-off not found")

// Request is what a person asks to write off.
type Request struct {
	InvoiceID   string
	CustomerID  string
	AmountCents int64
	Reason      string
}

// Validate returns nil when r is acceptable, or an invalid_arguments failure naming the field:
// the invoice and customer ids under the customer id rule (the shared text rule, value.TextProblem, no white
// space at either end), an amount from 1 to MaxAmountCents, a reason under the text rule. The
// message never holds the value.
func (r Request) Validate() *failure.Error {
	bad := func(field, msg string) *failure.Error {
		return &failure.Error{Code: failure.InvalidArguments, Field: field, Message: msg}
	}
	if p := customers.IDProblem(r.InvoiceID); p != "" {
		return bad(FieldInvoiceID, p)
	}
	if p := customers.IDProblem(r.CustomerID); p != "" {
		return bad(FieldCustomerID, p)
	}
	if r.AmountCents < 1 || r.AmountCents > MaxAmountCents {
		return bad(FieldAmountCents, fmt.Sprintf("must be from 1 to %d cents (R$ 10 billion)", MaxAmountCents))
	}
	if p := value.TextProblem(r.Reason); p != "" {
		return bad(FieldReason, p)
	}
	return nil
}

// Author is the person who writes an invoice off, as their verified credential says.
type Author struct {
	Subject  string
	ClientID string
	ACR      string
	AuthTime time.Time // zero when unknown
}

// Result is a write-off as the write_off_invoice tool answers it (internal/collections'
// WriteOffResult, whose output schema is made from it): the admin page and the CLI read it.
type Result struct {
	WriteOffID   string `json:"writeOffId"`
	InvoiceID    string `json:"invoiceId"`
	CustomerID   string `json:"customerId"`
	AmountCents  int64  `json:"amountCents"`
	WrittenOffBy string `json:"writtenOffBy"`
	WrittenOffAt string `json:"writtenOffAt"`
}

// WriteOff is one recorded write-off.
type WriteOff struct {
	ID string
	Request
	By        Author
	CreatedAt time.Time
}

const columns = `id, invoice_id, customer_id, amount_cents, reason, written_off_by, client_id, acr, auth_time, created_at`

// Record writes r off, by a, at now, in tx: r must be valid (Validate), its customer stored
// (else customers.CodeNotFound, field customerId) and its invoice not written off yet (else
// CodeAlreadyWrittenOff, naming the write-off it has). The unique invoice_id keeps that under
// concurrency: of two transactions writing one invoice off, the second waits for the first and
// is refused.
func Record(ctx context.Context, tx store.Tx, r Request, a Author, now time.Time) (WriteOff, error) {
	if fe := r.Validate(); fe != nil {
		return WriteOff{}, fe
	}
	if a.Subject == "" {
		return WriteOff{}, errors.New("writeoffs: record: no author")
	}
	if _, err := customers.Get(ctx, tx, r.CustomerID); err != nil {
		if errors.Is(err, customers.ErrNotFound) {
			return WriteOff{}, &failure.Error{Code: customers.CodeNotFound, Field: FieldCustomerID, Message: "no customer has this id; nothing was written off", Err: err}
		}
		return WriteOff{}, fmt.Errorf("writeoffs: record: %w", err)
	}
	w := WriteOff{ID: ident.New(Prefix), Request: r, By: a, CreatedAt: time.UnixMicro(now.UnixMicro()).UTC()}
	if !a.AuthTime.IsZero() {
		w.By.AuthTime = time.UnixMicro(a.AuthTime.UnixMicro()).UTC()
	}
	n, err := tx.Exec(ctx, `INSERT INTO write_off (`+columns+`) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
ON CONFLICT (invoice_id) DO NOTHING`,
		w.ID, r.InvoiceID, r.CustomerID, r.AmountCents, r.Reason, a.Subject, a.ClientID, a.ACR, micros(w.By.AuthTime), w.CreatedAt.UnixMicro())
	if err != nil {
		return WriteOff{}, fmt.Errorf("writeoffs: record: %w", err)
	}
	if n == 1 {
		// The ledger's invoice, when it knows it, is closed by the write-off
		// in this transaction.
		if err := ledger.WrittenOff(ctx, tx, r.InvoiceID, r.AmountCents, now); err != nil {
			return WriteOff{}, fmt.Errorf("writeoffs: record: %w", err)
		}
		return w, nil
	}
	old, err := ForInvoice(ctx, tx, r.InvoiceID)
	if err != nil {
		return WriteOff{}, fmt.Errorf("writeoffs: record: the invoice's write-off: %w", err)
	}
	return WriteOff{}, &failure.Error{Code: CodeAlreadyWrittenOff, Field: FieldInvoiceID,
		Message: fmt.Sprintf("names an invoice already written off (%s, on %s): an invoice is written off once; nothing was done",
			old.ID, old.CreatedAt.Format(time.DateOnly))}
}

// ForInvoice returns the write-off of the invoice, or ErrNotFound.
func ForInvoice(ctx context.Context, q store.Querier, invoiceID string) (WriteOff, error) {
	var w WriteOff
	var authTime, created int64
	err := q.QueryRow(ctx, `SELECT `+columns+` FROM write_off WHERE invoice_id = $1`, invoiceID).Scan(
		&w.ID, &w.InvoiceID, &w.CustomerID, &w.AmountCents, &w.Reason, &w.By.Subject, &w.By.ClientID, &w.By.ACR, &authTime, &created)
	if errors.Is(err, store.ErrNoRows) {
		return WriteOff{}, ErrNotFound
	}
	if err != nil {
		return WriteOff{}, fmt.Errorf("writeoffs: get: %w", err)
	}
	if authTime != 0 {
		w.By.AuthTime = time.UnixMicro(authTime).UTC()
	}
	w.CreatedAt = time.UnixMicro(created).UTC()
	return w, nil
}

func micros(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMicro()
}
