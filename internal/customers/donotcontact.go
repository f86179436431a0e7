package customers

import (
	"context"
	"fmt"

	"github.com/cobranca/cobranca/internal/store"
)

// DoNotContactIDs returns the ids of the customers whose status is
// do_not_contact, in id order: the customers an analysis of the ledger
// leaves out, as analyze_portfolio leaves out a doNotContact customer. The
// status has no end date, so the stored one is the one in effect.
func DoNotContactIDs(ctx context.Context, q store.Querier) ([]string, error) {
	rows, err := q.Query(ctx, `SELECT id FROM customer WHERE contact_status = $1 ORDER BY id`, string(DoNotContact))
	if err != nil {
		return nil, fmt.Errorf("customers: do-not-contact ids: %w", err)
	}
	defer rows.Close()
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, fmt.Errorf("customers: do-not-contact ids: %w", err)
		}
		ids = append(ids, id)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("customers: do-not-contact ids: %w", err)
	}
	return ids, nil
}
