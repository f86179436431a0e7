package reminders

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/cobranca/cobranca/internal/failure"
	"github.com/cobranca/cobranca/internal/outbox"
	"github.com/cobranca/cobranca/internal/pix"
	"github.com/cobranca/cobranca/internal/store"
)

// ErrNotFound is the answer for a draft id no draft has.
var ErrNotFound = errors.New("reminders: no such draft")

// Get returns the draft id, or ErrNotFound.
func Get(ctx context.Context, q store.Querier, id string) (Record, error) {
	return get(ctx, q, `SELECT `+recordColumns+` FROM reminder_draft WHERE id = $1`, id)
}

// GetForUpdate returns the draft id locked until tx ends (PostgreSQL SELECT … FOR UPDATE; a
// SQLite write transaction holds the whole database), or ErrNotFound: a send and a discard of
// the same draft wait for each other, and the second reads what the first made of it.
func GetForUpdate(ctx context.Context, tx store.Tx, id string) (Record, error) {
	sql := `SELECT ` + recordColumns + ` FROM reminder_draft WHERE id = $1`
	if tx.Dialect() == store.Postgres {
		sql += ` FOR UPDATE`
	}
	return get(ctx, tx, sql, id)
}

func get(ctx context.Context, q store.Querier, sql, id string) (Record, error) {
	if !ValidID(id) {
		return Record{}, ErrNotFound
	}
	r, err := scanRecord(q.QueryRow(ctx, sql, id))
	switch {
	case errors.Is(err, store.ErrNoRows):
		return Record{}, ErrNotFound
	case err != nil:
		return Record{}, fmt.Errorf("reminders: get draft: %w", err)
	}
	return r, nil
}

// Queue is what MarkQueued records of a send.
type Queue struct {
	OutboxID   int64
	MessageID  string
	By, Actor  string // who asked for the send; Actor "" for a person
	ApprovalID string
}

// MarkQueued moves the open draft id to queued, recording its outbox entry and who asked, as
// of now, in tx: the transaction that enqueues its message. It fails, changing nothing, when
// the draft is not open (the caller locked it and checked, so that is a bug or a race it lost).
func MarkQueued(ctx context.Context, tx store.Tx, id string, q Queue, now time.Time) error {
	at := now.UnixMicro()
	n, err := tx.Exec(ctx, `UPDATE reminder_draft SET state = $2, updated_at = $3, outbox_id = $4, message_id = $5,
    queued_by = $6, queued_by_actor = $7, approval_id = $8, queued_at = $3
WHERE id = $1 AND state = 'draft'`, id, string(Queued), at, q.OutboxID, q.MessageID, q.By, q.Actor, nullable(q.ApprovalID))
	if err != nil {
		return fmt.Errorf("reminders: mark queued: %w", err)
	}
	if n != 1 {
		return fmt.Errorf("reminders: mark queued: draft %s is not open", id)
	}
	return nil
}

