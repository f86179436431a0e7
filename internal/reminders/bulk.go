package reminders

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/cobranca/cobranca/internal/ident"
	"github.com/cobranca/cobranca/internal/store"
)

// MaxBulk bounds the drafts one bulk send queues, and the drafts its selection may name: one
// call's transaction enqueues them all.
const MaxBulk = 10000

// BulkIDPrefix starts every bulk send's id; ident's 128 random bits follow it.
const BulkIDPrefix = "b_"

// ValidBulkID reports whether s has the shape of a bulk send's id.
func ValidBulkID(s string) bool { return ident.Valid(BulkIDPrefix, s) }

// ErrBulkNotFound is the answer for a bulk id no bulk send has.
var ErrBulkNotFound = errors.New("reminders: no such bulk send")

// Selection names the drafts of a bulk send: IDs, or else the open drafts a filter selects.
type Selection struct {
	// IDs are the drafts, whatever their state (the caller tells the missing and the not open
	// apart); none means the filter below.
	IDs []string
	// CustomerIDs keeps the drafts of these customers; none, every customer's.
	CustomerIDs []string
	// DueBy keeps the drafts with an invoice due on or before this date (YYYY-MM-DD); "" any.
	DueBy string
	// Tone keeps the drafts in this tone; "" any.
	Tone Tone
}

// Select returns at most limit drafts that sel names, by id. In tx on PostgreSQL with
// forUpdate, they are locked until tx ends (SQLite's write transaction holds the whole
// database), in id order, so that two bulk sends lock the drafts they share in one order.
func Select(ctx context.Context, q store.Querier, sel Selection, forUpdate bool, limit int) ([]Record, error) {
	d, where, args, err := sel.where(q)
	if err != nil {
		return nil, err
	}
	args = append(args, int64(limit))
	sql := `SELECT ` + listColumns + ` FROM reminder_draft WHERE ` + where + ` ORDER BY id LIMIT $` + strconv.Itoa(len(args))
	if forUpdate && d == store.Postgres {
		sql += ` FOR UPDATE`
	}
	return queryRecords(ctx, q, "select", sql, args...)
}

// Count is how many drafts sel names, counting no further than limit: what Select would
// return, without reading their columns.
func Count(ctx context.Context, q store.Querier, sel Selection, limit int) (int, error) {
	_, where, args, err := sel.where(q)
	if err != nil {
		return 0, err
	}
	args = append(args, int64(limit))
	var n int64
	sql := `SELECT count(*) FROM (SELECT 1 FROM reminder_draft WHERE ` + where + ` LIMIT $` + strconv.Itoa(len(args)) + `) AS selected`
	if err := q.QueryRow(ctx, sql, args...).Scan(&n); err != nil {
		return 0, fmt.Errorf("reminders: count: %w", err)
	}
	return int(n), nil
}

// where is the condition on reminder_draft that selects sel's drafts in q's dialect, with
// its arguments ($1…).
func (sel Selection) where(q store.Querier) (store.Dialect, string, []any, error) {
	d, ok := store.DialectOf(q)
	if !ok {
		return "", "", nil, errors.New("reminders: select: a querier of unknown dialect")
	}
	var where []string
	var args []any
	arg := func(v any) string {
		args = append(args, v)
		return "$" + strconv.Itoa(len(args))
	}
	list := func(col string, vs []string) error {
		b, err := json.Marshal(vs)
		if err != nil {
			return fmt.Errorf("reminders: select: %w", err)
		}
		where = append(where, store.InList(d, col, arg(string(b))))
		return nil
	}
	if len(sel.IDs) > 0 {
		if err := list("id", sel.IDs); err != nil {
			return "", "", nil, err
		}
	} else {
		where = append(where, "state = 'draft'")
		if len(sel.CustomerIDs) > 0 {
			if err := list("customer_id", sel.CustomerIDs); err != nil {
				return "", "", nil, err
			}
		}
		if sel.DueBy != "" {
			where = append(where, "earliest_due_date <= "+arg(sel.DueBy))
		}
		if sel.Tone != "" {
			where = append(where, "tone = "+arg(string(sel.Tone)))
		}
	}
	return d, strings.Join(where, " AND "), args, nil
}

// UndeliverableAddresses returns the addresses, as written, of the drafts whose message the
// mail server refused for good: a bulk send skips them (the caller compares them as e-mail
// addresses are compared, case-insensitively).
func UndeliverableAddresses(ctx context.Context, q store.Querier) ([]string, error) {
	rows, err := q.Query(ctx, `SELECT DISTINCT recipient_email FROM reminder_draft WHERE state = 'undeliverable'`)
	if err != nil {
		return nil, fmt.Errorf("reminders: undeliverable addresses: %w", err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			return nil, fmt.Errorf("reminders: undeliverable addresses: %w", err)
		}
		out = append(out, s)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("reminders: undeliverable addresses: %w", err)
	}
	return out, nil
}

