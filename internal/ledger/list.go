package ledger

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/cobranca/cobranca/internal/failure"
	"github.com/cobranca/cobranca/internal/store"
)

// ListFilter chooses the invoices of a list and its page.
type ListFilter struct {
	CustomerID     string  // "" any
	States         []State // empty any
	MinDaysOverdue int     // > 0: due_date ≤ Today − n days
	Today          string  // YYYY-MM-DD, for overdue and promise pending
	Disputed       *bool   // nil any; true: with an open dispute; false: without
	PromisePending bool    // only those under a promise pending on Today
	After          string  // keyset cursor (opaque, from the previous page's next)
	Limit          int     // 1..MaxPage
}

// ListInvoices returns a page of the invoices f chooses, in due date order
// (then id), and the cursor of the next page ("" at the end). Pages are
// keyset pages: each reads from an index where the previous one ended,
// whatever the ledger's size.
func ListInvoices(ctx context.Context, q store.Querier, f ListFilter) (page []StoredInvoice, next string, err error) {
	sql, args, fe := listSQL(f)
	if fe != nil {
		return nil, "", fe
	}
	stale, err := queryInvoices(ctx, q, sql, args, func(inv StoredInvoice) error {
		page = append(page, inv)
		return nil
	})
	if err == nil && stale {
		err = errors.New("an invoice's dispute or promise changed while it was read")
	}
	if err != nil {
		return nil, "", fmt.Errorf("ledger: list invoices: %w", err)
	}
	if len(page) > f.Limit {
		page = page[:f.Limit]
		last := page[f.Limit-1]
		next = InvoiceCursor(last)
	}
	return page, next, nil
}

// InvoiceCursor is the cursor of ListInvoices' page that ends at inv: the
// next page starts after it.
func InvoiceCursor(inv StoredInvoice) string { return encodeCursor(inv.DueDate, inv.InvoiceID) }

// listSQL is ListInvoices' query of f, checked. Its shape depends on which
// filters are set and how many states, never on their values.
func listSQL(f ListFilter) (string, []any, *failure.Error) {
	bad := func(field, msg string) (string, []any, *failure.Error) {
		return "", nil, &failure.Error{Code: failure.InvalidArguments, Field: field, Message: msg}
	}
	if fe := checkLimit(f.Limit); fe != nil {
		return "", nil, fe
	}
	if f.MinDaysOverdue < 0 {
		return bad("minDaysOverdue", "must not be negative")
	}
	if f.MinDaysOverdue > 0 || f.PromisePending {
		if fe := checkDate("today", f.Today); fe != nil {
			return bad("today", fe.Message)
		}
	}
	var where []string
	var args []any
	arg := func(v any) string {
		args = append(args, v)
		return "$" + strconv.Itoa(len(args))
	}
	if f.CustomerID != "" {
		where = append(where, "i.customer_id = "+arg(f.CustomerID))
	}
	var states []string // the placeholders of the states asked for
	for _, s := range sortedUnique(stateStrings(f.States)) {
		if !slices.Contains(States, State(s)) {
			return bad("states", fmt.Sprintf("must each be one of %v", States))
		}
		states = append(states, arg(s))
	}
	if f.MinDaysOverdue > 0 {
		today, _ := time.Parse(time.DateOnly, f.Today)
		where = append(where, "i.due_date <= "+arg(today.AddDate(0, 0, -f.MinDaysOverdue).Format(time.DateOnly)))
	}
	if f.Disputed != nil {
		if *f.Disputed {
			where = append(where, "i.dispute_id <> ''")
		} else {
			where = append(where, "i.dispute_id = ''")
		}
	}
	if f.PromisePending {
		where = append(where, "i.promise_id <> ''", "i.promised_for >= "+arg(f.Today),
			"i.state <> 'paid'", "i.state <> 'void'", "i.state <> 'written_off'")
	}
	if f.After != "" {
		parts, fe := decodeCursor(f.After, 2)
		if fe != nil {
			return "", nil, fe
		}
		where = append(where, "(i.due_date, i.id) > ("+arg(parts[0])+", "+arg(parts[1])+")")
	}
	limit := arg(f.Limit + 1)
	if len(states) <= 1 {
		if len(states) == 1 {
			where = append(where, "i.state = "+states[0])
		}
		sql := `SELECT ` + invoiceColumns + invoiceFrom
		if len(where) > 0 {
			sql += ` WHERE ` + strings.Join(where, " AND ")
		}
		return sql + ` ORDER BY i.due_date, i.id LIMIT ` + limit, args, nil
	}
	// Several states: a page of each state from its index, in order, then
	// the page of their union. "state IN (…)" would read one state after
	// the other and sort them all (SQLite), or scan the due dates and skip
	// the other states (PostgreSQL).
	var parts []string
	for _, s := range states {
		w := append([]string{"i.state = " + s}, where...)
		parts = append(parts, `SELECT * FROM (SELECT i.id FROM ledger_invoice i WHERE `+strings.Join(w, " AND ")+
			` ORDER BY i.due_date, i.id LIMIT `+limit+`) AS s`+strconv.Itoa(len(parts)))
	}
	return `SELECT ` + invoiceColumns + ` FROM (` + strings.Join(parts, " UNION ALL ") + `) AS k JOIN ledger_invoice i ON i.id = k.id` +
		invoiceJoins + ` ORDER BY i.due_date, i.id LIMIT ` + limit, args, nil
}

