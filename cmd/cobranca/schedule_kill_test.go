package main

import (
	"context"
	"encoding/json"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/riverqueue/river"

	"github.com/cobranca/cobranca/internal/approval"
	"github.com/cobranca/cobranca/internal/auth"
	"github.com/cobranca/cobranca/internal/calendar"
	"github.com/cobranca/cobranca/internal/collections"
	"github.com/cobranca/cobranca/internal/customers"
	"github.com/cobranca/cobranca/internal/ledger"
	"github.com/cobranca/cobranca/internal/outbox"
	"github.com/cobranca/cobranca/internal/outbox/outboxtest"
	"github.com/cobranca/cobranca/internal/reminders"
	"github.com/cobranca/cobranca/internal/reminders/reminderstest"
	"github.com/cobranca/cobranca/internal/schedules"
	"github.com/cobranca/cobranca/internal/store"
	"github.com/cobranca/cobranca/internal/tier"
)

// killedBatch is how many customers, each with one overdue invoice, the killed batch writes to.
const killedBatch = 1500

// batchDay is the killed batch's day: a Wednesday, a business day. The schedule ends before
// the wall clock's today, so the replicas' own ticks never ask a batch of their own.
var batchDay = calendar.Date{Year: 2026, Month: time.July, Day: 1}

