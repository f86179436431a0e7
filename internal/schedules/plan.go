package schedules

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/cobranca/cobranca/internal/calendar"
	"github.com/cobranca/cobranca/internal/customers"
	"github.com/cobranca/cobranca/internal/reminders"
	"github.com/cobranca/cobranca/internal/store"
)

// The rules of a day's plan (docs/schedules.md, "The plan of a day"):
//
//   - Only a business day (calendar.Brazil()) has a batch; another day's plan is empty.
//   - Step k of a schedule falls due for an invoice on the business day AddBusinessDays(due,
//     offset_k) and stays due after it. An invoice takes each step once: on date it takes the
//     latest step due that it has not had, when it has had no later one (schedule_step, while
//     the step's draft is not discarded: RecordTaken). An invoice kept out for a while (a
//     dispute, a promise, a pause) comes back at the step its age calls for, not at the ones
//     it missed.
//   - Only the audience's invoices count. Unsettled invoices (open, partially paid) are
//     chased for their open amount; a settled one (paid, void, written off) is counted, as a
//     skip, only on the day a step falls due for it exactly — not every day for ever.
//   - An invoice with a step due is left out, counted by the first reason that applies:
//     paid, void, writtenOff; disputed (an open dispute); promisePending (its latest promise
//     is dated on or after date); noContact (its customer has no contact record, so no
//     address); doNotContact, customerPaused (the customer's status in effect on date).
//   - The rest go in messages: one per customer, step and currency (a reminder states one
//     currency), at most reminders.MaxInvoices invoices each, in batch order — the earliest
//     due date first, then customer, step, currency. A customer takes at most
//     caps.perCustomer7Days messages in any rolling 7 days, counting its messages queued or
//     sent since now − 7 days and its drafts written since then and still open (they may go
//     out): the invoices of a message over it are capCustomer. The batch takes at most
//     caps.perBatch messages: the invoices of the rest are capBatch.
//   - A schedule past its end date (date after endDate) prepares nothing: every invoice its
//     messages held is pastEndDate; a paused one likewise schedulePaused.

// Skips counts the invoices with a step due on the day that the batch leaves out, by reason.
type Skips struct {
	Paid           int `json:"paid"`
	Void           int `json:"void"`
	WrittenOff     int `json:"writtenOff"`
	Disputed       int `json:"disputed"`
	PromisePending int `json:"promisePending"`
	NoContact      int `json:"noContact"`
	DoNotContact   int `json:"doNotContact"`
	CustomerPaused int `json:"customerPaused"`
	CapCustomer    int `json:"capCustomer"`
	CapBatch       int `json:"capBatch"`
	PastEndDate    int `json:"pastEndDate"`
	SchedulePaused int `json:"schedulePaused"`
}

// Total is how many invoices were skipped.
func (s Skips) Total() int {
	return s.Paid + s.Void + s.WrittenOff + s.Disputed + s.PromisePending + s.NoContact + s.DoNotContact +
		s.CustomerPaused + s.CapCustomer + s.CapBatch + s.PastEndDate + s.SchedulePaused
}

// Message is one reminder the batch prepares: everything reminders.Prepare needs but who asks
// (Request), and the steps its invoices take (Taken).
type Message struct {
	CustomerID string
	To         reminders.Recipient // the customer's name and address, as its record says on the day
	Step       int                 // the step's index in the schedule's steps
	Tone       reminders.Tone
	Language   reminders.Language
	Currency   string
	// Invoices are the invoices it lists, by due date then id, each for its open amount.
	Invoices []reminders.Invoice
}

// Request is the reminders.Request of m, asked for by by (the subject) and actor.
func (m Message) Request(by, actor string) reminders.Request {
	return reminders.Request{CustomerID: m.CustomerID, To: m.To, Tone: m.Tone, Language: m.Language,
		Invoices: slices.Clone(m.Invoices), Currency: m.Currency, CreatedBy: by, CreatedByActor: actor}
}

