package collections

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
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

// Batch outcomes, as schedule_batch records them.
const (
	BatchOpened = "opened" // drafts prepared, one bulk send waits for approval
	BatchLapsed = "lapsed" // its approval expired or was rejected: its open drafts discarded
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
	// ApprovalState is the state of its approval (LatestBatches only; "" without one).
	ApprovalState approval.State
}

// BatchSkips are a batch's skips: the schedule's plan's (invoices left out) and the bulk
// send's (drafts prepared but not sendable).
type BatchSkips struct {
	Plan schedules.Skips `json:"plan"`
	Bulk skipCounts      `json:"bulk"`
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
func (b *Batcher) Run(ctx context.Context, id string, date calendar.Date) (bt Batch, again bool, err error) {
	err = b.DB.InTx(ctx, func(ctx context.Context, tx store.Tx) error {
		bt, again, err = b.run(ctx, tx, id, date)
		return err
	})
	if err != nil {
		return Batch{}, false, fmt.Errorf("schedule batch %s: %w", id, err)
	}
	return bt, again, nil
}

func (b *Batcher) run(ctx context.Context, tx store.Tx, id string, date calendar.Date) (Batch, bool, error) {
	now := b.now()
	s, err := schedules.GetForUpdate(ctx, tx, id)
	if err != nil {
		return Batch{}, false, err
	}
	if date == (calendar.Date{}) {
		date = s.Today(now)
	}
	// The schedule's lock serializes the replicas: the second reads the first's row.
	if prev, err := GetBatch(ctx, tx, id, date.String()); err == nil {
		return prev, true, nil
	} else if !errors.Is(err, store.ErrNoRows) {
		return Batch{}, false, err
	}
	p, err := schedules.Plan(ctx, tx, s, date, now)
	if err != nil {
		return Batch{}, false, err
	}
	bt := Batch{ScheduleID: id, Date: date.String(), Outcome: BatchEmpty, Skipped: BatchSkips{Plan: p.Skipped},
		CreatedAt: time.UnixMicro(now.UnixMicro()).UTC()}
	if !p.BusinessDay {
		// Not a day of batches: nothing is recorded, so the key stays free (a job asked on a
		// holiday leaves no row).
		return bt, false, nil
	}
	if s.State != schedules.Active || s.Ended(date) {
		bt.Outcome = BatchClosed
		return bt, false, insertBatch(ctx, tx, bt)
	}
	ids := make([]string, 0, len(p.Messages))
	for _, m := range p.Messages {
		req := m.Request(s.Created.By, s.ID)
		req.PixCode = pixCharge(b.Settings.Pix, m.Currency)
		d, created, err := reminders.Prepare(ctx, tx, b.Templates, req, now)
		if err != nil {
			return Batch{}, false, err
		}
		if created && d.Pix != nil {
			// As prepare_reminder: the code's txid is a payment reference of the invoices.
			invs := make([]string, len(d.Invoices))
			for i, inv := range d.Invoices {
				invs[i] = inv.ID
			}
			if err := ledger.AddReference(ctx, tx, invs, d.Pix.TxID, ledger.SourceReminder, d.ID, now); err != nil {
				return Batch{}, false, err
			}
		}
		if err := schedules.RecordTaken(ctx, tx, s.ID, p.Date.String(), m.Taken(d.ID), now); err != nil {
			return Batch{}, false, err
		}
		ids = append(ids, d.ID)
	}
	if b.failAfterPrepare != nil {
		return Batch{}, false, b.failAfterPrepare
	}
	bt.Drafts = len(ids)
	if len(ids) == 0 {
		return bt, false, insertBatch(ctx, tx, bt)
	}
	a := &bulkArgs{DraftIDs: ids}
	bp, err := planBulk(ctx, tx, a, date.String(), b.Settings.LedgerRequired)
	if err != nil {
		return Batch{}, false, err
	}
	bt.Recipients, bt.PlanHash, bt.Skipped.Bulk = len(bp.send), bp.hash, bp.skipped
	if len(bp.send) == 0 {
		return bt, false, insertBatch(ctx, tx, bt)
	}
	est, rule := bulkTool{mail: b.Mail}.estimate(len(bp.send))
	preview := fmt.Sprintf("Schedule %q (%s), batch of %s: ", s.Name, s.ID, bt.Date) + bp.describe(samples(bp), est, rule)
	if n := p.Skipped.Total(); n > 0 {
		preview += fmt.Sprintf("The schedule's plan left out %s (by reason: %s).\n", count(n, "invoice", "invoices"), skipWords(p.Skipped))
	}
	act, err := b.Approvals.Create(ctx, tx, BulkSendName, batchDigest(bt), preview, bulkSendContract().SideEffects.Changes,
		approval.Requester{Subject: s.Created.By, Client: BatchClient, Actor: s.ID})
	if err != nil {
		return Batch{}, false, err
	}
	bt.Outcome, bt.ApprovalID = BatchOpened, act.ID
	return bt, false, insertBatch(ctx, tx, bt)
}

// batchDigest is what the batch's approval binds: the bulk send of exactly this plan, for this
// schedule and day.
func batchDigest(bt Batch) [sha256.Size]byte {
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

func insertBatch(ctx context.Context, tx store.Tx, bt Batch) error {
	sk, err := json.Marshal(bt.Skipped)
	if err != nil {
		return err
	}
	_, err = tx.Exec(ctx, `INSERT INTO schedule_batch (schedule_id, batch_date, outcome, approval_id, bulk_id, drafts, recipients, plan_hash, skipped, created_at)
VALUES ($1, $2, $3, $4, '', $5, $6, $7, $8, $9)`, bt.ScheduleID, bt.Date, bt.Outcome, bt.ApprovalID, int64(bt.Drafts), int64(bt.Recipients),
		bt.PlanHash, string(sk), bt.CreatedAt.UnixMicro())
	if err != nil {
		return fmt.Errorf("record batch: %w", err)
	}
	return nil
}

const batchColumns = `schedule_id, batch_date, outcome, approval_id, bulk_id, drafts, recipients, plan_hash, skipped, created_at`

// scanBatch reads batchColumns, then the extra columns into extra.
func scanBatch(row store.Row, extra ...any) (Batch, error) {
	var (
		bt            Batch
		drafts, n, at int64
		sk            string
	)
	dst := append([]any{&bt.ScheduleID, &bt.Date, &bt.Outcome, &bt.ApprovalID, &bt.BulkID, &drafts, &n, &bt.PlanHash, &sk, &at}, extra...)
	if err := row.Scan(dst...); err != nil {
		return Batch{}, err
	}
	bt.Drafts, bt.Recipients, bt.CreatedAt = int(drafts), int(n), time.UnixMicro(at).UTC()
	if err := json.Unmarshal([]byte(sk), &bt.Skipped); err != nil {
		return Batch{}, fmt.Errorf("batch %s %s: skipped: %w", bt.ScheduleID, bt.Date, err)
	}
	return bt, nil
}

// GetBatch is the batch of schedule id on date (store.ErrNoRows when none).
func GetBatch(ctx context.Context, q store.Querier, id, date string) (Batch, error) {
	return scanBatch(q.QueryRow(ctx, `SELECT `+batchColumns+` FROM schedule_batch WHERE schedule_id = $1 AND batch_date = $2`, id, date))
}

// LatestBatches are the schedule's latest batches, newest first, at most limit, each with
// its approval's state as it reads at now (approval.StateAt).
func LatestBatches(ctx context.Context, q store.Querier, id string, limit int, now time.Time) ([]Batch, error) {
	rows, err := q.Query(ctx, `SELECT b.schedule_id, b.batch_date, b.outcome, b.approval_id, b.bulk_id, b.drafts, b.recipients,
b.plan_hash, b.skipped, b.created_at, COALESCE(a.state, ''), COALESCE(a.expires_at, 0)
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
		if state != "" {
			bt.ApprovalState = approval.StateAt(approval.State(state), time.UnixMicro(expires), now)
		}
		out = append(out, bt)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("schedule batches: %w", err)
	}
	return out, nil
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

// TickArgs is the periodic job that asks, for each active schedule, today's batch.
type TickArgs struct{}

// Kind is River's name of the job.
func (TickArgs) Kind() string { return "cobranca.schedule_tick" }

// TickEvery is how often the tick runs (River's periodic job, on the leader only).
const TickEvery = 15 * time.Minute

// Jobs are the batch's River jobs, for outbox.Config.Jobs.
func (b *Batcher) Jobs() []outbox.Job {
	return []outbox.Job{
		outbox.NewJob(batchQueue, 1, func(ctx context.Context, o *outbox.Outbox, job *river.Job[BatchArgs]) error {
			d, err := calendar.ParseDate(job.Args.Date)
			if err != nil {
				return river.JobCancel(fmt.Errorf("schedule batch: date %q: %w", job.Args.Date, err))
			}
			_, _, err = b.Run(ctx, job.Args.ScheduleID, d)
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

// Lapse discards the open drafts of every opened batch whose approval expired or was rejected
// before its bulk send ran, and records the batch lapsed: the drafts discarded give their steps
// back (schedules.RecordTaken), so a later batch may take them again. It returns how many
// batches lapsed. Each batch lapses in a transaction of its own, under its schedule's lock
// (Run's), so a replica's Lapse and another's Run or Lapse never interleave.
func (b *Batcher) Lapse(ctx context.Context) (int, error) {
	open, err := openBatches(ctx, b.DB)
	if err != nil {
		return 0, err
	}
	lapsed := 0
	for _, o := range open {
		act, err := b.Approvals.Get(ctx, b.DB, o[2])
		if err != nil {
			return lapsed, err
		}
		if act.State != approval.Expired && act.State != approval.Rejected {
			continue
		}
		err = b.DB.InTx(ctx, func(ctx context.Context, tx store.Tx) error {
			if _, err := schedules.GetForUpdate(ctx, tx, o[0]); err != nil {
				return err
			}
			done, err := b.lapse(ctx, tx, o[0], o[1])
			if done {
				lapsed++
			}
			return err
		})
		if err != nil {
			return lapsed, fmt.Errorf("schedule batch %s %s: lapse: %w", o[0], o[1], err)
		}
	}
	return lapsed, nil
}

// lapse records the opened batch of schedule id on date lapsed and discards the drafts it
// wrote, in tx under the schedule's lock; done is false when it was no longer opened (another
// replica lapsed or sent it first).
func (b *Batcher) lapse(ctx context.Context, tx store.Tx, id, date string) (done bool, err error) {
	n, err := tx.Exec(ctx, `UPDATE schedule_batch SET outcome = 'lapsed' WHERE schedule_id = $1 AND batch_date = $2 AND outcome = 'opened' AND bulk_id = ''`, id, date)
	if err != nil || n == 0 {
		return false, err
	}
	drafts, err := batchDrafts(ctx, tx, id, date)
	if err != nil {
		return false, err
	}
	if _, err := reminders.DiscardIDs(ctx, tx, drafts, b.now()); err != nil {
		return false, err
	}
	return true, nil
}

// openBatches are the batches opened whose bulk send has not run: (schedule, date, approval).
func openBatches(ctx context.Context, q store.Querier) ([][3]string, error) {
	rows, err := q.Query(ctx, `SELECT schedule_id, batch_date, approval_id FROM schedule_batch WHERE outcome = 'opened' AND bulk_id = '' ORDER BY batch_date, schedule_id`)
	if err != nil {
		return nil, fmt.Errorf("schedule batches: open: %w", err)
	}
	defer rows.Close()
	var out [][3]string
	for rows.Next() {
		var o [3]string
		if err := rows.Scan(&o[0], &o[1], &o[2]); err != nil {
			return nil, err
		}
		out = append(out, o)
	}
	return out, rows.Err()
}

// Send runs the bulk send of every opened batch whose approval a person approved, each in a
// transaction of its own under its schedule's lock: the approval is locked and marked executed,
// the bulk plan of the batch's drafts is computed again, locking, and, if it is still the one
// approved (its plan hash), its messages are enqueued — only inside the schedule's send window:
// outside it the batch waits, approved, for a tick inside it — the bulk send recorded, its audit event
// written and the batch's bulk_id set — all or nothing, once. A batch whose plan changed since
// (a draft, a customer's status, the ledger) lapses instead: its drafts are discarded. It
// returns how many batches were sent.
func (b *Batcher) Send(ctx context.Context) (int, error) {
	open, err := openBatches(ctx, b.DB)
	if err != nil {
		return 0, err
	}
	sent := 0
	for _, o := range open {
		act, err := b.Approvals.Get(ctx, b.DB, o[2])
		if err != nil {
			return sent, err
		}
		if act.State != approval.Approved {
			continue
		}
		err = b.DB.InTx(ctx, func(ctx context.Context, tx store.Tx) error {
			ok, err := b.send(ctx, tx, o[0], o[1], o[2])
			if ok {
				sent++
			}
			return err
		})
		if err != nil {
			return sent, fmt.Errorf("schedule batch %s %s: send: %w", o[0], o[1], err)
		}
	}
	return sent, nil
}

func (b *Batcher) send(ctx context.Context, tx store.Tx, id, date, approvalID string) (bool, error) {
	now := b.now()
	s, err := schedules.GetForUpdate(ctx, tx, id)
	if err != nil {
		return false, err
	}
	bt, err := GetBatch(ctx, tx, id, date)
	if err != nil {
		return false, err
	}
	if bt.Outcome != BatchOpened || bt.BulkID != "" {
		return false, nil // another replica sent or lapsed it first
	}
	// Outside the send window (or on a day that is no business day) the batch waits for a tick
	// inside it, approved, rather than queueing held messages: its plan, and so the ledger and
	// every customer's status, is checked again when its messages leave, never hours before.
	if !calendar.Brazil().InWindow(s.Window, now) {
		return false, nil
	}
	act, err := b.Approvals.Executing(ctx, tx, approvalID)
	if err != nil {
		return false, err
	}
	if act.State != approval.Approved {
		return false, nil
	}
	drafts, err := stepDrafts(ctx, tx, id, date)
	if err != nil {
		return false, err
	}
	p, err := planBulk(ctx, tx, &bulkArgs{DraftIDs: drafts}, date, b.Settings.LedgerRequired)
	if err != nil {
		return false, err
	}
	if p.hash != bt.PlanHash || len(p.send) == 0 {
		// Not what the person approved: nothing is sent, and the drafts give their steps back.
		_, err := b.lapse(ctx, tx, id, date)
		return false, err
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
	if _, err := tx.Exec(ctx, `UPDATE schedule_batch SET bulk_id = $3 WHERE schedule_id = $1 AND batch_date = $2`, id, date, sb.ID); err != nil {
		return false, fmt.Errorf("record the bulk send: %w", err)
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

// stepDrafts are every draft the batch of schedule id on date took its steps with (the drafts
// its bulk send names, in id order).
func stepDrafts(ctx context.Context, q store.Querier, id, date string) ([]string, error) {
	return draftIDs(ctx, q, `SELECT DISTINCT draft_id FROM schedule_step WHERE schedule_id = $1 AND prepared_on = $2 ORDER BY draft_id`, id, date)
}

// batchDrafts are the drafts the batch of schedule id on date wrote: its steps' drafts that the
// schedule created (reminders.Prepare may have answered a draft someone else had written, for
// the same customer, invoices and tone: that one is theirs, and stays).
func batchDrafts(ctx context.Context, q store.Querier, id, date string) ([]string, error) {
	return draftIDs(ctx, q, `SELECT DISTINCT s.draft_id FROM schedule_step s JOIN reminder_draft d ON d.id = s.draft_id
WHERE s.schedule_id = $1 AND s.prepared_on = $2 AND d.created_by_actor = $1 ORDER BY s.draft_id`, id, date)
}

// draftIDs reads the one column of draft ids sql selects for a schedule's batch.
func draftIDs(ctx context.Context, q store.Querier, sql, id, date string) ([]string, error) {
	rows, err := q.Query(ctx, sql, id, date)
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

// Tick runs the approved batches (Send), lapses those whose approval expired (Lapse), then asks, for each active schedule whose today (in its zone) is a business day not past
// its end date, the job of today's batch, unless that batch is recorded: River's unique jobs
// keep one per schedule and day.
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
			if !cal.IsBusinessDay(day) || s.Ended(day) {
				continue
			}
			if _, err := GetBatch(ctx, b.DB, s.ID, day.String()); err == nil {
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
