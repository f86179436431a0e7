package collections

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/riverqueue/river"

	"github.com/cobranca/cobranca/internal/approval"
	"github.com/cobranca/cobranca/internal/auditlog"
	"github.com/cobranca/cobranca/internal/calendar"
	"github.com/cobranca/cobranca/internal/contract"
	"github.com/cobranca/cobranca/internal/ledger"
	"github.com/cobranca/cobranca/internal/outbox"
	"github.com/cobranca/cobranca/internal/reminders"
	"github.com/cobranca/cobranca/internal/schedules"
	"github.com/cobranca/cobranca/internal/store"
)

// The daily batch of a collection schedule (docs/schedules.md, "The daily batch"): on each
// business day of calendar.Brazil() in the schedule's window zone, one transaction locks the
// schedule, plans the day (schedules.Plan), prepares a draft per message (reminders.Prepare),
// records the steps taken (schedules.RecordTaken), plans one bulk send of those drafts as
// bulk_send_reminders does (planBulk, locking) and records a pending approval of that call,
// its dry run in words as the preview — and the batch's row, whose key (schedule, date) makes
// all of it once per schedule and day, whichever replica or retry runs it.
//
// The approval is asked for by the schedule: the requester's subject is the person who
// created it (so that person may not approve it, as for any call of theirs), its client
// BatchClient and its actor the schedule's id. The approval page, its step-up and the
// approvers' notification (approval.Store's hook) are those of any bulk send.

// BatchClient is the client an approval of a schedule's batch names as the requester's.
const BatchClient = "cobranca-schedule"

// Batch outcomes and records are internal/schedules' (schedule_batch): the console reads them
// too, and imports no tool.
const (
	BatchOpened = schedules.BatchOpened
	BatchLapsed = schedules.BatchLapsed
	BatchEmpty  = schedules.BatchEmpty
	BatchClosed = schedules.BatchClosed
)

// counts are s by reason, named as its JSON names them, as schedules.BatchSkips records a
// bulk send's.
func (s skipCounts) counts() map[string]int {
	raw, _ := json.Marshal(s) // a struct of ints always marshals
	var m map[string]int
	_ = json.Unmarshal(raw, &m)
	return m
}

// Batcher runs schedules' daily batches.
type Batcher struct {
	DB        store.DB
	Approvals *approval.Store
	Templates *reminders.Templates
	Settings  Settings
	// Mail estimates delivery for the preview (nil: none).
	Mail *outbox.Outbox
	// Audit writes the bulk send's audit event when an approved batch runs (Send).
	Audit approval.Appender
	// Now is the clock (time.Now when nil).
	Now func() time.Time
	// failAfterPrepare, set by the tests only, fails the transaction once the drafts are
	// written: the crash the retry must recover from.
	failAfterPrepare error
}

func (b *Batcher) now() time.Time {
	if b.Now == nil {
		return time.Now()
	}
	return b.Now()
}

// Run makes the batch of the schedule id on date (the schedule's today when zero), once: a
// batch already recorded is returned as it stands (again true).
func (b *Batcher) Run(ctx context.Context, id string, date calendar.Date) (bt schedules.Batch, again bool, err error) {
	err = b.DB.InTx(ctx, func(ctx context.Context, tx store.Tx) error {
		bt, again, err = b.run(ctx, tx, id, date)
		return err
	})
	if err != nil {
		return schedules.Batch{}, false, fmt.Errorf("schedule batch %s: %w", id, err)
	}
	return bt, again, nil
}