// Taken is what RecordTaken records once m became the draft draftID.
func (m Message) Taken(draftID string) []Taken {
	out := make([]Taken, len(m.Invoices))
	for i, inv := range m.Invoices {
		out[i] = Taken{InvoiceID: inv.ID, Step: m.Step, DraftID: draftID}
	}
	return out
}

// TotalCents is the sum of m's invoices' open amounts.
func (m Message) TotalCents() int64 {
	var t int64
	for _, inv := range m.Invoices {
		t += inv.AmountCents
	}
	return t
}

// DayPlan is what a schedule's batch would prepare on Date: its Messages, in batch order,
// and the invoices it leaves out, by reason. A daily job turns it into drafts (one
// reminders.Prepare per message, RecordTaken in the same transaction) and one bulk send of
// those drafts, with nothing to compute again.
type DayPlan struct {
	ScheduleID  string
	Date        calendar.Date
	BusinessDay bool
	Messages    []Message
	Skipped     Skips
}

// InvoiceCount is how many invoices the messages list.
func (p *DayPlan) InvoiceCount() int {
	n := 0
	for _, m := range p.Messages {
		n += len(m.Invoices)
	}
	return n
}

// candidate is one ledger invoice the plan's query returns.
type candidate struct {
	id, customerID, currency, due, boleto, state string
	amount, open                                 int64
	disputed                                     bool
	promisedFor                                  string
	known                                        bool // the customer has a contact record
	name, email, status, pausedUntil             string
	had                                          int // the latest step it has had, -1 none
}

