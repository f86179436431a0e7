package collections_test

import (
	"context"
	"crypto/sha256"
	"testing"
	"time"

	"github.com/cobranca/cobranca/internal/approval"
	"github.com/cobranca/cobranca/internal/calendar"
	"github.com/cobranca/cobranca/internal/collections"
	"github.com/cobranca/cobranca/internal/outbox"
	"github.com/cobranca/cobranca/internal/outbox/outboxtest"
	"github.com/cobranca/cobranca/internal/reminders"
	"github.com/cobranca/cobranca/internal/schedules"
	"github.com/cobranca/cobranca/internal/smtptest"
	"github.com/cobranca/cobranca/internal/store"
)

const sendJobs = `SELECT count(*) FROM river_job WHERE kind = 'cobranca.schedule_batch_send'`

// hookEnv is batchEnv's batcher with its mail outbox, and River clients on e's store: worked
// (the server's) works the batch's jobs; insertOnly is never run, as the CLI's `approvals
// approve` holds one, only to insert the jobs its decisions queue.
func hookEnv(t *testing.T, e *env) (b *collections.Batcher, s schedules.Schedule, worked, insertOnly func() *outbox.Outbox) {
	t.Helper()
	b, s, _ = batchEnv(t, e)
	mail := smtptest.New(t)
	b.Mail = outboxtest.Deliver(t, e.db, mail, outbox.Config{Owner: reminders.Delivery{}})
	worked = func() *outbox.Outbox {
		return outboxtest.Deliver(t, e.db, mail, outbox.Config{Owner: reminders.Delivery{}, Jobs: b.Jobs()})
	}
	insertOnly = func() *outbox.Outbox {
		o, err := outbox.New(e.db, outbox.Config{Driver: outboxtest.Driver(t, e.db), Sender: outbox.Dir{Path: t.TempDir()},
			From: "cobranca@cobranca.test", Jobs: b.Jobs()})
		if err != nil {
			t.Fatal(err)
		}
		return o
	}
	return b, s, worked, insertOnly
}