func (b *Batcher) run(ctx context.Context, tx store.Tx, id string, date calendar.Date) (schedules.Batch, bool, error) {
	now := b.now()
	s, err := schedules.GetForUpdate(ctx, tx, id)
	if err != nil {
		return schedules.Batch{}, false, err
	}
	if date == (calendar.Date{}) {
		date = s.Today(now)
	}
	// The schedule's lock serializes the replicas: the second reads the first's row.
	if prev, err := schedules.GetBatch(ctx, tx, id, date.String()); err == nil {
		return prev, true, nil
	} else if !errors.Is(err, store.ErrNoRows) {
		return schedules.Batch{}, false, err
	}
	p, err := schedules.Plan(ctx, tx, s, date, now)
	if err != nil {
		return schedules.Batch{}, false, err
	}
	bt := schedules.Batch{ScheduleID: id, Date: date.String(), Outcome: BatchEmpty, Skipped: schedules.BatchSkips{Plan: p.Skipped},
		CreatedAt: time.UnixMicro(now.UnixMicro()).UTC()}
	if !p.BusinessDay {
		// Not a day of batches: nothing is recorded, so the key stays free (a job asked on a
		// holiday leaves no row).
		return bt, false, nil
	}
	if s.State != schedules.Active || s.Ended(date) {
		bt.Outcome = BatchClosed
		return bt, false, schedules.InsertBatch(ctx, tx, bt)
	}
	ids := make([]string, 0, len(p.Messages))
	for _, m := range p.Messages {
		req := m.Request(s.Created.By, s.ID)
		req.PixCode = pixCharge(b.Settings.Pix, m.Currency)
		d, created, err := reminders.Prepare(ctx, tx, b.Templates, req, now)
		if err != nil {
			return schedules.Batch{}, false, err
		}
		if created && d.Pix != nil {
			// As prepare_reminder: the code's txid is a payment reference of the invoices.
			invs := make([]string, len(d.Invoices))
			for i, inv := range d.Invoices {
				invs[i] = inv.ID
			}
			if err := ledger.AddReference(ctx, tx, invs, d.Pix.TxID, ledger.SourceReminder, d.ID, now); err != nil {
				return schedules.Batch{}, false, err
			}
		}
		if err := schedules.RecordTaken(ctx, tx, s.ID, p.Date.String(), m.Taken(d.ID), now); err != nil {
			return schedules.Batch{}, false, err
		}
		ids = append(ids, d.ID)
	}
	if b.failAfterPrepare != nil {
		return schedules.Batch{}, false, b.failAfterPrepare
	}
	bt.Drafts = len(ids)
	if len(ids) == 0 {
		return bt, false, schedules.InsertBatch(ctx, tx, bt)
	}
	a := &bulkArgs{DraftIDs: ids}
	bp, err := planBulk(ctx, tx, a, date.String(), b.Settings.LedgerRequired)
	if err != nil {
		return schedules.Batch{}, false, err
	}
	bt.Recipients, bt.PlanHash, bt.Skipped.Bulk = len(bp.send), bp.hash, bp.skipped.counts()
	for _, d := range bp.send {
		bt.SendIDs = append(bt.SendIDs, d.ID)
	}
	if len(bp.send) == 0 {
		return bt, false, schedules.InsertBatch(ctx, tx, bt)
	}
	est, rule := bulkTool{mail: b.Mail}.estimate(len(bp.send))
	preview := fmt.Sprintf("Schedule %q (%s), batch of %s: ", s.Name, s.ID, bt.Date) + bp.describe(samples(bp), est, rule)
	if n := p.Skipped.Total(); n > 0 {
		preview += fmt.Sprintf("The schedule's plan left out %s (by reason: %s).\n", count(n, "invoice", "invoices"), skipWords(p.Skipped))
	}
	// The person may approve the batch until the send window it goes out in closes: today's,
	// for a batch made before or while it is open.
	expires := calendar.Brazil().NextClose(s.Window, now)
	preview += fmt.Sprintf("If approved, its messages go out inside the send window (%s), each checked again against the ledger and the customer's status as it leaves: a customer who has paid, disputed, promised or asked not to be contacted since is left out. Approve it before %s, or it lapses and its drafts are discarded.\n",
		s.Window, expires.In(s.Window.Zone).Format("2006-01-02 15:04 MST"))
	act, err := b.Approvals.CreateUntil(ctx, tx, BulkSendName, batchDigest(bt), preview, bulkSendContract().SideEffects.Changes,
		approval.Requester{Subject: s.Created.By, Client: BatchClient, Actor: s.ID}, expires)
	if err != nil {
		return schedules.Batch{}, false, err
	}
	bt.Outcome, bt.ApprovalID = BatchOpened, act.ID
	return bt, false, schedules.InsertBatch(ctx, tx, bt)
}

