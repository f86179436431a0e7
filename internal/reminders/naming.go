package reminders

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

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
