package collections_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"time"

	"github.com/cobranca/cobranca/internal/approval"
	"github.com/cobranca/cobranca/internal/calendar"
	"github.com/cobranca/cobranca/internal/collections"
	"github.com/cobranca/cobranca/internal/customers"
	"github.com/cobranca/cobranca/internal/ledger"
	"github.com/cobranca/cobranca/internal/outbox"
	"github.com/cobranca/cobranca/internal/outbox/outboxtest"
	"github.com/cobranca/cobranca/internal/pipeline/pipelinetest"
	"github.com/cobranca/cobranca/internal/reminders"
	"github.com/cobranca/cobranca/internal/schedules"
	"github.com/cobranca/cobranca/internal/smtptest"
	"github.com/cobranca/cobranca/internal/store"
)

// batchEnv is a schedule over scheduleLedger's invoices and its batcher, whose approvals count
// the hook's calls (the approvers' notification).
func batchEnv(t *testing.T, e *env) (*collections.Batcher, schedules.Schedule, *int) {
	t.Helper()
	scheduleLedger(t, e)
	var sp schedules.Spec
	if err := json.Unmarshal([]byte(régua+`}`), &sp); err != nil {
		t.Fatal(err)
	}
	s, fe := sp.Validate(func(loc *time.Location) calendar.Date { return calendar.DateOf(e.clock(), loc) })
	if fe != nil {
		t.Fatal(fe)
	}
	err := e.db.InTx(context.Background(), func(ctx context.Context, tx store.Tx) error {
		var err error
		s, err = schedules.Create(ctx, tx, s, schedules.Stamp{By: "ana", Actor: "agent-7"}, e.clock())
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	approvals, err := approval.New(time.Hour, e.clock)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	notified := new(int)
	approvals.OnCreate(func(ctx context.Context, tx store.Tx, a *approval.Action) error {
		mu.Lock()
		defer mu.Unlock()
		*notified++
		return nil
	})
	tpl, err := reminders.ParseTemplates()
	if err != nil {
		t.Fatal(err)
	}
	return &collections.Batcher{DB: e.db, Approvals: approvals, Templates: tpl, Now: e.clock}, s, notified
}

func countRows(t *testing.T, db store.DB, sql string, args ...any) int64 {
	t.Helper()
	var n int64
	if err := db.QueryRow(context.Background(), sql, args...).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestScheduleBatch: a batch that fails once its drafts are written leaves nothing (no draft,
// no step, no batch, no approval); retried by two replicas at once, it opens exactly one bulk
// send pending approval — its drafts, its dry run as the preview, the schedule as requester —
// and the approvers are told once; the next day, whose steps were all had, records an empty
// batch and asks no one; a Sunday records nothing; a paused schedule's day is closed.
func TestScheduleBatch(t *testing.T) {
	eachEnv(t, func(t *testing.T, e *env) {
		ctx := context.Background()
		b, s, notified := batchEnv(t, e)
		day := calendar.DateOf(e.clock(), s.Window.Zone) // 2026-07-01, a Wednesday

		crash := errors.New("crashed mid-way")
		b.FailAfterPrepare(crash)
		if _, _, err := b.Run(ctx, s.ID, day); !errors.Is(err, crash) {
			t.Fatalf("Run with a crash = %v, want %v", err, crash)
		}
		for _, table := range []string{"reminder_draft", "schedule_step", "schedule_batch", "approval"} {
			if n := countRows(t, e.db, `SELECT count(*) FROM `+table); n != 0 {
				t.Errorf("after the crash: %d rows in %s, want 0", n, table)
			}
		}
		b.FailAfterPrepare(nil)

		var wg sync.WaitGroup
		results := make([]schedules.Batch, 2)
		agains := make([]bool, 2)
		errs := make([]error, 2)
		for i := range 2 {
			wg.Go(func() { results[i], agains[i], errs[i] = b.Run(ctx, s.ID, day) })
		}
		wg.Wait()
		for _, err := range errs {
			if err != nil {
				t.Fatal(err)
			}
		}
		if agains[0] == agains[1] {
			t.Errorf("again = %v; want one replica to make the batch and the other to find it", agains)
		}
		got := results[0]
		if !cmp.Equal(results[0], results[1]) {
			t.Errorf("the replicas answered %+v and %+v; want the same batch", results[0], results[1])
		}
		if got.Outcome != collections.BatchOpened || got.Drafts != 2 || got.Recipients != 2 || got.Skipped.Plan.DoNotContact != 1 ||
			got.Date != "2026-07-01" || len(got.PlanHash) != 64 {
			t.Errorf("batch = %+v; want opened with 2 drafts and 2 recipients, 1 invoice do_not_contact", got)
		}
		if *notified != 1 || countRows(t, e.db, `SELECT count(*) FROM approval`) != 1 {
			t.Errorf("notified %d times, %d approvals; want 1 and 1", *notified, countRows(t, e.db, `SELECT count(*) FROM approval`))
		}
		act, err := b.Approvals.Get(ctx, e.db, got.ApprovalID)
		if err != nil {
			t.Fatal(err)
		}
		want := approval.Requester{Subject: "ana", Client: collections.BatchClient, Actor: s.ID}
		if act.State != approval.Pending || act.Tool != collections.BulkSendName || act.Requester != want ||
			!strings.Contains(act.Preview, "send 2 messages") || !strings.Contains(act.Preview, got.PlanHash) || !strings.Contains(act.Preview, "doNotContact 1") {
			t.Errorf("approval = %+v, preview %q; want a pending bulk send asked by the schedule, its dry run as the preview", act, act.Preview)
		}
		// 09:00 in São Paulo: the person has until the window closes, 20:00 the same day.
		if close := time.Date(2026, 7, 1, 20, 0, 0, 0, s.Window.Zone); !act.Expires.Equal(close) || !strings.Contains(act.Preview, "2026-07-01 20:00") {
			t.Errorf("approval expires %v, preview %q; want the window's close, %v, said", act.Expires, act.Preview, close)
		}
		if n := countRows(t, e.db, `SELECT count(*) FROM reminder_draft WHERE state = 'draft'`); n != 2 {
			t.Errorf("%d open drafts, want 2", n)
		}
		if n := countRows(t, e.db, `SELECT count(*) FROM schedule_step WHERE schedule_id = $1 AND prepared_on = '2026-07-01'`, s.ID); n != 2 {
			t.Errorf("%d steps taken, want 2", n)
		}

		next, _, err := b.Run(ctx, s.ID, calendar.Brazil().AddBusinessDays(day, 1))
		if err != nil {
			t.Fatal(err)
		}
		if next.Outcome != collections.BatchEmpty || next.ApprovalID != "" || next.Drafts != 0 || *notified != 1 {
			t.Errorf("next day = %+v (notified %d); want an empty batch, no approval", next, *notified)
		}
		sunday, _ := calendar.ParseDate("2026-07-05")
		if _, _, err := b.Run(ctx, s.ID, sunday); err != nil {
			t.Fatal(err)
		}
		if _, err := schedules.GetBatch(ctx, e.db, s.ID, "2026-07-05"); !errors.Is(err, store.ErrNoRows) {
			t.Errorf("Sunday's batch: %v, want none", err)
		}
		err = e.db.InTx(ctx, func(ctx context.Context, tx store.Tx) error {
			_, _, err := schedules.SetState(ctx, tx, s, schedules.Paused, schedules.Stamp{By: "ana"}, e.clock())
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		closed, _, err := b.Run(ctx, s.ID, calendar.Brazil().AddBusinessDays(day, 2))
		if err != nil {
			t.Fatal(err)
		}
		if closed.Outcome != collections.BatchClosed {
			t.Errorf("paused schedule's batch = %+v, want closed", closed)
		}
		latest, err := schedules.LatestBatches(ctx, e.db, s.ID, 10)
		if err != nil {
			t.Fatal(err)
		}
		opened := got
		opened.ApprovalState = string(approval.Pending)
		if len(latest) == 3 {
			opened.ApprovalExpires = latest[2].ApprovalExpires
		}
		if len(latest) != 3 || latest[0].Outcome != collections.BatchClosed || latest[0].ApprovalState != "" || !cmp.Equal(latest[2], opened) {
			t.Errorf("latest batches = %+v; want closed, empty, opened (approval pending)", latest)
		}
	})
}

// TestScheduleBatchReplicas: two replicas, each its own River client on the one store, both
// tick (as their leaders would): River keeps one job of the schedule's day, and the day has
// one batch, one approval, one notification.
func TestScheduleBatchReplicas(t *testing.T) {
	eachEnv(t, func(t *testing.T, e *env) {
		ctx := context.Background()
		b, s, notified := batchEnv(t, e)
		mail := smtptest.New(t)
		var replicas []*outbox.Outbox
		for range 2 {
			rb := &collections.Batcher{DB: b.DB, Approvals: b.Approvals, Templates: b.Templates, Now: b.Now}
			replicas = append(replicas, outboxtest.Deliver(t, e.db, mail, outbox.Config{Jobs: rb.Jobs()}))
		}
		for i, o := range replicas {
			rb := &collections.Batcher{DB: b.DB, Approvals: b.Approvals, Templates: b.Templates, Now: b.Now}
			if err := rb.Tick(ctx, o); err != nil {
				t.Fatalf("replica %d: tick: %v", i, err)
			}
		}
		deadline := time.Now().Add(30 * time.Second)
		for countRows(t, e.db, `SELECT count(*) FROM river_job WHERE kind = 'cobranca.schedule_batch' AND state <> 'completed'`) > 0 {
			if time.Now().After(deadline) {
				t.Fatal("the batch's job did not complete in 30 s")
			}
			time.Sleep(20 * time.Millisecond)
		}
		if n := countRows(t, e.db, `SELECT count(*) FROM river_job WHERE kind = 'cobranca.schedule_batch'`); n != 1 {
			t.Errorf("%d batch jobs, want 1", n)
		}
		bt, err := schedules.GetBatch(ctx, e.db, s.ID, "2026-07-01")
		if err != nil {
			t.Fatal(err)
		}
		if bt.Outcome != collections.BatchOpened || *notified != 1 || countRows(t, e.db, `SELECT count(*) FROM approval`) != 1 {
			t.Errorf("batch %+v, notified %d; want one opened batch, one approval, told once", bt, *notified)
		}
		// A tick once the batch is recorded asks nothing more.
		if err := b.Tick(ctx, replicas[0]); err != nil {
			t.Fatal(err)
		}
		if n := countRows(t, e.db, `SELECT count(*) FROM river_job WHERE kind = 'cobranca.schedule_batch'`); n != 1 {
			t.Errorf("after a later tick: %d batch jobs, want 1", n)
		}
	})
}

// TestScheduleBatchLapse: a batch whose approval expires unapproved — when the day's send window
// closes, 20:00 in São Paulo — lapses on the next tick:
// its drafts are discarded, which gives their steps back, so the next business day's batch
// takes them again; a lapsed batch lapses once.
func TestScheduleBatchLapse(t *testing.T) {
	eachEnv(t, func(t *testing.T, e *env) {
		ctx := context.Background()
		b, s, _ := batchEnv(t, e)
		day := calendar.DateOf(e.clock(), s.Window.Zone)
		first, _, err := b.Run(ctx, s.ID, day)
		if err != nil {
			t.Fatal(err)
		}
		if n, err := b.Lapse(ctx); err != nil || n != 0 {
			t.Fatalf("Lapse of a live approval = %d, %v; want 0", n, err)
		}
		e.advance(11*time.Hour - time.Minute) // 19:59 in São Paulo: the window is still open
		if n, err := b.Lapse(ctx); err != nil || n != 0 {
			t.Fatalf("Lapse before the window closed = %d, %v; want 0", n, err)
		}
		e.advance(time.Minute) // 20:00: it closed
		if n, err := b.Lapse(ctx); err != nil || n != 1 {
			t.Fatalf("Lapse past the expiry = %d, %v; want 1", n, err)
		}
		if n, err := b.Lapse(ctx); err != nil || n != 0 {
			t.Fatalf("Lapse again = %d, %v; want 0", n, err)
		}
		lapsed, err := schedules.GetBatch(ctx, e.db, s.ID, first.Date)
		if err != nil {
			t.Fatal(err)
		}
		if lapsed.Outcome != collections.BatchLapsed || lapsed.ApprovalID != first.ApprovalID {
			t.Errorf("batch = %+v, want lapsed", lapsed)
		}
		if n := countRows(t, e.db, `SELECT count(*) FROM reminder_draft WHERE state = 'discarded'`); n != 2 {
			t.Errorf("%d drafts discarded, want 2", n)
		}
		next, _, err := b.Run(ctx, s.ID, calendar.Brazil().AddBusinessDays(day, 1))
		if err != nil {
			t.Fatal(err)
		}
		if next.Outcome != collections.BatchOpened || next.Drafts != 2 {
			t.Errorf("the next day's batch = %+v; want the steps given back taken again: opened, 2 drafts", next)
		}
	})
}

// TestScheduleBatchSend: a person other than the schedule's creator approves the batch; the
// next tick's Send enqueues its 2 messages, records the bulk send on the batch, queues the
// drafts, marks the approval executed and writes one audit event — once: a second Send does
// nothing. A customer of an approved batch who asks not to be contacted before it is sent is
// left out, and only that one: the rest is sent, the send's skips recorded, the customer's
// draft discarded. A batch whose every customer changed (an invoice paid) sends nothing and
// lapses.
func TestScheduleBatchSend(t *testing.T) {
	eachEnv(t, func(t *testing.T, e *env) {
		ctx := context.Background()
		b, s, _ := batchEnv(t, e)
		b.Audit, _ = pipelinetest.AuditLog(t, e.db)
		b.Mail = outboxtest.Deliver(t, e.db, smtptest.New(t), outbox.Config{Owner: reminders.Delivery{}})
		day := calendar.DateOf(e.clock(), s.Window.Zone)
		bt, _, err := b.Run(ctx, s.ID, day)
		if err != nil {
			t.Fatal(err)
		}
		if n, err := b.Send(ctx); err != nil || n != 0 {
			t.Fatalf("Send before the approval = %d, %v; want 0", n, err)
		}
		approve(t, e, b, bt.ApprovalID)
		if n, err := b.Send(ctx); err != nil || n != 1 {
			t.Fatalf("Send = %d, %v; want 1", n, err)
		}
		if n, err := b.Send(ctx); err != nil || n != 0 {
			t.Fatalf("Send again = %d, %v; want 0", n, err)
		}
		got, err := schedules.GetBatch(ctx, e.db, s.ID, bt.Date)
		if err != nil {
			t.Fatal(err)
		}
		if !reminders.ValidBulkID(got.BulkID) || len(got.SendIDs) != 2 || got.Skipped.Send["doNotContact"] != 0 || got.Skipped.Send == nil {
			t.Errorf("batch = %+v, want its bulk id, its 2 approved drafts and the send's skips (none)", got)
		}
		if n := countRows(t, e.db, `SELECT count(*) FROM reminder_draft WHERE state IN ('queued', 'sent')`); n != 2 {
			t.Errorf("%d drafts queued or sent, want 2", n)
		}
		if n := countRows(t, e.db, `SELECT count(*) FROM bulk_send WHERE id = $1 AND approval_id = $2 AND total = 2`, got.BulkID, bt.ApprovalID); n != 1 {
			t.Errorf("%d bulk sends recorded with the approval, want 1", n)
		}
		if act, err := b.Approvals.Get(ctx, e.db, bt.ApprovalID); err != nil || act.State != approval.Executed {
			t.Errorf("approval = %+v, %v; want executed", act, err)
		}
		if n := countRows(t, e.db, `SELECT count(*) FROM audit_event WHERE event = 'email.external.bulk_sent' AND actor = $1`, s.ID); n != 1 {
			t.Errorf("%d audit events of the bulk send, want 1", n)
		}

		// The next business day's batch, of C-4 and C-5: C-4 asks not to be contacted after
		// the approval.
		scheduleLedgerMore(t, e, "4", "5")
		next, _, err := b.Run(ctx, s.ID, calendar.Brazil().AddBusinessDays(day, 1))
		if err != nil {
			t.Fatal(err)
		}
		if next.Outcome != collections.BatchOpened || next.Recipients != 2 {
			t.Fatalf("next batch = %+v, want opened for 2", next)
		}
		approve(t, e, b, next.ApprovalID)
		err = e.db.InTx(ctx, func(ctx context.Context, tx store.Tx) error {
			_, err := customers.SetStatus(ctx, tx, "C-4", customers.Change{Status: customers.DoNotContact, Reason: "asked", SetBy: "ana"}, e.clock())
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		if n, err := b.Send(ctx); err != nil || n != 1 {
			t.Fatalf("Send of a batch one customer of which changed = %d, %v; want 1", n, err)
		}
		partial, err := schedules.GetBatch(ctx, e.db, s.ID, next.Date)
		if err != nil {
			t.Fatal(err)
		}
		if partial.Outcome != collections.BatchOpened || partial.BulkID == "" || partial.Skipped.Send["doNotContact"] != 1 {
			t.Errorf("partly sent batch = %+v; want sent, C-4 left out as do_not_contact", partial)
		}
		states := func(customer string) string {
			t.Helper()
			var st string
			if err := e.db.QueryRow(ctx, `SELECT string_agg(state, ',') FROM reminder_draft WHERE customer_id = $1`, customer).Scan(&st); err != nil {
				t.Fatal(err)
			}
			return st
		}
		if c4, c5 := states("C-4"), states("C-5"); c4 != "discarded" || (c5 != "queued" && c5 != "sent") {
			t.Errorf("drafts: C-4 %s, C-5 %s; want C-4's discarded, C-5's queued or sent", c4, c5)
		}
		if n := countRows(t, e.db, `SELECT count(*) FROM bulk_send WHERE id = $1 AND total = 1`, partial.BulkID); n != 1 {
			t.Errorf("%d bulk sends of 1 message, want 1", n)
		}

		// The third day's batch, of C-6 alone, whose invoice is paid after the approval:
		// nothing is left to send, and it lapses.
		scheduleLedgerMore(t, e, "6")
		third, _, err := b.Run(ctx, s.ID, calendar.Brazil().AddBusinessDays(day, 2))
		if err != nil {
			t.Fatal(err)
		}
		if third.Outcome != collections.BatchOpened || third.Recipients != 1 {
			t.Fatalf("third batch = %+v, want opened for 1", third)
		}
		approve(t, e, b, third.ApprovalID)
		payInvoice(t, e, "NF-6", 7000)
		if n, err := b.Send(ctx); err != nil || n != 0 {
			t.Fatalf("Send of a batch whose every invoice was paid = %d, %v; want 0", n, err)
		}
		if lapsed, _ := schedules.GetBatch(ctx, e.db, s.ID, third.Date); lapsed.Outcome != collections.BatchLapsed || lapsed.BulkID != "" {
			t.Errorf("paid batch = %+v, want lapsed, unsent", lapsed)
		}
		if st := states("C-6"); st != "discarded" {
			t.Errorf("C-6's draft is %s, want discarded", st)
		}

		// get_schedule answers the three batches, newest first (the pipeline checks the output
		// against the contract's schema).
		type batchAnswer struct {
			Date, Outcome, ApprovalID, ApprovalState, BulkID string
			Drafts, Recipients                               int
			Skipped                                          struct{ Plan, Bulk, Send map[string]int }
		}
		answer := decode[struct{ LatestBatches []batchAnswer }](t, e.call(scheduleReader, collections.GetScheduleName, map[string]any{"scheduleId": s.ID}))
		want := []batchAnswer{
			{Date: third.Date, Outcome: "lapsed", ApprovalID: third.ApprovalID, ApprovalState: "approved", Drafts: 1, Recipients: 1},
			{Date: next.Date, Outcome: "opened", ApprovalID: next.ApprovalID, ApprovalState: "executed", BulkID: partial.BulkID, Drafts: 2, Recipients: 2},
			{Date: bt.Date, Outcome: "opened", ApprovalID: bt.ApprovalID, ApprovalState: "executed", BulkID: got.BulkID, Drafts: 2, Recipients: 2},
		}
		for i := range want {
			if i < len(answer.LatestBatches) {
				want[i].Skipped = answer.LatestBatches[i].Skipped
			}
		}
		if diff := cmp.Diff(want, answer.LatestBatches); diff != "" {
			t.Errorf("get_schedule's latestBatches (-want +got):\n%s", diff)
		}
		if len(answer.LatestBatches) == 3 {
			if sk := answer.LatestBatches[2].Skipped; sk.Plan["doNotContact"] != 1 || len(sk.Bulk) != 7 || len(sk.Send) != 7 {
				t.Errorf("the first batch's skips = %+v; want the plan's do_not_contact customer and every bulk and send reason", sk)
			}
			if sk := answer.LatestBatches[1].Skipped; sk.Send["doNotContact"] != 1 {
				t.Errorf("the second batch's skips = %+v; want C-4 left out at sending", sk)
			}
			if sk := answer.LatestBatches[0].Skipped; sk.Send != nil {
				t.Errorf("the lapsed batch's skips = %+v; want no send's", sk)
			}
		}
	})
}

// approve approves the approval id as bia, a person other than the schedule's creator.
func approve(t *testing.T, e *env, b *collections.Batcher, id string) {
	t.Helper()
	err := e.db.InTx(context.Background(), func(ctx context.Context, tx store.Tx) error {
		_, err := b.Approvals.Decide(ctx, tx, id, true, approval.Approver{Subject: "bia"})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// scheduleLedgerMore adds, for each n, customer C-n with invoice NF-n (R$ 70,00) due long ago,
// for a later batch.
func scheduleLedgerMore(t *testing.T, e *env, ns ...string) {
	t.Helper()
	err := e.db.InTx(context.Background(), func(ctx context.Context, tx store.Tx) error {
		for _, n := range ns {
			if _, err := customers.Upsert(ctx, tx, customers.Record{ID: "C-" + n, Name: "Cliente C-" + n, Email: "c-" + n + "@example.com"}, e.clock()); err != nil {
				return err
			}
			if _, err := ledger.UpsertInvoices(ctx, tx, []ledger.InvoiceRecord{{InvoiceID: "NF-" + n, CustomerID: "C-" + n, AmountCents: 7000, Currency: "BRL", DueDate: "2026-06-01"}}, e.clock()); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// payInvoice records a PIX payment of cents and allocates it to invoice inv.
func payInvoice(t *testing.T, e *env, inv string, cents int64) {
	t.Helper()
	err := e.db.InTx(context.Background(), func(ctx context.Context, tx store.Tx) error {
		clerk := ledger.Actor{Subject: "clerk"}
		p, _, err := ledger.RecordPayment(ctx, tx, ledger.PaymentRecord{Source: "agent", SourceRef: "pay-" + inv, AmountCents: cents,
			Currency: "BRL", PaidOn: calendar.DateOf(e.clock(), nil).String(), Method: ledger.MethodPIX}, clerk, e.clock())
		if err != nil {
			return err
		}
		_, err = ledger.Allocate(ctx, tx, p.ID, []ledger.Planned{{InvoiceID: inv, AmountCents: cents}}, clerk, e.clock())
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestScheduleBatchWindow: a batch made after its send window closed (20:30 in São Paulo, the
// default window closing at 20:00; a job that ran late) may be approved until the next window
// closes. Approved at once, it queues nothing then: it waits, approved, and is sent by the
// first tick inside the window, 08:00 of the next business day, its plan checked again at that
// moment.
func TestScheduleBatchWindow(t *testing.T) {
	eachEnv(t, func(t *testing.T, e *env) {
		ctx := context.Background()
		b, s, _ := batchEnv(t, e)
		b.Mail = outboxtest.Deliver(t, e.db, smtptest.New(t), outbox.Config{Owner: reminders.Delivery{}})
		emails := `SELECT count(*) FROM river_job WHERE kind = 'cobranca.email'`
		e.advance(11*time.Hour + 30*time.Minute) // Wednesday 2026-07-01, 20:30 in São Paulo: the window closed at 20:00
		bt, _, err := b.Run(ctx, s.ID, calendar.DateOf(e.clock(), s.Window.Zone))
		if err != nil {
			t.Fatal(err)
		}
		if act, err := b.Approvals.Get(ctx, e.db, bt.ApprovalID); err != nil || !act.Expires.Equal(time.Date(2026, 7, 2, 20, 0, 0, 0, s.Window.Zone)) {
			t.Fatalf("approval = %+v, %v; want it to expire when Thursday's window closes", act, err)
		}
		approve(t, e, b, bt.ApprovalID)
		for _, step := range []time.Duration{0, 4 * time.Hour, 7*time.Hour + 15*time.Minute} { // 20:30, 00:30, 07:45
			e.advance(step)
			if n, err := b.Send(ctx); err != nil || n != 0 {
				t.Fatalf("Send at %v, the window closed = %d, %v; want 0", e.clock(), n, err)
			}
			if n := countRows(t, e.db, emails); n != 0 {
				t.Fatalf("at %v, the window closed: %d messages queued, want none", e.clock(), n)
			}
		}
		e.advance(20 * time.Minute) // Thursday 08:05: the window is open
		if n, err := b.Send(ctx); err != nil || n != 1 {
			t.Fatalf("Send at %v, the window open = %d, %v; want 1", e.clock(), n, err)
		}
		if n := countRows(t, e.db, emails); n != 2 {
			t.Fatalf("%d messages queued once the window opened, want 2", n)
		}
		if n, err := b.Send(ctx); err != nil || n != 0 {
			t.Fatalf("a second Send = %d, %v; want 0", n, err)
		}
	})
}