// Bulk is a bulk send: one approved call that queued many drafts.
type Bulk struct {
	ID         string
	By, Actor  string // who asked; Actor "" for a person
	ApprovalID string // the person's approval it ran under
	PlanHash   string // the plan the dry run showed and the call cited (hex SHA-256)
	Total      int    // drafts queued
	Skipped    int    // drafts the selection held and the plan skipped
	CreatedAt  time.Time
}

// BulkEntry is one draft a bulk send queued: its outbox entry and Message-ID.
type BulkEntry struct {
	ID        string `json:"id"`
	OutboxID  int64  `json:"outbox_id"`
	MessageID string `json:"message_id"`
}

// markChunk bounds the drafts one UPDATE of MarkBulkQueued moves.
const markChunk = 2000

// CreateBulk records b and moves its drafts, open, to queued with their outbox entries, in tx:
// the transaction that enqueues their messages. It fails, changing nothing the caller keeps
// (the caller rolls back), when a draft is not open — the caller locked them and checked.
func CreateBulk(ctx context.Context, tx store.Tx, b Bulk, drafts []BulkEntry) error {
	if !ValidBulkID(b.ID) {
		// GetBulk would never find it: a bulk recorded so could not be read back.
		return fmt.Errorf("reminders: bulk id %q is not a bulk send's id", b.ID)
	}
	if len(drafts) != b.Total || b.Total == 0 {
		return fmt.Errorf("reminders: bulk %s: %d drafts for a total of %d", b.ID, len(drafts), b.Total)
	}
	at := b.CreatedAt.UnixMicro()
	if _, err := tx.Exec(ctx, `INSERT INTO bulk_send (id, requested_by, requested_actor, approval_id, plan_hash, total, skipped, created_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`, b.ID, b.By, b.Actor, nullable(b.ApprovalID), b.PlanHash, int64(b.Total), int64(b.Skipped), at); err != nil {
		return fmt.Errorf("reminders: record bulk: %w", err)
	}
	sql := `UPDATE reminder_draft SET state = 'queued', updated_at = $2, outbox_id = x.outbox_id, message_id = x.message_id,
    queued_by = $3, queued_by_actor = $4, approval_id = $5, queued_at = $2, bulk_id = $6
FROM (SELECT json_extract(value, '$.id') AS id, json_extract(value, '$.outbox_id') AS outbox_id,
        json_extract(value, '$.message_id') AS message_id FROM json_each($1)) AS x
WHERE reminder_draft.id = x.id AND reminder_draft.state = 'draft'`
	if tx.Dialect() == store.Postgres {
		sql = `UPDATE reminder_draft AS d SET state = 'queued', updated_at = $2, outbox_id = x.outbox_id, message_id = x.message_id,
    queued_by = $3, queued_by_actor = $4, approval_id = $5, queued_at = $2, bulk_id = $6
FROM jsonb_to_recordset($1::jsonb) AS x (id text, outbox_id bigint, message_id text)
WHERE d.id = x.id AND d.state = 'draft'`
	}
	for start := 0; start < len(drafts); start += markChunk {
		chunk := drafts[start:min(start+markChunk, len(drafts))]
		js, err := json.Marshal(chunk)
		if err != nil {
			return fmt.Errorf("reminders: mark queued: %w", err)
		}
		n, err := tx.Exec(ctx, sql, string(js), at, b.By, b.Actor, nullable(b.ApprovalID), b.ID)
		if err != nil {
			return fmt.Errorf("reminders: mark queued: %w", err)
		}
		if n != int64(len(chunk)) {
			return fmt.Errorf("reminders: bulk %s: %d of %d drafts were open to queue", b.ID, n, len(chunk))
		}
	}
	return nil
}

// BulkStatus is a bulk send and where its drafts are: queued (in the outbox), sent (accepted
// by the mail server), undeliverable (refused for good).
type BulkStatus struct {
	Bulk
	Queued, Sent, Undeliverable int
}

// GetBulk returns the bulk send id and its drafts' counts by state, or ErrBulkNotFound.
func GetBulk(ctx context.Context, q store.Querier, id string) (BulkStatus, error) {
	if !ValidBulkID(id) {
		return BulkStatus{}, ErrBulkNotFound
	}
	s, err := scanBulk(q.QueryRow(ctx, `SELECT `+bulkColumns+` FROM bulk_send WHERE id = $1`, id))
	switch {
	case errors.Is(err, store.ErrNoRows):
		return BulkStatus{}, ErrBulkNotFound
	case err != nil:
		return BulkStatus{}, fmt.Errorf("reminders: get bulk: %w", err)
	}
	bulks := []BulkStatus{s}
	if err := countBulks(ctx, q, bulks); err != nil {
		return BulkStatus{}, err
	}
	s = bulks[0]
	return s, nil
}
