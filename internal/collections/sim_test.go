package collections_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
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

// simSteps are the simulated schedule's offsets (business days from the due date).
var simSteps = []int{-2, 3, 10, 20}

// interval is [from, to) in time; a zero to is open-ended.
type interval struct{ from, to time.Time }

func (iv interval) has(t time.Time) bool {
	return !t.Before(iv.from) && (iv.to.IsZero() || t.Before(iv.to))
}

// simLedger is what the simulation did to the ledger, by time: the test's own account, which
// every delivered message is checked against at the moment it left.
type simLedger struct {
	due      map[string]calendar.Date
	amount   map[string]int64
	customer map[string]string
	paidAt   map[string]time.Time
	disputes map[string][]interval
	promises map[string][]struct {
		made time.Time
		due  calendar.Date
	}
	noContact map[string][]interval
}

func (l *simLedger) why(inv string, at time.Time, zone *time.Location) string {
	if p, ok := l.paidAt[inv]; ok && !at.Before(p) {
		return "paid"
	}
	for _, iv := range l.disputes[inv] {
		if iv.has(at) {
			return "disputed"
		}
	}
	day := calendar.DateOf(at, zone)
	var latest *calendar.Date
	for _, p := range l.promises[inv] {
		if !p.made.After(at) {
			latest = &p.due
		}
	}
	if latest != nil && latest.String() >= day.String() {
		return "promised"
	}
	for _, iv := range l.noContact[l.customer[inv]] {
		if iv.has(at) {
			return "do_not_contact"
		}
	}
	return ""
}

// sent is a message the schedule's batches sent: its draft, recipient, customer, approval and
// invoices, when it was queued and when the outbox may deliver it.
type sent struct {
	draft, to, customer, approval string
	invoices                      []string
	queued, at                    time.Time
}

