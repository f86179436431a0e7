package collections

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/cobranca/cobranca/internal/customers"
	"github.com/cobranca/cobranca/internal/failure"
	"github.com/cobranca/cobranca/internal/ledger"
	"github.com/cobranca/cobranca/internal/reminders"
	"github.com/cobranca/cobranca/internal/store"
	"github.com/cobranca/cobranca/internal/value"
)

// notInLedger is what a preview says of an invoice the ledger does not know.
const notInLedger = "not in the ledger — payment cannot be checked"

// expected is what a draft says of its invoices: each one's open amount, for ledger.CheckContact.
func expected(d reminders.Record) []ledger.Expected {
	out := make([]ledger.Expected, len(d.Invoices))
	for i, inv := range d.Invoices {
		out[i] = ledger.Expected{InvoiceID: inv.ID, OpenCents: inv.AmountCents}
	}
	return out
}

// errReadOnly rolls back the transaction a read-only ledger check ran in.
var errReadOnly = errors.New("collections: read-only ledger check")

// checkLedger is ledger.CheckContact of expect, today, in one round trip. In a transaction (q
// is a store.Tx) it locks the invoices' rows until the transaction ends, so that a payment
// committed before it is seen and one after it waits. Otherwise — a preview, a dry run, read
// before anyone is asked — it reads them as committed, in a transaction of its own that it
// rolls back.
func checkLedger(ctx context.Context, q store.Querier, today string, expect []ledger.Expected) ([]ledger.Verdict, error) {
	if len(expect) == 0 {
		return nil, nil
	}
	if tx, ok := q.(store.Tx); ok {
		return ledger.CheckContact(ctx, tx, today, expect)
	}
	db, ok := q.(interface {
		InTx(ctx context.Context, fn func(ctx context.Context, tx store.Tx) error) error
	})
	if !ok {
		return nil, errors.New("collections: a ledger check needs a transaction or a database")
	}
	var vs []ledger.Verdict
	err := db.InTx(ctx, func(ctx context.Context, tx store.Tx) error {
		var err error
		if vs, err = ledger.CheckContact(ctx, tx, today, expect); err != nil {
			return err
		}
		return errReadOnly
	})
	if !errors.Is(err, errReadOnly) {
		return nil, err
	}
	return vs, nil
}

// ledgerRefusal is why a draft whose invoices the ledger judged vs may not be sent, on field,
// or nil when it may: an invoice settled (paid, void, written off) refuses it invoice_settled;
// one disputed, under a pending promise or whose open amount is not the draft's, draft_stale;
// with required (COBRANCA_LEDGER_REQUIRED), one the ledger does not know, invoice_not_found.
// The message names every such invoice and why.
func ledgerRefusal(vs []ledger.Verdict, required bool, field string) *failure.Error {
	var code failure.Code
	var why []string
	rank := map[failure.Code]int{ledger.CodeInvoiceNotFound: 1, ledger.CodeDraftStale: 2, ledger.CodeInvoiceSettled: 3}
	for _, v := range vs {
		c, w := v.Code, v.Why
		if !v.Known {
			if !required {
				continue
			}
			c, w = ledger.CodeInvoiceNotFound, "not in the ledger (COBRANCA_LEDGER_REQUIRED: its payment must be checkable)"
		}
		if c == "" {
			continue
		}
		if rank[c] > rank[code] {
			code = c
		}
		why = append(why, "invoice "+quote(v.InvoiceID)+": "+w)
	}
	if code == "" {
		return nil
	}
	return &failure.Error{Code: code, Field: field, Message: "names " + strings.Join(why, "; ") + "; nothing was sent"}
}

// ledgerState is one invoice's ledger state as a preview shows it.
func ledgerState(v ledger.Verdict) string {
	if !v.Known {
		return notInLedger
	}
	inv := v.Invoice
	s := string(inv.State) + ", " + value.FormatMoney(inv.OpenCents, inv.Currency) + " open"
	if v.Code != "" {
		s += " — " + v.Why
	}
	return s
}

// writeLedger writes the draft's invoices, each with what the draft says and its ledger state
// as of now (vs).
func writeLedger(b *strings.Builder, d reminders.Record, vs []ledger.Verdict) {
	byID := make(map[string]ledger.Verdict, len(vs))
	for _, v := range vs {
		byID[v.InvoiceID] = v
	}
	b.WriteString("Invoices (the draft's amount; the ledger's state now):\n")
	for _, inv := range d.Invoices {
		fmt.Fprintf(b, "- %s due %s, %s — ledger: %s\n", quote(inv.ID), inv.DueDate, value.FormatBRL(inv.AmountCents), ledgerState(byID[inv.ID]))
	}
}

// sendPreviewStart starts send_reminder's preview; the draft's id follows it.
const sendPreviewStart = "send the reminder draft "

// ApprovalLedger is what the approval page shows, each time it is viewed, of the invoices an
// approval is about as the receivables ledger has them then (now): for a
// send_reminder approval, each invoice of its draft with its ledger state; "" for another tool.
// The approval keeps the preview written when it was asked for, which names the draft.
func ApprovalLedger(ctx context.Context, db store.DB, tool, preview string, now time.Time) (string, error) {
	if tool != SendReminderName {
		return "", nil
	}
	rest, ok := strings.CutPrefix(preview, sendPreviewStart)
	id, _, _ := strings.Cut(rest, " ")
	if !ok || !reminders.ValidID(id) {
		return "", errors.New("collections: a send_reminder approval whose preview names no draft")
	}
	d, err := reminders.Get(ctx, db, id)
	if err != nil {
		return "", fmt.Errorf("collections: the approval's draft: %w", err)
	}
	vs, err := checkLedger(ctx, db, customers.Today(now), expected(d))
	if err != nil {
		return "", err
	}
	var b strings.Builder
	writeLedger(&b, d, vs)
	return b.String(), nil
}