// batchDigest is what the batch's approval binds: the bulk send of exactly this plan, for this
// schedule and day.
func batchDigest(bt schedules.Batch) [sha256.Size]byte {
	return sha256.Sum256([]byte("cobranca.schedule_batch/1\x00" + bt.ScheduleID + "\x00" + bt.Date + "\x00" + bt.PlanHash))
}

// skipWords lists the non-zero counts of s as name=count.
func skipWords(s schedules.Skips) string {
	raw, _ := json.Marshal(s)
	var m map[string]int
	_ = json.Unmarshal(raw, &m)
	out := ""
	for _, k := range []string{"paid", "void", "writtenOff", "disputed", "promisePending", "noContact", "doNotContact",
		"customerPaused", "capCustomer", "capBatch", "pastEndDate", "schedulePaused"} {
		if m[k] > 0 {
			if out != "" {
				out += ", "
			}
			out += fmt.Sprintf("%s %d", k, m[k])
		}
	}
	return out
}

// batchQueue is River's queue of the daily batches.
const batchQueue = "schedule_batch"

// BatchArgs is the job of one schedule's batch on one day: unique by both, so that however
// many replicas ask, River holds one (and the batch's row makes it once anyway).
type BatchArgs struct {
	ScheduleID string `json:"scheduleId"`
	Date       string `json:"date"`
}

// Kind is River's name of the job.
func (BatchArgs) Kind() string { return "cobranca.schedule_batch" }

// SendArgs is the job that sends the batch an approval is for, once a person approved it
// (OnDecide's hook queues it, scheduled for when the batch's send window opens).
type SendArgs struct {
	ApprovalID string `json:"approvalId"`
}

// Kind is River's name of the job.
func (SendArgs) Kind() string { return "cobranca.schedule_batch_send" }

// TickArgs is the periodic job that asks, for each active schedule, today's batch.
type TickArgs struct{}

// Kind is River's name of the job.
func (TickArgs) Kind() string { return "cobranca.schedule_tick" }

// TickEvery is how often the tick runs (River's periodic job, on the leader only).
const TickEvery = 15 * time.Minute

// Jobs are the batch's River jobs, for outbox.Config.Jobs.
func (b *Batcher) Jobs() []outbox.Job {
	return []outbox.Job{
		// Long jobs (outbox.NewLongJob): a day's batch over 100 000 open invoices takes about 2 s
		// on PostgreSQL (docs/benchmarks.md), a loaded machine many times that, and a message's
		// send timeout is no bound for it, nor for the send of thousands of messages.
		outbox.NewLongJob(batchQueue, 1, func(ctx context.Context, o *outbox.Outbox, job *river.Job[BatchArgs]) error {
			d, err := calendar.ParseDate(job.Args.Date)
			if err != nil {
				return river.JobCancel(fmt.Errorf("schedule batch: date %q: %w", job.Args.Date, err))
			}
			_, _, err = b.Run(ctx, job.Args.ScheduleID, d)
			return err
		}),
		outbox.NewLongJob(batchQueue+"_send", 1, func(ctx context.Context, o *outbox.Outbox, job *river.Job[SendArgs]) error {
			_, wait, err := b.send(ctx, job.Args.ApprovalID)
			if err == nil && !wait.IsZero() {
				// Run early (a deciding process's clock ahead of this one's): wait for the window.
				return river.JobSnooze(max(wait.Sub(b.now()), time.Second))
			}
			return err
		}),
		outbox.NewJob(batchQueue+"_tick", 1, func(ctx context.Context, o *outbox.Outbox, _ *river.Job[TickArgs]) error {
			return b.Tick(ctx, o)
		}),
	}
}

