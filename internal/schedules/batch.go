package schedules

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/cobranca/cobranca/internal/store"
)

// A schedule's daily batch, as schedule_batch records it (migrations 00231 and 00232):
// internal/collections' Batcher makes, sends and lapses batches; this is their record, which
// the tools and the console read.

// Batch outcomes, as schedule_batch records them.
const (
	BatchOpened = "opened" // drafts prepared, one bulk send waits for approval (BulkID once sent)
	BatchLapsed = "lapsed" // its approval expired or was rejected, or nothing was left to send: its open drafts discarded
	BatchEmpty  = "empty"  // nothing to send: no approval asked
	BatchClosed = "closed" // the schedule is paused or past its end date
)

// Batch is what a schedule's job did on one day.
type Batch struct {
	ScheduleID string
	Date       string
	Outcome    string
	ApprovalID string
	BulkID     string
	Drafts     int
	Recipients int
	PlanHash   string
	Skipped    BatchSkips
	CreatedAt  time.Time
	// SendIDs are the drafts the approval covers: those the bulk send's plan sent when the batch
	// opened. The send sends some of them or none, never another.
	SendIDs []string
	// ApprovalState and ApprovalExpires are its approval's state as recorded and its expiry
	// (LatestBatches only; "" without one): approval.StateAt says what the state reads now.
	// This package reads approvals' rows but imports not internal/approval, which audits.
	ApprovalState   string
	ApprovalExpires time.Time
}

// BatchSkips are a batch's skips by reason: the schedule's plan's (invoices left out), the
// bulk send's when the batch opened (drafts prepared but not sendable) and, once it ran, the
// send's (approved drafts left out because the ledger or the customer changed since).
type BatchSkips struct {
	Plan Skips          `json:"plan"`
	Bulk map[string]int `json:"bulk"`
	Send map[string]int `json:"send,omitempty"`
}

// InsertBatch records bt.
func InsertBatch(ctx context.Context, tx store.Tx, bt Batch) error {
	sk, err := json.Marshal(bt.Skipped)
	if err != nil {
		return err
	}
	ids := bt.SendIDs
	if ids == nil {
		ids = []string{}
	}
	send, err := json.Marshal(ids)
	if err != nil {
		return err
	}
	_, err = tx.Exec(ctx, `INSERT INTO schedule_batch (schedule_id, batch_date, outcome, approval_id, bulk_id, drafts, recipients, plan_hash, skipped, created_at, send_ids)
VALUES ($1, $2, $3, $4, '', $5, $6, $7, $8, $9, $10)`, bt.ScheduleID, bt.Date, bt.Outcome, bt.ApprovalID, int64(bt.Drafts), int64(bt.Recipients),
		bt.PlanHash, string(sk), bt.CreatedAt.UnixMicro(), string(send))
	if err != nil {
		return fmt.Errorf("record batch: %w", err)
	}
	return nil
}

// MarkBatchSent records that the opened batch of schedule id on date ran as the bulk send
// bulkID, leaving out what send counts. It fails when the batch is not opened and unsent (the
// caller holds the schedule's lock and checked).
func MarkBatchSent(ctx context.Context, tx store.Tx, id, date, bulkID string, send map[string]int) error {
	bt, err := GetBatch(ctx, tx, id, date)
	if err != nil {
		return err
	}
	bt.Skipped.Send = send
	sk, err := json.Marshal(bt.Skipped)
	if err != nil {
		return err
	}
	n, err := tx.Exec(ctx, `UPDATE schedule_batch SET bulk_id = $3, skipped = $4 WHERE schedule_id = $1 AND batch_date = $2 AND outcome = 'opened' AND bulk_id = ''`,
		id, date, bulkID, string(sk))
	if err != nil {
		return fmt.Errorf("record the bulk send: %w", err)
	}
	if n != 1 {
		return fmt.Errorf("record the bulk send: batch %s %s is not open", id, date)
	}
	return nil
}

// MarkBatchLapsed records the opened, unsent batch of schedule id on date lapsed; done is
// false when it was no longer both (another replica lapsed or sent it first).
func MarkBatchLapsed(ctx context.Context, tx store.Tx, id, date string) (done bool, err error) {
	n, err := tx.Exec(ctx, `UPDATE schedule_batch SET outcome = 'lapsed' WHERE schedule_id = $1 AND batch_date = $2 AND outcome = 'opened' AND bulk_id = ''`, id, date)
	if err != nil {
		return false, fmt.Errorf("lapse batch: %w", err)
	}
	return n == 1, nil
}