// TestScheduleBatchKilled (issue 30): three replicas and a SIGKILL during a batch — exactly one
// batch per schedule and day, each message sent once. A schedule over killedBatch overdue
// invoices; its day's job (cobranca.schedule_batch) is taken by replica 0 — the others frozen
// until it has — which is killed while it prepares the batch, before its transaction commits,
// and started again. River rescues the job and another replica makes the batch: one
// schedule_batch row, one approval, one draft and one step per invoice. A person approves it
// (`cobranca approvals approve`), the batch's bulk send is enqueued (Batcher.Send, on a clock
// inside the send window), and replica 1 is killed while the three deliver. Every draft ends
// sent; the relay received every draft's message under its one Message-ID, to its recipient; a
// second copy only of a message the killed replica had in hand (rescued, sent again under the
// same Message-ID, which a receiver deduplicates: at least once, by design).
//
// serve has no test clock: the schedule's send window (killedWindow) opens hours after the
// wall clock's now, so that no replica sends the batch itself (its tick, or the send job the
// approval's decide hook queues, scheduled at that opening), and Send runs here, on a clock
// inside the window on batchDay.
func TestScheduleBatchKilled(t *testing.T) {
	tier.EndToEnd(t)
	start := time.Now()
	// River times a job out at half the rescue delay: 15 s for the batch's transaction on a
	// loaded machine; a job of a killed replica is rescued after 30 s.
	r := startReplicas(t, "COBRANCA_MAIL_RESCUE_AFTER=30s")
	ctx := t.Context()
	open, closes := killedWindow(time.Now())
	s := killedSchedule(t, r.db, open, closes)
	// The test's own outbox only inserts: the batch's job, and the messages of Send below.
	b := killedBatcher(t, r.db, open)
	ob, err := outbox.New(r.db, outbox.Config{Driver: outboxtest.Driver(t, r.db), Sender: outbox.Dir{Path: t.TempDir()}, From: mailFrom, Owner: reminders.Delivery{}, Jobs: b.Jobs()})
	if err != nil {
		t.Fatal(err)
	}
	b.Mail = ob

	step(t, "replica 0, killed while it prepares the batch; another makes it once", func() {
		for _, p := range r.procs[1:] {
			if err := p.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
				t.Fatal(err)
			}
		}
		err := r.db.InTx(ctx, func(ctx context.Context, tx store.Tx) error {
			_, _, err := ob.Insert(ctx, tx, collections.BatchArgs{ScheduleID: s.ID, Date: batchDay.String()},
				&river.InsertOpts{Queue: "schedule_batch", UniqueOpts: river.UniqueOpts{ByArgs: true}})
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		// Replica 0 runs the job and is into its drafts, inside Run's transaction: one backend
		// holds the schedule's row lock (RowShareLock, FOR UPDATE) and has written drafts
		// (RowExclusiveLock on reminder_draft), neither committed (a commit releases both).
		for deadline := time.Now().Add(30 * time.Second); r.count(`SELECT count(*) FROM river_job WHERE kind = 'cobranca.schedule_batch' AND state = 'running' AND attempt >= 1`) == 0 ||
			r.count(preparing) == 0; time.Sleep(5 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("replica 0 was not into the batch's drafts 30 s after its job was queued: %d batch jobs running, %d backends preparing",
					r.count(`SELECT count(*) FROM river_job WHERE kind = 'cobranca.schedule_batch' AND state = 'running'`), r.count(preparing))
			}
		}
		r.procs[0].kill()
		for _, p := range r.procs[1:] {
			if err := p.cmd.Process.Signal(syscall.SIGCONT); err != nil {
				t.Fatal(err)
			}
		}
		if n := r.count(`SELECT count(*) FROM schedule_batch`) + r.count(`SELECT count(*) FROM approval`) + r.count(`SELECT count(*) FROM reminder_draft`); n != 0 {
			t.Fatalf("%d batch, approval and draft rows at the kill: the batch was made before it (raise killedBatch)", n)
		}
		r.procs[0] = startServeProcess(t, r.environ[0], r.addrs[0])
		for deadline := time.Now().Add(120 * time.Second); r.count(`SELECT count(*) FROM schedule_batch`) == 0; time.Sleep(100 * time.Millisecond) {
			if time.Now().After(deadline) {
				// The job's state and errors say whether it was rescued, and whether its later
				// attempts timed out (River's job timeout, 15 s here) on a loaded machine.
				var job string
				_ = r.db.QueryRow(ctx, `SELECT state || ', attempt ' || attempt || ', errors ' || COALESCE(CAST(errors AS text), 'none')
FROM river_job WHERE kind = 'cobranca.schedule_batch'`).Scan(&job)
				t.Fatalf("no replica made the batch 120 s after the kill; its job: %s", job)
			}
		}
		if n := r.count(`SELECT max(attempt) FROM river_job WHERE kind = 'cobranca.schedule_batch'`); n < 2 {
			t.Errorf("the batch's job ran %d times, want the killed attempt and the rescued one", n)
		}
	})

	var bt schedules.Batch
	step(t, "one batch, one approval, one draft per invoice", func() {
		r.checkBatch(t, s.ID, killedBatch)
		var err error
		if bt, err = schedules.GetBatch(ctx, r.db, s.ID, batchDay.String()); err != nil {
			t.Fatal(err)
		}
		if bt.Outcome != collections.BatchOpened || bt.Drafts != killedBatch || bt.Recipients != killedBatch || bt.ApprovalID == "" {
			t.Fatalf("batch = %+v, want opened with %d drafts and recipients, and its approval", bt, killedBatch)
		}
	})

	step(t, "approved by a person; replica 1 killed while the three deliver", func() {
		// A leader is elected and no tick waits (a new leader ticks at once) before the
		// approval: the bulk send is enqueued below, on a clock inside the send window, not by a
		// tick on the wall clock's (which may be a night or a holiday).
		for deadline := time.Now().Add(60 * time.Second); r.leader() == "" ||
			r.count(`SELECT count(*) FROM river_job WHERE kind = 'cobranca.schedule_tick' AND state <> 'completed'`) > 0; time.Sleep(100 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("no leader, or a tick not completed, a minute after the kill: %d ticks", r.count(`SELECT count(*) FROM river_job WHERE kind = 'cobranca.schedule_tick'`))
			}
		}
		approver := r.idp.Mint(t, auth.MintOptions{Subject: "bruno", ACR: strongACR, Roles: []string{collections.ApproverRole}})
		mustRunIn(t, r.environ[2], approver, "approvals", "approve", bt.ApprovalID, "--token", "-")
		// The CLI's decision queued the batch's send job (the server's decide hook), for the
		// window's opening, hours away: no replica takes it during the test.
		if n := r.count(`SELECT count(*) FROM river_job WHERE kind = 'cobranca.schedule_batch_send' AND state = 'scheduled' AND scheduled_at > now() + interval '2 hours'`); n != 1 {
			t.Fatalf("%d send jobs scheduled for the window's opening after the approval, want 1 (all: %d)", n,
				r.count(`SELECT count(*) FROM river_job WHERE kind = 'cobranca.schedule_batch_send'`))
		}

		if n, err := b.Send(ctx); err != nil || n != 1 {
			t.Fatalf("Send = %d, %v; want the approved batch sent", n, err)
		}
		if n, err := b.Send(ctx); err != nil || n != 0 {
			t.Fatalf("Send again = %d, %v; want nothing", n, err)
		}

		r.mail.Wait(t, killedBatch/4, 60*time.Second)
		r.procs[1].kill()
		killedAt := len(r.mail.Messages())
		if killedAt >= killedBatch {
			t.Fatal("all messages were accepted at the kill: the batch was no longer being delivered")
		}
		reminderstest.WaitSent(t, r.db, killedBatch, 120*time.Second)
		r.messages = killedBatch
		rescued := r.count(`SELECT count(*) FROM river_job WHERE kind = 'cobranca.email' AND attempt > 1`)
		copies := r.checkDelivered(t, rescued)
		t.Logf("killed with %d of %d messages received: %d rescued and sent again, %d received twice", killedAt, killedBatch, rescued, copies)
	})

	step(t, "still one batch, one approval, executed, one bulk send", func() {
		r.checkBatch(t, s.ID, killedBatch)
		got, err := schedules.GetBatch(ctx, r.db, s.ID, batchDay.String())
		if err != nil {
			t.Fatal(err)
		}
		if got.Outcome != collections.BatchOpened || got.BulkID == "" || got.ApprovalID != bt.ApprovalID {
			t.Errorf("batch = %+v, want opened with its bulk send and approval %s", got, bt.ApprovalID)
		}
		if n := r.count(`SELECT count(*) FROM approval WHERE id = $1 AND state = 'executed'`, bt.ApprovalID); n != 1 {
			t.Errorf("approval %s executed: %d rows, want 1", bt.ApprovalID, n)
		}
		if n := r.count(`SELECT count(*) FROM bulk_send WHERE approval_id = $1 AND total = $2`, bt.ApprovalID, killedBatch); n != 1 {
			t.Errorf("%d bulk sends of %d with the approval, want 1", n, killedBatch)
		}
	})
	t.Logf("%d messages, 2 kills: %v", killedBatch, time.Since(start).Round(time.Millisecond))
}

