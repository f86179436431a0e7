package reminders

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/cobranca/cobranca/internal/failure"
	"github.com/cobranca/cobranca/internal/store"
)

// MaxSendingPage bounds a page of ListSending.
const MaxSendingPage = 500

// MaxBulkPage bounds a page of ListBulks: each bulk's progress counts its
// drafts (up to MaxBulk), so a page costs what its bulks queued.
const MaxBulkPage = 50

// SendingPosition is a place in ListSending's order (the latest queued
// first: queued_at, then id, descending).
type SendingPosition struct {
	QueuedAt int64 // microseconds since the epoch
	ID       string
}

// SendingFilter chooses a page of ListSending.
type SendingFilter struct {
	State State            // Queued, Sent or Undeliverable
	After *SendingPosition // where the previous page ended (its next); nil from the start
	Limit int              // 1..MaxSendingPage
}

// ListSending returns a page of the drafts sent that are in f.State: the
// outbox as the console shows it (waiting, accepted by the mail server, or
// refused for good with the server's reply in Sending.FailureReason), the
// latest queued first, and where the next page starts (nil at the end).
// Each page reads reminder_draft_sending from where the previous one
// ended. Records carry their bodies: a page that must not show them
// (collections.viewer) leaves them out.
func ListSending(ctx context.Context, q store.Querier, f SendingFilter) (page []Record, next *SendingPosition, err error) {
	bad := func(field, msg string) error {
		return &failure.Error{Code: failure.InvalidArguments, Field: field, Message: msg}
	}
	switch {
	case f.State != Queued && f.State != Sent && f.State != Undeliverable:
		return nil, nil, bad("state", "must be one of queued, sent, undeliverable")
	case f.Limit < 1 || f.Limit > MaxSendingPage:
		return nil, nil, bad("limit", "must be from 1 to "+strconv.Itoa(MaxSendingPage))
	}
	sql, args := sendingSQL(f)
	page, err = queryRecords(ctx, q, "list sending", sql, args...)
	if err != nil {
		return nil, nil, err
	}
	if len(page) > f.Limit {
		page = page[:f.Limit]
		last := page[f.Limit-1]
		next = &SendingPosition{QueuedAt: last.Sending.QueuedAt.UnixMicro(), ID: last.ID}
	}
	return page, next, nil
}

// sendingSQL is ListSending's query of f (checked). queued_at IS NOT NULL
// names the partial index's predicate, which the state implies only by
// the table's CHECK, which planners do not read.
func sendingSQL(f SendingFilter) (string, []any) {
	sql := `SELECT ` + listColumns + ` FROM reminder_draft WHERE state = $1 AND queued_at IS NOT NULL`
	args := []any{string(f.State), int64(f.Limit + 1)}
	if f.After != nil {
		sql += ` AND (queued_at, id) < ($3, $4)`
		args = append(args, f.After.QueuedAt, f.After.ID)
	}
	return sql + ` ORDER BY queued_at DESC, id DESC LIMIT $2`, args
}

// BulkPosition is a place in ListBulks' order (the latest first:
// created_at, then id, descending).
type BulkPosition struct {
	CreatedAt int64 // microseconds since the epoch
	ID        string
}

// ListBulks returns a page of the bulk sends, the latest first, each with
// its drafts' counts by state as GetBulk counts them, and where the next
// page starts (nil at the end).
func ListBulks(ctx context.Context, q store.Querier, after *BulkPosition, limit int) (page []BulkStatus, next *BulkPosition, err error) {
	if limit < 1 || limit > MaxBulkPage {
		return nil, nil, &failure.Error{Code: failure.InvalidArguments, Field: "limit", Message: "must be from 1 to " + strconv.Itoa(MaxBulkPage)}
	}
	sql, args := bulksSQL(after, limit)
	rows, err := q.Query(ctx, sql, args...)
	if err != nil {
		return nil, nil, fmt.Errorf("reminders: list bulks: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		s, err := scanBulk(rows)
		if err != nil {
			return nil, nil, fmt.Errorf("reminders: list bulks: %w", err)
		}
		page = append(page, s)
	}
	if err := rows.Err(); err != nil {
		return nil, nil, fmt.Errorf("reminders: list bulks: %w", err)
	}
	rows.Close()
	if len(page) > limit {
		page = page[:limit]
		last := page[limit-1]
		next = &BulkPosition{CreatedAt: last.CreatedAt.UnixMicro(), ID: last.ID}
	}
	if err := countBulks(ctx, q, page); err != nil {
		return nil, nil, err
	}
	return page, next, nil
}

// bulksSQL is ListBulks' query: bulk_send_created, from after.
func bulksSQL(after *BulkPosition, limit int) (string, []any) {
	sql := `SELECT ` + bulkColumns + ` FROM bulk_send`
	args := []any{int64(limit + 1)}
	if after != nil {
		sql += ` WHERE (created_at, id) < ($2, $3)`
		args = append(args, after.CreatedAt, after.ID)
	}
	return sql + ` ORDER BY created_at DESC, id DESC LIMIT $1`, args
}

const bulkColumns = `id, requested_by, requested_actor, COALESCE(approval_id, ''), plan_hash, total, skipped, created_at`

func scanBulk(row store.Row) (BulkStatus, error) {
	var s BulkStatus
	var total, skipped, created int64
	if err := row.Scan(&s.ID, &s.By, &s.Actor, &s.ApprovalID, &s.PlanHash, &total, &skipped, &created); err != nil {
		return BulkStatus{}, err
	}
	s.Total, s.Skipped, s.CreatedAt = int(total), int(skipped), time.UnixMicro(created).UTC()
	return s, nil
}

// countBulks sets each bulk's counts of its drafts by state, in one
// statement over reminder_draft_bulk.
func countBulks(ctx context.Context, q store.Querier, bulks []BulkStatus) error {
	if len(bulks) == 0 {
		return nil
	}
	d, ok := store.DialectOf(q)
	if !ok {
		return errors.New("reminders: count bulks: a querier of unknown dialect")
	}
	at := make(map[string]*BulkStatus, len(bulks))
	ids := make([]string, len(bulks))
	for i := range bulks {
		ids[i] = bulks[i].ID
		at[ids[i]] = &bulks[i]
	}
	list, err := json.Marshal(ids)
	if err != nil {
		return fmt.Errorf("reminders: count bulks: %w", err)
	}
	in := store.InList(d, "bulk_id", "$1")
	if d == store.Postgres {
		// An array's = ANY: the planner takes the rows of a JSON
		// function for 100 and might read the whole index for them.
		in = "bulk_id = ANY (ARRAY(SELECT jsonb_array_elements_text($1::jsonb)))"
	}
	// bulk_id IS NOT NULL names reminder_draft_bulk's predicate.
	rows, err := q.Query(ctx, `SELECT bulk_id, state, COUNT(*) FROM reminder_draft WHERE bulk_id IS NOT NULL AND `+in+
		` GROUP BY bulk_id, state`, string(list))
	if err != nil {
		return fmt.Errorf("reminders: count bulks: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var id, state string
		var n int64
		if err := rows.Scan(&id, &state, &n); err != nil {
			return fmt.Errorf("reminders: count bulks: %w", err)
		}
		s := at[id]
		switch State(state) {
		case Queued:
			s.Queued = int(n)
		case Sent:
			s.Sent = int(n)
		case Undeliverable:
			s.Undeliverable = int(n)
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("reminders: count bulks: %w", err)
	}
	return nil
}