func stateStrings(ss []State) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = string(s)
	}
	return out
}

// Unsettled is an unsettled invoice (open, partially paid) as
// analyze_ledger reads it: what the analysis needs and no more, all from
// the invoice's row and its cache, but the open dispute's reason.
type Unsettled struct {
	InvoiceID, CustomerID, CustomerName, Currency, DueDate string
	OpenCents                                              int64
	DisputeReason                                          DisputeReason // the open dispute's, "" when none
	PromisedFor                                            string        // the latest promise's date, "" when none
}

// forAnalysisColumns are Unsettled's, in scan order, then the row's
// dispute id and its open dispute's reason (d, joined on PostgreSQL, read
// by a subquery on SQLite).
const forAnalysisColumns = `i.id, i.customer_id, i.customer_name, i.currency, i.due_date, i.open_cents, i.promised_for, i.dispute_id, `

// ForAnalysis streams what analyze_ledger reads: every invoice not settled
// (open, partially paid), only of customerIDs when it is not empty, ordered
// by (customer_id, id). An error of fn stops the stream and is returned.
//
// The plans, measured over 100 000 open invoices (docs/benchmarks.md): on
// SQLite the rows come in order from ledger_invoice_unsettled, named, for
// without statistics SQLite reads the state index and sorts, twice the
// time; the dispute's reason is read only for the disputed rows. On
// PostgreSQL the dispute is joined: a subquery per row inflates the plan's
// cost past jit_above_cost, and compiling it took longer than reading.
func ForAnalysis(ctx context.Context, q store.Querier, customerIDs []string, fn func(Unsettled) error) error {
	sql, args := forAnalysisSQL(dialect(q), customerIDs)
	var fnErr error
	err := scanUnsettled(ctx, q, sql, args, func(u Unsettled) error {
		fnErr = fn(u)
		return fnErr
	})
	if fnErr != nil {
		return fnErr
	}
	if err != nil {
		return fmt.Errorf("ledger: for analysis: %w", err)
	}
	return nil
}

// forAnalysisSQL is ForAnalysis's query on dialect d.
func forAnalysisSQL(d store.Dialect, customerIDs []string) (string, []any) {
	sql := `SELECT ` + forAnalysisColumns + `COALESCE(d.reason, '') FROM ledger_invoice i LEFT JOIN ledger_dispute d ON d.id = i.dispute_id`
	if d == store.SQLite {
		sql = `SELECT ` + forAnalysisColumns + `CASE WHEN i.dispute_id = '' THEN '' ELSE COALESCE((SELECT d.reason FROM ledger_dispute d WHERE d.id = i.dispute_id), '') END
 FROM ledger_invoice i INDEXED BY ledger_invoice_unsettled`
	}
	sql += ` WHERE i.state IN ('open', 'partially_paid')`
	var args []any
	if len(customerIDs) > 0 {
		sql += ` AND ` + store.InList(d, "i.customer_id", "$1")
		args = append(args, jsonList(sortedUnique(customerIDs)))
	}
	return sql + ` ORDER BY i.customer_id, i.id`, args
}

// scanUnsettled runs a query of forAnalysisColumns and calls fn with each
// row, in the query's order.
func scanUnsettled(ctx context.Context, q store.Querier, sql string, args []any, fn func(Unsettled) error) error {
	rows, err := q.Query(ctx, sql, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	var (
		u                 Unsettled
		disputeID, reason string
	)
	for rows.Next() {
		if err := rows.Scan(&u.InvoiceID, &u.CustomerID, &u.CustomerName, &u.Currency, &u.DueDate, &u.OpenCents, &u.PromisedFor, &disputeID, &reason); err != nil {
			return err
		}
		if disputeID != "" && reason == "" {
			// One statement reads one snapshot, and ForAnalysis locks
			// nothing: a cache naming a dispute the statement cannot see
			// is a broken ledger, not a race.
			return fmt.Errorf("invoice %s: its open dispute is not in the ledger", u.InvoiceID)
		}
		u.DisputeReason = DisputeReason(reason)
		if err := fn(u); err != nil {
			return err
		}
	}
	return rows.Err()
}