// waitSent waits until the batch of s on date has its bulk send, and returns it.
func waitSent(t *testing.T, e *env, s schedules.Schedule, date string) schedules.Batch {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		bt, err := schedules.GetBatch(context.Background(), e.db, s.ID, date)
		if err != nil {
			t.Fatal(err)
		}
		if bt.BulkID != "" {
			return bt
		}
		if time.Now().After(deadline) {
			t.Fatalf("batch %+v: no bulk send 30 s after its approval; send jobs: %d", bt, countRows(t, e.db, sendJobs))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestScheduleBatchHookSends: a batch approved inside its send window is sent by the job the
// approval's decide hook queued, without a tick or a Send: its 2 messages are queued and the
// approval executed.
func TestScheduleBatchHookSends(t *testing.T) {
	eachEnv(t, func(t *testing.T, e *env) {
		ctx := context.Background()
		b, s, worked, _ := hookEnv(t, e)
		b.Approvals.OnDecide(b.OnApproved(worked()))
		bt, _, err := b.Run(ctx, s.ID, calendar.DateOf(e.clock(), s.Window.Zone)) // 09:00 in São Paulo: the window is open
		if err != nil {
			t.Fatal(err)
		}
		if n := countRows(t, e.db, sendJobs); n != 0 {
			t.Fatalf("%d send jobs before the approval, want 0", n)
		}
		approve(t, e, b, bt.ApprovalID)
		got := waitSent(t, e, s, bt.Date)
		if !reminders.ValidBulkID(got.BulkID) {
			t.Errorf("batch = %+v, want its bulk id", got)
		}
		if n := countRows(t, e.db, `SELECT count(*) FROM reminder_draft WHERE state IN ('queued', 'sent')`); n != 2 {
			t.Errorf("%d drafts queued or sent, want 2", n)
		}
		if act, err := b.Approvals.Get(ctx, e.db, bt.ApprovalID); err != nil || act.State != approval.Executed {
			t.Errorf("approval = %+v, %v; want executed", act, err)
		}
		if n := countRows(t, e.db, sendJobs); n != 1 {
			t.Errorf("%d send jobs, want 1", n)
		}
	})
}

// TestScheduleBatchHookNoJob: a rejected batch, and an approved call of another client (an
// agent's bulk send), queue no send job.
func TestScheduleBatchHookNoJob(t *testing.T) {
	eachEnv(t, func(t *testing.T, e *env) {
		ctx := context.Background()
		b, s, _, insertOnly := hookEnv(t, e)
		b.Approvals.OnDecide(b.OnApproved(insertOnly()))
		bt, _, err := b.Run(ctx, s.ID, calendar.DateOf(e.clock(), s.Window.Zone))
		if err != nil {
			t.Fatal(err)
		}
		decide := func(id string, approve bool) {
			t.Helper()
			err := e.db.InTx(ctx, func(ctx context.Context, tx store.Tx) error {
				_, err := b.Approvals.Decide(ctx, tx, id, approve, approval.Approver{Subject: "bia"})
				return err
			})
			if err != nil {
				t.Fatal(err)
			}
		}
		decide(bt.ApprovalID, false)
		if n := countRows(t, e.db, sendJobs); n != 0 {
			t.Errorf("after a rejection: %d send jobs, want 0", n)
		}
		// An agent's own bulk send, naming the schedule as its actor: not the schedule's batch.
		other, err := b.Approvals.Create(ctx, e.db, collections.BulkSendName, sha256.Sum256([]byte("agent's call")), "send 2 messages", nil,
			approval.Requester{Subject: "ana", Client: "ledger-copilot", Actor: s.ID})
		if err != nil {
			t.Fatal(err)
		}
		decide(other.ID, true)
		if n := countRows(t, e.db, sendJobs); n != 0 {
			t.Errorf("after approving another client's call: %d send jobs, want 0", n)
		}
	})
}

// TestScheduleBatchHookOutsideWindow: a batch approved after its send window closed (20:30 in
// São Paulo) — by a process that only inserts, as the CLI — gets its send job scheduled at the
// window's next opening (08:00 of the next business day), and sends nothing before; once the
// window is open, a server's River client works the job and the batch is sent.
func TestScheduleBatchHookOutsideWindow(t *testing.T) {
	eachEnv(t, func(t *testing.T, e *env) {
		ctx := context.Background()
		b, s, worked, insertOnly := hookEnv(t, e)
		b.Approvals.OnDecide(b.OnApproved(insertOnly()))
		e.advance(11*time.Hour + 30*time.Minute) // Wednesday 2026-07-01, 20:30 in São Paulo: the window closed at 20:00
		bt, _, err := b.Run(ctx, s.ID, calendar.DateOf(e.clock(), s.Window.Zone))
		if err != nil {
			t.Fatal(err)
		}
		approved := e.clock()
		approve(t, e, b, bt.ApprovalID)
		if n := countRows(t, e.db, sendJobs); n != 1 {
			t.Fatalf("%d send jobs, want 1", n)
		}
		open := calendar.Brazil().NextOpen(s.Window, approved)
		if want := time.Date(2026, 7, 2, 8, 0, 0, 0, s.Window.Zone); !open.Equal(want) {
			t.Fatalf("NextOpen(%v) = %v, want %v", approved, open, want)
		}
		at := scheduledAt(t, e.db)
		if !at.Equal(open) {
			t.Errorf("the send job is scheduled at %v, want the window's opening %v", at, open)
		}
		if bt, err := schedules.GetBatch(ctx, e.db, s.ID, bt.Date); err != nil || bt.BulkID != "" {
			t.Errorf("before the window opens: batch %+v, %v; want it unsent", bt, err)
		}
		e.advance(11*time.Hour + 35*time.Minute) // Thursday 08:05
		worked()
		if got := waitSent(t, e, s, bt.Date); !reminders.ValidBulkID(got.BulkID) {
			t.Errorf("batch = %+v, want its bulk id", got)
		}
	})
}

// scheduledAt is when River's one send job is scheduled, to the microsecond.
func scheduledAt(t *testing.T, db store.DB) time.Time {
	t.Helper()
	sql := `SELECT CAST(EXTRACT(EPOCH FROM scheduled_at) * 1000000 AS bigint) FROM river_job WHERE kind = 'cobranca.schedule_batch_send'`
	if db.Dialect() == store.SQLite {
		sql = `SELECT CAST(unixepoch(scheduled_at, 'subsec') * 1000000 AS integer) FROM river_job WHERE kind = 'cobranca.schedule_batch_send'`
	}
	var us int64
	if err := db.QueryRow(context.Background(), sql).Scan(&us); err != nil {
		t.Fatal(err)
	}
	return time.UnixMicro(us)
}

// TestScheduleBatchSendJobEarly: a send job run before its batch's window opens (the deciding
// process's clock ahead of the worker's: here, a job scheduled at a moment River's clock has
// passed while the batcher's clock reads 20:30 in São Paulo) sends nothing and snoozes until
// the window opens, by the batcher's clock; a tick inside the window sends the batch.
func TestScheduleBatchSendJobEarly(t *testing.T) {
	eachEnv(t, func(t *testing.T, e *env) {
		ctx := context.Background()
		b, s, worked, _ := hookEnv(t, e)
		b.Approvals.OnDecide(b.OnApproved(worked()))
		e.advance(11*time.Hour + 30*time.Minute) // Wednesday 2026-07-01, 20:30 in São Paulo
		bt, _, err := b.Run(ctx, s.ID, calendar.DateOf(e.clock(), s.Window.Zone))
		if err != nil {
			t.Fatal(err)
		}
		approve(t, e, b, bt.ApprovalID) // its job is due at once by River's clock (2026-07-02 is past)
		wait := calendar.Brazil().NextOpen(s.Window, e.clock()).Sub(e.clock())
		// Snoozed: scheduled again, after it ran once (River counts a snooze as no attempt).
		snoozed := `SELECT count(*) FROM river_job WHERE kind = 'cobranca.schedule_batch_send' AND state = 'scheduled' AND attempted_at IS NOT NULL`
		for deadline := time.Now().Add(30 * time.Second); countRows(t, e.db, snoozed) != 1; time.Sleep(20 * time.Millisecond) {
			if time.Now().After(deadline) {
				var state string
				var errs any
				_ = e.db.QueryRow(ctx, `SELECT state, errors FROM river_job WHERE kind = 'cobranca.schedule_batch_send'`).Scan(&state, &errs)
				t.Fatalf("the send job did not snooze within 30 s: state %s, errors %v", state, errs)
			}
		}
		if at := scheduledAt(t, e.db); at.Before(time.Now().Add(wait-time.Minute)) || at.After(time.Now().Add(wait)) {
			t.Errorf("the snoozed job is scheduled at %v, want %v from now (the window's opening by the batcher's clock)", at, wait)
		}
		if got, err := schedules.GetBatch(ctx, e.db, s.ID, bt.Date); err != nil || got.BulkID != "" {
			t.Errorf("after the early run: batch %+v, %v; want it unsent", got, err)
		}
		e.advance(11*time.Hour + 35*time.Minute) // Thursday 08:05: the tick sends it
		if n, err := b.Send(ctx); err != nil || n != 1 {
			t.Fatalf("the tick's Send = %d, %v; want 1", n, err)
		}
	})
}