// Periodic is the tick as River's periodic job, for outbox.Config.Periodic.
func (b *Batcher) Periodic() *river.PeriodicJob {
	return river.NewPeriodicJob(river.PeriodicInterval(TickEvery), func() (river.JobArgs, *river.InsertOpts) {
		return TickArgs{}, &river.InsertOpts{Queue: batchQueue + "_tick"}
	}, &river.PeriodicJobOpts{RunOnStart: true})
}

// OnApproved is the approvals' decide hook (approval.Store.OnDecide) that sends a schedule's
// batch as soon as a person approves it: in the deciding transaction, it queues the batch's
// send job, scheduled for now when the schedule's send window is open, else for when it
// opens. Any other decision passes through.
func (b *Batcher) OnApproved(o *outbox.Outbox) approval.Hook {
	return func(ctx context.Context, tx store.Tx, a *approval.Action) error {
		if a.State != approval.Approved || a.Requester.Client != BatchClient {
			return nil
		}
		s, err := schedules.Get(ctx, tx, a.Requester.Actor)
		if err != nil {
			return fmt.Errorf("schedule batch %s: %w", a.ID, err)
		}
		at := calendar.Brazil().NextOpen(s.Window, b.now())
		_, _, err = o.Insert(ctx, tx, SendArgs{ApprovalID: a.ID},
			&river.InsertOpts{Queue: batchQueue + "_send", ScheduledAt: at, UniqueOpts: river.UniqueOpts{ByArgs: true}})
		return err
	}
}

// Lapse discards the open drafts of every opened batch whose approval expired or was rejected
// before its bulk send ran, and records the batch lapsed: the drafts discarded give their steps
// back (schedules.RecordTaken), so a later batch may take them again. It returns how many
// batches lapsed. Each batch lapses in a transaction of its own, under its schedule's lock
// (Run's), so a replica's Lapse and another's Run or Lapse never interleave.
func (b *Batcher) Lapse(ctx context.Context) (int, error) {
	open, err := schedules.OpenBatches(ctx, b.DB, "")
	if err != nil {
		return 0, err
	}
	lapsed := 0
	for _, o := range open {
		act, err := b.Approvals.Get(ctx, b.DB, o.ApprovalID)
		if err != nil {
			return lapsed, err
		}
		if act.State != approval.Expired && act.State != approval.Rejected {
			continue
		}
		err = b.DB.InTx(ctx, func(ctx context.Context, tx store.Tx) error {
			if _, err := schedules.GetForUpdate(ctx, tx, o.ScheduleID); err != nil {
				return err
			}
			done, err := schedules.MarkBatchLapsed(ctx, tx, o.ScheduleID, o.Date)
			if err != nil || !done {
				return err
			}
			lapsed++
			return b.discard(ctx, tx, o.ScheduleID, o.Date, nil)
		})
		if err != nil {
			return lapsed, fmt.Errorf("schedule batch %s %s: lapse: %w", o.ScheduleID, o.Date, err)
		}
	}
	return lapsed, nil
}

// discard discards the drafts the batch of schedule id on date wrote that are still open,
// but those in keep (the ones its send just queued), in tx under the schedule's lock.
func (b *Batcher) discard(ctx context.Context, tx store.Tx, id, date string, keep map[string]bool) error {
	drafts, err := batchDrafts(ctx, tx, id, date)
	if err != nil {
		return err
	}
	drafts = slices.DeleteFunc(drafts, func(d string) bool { return keep[d] })
	_, err = reminders.DiscardIDs(ctx, tx, drafts, b.now())
	return err
}

// Send runs the bulk send of every opened batch whose approval a person approved (what the
// send job does for one, Tick for all that wait), and returns how many it sent.
func (b *Batcher) Send(ctx context.Context) (int, error) {
	open, err := schedules.OpenBatches(ctx, b.DB, "")
	if err != nil {
		return 0, err
	}
	sent := 0
	for _, o := range open {
		n, _, err := b.sendBatch(ctx, o)
		sent += n
		if err != nil {
			return sent, err
		}
	}
	return sent, nil
}

