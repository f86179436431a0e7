package reminders

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/cobranca/cobranca/internal/ledger"
	"github.com/cobranca/cobranca/internal/store"
)

// SendsNaming returns the customer's drafts that were sent (queued, sent, undeliverable) and
// list the invoice invoiceID, the latest queued first: at most limit of them, found among the
// customer's latest scan sends. It reads the customer's sends through their index
// (customer_id first) and the stored invoice sets in Go, where both dialects read them alike:
// a customer's sends are few (contacts are paced), so no table of drafts by invoice is kept
// for this read. A draft prepared under another customer id is not found.
func SendsNaming(ctx context.Context, q store.Querier, customerID, invoiceID string, scan, limit int) ([]Record, error) {
	d, ok := store.DialectOf(q)
	if !ok {
		return nil, fmt.Errorf("reminders: sends naming an invoice: a querier of unknown dialect")
	}
	rows, err := q.Query(ctx, `SELECT id, invoices FROM reminder_draft
WHERE customer_id = $1 AND state IN ('queued', 'sent', 'undeliverable') ORDER BY queued_at DESC, id DESC LIMIT $2`, customerID, int64(scan))
	if err != nil {
		return nil, fmt.Errorf("reminders: sends naming an invoice: %w", err)
	}
	defer rows.Close()
	var ids []string
	for rows.Next() && len(ids) < limit {
		var id, set string
		if err := rows.Scan(&id, &set); err != nil {
			return nil, fmt.Errorf("reminders: sends naming an invoice: %w", err)
		}
		var invs []Invoice
		if err := json.Unmarshal([]byte(set), &invs); err != nil {
			return nil, fmt.Errorf("reminders: sends naming an invoice: draft %s: %w", id, err)
		}
		if slices.ContainsFunc(invs, func(inv Invoice) bool { return inv.ID == invoiceID }) {
			ids = append(ids, id)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("reminders: sends naming an invoice: %w", err)
	}
	rows.Close()
	if len(ids) == 0 {
		return []Record{}, nil
	}
	list, err := json.Marshal(ids)
	if err != nil {
		return nil, fmt.Errorf("reminders: sends naming an invoice: %w", err)
	}
	return queryRecords(ctx, q, "sends naming an invoice", `SELECT `+listColumns+` FROM reminder_draft
WHERE `+store.InList(d, "id", "$1")+` ORDER BY queued_at DESC, id DESC`, string(list))
}

// The bounds of ReadInvoice's contacts: at most ContactsShown reminders naming the invoice,
// found among the customer's latest ContactsScanned sends.
const (
	ContactsShown   = 20
	ContactsScanned = 1000
)

// InvoiceView is an invoice of the ledger and what became of it, as get_invoice and the
// console read it: the invoice with its open dispute and latest promise, every allocation to
// it (oldest first), and the reminders sent naming it (the latest queued first, at most
// ContactsShown, from the customer's latest ContactsScanned sends).
type InvoiceView struct {
	Invoice     ledger.StoredInvoice
	Allocations []ledger.Allocation
	Contacts    []Record
}

// ReadInvoice reads the invoice id and what became of it, for the tool and the console alike:
// an unknown id is ledger.ErrInvoiceNotFound.
func ReadInvoice(ctx context.Context, q store.Querier, id string) (InvoiceView, error) {
	inv, err := ledger.GetInvoice(ctx, q, id)
	if err != nil {
		return InvoiceView{}, err
	}
	allocs, err := ledger.Allocations(ctx, q, inv.InvoiceID)
	if err != nil {
		return InvoiceView{}, err
	}
	sends, err := SendsNaming(ctx, q, inv.CustomerID, inv.InvoiceID, ContactsScanned, ContactsShown)
	if err != nil {
		return InvoiceView{}, err
	}
	return InvoiceView{Invoice: inv, Allocations: allocs, Contacts: sends}, nil
}