// Plan computes s's plan for date, reading the ledger, the customers and the drafts through q;
// now is the clock the rolling 7 days of the cap per customer end at. One query reads the
// invoices (with their customer and the steps they had), one counts the recent messages.
func Plan(ctx context.Context, q store.Querier, s Schedule, date calendar.Date, now time.Time) (*DayPlan, error) {
	p := &DayPlan{ScheduleID: s.ID, Date: date}
	cal := calendar.Brazil()
	if !cal.IsBusinessDay(date) {
		return p, nil
	}
	p.BusinessDay = true
	// stepOn is, for a due date, the latest step due on date (-1: none) and the step that
	// falls on date exactly (-1: none).
	stepOn := func(due calendar.Date) (catchUp, exact int) {
		catchUp, exact = -1, -1
		for k, st := range s.Steps {
			d := cal.AddBusinessDays(due, st.Offset)
			if !d.After(date) {
				catchUp = k
			}
			if d.Compare(date) == 0 {
				exact = k
			}
		}
		return catchUp, exact
	}
	type dueInfo struct{ catchUp, exact, late int }
	byDue := map[string]dueInfo{}
	type key struct {
		customer string
		step     int
		currency string
	}
	type group struct {
		to       reminders.Recipient
		invoices []reminders.Invoice
	}
	groups := map[key]*group{}
	var order []key
	aud := s.Audience
	err := candidates(ctx, q, s, date, cal, func(c *candidate) error {
		info, ok := byDue[c.due]
		if !ok {
			due, err := calendar.ParseDate(c.due)
			if err != nil {
				return fmt.Errorf("schedules: plan: invoice %s: due date: %w", c.id, err)
			}
			info.catchUp, info.exact = stepOn(due)
			info.late = cal.BusinessDaysBetween(due, date)
			byDue[c.due] = info
		}
		settled := c.state == "paid" || c.state == "void" || c.state == "written_off"
		step := info.catchUp
		amount := c.open
		if settled {
			step, amount = info.exact, c.amount
		}
		if step < 0 || c.had >= step {
			return nil // no step due, or it had this one or a later one
		}
		switch {
		case aud.MinOpenCents != nil && amount < *aud.MinOpenCents,
			aud.MaxOpenCents != nil && amount > *aud.MaxOpenCents,
			aud.MinBusinessDaysLate != nil && info.late < *aud.MinBusinessDaysLate,
			aud.MaxBusinessDaysLate != nil && info.late > *aud.MaxBusinessDaysLate:
			return nil // not the audience's
		}
		sk := &p.Skipped
		switch {
		case c.state == "paid":
			sk.Paid++
		case c.state == "void":
			sk.Void++
		case c.state == "written_off":
			sk.WrittenOff++
		case c.disputed:
			sk.Disputed++
		case c.promisedFor != "" && c.promisedFor >= date.String():
			sk.PromisePending++
		case !c.known:
			sk.NoContact++
		default:
			st, _ := customers.Customer{Status: customers.Status(c.status), PausedUntil: c.pausedUntil}.InEffect(date.String())
			switch st {
			case customers.DoNotContact:
				sk.DoNotContact++
			case customers.Paused:
				sk.CustomerPaused++
			default:
				k := key{c.customerID, step, c.currency}
				g := groups[k]
				if g == nil {
					g = &group{to: reminders.Recipient{Name: c.name, Email: c.email}}
					groups[k] = g
					order = append(order, k)
				}
				g.invoices = append(g.invoices, reminders.Invoice{ID: c.id, DueDate: c.due, AmountCents: c.open, BoletoLine: c.boleto})
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	var msgs []Message
	for _, k := range order {
		g := groups[k]
		slices.SortFunc(g.invoices, func(a, b reminders.Invoice) int {
			return cmp.Or(cmp.Compare(a.DueDate, b.DueDate), cmp.Compare(a.ID, b.ID))
		})
		st := s.Steps[k.step]
		for part := range slices.Chunk(g.invoices, reminders.MaxInvoices) {
			msgs = append(msgs, Message{CustomerID: k.customer, To: g.to, Step: k.step, Tone: reminders.Tone(st.Tone),
				Language: reminders.Language(st.Language), Currency: k.currency, Invoices: part})
		}
	}
	slices.SortFunc(msgs, func(a, b Message) int {
		return cmp.Or(cmp.Compare(a.Invoices[0].DueDate, b.Invoices[0].DueDate), cmp.Compare(a.CustomerID, b.CustomerID),
			cmp.Compare(a.Step, b.Step), cmp.Compare(a.Currency, b.Currency), cmp.Compare(a.Invoices[0].ID, b.Invoices[0].ID))
	})
	recent := map[string]int{}
	if len(msgs) > 0 {
		if recent, err = reminders.RecentMessages(ctx, q, now.Add(-CapWindow)); err != nil {
			return nil, fmt.Errorf("schedules: plan: %w", err)
		}
	}
	for _, m := range msgs {
		switch {
		case recent[m.CustomerID] >= s.Caps.PerCustomer7Days:
			p.Skipped.CapCustomer += len(m.Invoices)
		case len(p.Messages) >= s.Caps.PerBatch:
			p.Skipped.CapBatch += len(m.Invoices)
		default:
			recent[m.CustomerID]++
			p.Messages = append(p.Messages, m)
		}
	}
	switch {
	case s.Ended(date):
		p.Skipped.PastEndDate += p.InvoiceCount()
		p.Messages = nil
	case s.State == Paused:
		p.Skipped.SchedulePaused += p.InvoiceCount()
		p.Messages = nil
	}
	return p, nil
}

// candidates streams to fn (the same *candidate, refilled) the invoices a plan of s on date may count, in one query over the ledger's
// indexes: the unsettled ones due early enough for the first step (and, with an overdue
// range, late enough for it), and the settled ones due on a date from which a step falls on
// date exactly; each with its customer's contact record and the latest step of s it has had.
// The bounds on due dates are generous (calendar days for business days); Plan decides exactly.
func candidates(ctx context.Context, q store.Querier, s Schedule, date calendar.Date, cal *calendar.Calendar, fn func(*candidate) error) error {
	d := dialectOf(q)
	// The latest due date an unsettled invoice may have for its first step to be due.
	upper := date
	if off := s.Steps[0].Offset; off < 0 {
		upper = date.AddDays(-off*2 + 20)
	}
	if m := s.Audience.MinBusinessDaysLate; m != nil && *m < 0 {
		upper = minDate(upper, date.AddDays(-*m*2+20))
	} else if m != nil {
		upper = minDate(upper, date)
	}
	lower := calendar.Date{Year: 1, Month: time.January, Day: 1}
	if m := s.Audience.MaxBusinessDaysLate; m != nil {
		lower = date.AddDays(-(max(*m, 0)*2 + 20))
	}
	exact := exactDues(s, date, cal)
	args := []any{s.ID, upper.String(), lower.String(), jsonList(exact)}
	sql := `SELECT i.id, i.customer_id, i.currency, i.due_date, i.boleto_line, i.state, i.amount_cents, i.open_cents,
 i.dispute_id <> '', CASE WHEN i.promise_id = '' THEN '' ELSE i.promised_for END,
 c.id IS NOT NULL, COALESCE(c.name, ''), COALESCE(c.email, ''), COALESCE(c.contact_status, ''), COALESCE(c.paused_until, ''),
 COALESCE(h.step, -1)
FROM ledger_invoice i
LEFT JOIN customer c ON c.id = i.customer_id
LEFT JOIN (SELECT s.invoice_id, MAX(s.step) AS step FROM schedule_step s JOIN reminder_draft r ON r.id = s.draft_id
  WHERE s.schedule_id = $1 AND r.state <> 'discarded' GROUP BY s.invoice_id) h ON h.invoice_id = i.id
WHERE ((i.state IN ('open', 'partially_paid') AND i.due_date <= $2 AND i.due_date >= $3) OR ` + store.InList(d, "i.due_date", "$4") + `)`
	if ids := s.Audience.CustomerIDs; len(ids) > 0 {
		sql += ` AND ` + store.InList(d, "i.customer_id", "$5")
		args = append(args, jsonList(ids))
	}
	rows, err := q.Query(ctx, sql, args...)
	if err != nil {
		return fmt.Errorf("schedules: plan: %w", err)
	}
	defer rows.Close()
	var c candidate
	for rows.Next() {
		var had int64
		if err := rows.Scan(&c.id, &c.customerID, &c.currency, &c.due, &c.boleto, &c.state, &c.amount, &c.open,
			&c.disputed, &c.promisedFor, &c.known, &c.name, &c.email, &c.status, &c.pausedUntil, &had); err != nil {
			return fmt.Errorf("schedules: plan: %w", err)
		}
		c.had = int(had)
		if err := fn(&c); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("schedules: plan: %w", err)
	}
	return nil
}

// exactDues are the due dates from which some step of s falls on date exactly: the settled
// invoices the plan counts. A step offset o lands within about 2|o| + 20 calendar days of its
// due date whatever the weekends and holidays between.
func exactDues(s Schedule, date calendar.Date, cal *calendar.Calendar) []string {
	seen := map[calendar.Date]bool{}
	var out []string
	for _, st := range s.Steps {
		reach := abs(st.Offset)*2 + 20
		for d := date.AddDays(-reach); !d.After(date.AddDays(reach)); d = d.AddDays(1) {
			if !seen[d] && cal.AddBusinessDays(d, st.Offset).Compare(date) == 0 {
				seen[d] = true
				out = append(out, d.String())
			}
		}
	}
	slices.Sort(out)
	return out
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}

func minDate(a, b calendar.Date) calendar.Date {
	if b.Before(a) {
		return b
	}
	return a
}

// jsonList is the argument of store.InList: the JSON text of ss.
func jsonList(ss []string) string {
	if ss == nil {
		ss = []string{}
	}
	b, err := json.Marshal(ss)
	if err != nil {
		panic(fmt.Sprintf("schedules: marshal a []string: %v", err)) // cannot fail
	}
	return string(b)
}

func dialectOf(q store.Querier) store.Dialect {
	if d, ok := store.DialectOf(q); ok {
		return d
	}
	return store.SQLite
}