// checkBatch checks that the schedule has exactly one batch, on batchDay, with one approval and
// one draft and one step per message.
func (r *replicaSet) checkBatch(t *testing.T, scheduleID string, messages int) {
	t.Helper()
	for _, c := range []struct {
		what, query string
		want        int
	}{
		{"batches", `SELECT count(*) FROM schedule_batch WHERE schedule_id = $1`, 1},
		{"batches on " + batchDay.String(), `SELECT count(*) FROM schedule_batch WHERE schedule_id = $1 AND batch_date = '` + batchDay.String() + `'`, 1},
		{"approvals", `SELECT count(*) FROM approval WHERE $1 <> ''`, 1},
		{"drafts", `SELECT count(*) FROM reminder_draft WHERE created_by_actor = $1`, messages},
		{"distinct customers drafted", `SELECT count(DISTINCT customer_id) FROM reminder_draft WHERE created_by_actor = $1`, messages},
		{"steps", `SELECT count(*) FROM schedule_step WHERE schedule_id = $1`, messages},
	} {
		if n := r.count(c.query, scheduleID); n != c.want {
			t.Errorf("%d %s, want %d", n, c.what, c.want)
		}
	}
}

// preparing counts the backends inside a batch's transaction and into its drafts: holding
// the schedule's row lock and having written reminder_draft, uncommitted.
const preparing = `SELECT count(*) FROM pg_locks d JOIN pg_class dc ON dc.oid = d.relation
WHERE dc.relname = 'reminder_draft' AND d.mode = 'RowExclusiveLock' AND d.granted AND d.pid IN (
SELECT s.pid FROM pg_locks s JOIN pg_class sc ON sc.oid = s.relation WHERE sc.relname = 'schedule' AND s.mode = 'RowShareLock' AND s.granted)`