// send runs the bulk send of the opened batch approvalID is for, if a person approved it, in
// a transaction under its schedule's lock, and returns 1 when it sent it. Only inside the
// schedule's send window: outside it the batch waits, approved, for its send job or a tick
// inside it. The approval is locked and marked executed; the bulk plan is computed again,
// locking, over the drafts the person approved (the batch's SendIDs) and no other: a draft
// whose invoice was paid, disputed or promised since, or whose customer may no longer be
// contacted, is left out — that customer only —, and the rest is enqueued, the bulk send
// recorded with its audit event, and the batch's bulk_id set, all or nothing, once. The
// drafts it wrote and left out are discarded, which gives their steps back. A batch left with
// nothing to send lapses. Outside the window, wait is when it opens.
func (b *Batcher) send(ctx context.Context, approvalID string) (sent int, wait time.Time, err error) {
	open, err := schedules.OpenBatches(ctx, b.DB, approvalID)
	if err != nil || len(open) == 0 {
		return 0, time.Time{}, err // sent or lapsed already, or no batch's
	}
	return b.sendBatch(ctx, open[0])
}

// sendBatch is send for the opened batch o, as OpenBatches read it (Send reads them all once).
func (b *Batcher) sendBatch(ctx context.Context, o schedules.OpenBatch) (sent int, wait time.Time, err error) {
	approvalID := o.ApprovalID
	act, err := b.Approvals.Get(ctx, b.DB, approvalID)
	if err != nil || act.State != approval.Approved {
		return 0, time.Time{}, err
	}
	err = b.DB.InTx(ctx, func(ctx context.Context, tx store.Tx) error {
		var ok bool
		ok, wait, err = b.sendTx(ctx, tx, o.ScheduleID, o.Date, approvalID)
		if ok {
			sent = 1
		}
		return err
	})
	if err != nil {
		return 0, time.Time{}, fmt.Errorf("schedule batch %s %s: send: %w", o.ScheduleID, o.Date, err)
	}
	return sent, wait, nil
}

func (b *Batcher) sendTx(ctx context.Context, tx store.Tx, id, date, approvalID string) (sent bool, wait time.Time, err error) {
	now := b.now()
	s, err := schedules.GetForUpdate(ctx, tx, id)
	if err != nil {
		return false, time.Time{}, err
	}
	bt, err := schedules.GetBatch(ctx, tx, id, date)
	if err != nil {
		return false, time.Time{}, err
	}
	if bt.Outcome != BatchOpened || bt.BulkID != "" {
		return false, time.Time{}, nil // another replica sent or lapsed it first
	}
	// Outside the send window (or on a day that is no business day) the batch waits for its
	// send job or a tick inside it, approved, rather than queueing held messages: the ledger
	// and every customer's status are checked when its messages leave, never hours before.
	if cal := calendar.Brazil(); !cal.InWindow(s.Window, now) {
		return false, cal.NextOpen(s.Window, now), nil
	}
	ok, err := b.sendOpen(ctx, tx, s, bt, approvalID, now)
	return ok, time.Time{}, err
}