const batchColumns = `b.schedule_id, b.batch_date, b.outcome, b.approval_id, b.bulk_id, b.drafts, b.recipients, b.plan_hash, b.skipped, b.created_at, b.send_ids`

// scanBatch reads batchColumns, then the extra columns into extra.
func scanBatch(row store.Row, extra ...any) (Batch, error) {
	var (
		bt            Batch
		drafts, n, at int64
		sk, send      string
	)
	dst := append([]any{&bt.ScheduleID, &bt.Date, &bt.Outcome, &bt.ApprovalID, &bt.BulkID, &drafts, &n, &bt.PlanHash, &sk, &at, &send}, extra...)
	if err := row.Scan(dst...); err != nil {
		return Batch{}, err
	}
	bt.Drafts, bt.Recipients, bt.CreatedAt = int(drafts), int(n), time.UnixMicro(at).UTC()
	if err := json.Unmarshal([]byte(sk), &bt.Skipped); err != nil {
		return Batch{}, fmt.Errorf("batch %s %s: skipped: %w", bt.ScheduleID, bt.Date, err)
	}
	if err := json.Unmarshal([]byte(send), &bt.SendIDs); err != nil {
		return Batch{}, fmt.Errorf("batch %s %s: send ids: %w", bt.ScheduleID, bt.Date, err)
	}
	return bt, nil
}

// GetBatch is the batch of schedule id on date (store.ErrNoRows when none).
func GetBatch(ctx context.Context, q store.Querier, id, date string) (Batch, error) {
	return scanBatch(q.QueryRow(ctx, `SELECT `+batchColumns+` FROM schedule_batch b WHERE b.schedule_id = $1 AND b.batch_date = $2`, id, date))
}

// LatestShown is how many of a schedule's latest batches its readers show: get_schedule's
// answer and the console's schedule page.
const LatestShown = 10

// LatestBatches are the schedule's latest batches, newest first, at most limit, each with
// its approval's recorded state and expiry. The primary key (schedule_id, batch_date) reads
// them in order: limit rows of one schedule, never the table.
func LatestBatches(ctx context.Context, q store.Querier, id string, limit int) ([]Batch, error) {
	rows, err := q.Query(ctx, `SELECT `+batchColumns+`, COALESCE(a.state, ''), COALESCE(a.expires_at, 0)
FROM schedule_batch b LEFT JOIN approval a ON a.id = b.approval_id
WHERE b.schedule_id = $1 ORDER BY b.batch_date DESC LIMIT $2`, id, int64(limit))
	if err != nil {
		return nil, fmt.Errorf("schedule batches: %w", err)
	}
	defer rows.Close()
	var out []Batch
	for rows.Next() {
		var (
			state   string
			expires int64
		)
		bt, err := scanBatch(rows, &state, &expires)
		if err != nil {
			return nil, err
		}
		if bt.ApprovalState = state; state != "" {
			bt.ApprovalExpires = time.UnixMicro(expires).UTC()
		}
		out = append(out, bt)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("schedule batches: %w", err)
	}
	return out, nil
}

// OpenBatch names a batch opened whose bulk send has not run.
type OpenBatch struct {
	ScheduleID, Date, ApprovalID string
}

// OpenBatches are the batches opened whose bulk send has not run, oldest first; with
// approvalID, only the one that approval is for.
func OpenBatches(ctx context.Context, q store.Querier, approvalID string) ([]OpenBatch, error) {
	rows, err := q.Query(ctx, `SELECT schedule_id, batch_date, approval_id FROM schedule_batch
WHERE outcome = 'opened' AND bulk_id = '' AND ($1 = '' OR approval_id = $1) ORDER BY batch_date, schedule_id`, approvalID)
	if err != nil {
		return nil, fmt.Errorf("schedule batches: open: %w", err)
	}
	defer rows.Close()
	var out []OpenBatch
	for rows.Next() {
		var o OpenBatch
		if err := rows.Scan(&o.ScheduleID, &o.Date, &o.ApprovalID); err != nil {
			return nil, err
		}
		out = append(out, o)
	}
	return out, rows.Err()
}