// killedWindow is the killed schedule's send window, every day in UTC, open an hour from
// minute open: its next opening is at least 3 hours after now (a later one the day after
// rather than a window across midnight), so that the replicas, on the wall clock, neither
// send the batch nor see its approval expire (at the window's close) during the test.
func killedWindow(now time.Time) (open, closes int) {
	at := now.UTC().Add(3*time.Hour + time.Minute)
	open = at.Hour()*60 + at.Minute()
	if open > 23*60-1 {
		open = 0
	}
	return open, open + 60
}

// killedSchedule writes killedBatch customers, each with one invoice a month overdue on
// batchDay, and a schedule over all open invoices, created by ana on batchDay, sending in the
// window of minutes open to closes, every day in UTC.
func killedSchedule(t *testing.T, db store.DB, open, closes int) schedules.Schedule {
	t.Helper()
	now := batchDay.In(time.UTC).Add(12 * time.Hour)
	var sp schedules.Spec
	spec := fmt.Sprintf(`{"name":"Régua","steps":[{"offset":3,"tone":"friendly"},{"offset":10,"tone":"firm"}],"audience":{"all":true},"endDate":"2026-08-31",
"window":{"zone":"UTC","open":"%02d:%02d","close":"%02d:%02d","days":["sun","mon","tue","wed","thu","fri","sat"]}}`, open/60, open%60, closes/60, closes%60)
	if err := json.Unmarshal([]byte(spec), &sp); err != nil {
		t.Fatal(err)
	}
	s, fe := sp.Validate(func(*time.Location) calendar.Date { return batchDay })
	if fe != nil {
		t.Fatal(fe)
	}
	err := db.InTx(t.Context(), func(ctx context.Context, tx store.Tx) error {
		invs := make([]ledger.InvoiceRecord, 0, killedBatch)
		for i := range killedBatch {
			id := fmt.Sprintf("C-%05d", i)
			if _, err := customers.Upsert(ctx, tx, customers.Record{ID: id, Name: "Cliente " + id, Email: fmt.Sprintf("c%05d@cliente.example", i)}, now); err != nil {
				return err
			}
			invs = append(invs, ledger.InvoiceRecord{InvoiceID: fmt.Sprintf("NF-%05d", i), CustomerID: id, AmountCents: int64(10000 + i), Currency: "BRL", DueDate: "2026-06-01"})
		}
		if _, err := ledger.UpsertInvoices(ctx, tx, invs, now); err != nil {
			return err
		}
		var err error
		s, err = schedules.Create(ctx, tx, s, schedules.Stamp{By: "ana"}, now)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// killedBatcher is the batcher of TestScheduleBatchKilled's Send: the replicas' store and
// approvals, on a clock inside the schedule's send window (opening at minute open, UTC) on
// batchDay, so that the batch is sent and its messages enqueued for now whatever the wall
// clock says.
func killedBatcher(t *testing.T, db store.DB, open int) *collections.Batcher {
	t.Helper()
	clock := func() time.Time { return batchDay.In(time.UTC).Add(time.Duration(open+30) * time.Minute) }
	approvals, err := approval.New(time.Hour, clock)
	if err != nil {
		t.Fatal(err)
	}
	tpl, err := reminders.ParseTemplates()
	if err != nil {
		t.Fatal(err)
	}
	return &collections.Batcher{DB: db, Approvals: approvals, Templates: tpl, Now: clock}
}