// sendOpen is sendTx's work once the batch is open, unsent and inside its window.
func (b *Batcher) sendOpen(ctx context.Context, tx store.Tx, s schedules.Schedule, bt schedules.Batch, approvalID string, now time.Time) (bool, error) {
	id, date := s.ID, bt.Date
	act, err := b.Approvals.Executing(ctx, tx, approvalID)
	if err != nil {
		return false, err
	}
	if act.State != approval.Approved {
		return false, nil
	}
	p, err := planBulk(ctx, tx, &bulkArgs{DraftIDs: bt.SendIDs}, date, b.Settings.LedgerRequired)
	if err != nil {
		return false, err
	}
	if len(p.send) == 0 {
		// Every customer of the batch paid, disputed, promised or may no longer be contacted.
		if _, err := schedules.MarkBatchLapsed(ctx, tx, id, date); err != nil {
			return false, err
		}
		return false, b.discard(ctx, tx, id, date, nil)
	}
	by, actor := s.Created.By, s.ID
	sb, err := sendPlan(ctx, tx, b.Mail, p, by, actor, approvalID, now, func(int, int) {})
	if err != nil {
		return false, err
	}
	mark := b.Approvals.MarkExecutedStmt(approvalID)
	if n, err := tx.Exec(ctx, mark.SQL, mark.Args...); err != nil || n != 1 {
		return false, errors.Join(err, fmt.Errorf("approval %s: not marked executed", approvalID))
	}
	if err := schedules.MarkBatchSent(ctx, tx, id, date, sb.ID, p.skipped.counts()); err != nil {
		return false, err
	}
	keep := make(map[string]bool, len(p.send))
	for _, d := range p.send {
		keep[d.ID] = true
	}
	if err := b.discard(ctx, tx, id, date, keep); err != nil {
		return false, err
	}
	if b.Audit != nil {
		ev := auditlog.Event{Name: bulkAuditEvent, Tool: BulkSendName, Risk: string(contract.Critical), Subject: by, Actor: actor, ClientID: BatchClient,
			Outcome: auditlog.Allowed, Details: map[string]int64{"messagesQueued": int64(sb.Total), "draftsSkipped": int64(sb.Skipped)}}
		if err := b.Audit.Append(ctx, tx, ev); err != nil {
			return false, err
		}
	}
	return true, nil
}

// batchDrafts are the drafts the batch of schedule id on date wrote: its steps' drafts that the
// schedule created (reminders.Prepare may have answered a draft someone else had written, for
// the same customer, invoices and tone: that one is theirs, and stays).
func batchDrafts(ctx context.Context, q store.Querier, id, date string) ([]string, error) {
	rows, err := q.Query(ctx, `SELECT DISTINCT s.draft_id FROM schedule_step s JOIN reminder_draft d ON d.id = s.draft_id
WHERE s.schedule_id = $1 AND s.prepared_on = $2 AND d.created_by_actor = $1 ORDER BY s.draft_id`, id, date)
	if err != nil {
		return nil, fmt.Errorf("batch drafts: %w", err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var d string
		if err := rows.Scan(&d); err != nil {
			return nil, err
		}
		out = append(out, d)
	}
	return out, rows.Err()
}

// Tick runs the approved batches (Send), lapses those whose approval expired or was rejected
// (Lapse), then asks, for each active schedule whose send window is open now on a business day
// (in its zone) not past its end date, the job of today's batch, unless that batch is
// recorded: River's unique jobs keep one per schedule and day. A batch is made when its day's
// window opens, so that its drafts read the ledger of that morning and a person has the whole
// window to approve it; a business day on which the window does not open has no batch.
func (b *Batcher) Tick(ctx context.Context, o *outbox.Outbox) error {
	if _, err := b.Send(ctx); err != nil {
		return err
	}
	if _, err := b.Lapse(ctx); err != nil {
		return err
	}
	now := b.now()
	cal := calendar.Brazil()
	var after *schedules.Position
	for {
		page, err := schedules.List(ctx, b.DB, schedules.Filter{State: schedules.Active, After: after, Limit: 100})
		if err != nil {
			return err
		}
		for _, s := range page {
			day := s.Today(now)
			if !cal.IsBusinessDay(day) || s.Ended(day) || !cal.InWindow(s.Window, now) {
				continue
			}
			if _, err := schedules.GetBatch(ctx, b.DB, s.ID, day.String()); err == nil {
				continue
			} else if !errors.Is(err, store.ErrNoRows) {
				return err
			}
			err := b.DB.InTx(ctx, func(ctx context.Context, tx store.Tx) error {
				_, _, err := o.Insert(ctx, tx, BatchArgs{ScheduleID: s.ID, Date: day.String()},
					&river.InsertOpts{Queue: batchQueue, UniqueOpts: river.UniqueOpts{ByArgs: true}})
				return err
			})
			if err != nil {
				return err
			}
		}
		if len(page) < 100 {
			return nil
		}
		pos := schedules.PositionOf(page[len(page)-1])
		after = &pos
	}
}
