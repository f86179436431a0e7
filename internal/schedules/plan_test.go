package schedules_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/cobranca/cobranca/internal/calendar"
	"github.com/cobranca/cobranca/internal/customers"
	"github.com/cobranca/cobranca/internal/ledger"
	"github.com/cobranca/cobranca/internal/reminders"
	"github.com/cobranca/cobranca/internal/schedules"
	"github.com/cobranca/cobranca/internal/store"
	"github.com/cobranca/cobranca/internal/store/storetest"
)

// now is the tests' clock: noon of day in São Paulo.
var now = time.Date(2026, 7, 15, 15, 0, 0, 0, time.UTC)

var clerk = ledger.Actor{Subject: "ana"}

// world writes the test's ledger, customers and drafts in one transaction.
type world struct {
	t   *testing.T
	ctx context.Context
	tx  store.Tx
	tpl *reminders.Templates
}

func inTx(t *testing.T, db store.DB, fn func(w world)) {
	t.Helper()
	tpl, err := reminders.ParseTemplates()
	if err != nil {
		t.Fatal(err)
	}
	if err := db.InTx(context.Background(), func(ctx context.Context, tx store.Tx) error {
		fn(world{t: t, ctx: ctx, tx: tx, tpl: tpl})
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

func (w world) must(err error) {
	w.t.Helper()
	if err != nil {
		w.t.Fatal(err)
	}
}

func (w world) customer(id string, status customers.Status, until string) {
	w.t.Helper()
	_, err := customers.Upsert(w.ctx, w.tx, customers.Record{ID: id, Name: "Cliente " + id, Email: id + "@example.com"}, now.Add(-time.Hour))
	w.must(err)
	if status != customers.Contactable {
		_, err = customers.SetStatus(w.ctx, w.tx, id, customers.Change{Status: status, PausedUntil: until, Reason: "asked", SetBy: "ana"}, now.Add(-72*time.Hour))
		w.must(err)
	}
}

// invoice records an invoice of customer due lateBD business days before day.
func (w world) invoice(id, customer string, lateBD int, cents int64, void bool) {
	w.t.Helper()
	due := calendar.Brazil().AddBusinessDays(day, -lateBD)
	_, err := ledger.UpsertInvoices(w.ctx, w.tx, []ledger.InvoiceRecord{{InvoiceID: id, CustomerID: customer, AmountCents: cents, Currency: "BRL", DueDate: due.String(), Void: void}}, now.Add(-time.Hour))
	w.must(err)
}

func (w world) pay(id string, cents int64) {
	w.t.Helper()
	p, _, err := ledger.RecordPayment(w.ctx, w.tx, ledger.PaymentRecord{Source: "agent", SourceRef: "ref-" + id, AmountCents: cents, Currency: "BRL",
		PaidOn: day.String(), Method: ledger.MethodPIX}, clerk, now.Add(-time.Hour))
	w.must(err)
	_, err = ledger.Allocate(w.ctx, w.tx, p.ID, []ledger.Planned{{InvoiceID: id, AmountCents: cents}}, clerk, now.Add(-time.Hour))
	w.must(err)
}

// draft writes an open draft for customer naming invoice, written at.
func (w world) draft(customer, invoice string, at time.Time) reminders.Record {
	w.t.Helper()
	r, _, err := reminders.Prepare(w.ctx, w.tx, w.tpl, reminders.Request{CustomerID: customer, To: reminders.Recipient{Name: "Cliente", Email: customer + "@example.com"},
		Tone: reminders.Friendly, Language: reminders.PortugueseBR, Invoices: []reminders.Invoice{{ID: invoice, DueDate: "2026-06-01", AmountCents: 1000}}, CreatedBy: "ana"}, at)
	w.must(err)
	return r
}

func create(t *testing.T, db store.DB, doc string) schedules.Schedule {
	t.Helper()
	s, fe := spec(t, doc).Validate(todayIs(day))
	if fe != nil {
		t.Fatal(fe)
	}
	err := db.InTx(context.Background(), func(ctx context.Context, tx store.Tx) error {
		var err error
		s, err = schedules.Create(ctx, tx, s, schedules.Stamp{By: "ana", Actor: "agent-7"}, now)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// messages are a plan's messages as customer/step:invoices.
func messages(p *schedules.DayPlan) []string {
	out := []string{}
	for _, m := range p.Messages {
		s := fmt.Sprintf("%s/%d:", m.CustomerID, m.Step)
		for _, inv := range m.Invoices {
			s += inv.ID + " "
		}
		out = append(out, s)
	}
	return out
}

func plan(t *testing.T, db store.DB, s schedules.Schedule, d calendar.Date) *schedules.DayPlan {
	t.Helper()
	p, err := schedules.Plan(context.Background(), db, s, d, now)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestPlan: the plan of a day over a ledger with every reason to leave an invoice out: each
// skip counted once under its reason, the steps taken at most once, messages grouped by
// customer and step in batch order; a paused or ended schedule prepares nothing and counts
// why; a day that is not a business day has no batch.
func TestPlan(t *testing.T) {
	storetest.Each(t, pg, func(t *testing.T, db store.DB) {
		s := create(t, db, valid) // steps +3 friendly, +10 firm; every open invoice
		var had, gaveBack reminders.Record
		inTx(t, db, func(w world) {
			for _, c := range []string{"C1", "C5", "C6"} {
				w.customer(c, customers.Contactable, "")
			}
			w.customer("C2", customers.DoNotContact, "")
			w.customer("C3", customers.Paused, "2026-07-20")
			w.customer("C4", customers.Paused, "2026-07-15") // the pause ends today: contactable
			w.invoice("I1", "C1", 3, 1000, false)            // step 0, exactly today
			w.invoice("I2", "C1", 12, 2000, false)           // step 1, caught up
			w.invoice("I3", "C1", 1, 3000, false)            // no step due yet
			w.invoice("I4", "C2", 3, 1000, false)            // do_not_contact
			w.invoice("I5", "C3", 5, 1000, false)            // paused
			w.invoice("I6", "C4", 4, 1000, false)            // disputed
			w.must(func() error {
				_, err := ledger.OpenDispute(w.ctx, w.tx, "I6", ledger.DisputeWrongAmount, "", clerk, now)
				return err
			}())
			w.invoice("I7", "C4", 4, 1000, false) // promise pending
			_, err := ledger.RecordPromise(w.ctx, w.tx, ledger.PromiseRecord{InvoiceID: "I7", AmountCents: 1000, PromisedFor: "2026-07-20", Channel: "phone"}, clerk, now)
			w.must(err)
			w.invoice("I8", "C4", 3, 1000, false) // paid, a step falls on today exactly: counted
			w.pay("I8", 1000)
			w.invoice("I9", "C4", 10, 1000, true) // void, step 1 exactly today: counted
			w.invoice("I10", "C4", 4, 1000, false)
			w.pay("I10", 1000)                     // paid, no step exactly today: not counted
			w.invoice("I11", "C9", 3, 1000, false) // C9 has no contact record
			w.invoice("I12", "C5", 3, 1000, false) // C5 got two messages this week: over the cap
			w.draft("C5", "X1", now.Add(-24*time.Hour))
			w.draft("C5", "X2", now.Add(-48*time.Hour))
			w.draft("C5", "X3", now.Add(-8*24*time.Hour)) // older than 7 days: not counted
			w.invoice("I13", "C6", 12, 1000, false)       // had step 0 (open draft): takes step 1
			w.invoice("I14", "C6", 12, 1000, false)       // had step 1: nothing more
			w.invoice("I15", "C6", 5, 1000, false)        // had step 0, draft discarded: takes it again
			w.invoice("I16", "C4", 6, 5000, false)        // the pause over: step 0
			had = w.draft("C6", "I13", now.Add(-10*24*time.Hour))
			gaveBack = w.draft("C6", "I15", now.Add(-10*24*time.Hour))
			w.must(schedules.RecordTaken(w.ctx, w.tx, s.ID, "2026-07-01", []schedules.Taken{{InvoiceID: "I13", Step: 0, DraftID: had.ID},
				{InvoiceID: "I14", Step: 1, DraftID: had.ID}, {InvoiceID: "I15", Step: 0, DraftID: gaveBack.ID}}, now.Add(-10*24*time.Hour)))
			_, err = reminders.DiscardNotTo(w.ctx, w.tx, "C6", reminders.Recipient{Name: "other", Email: "other@example.com"}, now.Add(-9*24*time.Hour))
			w.must(err)
		})
		// DiscardNotTo discarded both of C6's drafts: write I13's again, still open.
		inTx(t, db, func(w world) {
			again := w.draft("C6", "I13", now.Add(-9*24*time.Hour))
			w.must(schedules.RecordTaken(w.ctx, w.tx, s.ID, "2026-07-02", []schedules.Taken{{InvoiceID: "I13", Step: 0, DraftID: again.ID},
				{InvoiceID: "I14", Step: 1, DraftID: again.ID}}, now.Add(-9*24*time.Hour)))
		})
		p := plan(t, db, s, day)
		want := []string{"C1/1:I2 ", "C6/1:I13 ", "C4/0:I16 ", "C6/0:I15 ", "C1/0:I1 "}
		if diff := cmp.Diff(want, messages(p)); diff != "" || !p.BusinessDay {
			t.Errorf("messages (-want +got):\n%s", diff)
		}
		wantSkips := schedules.Skips{Paid: 1, Void: 1, Disputed: 1, PromisePending: 1, NoContact: 1, DoNotContact: 1, CustomerPaused: 1, CapCustomer: 1}
		if diff := cmp.Diff(wantSkips, p.Skipped); diff != "" {
			t.Errorf("skips (-want +got):\n%s", diff)
		}
		if m := p.Messages[0]; m.To.Email != "C1@example.com" || m.Tone != reminders.Firm || m.Language != reminders.English || m.Currency != "BRL" ||
			m.Invoices[0].AmountCents != 2000 || m.TotalCents() != 2000 {
			t.Errorf("first message %+v, want C1's firm English reminder of I2's open amount", m)
		}

		// The batch cap keeps the first messages; a customer's cap counts what the batch takes.
		capped := create(t, db, `{"name":"cap","steps":[{"offset":3,"tone":"friendly"},{"offset":10,"tone":"firm"}],"audience":{"all":true},
			"caps":{"perCustomer7Days":1,"perBatch":2},"endDate":"2026-09-30"}`)
		p = plan(t, db, capped, day)
		// The new schedule had no step recorded: I14 takes step 1 with I13 in one message.
		if diff := cmp.Diff([]string{"C1/1:I2 ", "C6/1:I13 I14 "}, messages(p)); diff != "" {
			t.Errorf("capped messages (-want +got):\n%s", diff)
		}
		if p.Skipped.CapCustomer != 1+2 || p.Skipped.CapBatch != 1 { // I12; C1's and C6's second; C4's I16
			t.Errorf("capped skips %+v, want capCustomer 3, capBatch 1", p.Skipped)
		}

		// Paused, then past its end date: nothing prepared, every message's invoices counted.
		err := db.InTx(context.Background(), func(ctx context.Context, tx store.Tx) error {
			locked, err := schedules.GetForUpdate(ctx, tx, s.ID)
			if err != nil {
				return err
			}
			_, changed, err := schedules.SetState(ctx, tx, locked, schedules.Paused, schedules.Stamp{By: "bia"}, now)
			if !changed {
				t.Errorf("SetState paused: not changed")
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		s, err = schedules.Get(context.Background(), db, s.ID)
		if err != nil {
			t.Fatal(err)
		}
		if s.State != schedules.Paused || s.Paused.By != "bia" || s.Revision != 2 {
			t.Errorf("stored after pause: %s by %q revision %d", s.State, s.Paused.By, s.Revision)
		}
		p = plan(t, db, s, day)
		if len(p.Messages) != 0 || p.Skipped.SchedulePaused != 5 || p.Skipped.Paid != 1 {
			t.Errorf("paused plan: %v, skips %+v; want none, schedulePaused 5", messages(p), p.Skipped)
		}
		s.State = schedules.Active
		late := calendar.Brazil().AddBusinessDays(s.EndDate, 1)
		if p = plan(t, db, s, late); len(p.Messages) != 0 || p.Skipped.PastEndDate == 0 {
			t.Errorf("plan on %s, past the end: %v, skips %+v; want none, pastEndDate counted", late, messages(p), p.Skipped)
		}

		// A Sunday and a national holiday (Tiradentes, 21 April) have no batch.
		for _, d := range []calendar.Date{{Year: 2026, Month: time.July, Day: 19}, {Year: 2026, Month: time.April, Day: 21}} {
			if p := plan(t, db, s, d); p.BusinessDay || len(p.Messages) != 0 || p.Skipped.Total() != 0 {
				t.Errorf("plan on %s: %+v, want no batch", d, p)
			}
		}
	})
}

// TestStore: created, read back equal; listed newest first a page at a time and by state.
func TestStore(t *testing.T) {
	storetest.Each(t, pg, func(t *testing.T, db store.DB) {
		a := create(t, db, valid)
		b := create(t, db, `{"name":"B","steps":[{"offset":-2,"tone":"friendly"}],"audience":{"customerIds":["C1","C2"],"minOpenCents":100,"maxBusinessDaysOverdue":40},
			"caps":{"perCustomer7Days":3,"perBatch":50},"window":{"zone":"America/Manaus","open":"09:30","close":"18:00","days":["mon","wed","fri"]},"endDate":"2026-08-01"}`)
		got, err := schedules.Get(context.Background(), db, b.ID)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(b.Spec, got.Spec); diff != "" || got.Created.By != "ana" || got.Created.Actor != "agent-7" || !got.Created.At.Equal(now) || got.Window.Zone.String() != "America/Manaus" {
			t.Errorf("Get: spec (-created +read):\n%s; created %+v", diff, got.Created)
		}
		if _, err := schedules.Get(context.Background(), db, "sch_aaaaaaaaaaaaaaaaaaaaaaaaaa"); err != schedules.ErrNotFound {
			t.Errorf("Get of no schedule: %v, want ErrNotFound", err)
		}
		page, err := schedules.List(context.Background(), db, schedules.Filter{Limit: 1})
		if err != nil || len(page) != 1 {
			t.Fatalf("List: %v %v", page, err)
		}
		rest, err := schedules.List(context.Background(), db, schedules.Filter{Limit: 5, After: &schedules.Position{CreatedAt: page[0].Created.At.UnixMicro(), ID: page[0].ID}})
		if err != nil || len(rest) != 1 || rest[0].ID == page[0].ID || (rest[0].ID != a.ID && rest[0].ID != b.ID) {
			t.Errorf("List after the first: %v %v", rest, err)
		}
		paused, err := schedules.List(context.Background(), db, schedules.Filter{State: schedules.Paused, Limit: 5})
		if err != nil || len(paused) != 0 {
			t.Errorf("List paused: %v %v, want none", paused, err)
		}
	})
}

// TestRecordTakenOnce: a step recorded with a draft still open cannot be recorded again;
// once that draft is discarded it can.
func TestRecordTakenOnce(t *testing.T) {
	storetest.Each(t, pg, func(t *testing.T, db store.DB) {
		s := create(t, db, valid)
		var first reminders.Record
		inTx(t, db, func(w world) {
			w.customer("C1", customers.Contactable, "")
			w.invoice("I1", "C1", 3, 1000, false)
			first = w.draft("C1", "I1", now)
			w.must(schedules.RecordTaken(w.ctx, w.tx, s.ID, day.String(), []schedules.Taken{{InvoiceID: "I1", Step: 0, DraftID: first.ID}}, now))
		})
		err := db.InTx(context.Background(), func(ctx context.Context, tx store.Tx) error {
			return schedules.RecordTaken(ctx, tx, s.ID, day.String(), []schedules.Taken{{InvoiceID: "I1", Step: 0, DraftID: first.ID}}, now)
		})
		if err == nil {
			t.Errorf("RecordTaken of a step had by an open draft: nil, want refused")
		}
		inTx(t, db, func(w world) {
			_, err := reminders.DiscardOpen(w.ctx, w.tx, "C1", now)
			w.must(err)
			second := w.draft("C1", "I1", now.Add(time.Minute))
			w.must(schedules.RecordTaken(w.ctx, w.tx, s.ID, day.String(), []schedules.Taken{{InvoiceID: "I1", Step: 0, DraftID: second.ID}}, now))
		})
		if p := plan(t, db, s, day); len(p.Messages) != 0 {
			t.Errorf("after the step was taken again: %v, want nothing due", messages(p))
		}
	})
}