// TestScheduleSimulation runs a schedule for 60 simulated days, 2026-09-28 to 2026-11-27
// (Nossa Senhora Aparecida, Finados, Proclamação da República and Consciência Negra — Friday
// 20 November — inside), over 1 000 invoices of 300 customers, with the real pieces: the
// Batcher runs each business day's batch at 08:00 São Paulo, when the send window opens, and
// sends and lapses every simulated hour; bia (not ana, the schedule's creator) approves most
// batches — in the morning or the evening, sent at once as the decide hook's job does, or at
// noon, sent by the next hour's tick after the noon's ledger changes, which leave out only the
// customers they concern —, rejects some and lets some expire at the window's close; each day at noon payments (the ledger's
// RecordPayment and Allocate), promises kept and broken, disputes opened and resolved either
// way, and do_not_contact changes arrive; the outbox delivers to an in-process SMTP server.
// Every message sent is checked against the ledger as the test changed it, at the moment the
// message may leave: no paid, disputed, promised or do_not_contact invoice; inside the window,
// never on a Sunday or a holiday; at most 2 messages a customer in any 7 days, 120 a batch;
// each in a batch bia approved; each at the step the invoice's age calls for — which covers an
// invoice coming back after a broken promise or a dispute rejected. Carnival Tuesday and
// Tiradentes of 2027 are checked as focused days at the end.
func TestScheduleSimulation(t *testing.T) {
	if testing.Short() {
		t.Skip("60 simulated days take 40 s a store: the full tier runs them")
	}
	eachEnv(t, func(t *testing.T, e *env) {
		ctx := context.Background()
		cal := calendar.Brazil()
		sp := calendar.DefaultWindow().Zone
		e.mu.Lock()
		e.now = time.Date(2026, 9, 28, 6, 0, 0, 0, sp) // a Monday, before its 08:00 batch
		start := e.now
		e.mu.Unlock()
		rng := rand.New(rand.NewPCG(30, 2026))

		// The ledger: 300 customers, 1 000 invoices due from 2026-07-01 to 2026-11-30.
		led := &simLedger{due: map[string]calendar.Date{}, amount: map[string]int64{}, customer: map[string]string{},
			paidAt: map[string]time.Time{}, disputes: map[string][]interval{}, noContact: map[string][]interval{},
			promises: map[string][]struct {
				made time.Time
				due  calendar.Date
			}{}}
		first, _ := calendar.ParseDate("2026-07-01")
		var invoices []string
		err := e.db.InTx(ctx, func(ctx context.Context, tx store.Tx) error {
			for c := range 300 {
				id := fmt.Sprintf("C-%03d", c)
				if _, err := customers.Upsert(ctx, tx, customers.Record{ID: id, Name: "Cliente " + id, Email: strings.ToLower(id) + "@example.com"}, e.clock()); err != nil {
					return err
				}
			}
			var recs []ledger.InvoiceRecord
			for i := range 1000 {
				id := fmt.Sprintf("NF-%04d", i)
				due := first.AddDays(rng.IntN(153))
				rec := ledger.InvoiceRecord{InvoiceID: id, CustomerID: fmt.Sprintf("C-%03d", i%300), AmountCents: 1000 + rng.Int64N(200000),
					Currency: "BRL", DueDate: due.String()}
				recs = append(recs, rec)
				invoices = append(invoices, id)
				led.due[id], led.amount[id], led.customer[id] = due, rec.AmountCents, rec.CustomerID
			}
			_, err := ledger.UpsertInvoices(ctx, tx, recs, e.clock())
			return err
		})
		if err != nil {
			t.Fatal(err)
		}

		// The schedule, created by ana.
		var steps []string
		for i, o := range simSteps {
			tone := "friendly"
			if i >= 2 {
				tone = "firm"
			}
			steps = append(steps, fmt.Sprintf(`{"offset":%d,"tone":"%s"}`, o, tone))
		}
		spec := `{"name":"Régua simulada","steps":[` + strings.Join(steps, ",") + `],"audience":{"all":true},` +
			`"caps":{"perCustomer7Days":2,"perBatch":120},"endDate":"2026-11-30"}`
		var ss schedules.Spec
		if err := json.Unmarshal([]byte(spec), &ss); err != nil {
			t.Fatal(err)
		}
		s, fe := ss.Validate(func(loc *time.Location) calendar.Date { return calendar.DateOf(e.clock(), loc) })
		if fe != nil {
			t.Fatal(fe)
		}
		err = e.db.InTx(ctx, func(ctx context.Context, tx store.Tx) error {
			s, err = schedules.Create(ctx, tx, s, schedules.Stamp{By: "ana", Actor: "agent-7"}, e.clock())
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		approvals, err := approval.New(20*time.Hour, e.clock)
		if err != nil {
			t.Fatal(err)
		}
		tpl, err := reminders.ParseTemplates()
		if err != nil {
			t.Fatal(err)
		}
		mail := smtptest.New(t)
		b := &collections.Batcher{DB: e.db, Approvals: approvals, Templates: tpl, Now: e.clock}
		b.Audit, _ = pipelinetest.AuditLog(t, e.db)
		b.Mail = outboxtest.Deliver(t, e.db, mail, outbox.Config{Owner: reminders.Delivery{}})

		tx := func(fn func(ctx context.Context, tx store.Tx) error) {
			t.Helper()
			if err := e.db.InTx(ctx, fn); err != nil {
				t.Fatal(err)
			}
		}
		clerk := ledger.Actor{Subject: "clerk"}
		open := func(inv string, at time.Time) bool { // not paid, no open dispute, no promise pending
			return led.why(inv, at, sp) == "" || led.why(inv, at, sp) == "do_not_contact"
		}

		type decision struct {
			id      string
			hour    int
			approve bool
		}
		var pending []decision
		var (
			outcomes    = map[string]int{}
			sentMsgs    []sent
			seen        = map[string]bool{}
			promiseKept = map[string]calendar.Date{}
			disputeEnds = map[string]struct {
				day    calendar.Date
				upheld bool
			}{}
			dncEnds                                        = map[string]calendar.Date{}
			brokenPromise, rejectedDispute                 = map[string]time.Time{}, map[string]time.Time{}
			nPay, nPromise, nBroken, nDispute, nDNC, nLate int
			approvedLapsed, nReject, nExpire               int
		)
		for h := range 60 * 24 {
			now := start.Add(time.Duration(h) * time.Hour)
			e.mu.Lock()
			e.now = now
			e.mu.Unlock()
			local := now.In(sp)
			day := calendar.DateOf(now, sp)

			// The hourly tick: send what was approved, lapse what was not.
			n, err := b.Send(ctx)
			if err != nil {
				t.Fatalf("%v: Send: %v", local, err)
			}
			if n > 0 {
				sentMsgs = append(sentMsgs, newlySent(t, e.db, seen, now, cal, s.Window)...)
			}
			if _, err := b.Lapse(ctx); err != nil {
				t.Fatalf("%v: Lapse: %v", local, err)
			}

			// 08:00, the window opens: the day's batch (what the tick's job runs).
			if local.Hour() == 8 {
				bt, _, err := b.Run(ctx, s.ID, day)
				if err != nil {
					t.Fatalf("%v: Run: %v", local, err)
				}
				if !cal.IsBusinessDay(day) {
					if _, err := schedules.GetBatch(ctx, e.db, s.ID, day.String()); err == nil {
						t.Errorf("%s is not a business day but has a batch", day)
					}
				} else {
					outcomes[string(bt.Outcome)]++
				}
				if bt.Outcome == collections.BatchOpened {
					switch r := rng.IntN(100); {
					case r < 40:
						pending = append(pending, decision{bt.ApprovalID, 9, true})
					case r < 65:
						// Its send job waits (a busy worker): the noon's ledger changes come first.
						pending = append(pending, decision{bt.ApprovalID, 12, true})
					case r < 76:
						pending = append(pending, decision{bt.ApprovalID, 19, true}) // the window's last hour
					case r < 88:
						pending = append(pending, decision{bt.ApprovalID, 10, false})
					default: // left to expire
						nExpire++
					}
				}
			}
			// bia decides.
			pending = slices.DeleteFunc(pending, func(d decision) bool {
				if d.hour != local.Hour() {
					return false
				}
				tx(func(ctx context.Context, tx store.Tx) error {
					_, err := approvals.Decide(ctx, tx, d.id, d.approve, approval.Approver{Subject: "bia"})
					return err
				})
				if !d.approve {
					nReject++
					return true
				}
				if d.hour == 12 {
					return true // sent by the next hour's tick
				}
				if d.hour == 19 {
					nLate++
				}
				// The decide hook's job: sent at once, inside the window.
				n, err := b.SendApproved(ctx, d.id)
				if err != nil || n != 1 {
					t.Fatalf("%v: the send job of %s = %d, %v; want it sent", local, d.id, n, err)
				}
				sentMsgs = append(sentMsgs, newlySent(t, e.db, seen, now, cal, s.Window)...)
				return true
			})

			// Noon: the ledger moves.
			if local.Hour() != 12 {
				continue
			}
			today := day.String()
			tx(func(ctx context.Context, tx store.Tx) error {
				pay := func(inv string) {
					p, _, err := ledger.RecordPayment(ctx, tx, ledger.PaymentRecord{Source: "agent", SourceRef: "sim-" + inv, AmountCents: led.amount[inv],
						Currency: "BRL", PaidOn: today, Method: ledger.MethodPIX}, clerk, now)
					if err == nil {
						_, err = ledger.Allocate(ctx, tx, p.ID, []ledger.Planned{{InvoiceID: inv, AmountCents: led.amount[inv]}}, clerk, now)
					}
					if err != nil {
						t.Fatalf("pay %s: %v", inv, err)
					}
					led.paidAt[inv] = now
					nPay++
				}
				// Promises kept are paid on their day; broken ones are not.
				for inv, d := range promiseKept {
					if d == day {
						if _, paid := led.paidAt[inv]; !paid {
							pay(inv)
						}
						delete(promiseKept, inv)
					}
				}
				for inv, d := range disputeEnds {
					if d.day != day {
						continue
					}
					outcome := ledger.OutcomeRejected
					if d.upheld {
						outcome = ledger.OutcomeUpheld
					} else {
						rejectedDispute[inv] = now
					}
					if _, err := ledger.ResolveDispute(ctx, tx, inv, outcome, "", clerk, now); err != nil {
						t.Fatalf("resolve %s: %v", inv, err)
					}
					iv := led.disputes[inv]
					iv[len(iv)-1].to = now
					delete(disputeEnds, inv)
				}
				for c, d := range dncEnds {
					if d != day {
						continue
					}
					if _, err := customers.SetStatus(ctx, tx, c, customers.Change{Status: customers.Contactable, Reason: "asked again", SetBy: "ana"}, now); err != nil {
						t.Fatalf("contactable %s: %v", c, err)
					}
					iv := led.noContact[c]
					iv[len(iv)-1].to = now
					delete(dncEnds, c)
				}
				for range 6 { // payments
					if inv := invoices[rng.IntN(len(invoices))]; open(inv, now) {
						pay(inv)
					}
				}
				for range 4 { // promises, 60 % broken
					inv := invoices[rng.IntN(len(invoices))]
					if _, kept := promiseKept[inv]; !open(inv, now) || kept {
						continue
					}
					pd := day.AddDays(1 + rng.IntN(8))
					if _, err := ledger.RecordPromise(ctx, tx, ledger.PromiseRecord{InvoiceID: inv, AmountCents: led.amount[inv], PromisedFor: pd.String(), Channel: "phone"}, clerk, now); err != nil {
						t.Fatalf("promise %s: %v", inv, err)
					}
					led.promises[inv] = append(led.promises[inv], struct {
						made time.Time
						due  calendar.Date
					}{now, pd})
					nPromise++
					if rng.IntN(100) < 40 {
						promiseKept[inv] = pd
					} else {
						brokenPromise[inv] = now
						nBroken++
					}
				}
				for range 2 { // disputes, resolved 3 to 10 days later, half against the customer
					inv := invoices[rng.IntN(len(invoices))]
					if _, kept := promiseKept[inv]; !open(inv, now) || kept {
						continue
					}
					if _, err := ledger.OpenDispute(ctx, tx, inv, ledger.DisputeWrongAmount, "", clerk, now); err != nil {
						t.Fatalf("dispute %s: %v", inv, err)
					}
					led.disputes[inv] = append(led.disputes[inv], interval{from: now})
					disputeEnds[inv] = struct {
						day    calendar.Date
						upheld bool
					}{day.AddDays(3 + rng.IntN(8)), rng.IntN(2) == 0}
					nDispute++
				}
				if rng.IntN(2) == 0 { // a customer asks not to be contacted, for 5 to 20 days
					c := fmt.Sprintf("C-%03d", rng.IntN(300))
					if _, on := dncEnds[c]; !on {
						if _, err := customers.SetStatus(ctx, tx, c, customers.Change{Status: customers.DoNotContact, Reason: "asked", SetBy: "ana"}, now); err != nil {
							t.Fatalf("do_not_contact %s: %v", c, err)
						}
						led.noContact[c] = append(led.noContact[c], interval{from: now})
						dncEnds[c] = day.AddDays(5 + rng.IntN(16))
						nDNC++
					}
				}
				return nil
			})
		}

		// The invariants, message by message, at the moment each may leave.
		holidays := map[string]bool{"2026-10-12": true, "2026-11-02": true, "2026-11-15": true, "2026-11-20": true}
		perCustomer := map[string][]time.Time{}
		came := map[string]bool{}
		for _, m := range sentMsgs {
			at := m.at.In(sp)
			if !cal.InWindow(s.Window, m.at) || at.Hour() < 8 || at.Hour() >= 20 || at.Weekday() == time.Sunday || holidays[at.Format(time.DateOnly)] {
				t.Errorf("draft %s to %s leaves at %v: outside Monday–Saturday 08:00–20:00 or on a holiday", m.draft, m.to, at)
			}
			for _, inv := range m.invoices {
				if why := led.why(inv, m.at, sp); why != "" {
					t.Errorf("draft %s to %s at %v lists %s, %s at that moment", m.draft, m.to, at, inv, why)
				}
				if pb, ok := brokenPromise[inv]; ok && m.queued.After(pb) {
					came["promise"] = true
				}
				if rd, ok := rejectedDispute[inv]; ok && m.queued.After(rd) {
					came["dispute"] = true
				}
			}
			perCustomer[m.customer] = append(perCustomer[m.customer], m.queued)
			act, err := approvals.Get(ctx, e.db, m.approval)
			if err != nil {
				t.Fatalf("draft %s: approval %q: %v", m.draft, m.approval, err)
			}
			if act.Approver == nil || act.Approver.Subject != "bia" || act.Requester.Subject != "ana" || act.State != approval.Executed {
				t.Errorf("draft %s: approval %+v; want executed, asked by ana's schedule, approved by bia", m.draft, act)
			}
		}
		for c, times := range perCustomer {
			slices.SortFunc(times, func(a, b time.Time) int { return a.Compare(b) })
			for i := 2; i < len(times); i++ {
				if times[i].Sub(times[i-2]) < 7*24*time.Hour {
					t.Errorf("customer %s had 3 messages within 7 days: %v, %v, %v", c, times[i-2], times[i-1], times[i])
				}
			}
		}
		checkSteps(t, e.db, s.ID, led, cal)
		var over int64
		if err := e.db.QueryRow(ctx, `SELECT count(*) FROM schedule_batch WHERE drafts > 120`).Scan(&over); err != nil || over != 0 {
			t.Errorf("%d batches over the cap of 120 (%v)", over, err)
		}
		if err := e.db.QueryRow(ctx, `SELECT count(*) FROM schedule_batch b JOIN approval a ON a.id = b.approval_id WHERE b.outcome = 'lapsed' AND a.state IN ('approved', 'executed')`).Scan(&over); err != nil {
			t.Fatal(err)
		}
		approvedLapsed = int(over)

		// Every message queued reached the SMTP server, to the recipient its draft names.
		got := mail.Wait(t, len(sentMsgs), time.Minute)
		var want, have []string
		for _, m := range sentMsgs {
			want = append(want, m.to)
		}
		for _, m := range got {
			have = append(have, m.To...)
		}
		slices.Sort(want)
		slices.Sort(have)
		if !slices.Equal(want, have) {
			t.Errorf("delivered to %d recipients, want the %d drafts' recipients", len(have), len(want))
		}
		// Batches approved at noon ran after the noon's ledger changes: some left customers out
		// at sending and sent the rest.
		batches, err := schedules.LatestBatches(ctx, e.db, s.ID, 100)
		if err != nil {
			t.Fatal(err)
		}
		partial, leftOut := 0, 0
		for _, bt := range batches {
			n := 0
			for _, v := range bt.Skipped.Send {
				n += v
			}
			if bt.BulkID != "" && n > 0 {
				partial++
				leftOut += n
			}
		}
		t.Logf("batches %v; %d messages, %d approved in the window's last hour, %d rejected, %d expired; payments %d, promises %d (%d broken), disputes %d, do_not_contact %d; batches sent leaving customers out %d (%d drafts); approved batches lapsed at send %d",
			outcomes, len(sentMsgs), nLate, nReject, nExpire, nPay, nPromise, nBroken, nDispute, nDNC, partial, leftOut, approvedLapsed)
		// The simulation exercised what it claims to: batches approved, approved in the last
		// hour, rejected, left to expire, and sent without the customers the noon's ledger took
		// out; invoices back after a broken promise or a rejected dispute.
		lapsed := countRows(t, e.db, `SELECT count(*) FROM schedule_batch WHERE outcome = 'lapsed'`)
		if len(sentMsgs) < 100 || outcomes[string(collections.BatchOpened)] < 10 || nLate == 0 || nReject == 0 || nExpire == 0 ||
			lapsed < int64(nReject+nExpire) || partial == 0 || !came["promise"] || !came["dispute"] {
			t.Errorf("the simulation missed a path: %d messages, batches %v, %d approved late, %d rejected, %d expired, %d lapsed (%d approved), %d sent leaving customers out, came back after promise/dispute %v",
				len(sentMsgs), outcomes, nLate, nReject, nExpire, lapsed, approvedLapsed, partial, came)
		}

		// Focused days past the period: Carnival Tuesday 2027 and Tiradentes 2027 have no batch
		// and no send window, and a message approved the evening before waits for the next open day.
		for _, d := range []string{"2027-02-08", "2027-02-09", "2027-04-21"} {
			day, _ := calendar.ParseDate(d)
			if cal.IsBusinessDay(day) {
				t.Errorf("%s is a business day", d)
			}
			noon := day.In(sp).Add(12 * time.Hour)
			if cal.InWindow(s.Window, noon) {
				t.Errorf("%s noon is inside the window", d)
			}
		}
		sat := time.Date(2027, 2, 6, 20, 30, 0, 0, sp) // Saturday evening before Carnival
		if next := cal.NextOpen(s.Window, sat); !next.Equal(time.Date(2027, 2, 10, 8, 0, 0, 0, sp)) {
			t.Errorf("after Saturday 2027-02-06 20:30 the window opens %v, want Ash Wednesday 08:00", next.In(sp))
		}
		if next := cal.NextOpen(s.Window, time.Date(2027, 4, 20, 20, 30, 0, 0, sp)); !next.Equal(time.Date(2027, 4, 22, 8, 0, 0, 0, sp)) {
			t.Errorf("after 2027-04-20 20:30 the window opens %v, want 2027-04-22 08:00", next.In(sp))
		}
	})
}

// newlySent reads the drafts queued since the last call: recipient, invoices, approval, and the
// moment they were queued (the outbox delivers at once: nothing may be queued outside the
// window, where it would leave later unchecked).
func newlySent(t *testing.T, db store.DB, seen map[string]bool, now time.Time, cal *calendar.Calendar, w calendar.Window) []sent {
	t.Helper()
	rows, err := db.Query(context.Background(), `SELECT id, recipient_email, customer_id, invoices, COALESCE(approval_id, '') FROM reminder_draft WHERE state IN ('queued', 'sent', 'undeliverable')`)
	if err != nil {
		t.Fatal(err)
	}
	var out []sent
	for rows.Next() {
		var m sent
		var invs string
		if err := rows.Scan(&m.draft, &m.to, &m.customer, &invs, &m.approval); err != nil {
			t.Fatal(err)
		}
		if seen[m.draft] {
			continue
		}
		seen[m.draft] = true
		var list []reminders.Invoice
		if err := json.Unmarshal([]byte(invs), &list); err != nil {
			t.Fatal(err)
		}
		for _, inv := range list {
			m.invoices = append(m.invoices, inv.ID)
		}
		m.queued, m.at = now, now
		out = append(out, m)
	}
	rows.Close()
	if !cal.InWindow(w, now) && len(out) > 0 {
		t.Errorf("%d messages queued at %v, outside the send window (first: draft %s)", len(out), now, out[0].draft)
	}
	return out
}

// checkSteps: every step the schedule recorded for a draft it sent is the latest step due on
// the day it was prepared — an invoice back from a broken promise or a rejected dispute comes
// back at the step its age calls for, not at one it missed.
func checkSteps(t *testing.T, db store.DB, scheduleID string, led *simLedger, cal *calendar.Calendar) {
	t.Helper()
	rows, err := db.Query(context.Background(), `SELECT st.invoice_id, st.step, st.prepared_on FROM schedule_step st JOIN reminder_draft d ON d.id = st.draft_id
		WHERE st.schedule_id = $1 AND d.state IN ('queued', 'sent', 'undeliverable')`, scheduleID)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	n := 0
	for rows.Next() {
		var inv, on string
		var step int
		if err := rows.Scan(&inv, &step, &on); err != nil {
			t.Fatal(err)
		}
		day, err := calendar.ParseDate(on)
		if err != nil {
			t.Fatal(err)
		}
		want := -1
		for k, o := range simSteps {
			if d := cal.AddBusinessDays(led.due[inv], o); d.String() <= day.String() {
				want = k
			}
		}
		if step != want {
			t.Errorf("invoice %s (due %s) took step %d on %s, want %d", inv, led.due[inv], step, on, want)
		}
		n++
	}
	if n == 0 {
		t.Error("no step recorded for a sent draft")
	}
}