func nullable(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// Delivery is the outbox's owner of reminder messages (internal/outbox.Owner): it records on
// the draft an entry's Ref names what became of its message, and gives the body of a message
// enqueued without one (internal/outbox.ContentOwner: Content). It changes only a draft queued
// under that entry, so a report that comes twice (a retried job) changes nothing the second
// time.
type Delivery struct{}

// Delivered records, in tx (the worker's, which completes the entries), that the mail server
// accepted each message for the draft its Ref names, under its entry, at its At: those drafts
// become sent. One statement for the group.
func (Delivery) Delivered(ctx context.Context, tx store.Tx, accepted []outbox.Accepted) error {
	type row struct {
		ID       string `json:"id"`
		OutboxID int64  `json:"outbox_id"`
		At       int64  `json:"at"`
	}
	rows := make([]row, len(accepted))
	for i, a := range accepted {
		rows[i] = row{ID: a.Ref, OutboxID: a.Entry, At: a.At.UnixMicro()}
	}
	js, err := json.Marshal(rows)
	if err != nil {
		return fmt.Errorf("reminders: mark sent: %w", err)
	}
	sql := `UPDATE reminder_draft SET state = $2, updated_at = x.at, delivered_at = x.at
FROM (SELECT json_extract(value, '$.id') AS id, json_extract(value, '$.outbox_id') AS outbox_id,
        json_extract(value, '$.at') AS at FROM json_each($1)) AS x
WHERE reminder_draft.id = x.id AND reminder_draft.outbox_id = x.outbox_id AND reminder_draft.state = 'queued'`
	if tx.Dialect() == store.Postgres {
		sql = `UPDATE reminder_draft AS d SET state = $2, updated_at = x.at, delivered_at = x.at
FROM jsonb_to_recordset($1::jsonb) AS x (id text, outbox_id bigint, at bigint)
WHERE d.id = x.id AND d.outbox_id = x.outbox_id AND d.state = 'queued'`
	}
	if _, err := tx.Exec(ctx, sql, string(js), string(Sent)); err != nil {
		return fmt.Errorf("reminders: mark sent: %w", err)
	}
	return nil
}

// Undeliverable records, in tx, that the mail server refused entry's message for the draft
// ref for good, at at, and why (reason names no recipient): the draft becomes undeliverable.
func (Delivery) Undeliverable(ctx context.Context, tx store.Tx, ref string, entry int64, reason string, at time.Time) error {
	ms := at.UnixMicro()
	if _, err := tx.Exec(ctx, `UPDATE reminder_draft SET state = $3, updated_at = $4, failed_at = $4, failure_reason = $5
WHERE id = $1 AND outbox_id = $2 AND state = 'queued'`, ref, entry, string(Undeliverable), ms, reason); err != nil {
		return fmt.Errorf("reminders: mark undeliverable: %w", err)
	}
	return nil
}

// Content gives the outbox the body of the message about the draft ref (internal/outbox's
// ContentOwner, for a message enqueued FromOwner): its text and HTML parts as stored, and, when
// it carries a PIX code and has HTML, the code's QR image, which the HTML shows inline under
// QRContentID, drawn again from the stored code (the same code gives the same image). A
// draft's parts never change once written (the serving role may not update them) and a draft
// is never deleted, so what is read at delivery is what the person approved, on every attempt.
// One read by primary key, of the three columns the message needs; no draft ref wraps
// outbox.ErrNoContent.
func (Delivery) Content(ctx context.Context, q store.Querier, ref string) (outbox.Content, error) {
	if !ValidID(ref) {
		return outbox.Content{}, fmt.Errorf("reminders: draft %q: %w", ref, outbox.ErrNoContent)
	}
	var c outbox.Content
	var code string
	err := q.QueryRow(ctx, `SELECT body, html, pix_code FROM reminder_draft WHERE id = $1`, ref).Scan(&c.Text, &c.HTML, &code)
	switch {
	case errors.Is(err, store.ErrNoRows):
		return outbox.Content{}, fmt.Errorf("reminders: draft %s: %w", ref, outbox.ErrNoContent)
	case err != nil:
		return outbox.Content{}, fmt.Errorf("reminders: draft %s's message: %w", ref, err)
	}
	if code == "" || c.HTML == "" {
		return c, nil
	}
	png, err := pix.QRPNG(code)
	if err != nil {
		// The stored code will not draw on a later attempt either: no retry mends it.
		return outbox.Content{}, fmt.Errorf("reminders: draft %s: its QR code: %v: %w", ref, err, outbox.ErrNoContent)
	}
	c.Related = []outbox.Part{{ContentID: QRContentID, ContentType: "image/png", Name: "pix-qr.png", Data: png}}
	return c, nil
}

// The failure codes of sending a draft, each listed in the contract of the tool that answers it.
const (
	// CodeDraftNotFound: no draft has the id.
	CodeDraftNotFound failure.Code = "draft_not_found"
	// CodeDraftNotOpen: the draft is not open (state draft): it was discarded, or it is already
	// queued, sent or undeliverable — a draft is sent once.
	CodeDraftNotOpen failure.Code = "draft_not_open"
	// CodeBulkTooLarge: a bulk send's filter selects more drafts than one bulk send takes (MaxBulk).
	CodeBulkTooLarge failure.Code = "bulk_too_large"
	// CodeBulkEmpty: a bulk send's selection holds no draft that may be sent now.
	CodeBulkEmpty failure.Code = "bulk_empty"
	// CodeBulkNotFound: no bulk send has the id.
	CodeBulkNotFound failure.Code = "bulk_not_found"
)

// Sends returns the customer's drafts that were sent (queued, sent, undeliverable), the latest
// queued first, at most limit.
func Sends(ctx context.Context, q store.Querier, customerID string, limit int) ([]Record, error) {
	return queryRecords(ctx, q, "sends", `SELECT `+listColumns+` FROM reminder_draft
WHERE customer_id = $1 AND state IN ('queued', 'sent', 'undeliverable') ORDER BY queued_at DESC, id DESC LIMIT $2`, customerID, int64(limit))
}

// RecentMessages counts, by customer, the messages that count against a cap of messages per
// customer since since: the drafts queued since then (queued, sent or undeliverable: each was
// a message), and the drafts written since then and still open (each may become one). Drafts
// discarded count for nothing. It reads reminder_draft_sending and reminder_draft_created.
func RecentMessages(ctx context.Context, q store.Querier, since time.Time) (map[string]int, error) {
	us := since.UnixMicro()
	rows, err := q.Query(ctx, `SELECT customer_id, COUNT(*) FROM reminder_draft
WHERE (state IN ('queued', 'sent', 'undeliverable') AND queued_at >= $1) OR (state = 'draft' AND created_at >= $1)
GROUP BY customer_id`, us)
	if err != nil {
		return nil, fmt.Errorf("reminders: recent messages: %w", err)
	}
	defer rows.Close()
	out := map[string]int{}
	for rows.Next() {
		var id string
		var n int64
		if err := rows.Scan(&id, &n); err != nil {
			return nil, fmt.Errorf("reminders: recent messages: %w", err)
		}
		out[id] = int(n)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("reminders: recent messages: %w", err)
	}
	return out, nil
}
