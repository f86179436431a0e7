// Package schedules keeps collection schedules (réguas de cobrança): which open invoices get a
// reminder, at which step, in which tone and language, how many messages a customer and a
// batch may take, when messages may go out and until when the schedule runs. It also computes
// the plan of a day (Plan): what that day's batch would prepare, read from the ledger, and
// what it leaves out, counted by reason.
//
// A schedule prepares and proposes; it never sends. A person approves every batch (the bulk
// send a daily job opens from the plan), as seed 000 asks of every external message.
//
// Offsets and overdue ranges count banking business days as internal/calendar's Brazil()
// counts them; the send window is a calendar.Window. The package knows the store and the
// domain packages it reads (ledger rows, customers, reminder drafts), never the tools, the
// pipeline or MCP.
package schedules

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/cobranca/cobranca/internal/calendar"
	"github.com/cobranca/cobranca/internal/customers"
	"github.com/cobranca/cobranca/internal/failure"
	"github.com/cobranca/cobranca/internal/ident"
	"github.com/cobranca/cobranca/internal/reminders"
	"github.com/cobranca/cobranca/internal/value"
)

// IDPrefix starts every schedule id; ident's 128 random bits follow it.
const IDPrefix = "sch_"

// ValidID reports whether s has the shape of a schedule id.
func ValidID(s string) bool { return ident.Valid(IDPrefix, s) }

// The bounds of a schedule.
const (
	MaxSteps = 10
	// MinOffset and MaxOffset bound a step's offset from the due date, in business days: from
	// six weeks before (a courtesy reminder) to about a year and a half after.
	MinOffset = -30
	MaxOffset = 365
	// MaxOverdue bounds the audience's overdue range, in business days (about 14 years).
	MaxOverdue = 3650
	// MaxCustomers bounds the audience's customer ids.
	MaxCustomers = 1000
	// MaxPerCustomer bounds the cap of messages per customer per rolling 7 days.
	MaxPerCustomer = 20
	// DefaultPerCustomer is that cap when the schedule gives none: two messages a week.
	DefaultPerCustomer = 2
	// MaxHorizonDays bounds the end date: at most this many days after today.
	MaxHorizonDays = 90
	// CapWindow is the rolling window of the cap per customer.
	CapWindow = 7 * 24 * time.Hour
)

// MaxPerBatch bounds the cap of messages per batch, and is its default: what one bulk send
// takes.
const MaxPerBatch = reminders.MaxBulk

// The failure codes of this domain, each listed in the contracts of the tools that answer it.
const (
	// CodeNotFound: no schedule has the id.
	CodeNotFound failure.Code = "schedule_not_found"
	// CodeEnded: the schedule's end date is past; it can no longer be resumed.
	CodeEnded failure.Code = "schedule_ended"
)

// ErrNotFound is returned when no schedule has the id asked for.
var ErrNotFound = errors.New("schedules: schedule not found")

// State is whether a schedule prepares batches.
type State string

// The states.
const (
	Active State = "active"
	Paused State = "paused"
)

// States lists the states, in the order the schemas show them.
func States() []State { return []State{Active, Paused} }

// Spec is a schedule as a person or an agent writes it: the tools' input, and, once Validate
// filled its defaults, the stored and answered form. Its JSON names are the fields errors name.
type Spec struct {
	Name     string      `json:"name"`
	Steps    []StepSpec  `json:"steps"`
	Audience Audience    `json:"audience"`
	Caps     *Caps       `json:"caps,omitempty"`
	Window   *WindowSpec `json:"window,omitempty"`
	EndDate  string      `json:"endDate"`
}

// StepSpec is one step: offset business days from the due date (negative: before it), the
// reminder's tone and language. Its template is reminders' template of that language and
// tone (Template).
type StepSpec struct {
	Offset   int    `json:"offset"`
	Tone     string `json:"tone"`
	Language string `json:"language,omitempty"`
}

// Template names the reminders template a step writes with: LANGUAGE.TONE, as
// internal/reminders/templates names its files.
func (s StepSpec) Template() string { return s.Language + "." + s.Tone }

// Audience says which invoices the schedule chases: all open invoices (All), or those for
// which every condition given holds. Amounts are the invoice's open amount in minor units of
// its own currency; overdue is business days since the due date (negative before it).
type Audience struct {
	All                 bool     `json:"all,omitempty"`
	CustomerIDs         []string `json:"customerIds,omitempty"`
	MinOpenCents        *int64   `json:"minOpenCents,omitempty"`
	MaxOpenCents        *int64   `json:"maxOpenCents,omitempty"`
	MinBusinessDaysLate *int     `json:"minBusinessDaysOverdue,omitempty"`
	MaxBusinessDaysLate *int     `json:"maxBusinessDaysOverdue,omitempty"`
}

// Caps bound the messages a schedule prepares: per customer in any rolling 7 days (messages
// sent by anything, and drafts still open), and per batch.
type Caps struct {
	PerCustomer7Days int `json:"perCustomer7Days,omitempty"`
	PerBatch         int `json:"perBatch,omitempty"`
}

// WindowSpec is the send window as written: a time zone, opening and closing times (HH:MM)
// and the weekdays (mon … sun). calendar.ParseWindow reads it; never on a holiday.
type WindowSpec struct {
	Zone  string   `json:"zone"`
	Open  string   `json:"open"`
	Close string   `json:"close"`
	Days  []string `json:"days"`
}

// Schedule is a stored schedule.
type Schedule struct {
	ID string
	// Spec is the schedule as validated: defaults filled (language, caps, window).
	Spec
	Window   calendar.Window
	EndDate  calendar.Date
	State    State
	Created  Stamp
	Paused   Stamp // zero while never paused
	Resumed  Stamp // zero while never resumed
	Updated  time.Time
	Revision int64 // grows with every change of state
}

// Stamp is who did something and when: the person's subject, the agent acting for them ("" for
// a person), the time (UTC, microseconds).
type Stamp struct {
	By, Actor string
	At        time.Time
}

// Today is the date now falls on in the window's time zone: the schedule's own today, which
// its end date and plans are counted in.
func (s *Schedule) Today(now time.Time) calendar.Date { return calendar.DateOf(now, s.Window.Zone) }

// Ended reports whether the schedule's end date is before date.
func (s *Schedule) Ended(date calendar.Date) bool { return s.EndDate.Before(date) }

// invalid is the failure of one field.
func invalid(field, msg string) *failure.Error {
	return &failure.Error{Code: failure.InvalidArguments, Field: field, Message: msg}
}

// Validate checks sp strictly and returns the schedule it describes, defaults filled, or the
// failure naming the first field at fault. today is the date in the schedule's zone the end
// date is counted from; nil checks the end date's form only (a decoder, which has no clock).
func (sp Spec) Validate(today func(*time.Location) calendar.Date) (Schedule, *failure.Error) {
	var s Schedule
	if p := value.TextProblem(sp.Name); p != "" {
		return s, invalid("name", p)
	}
	switch n := len(sp.Steps); {
	case n == 0:
		return s, invalid("steps", "must list 1 to "+strconv.Itoa(MaxSteps)+" steps")
	case n > MaxSteps:
		return s, invalid("steps", "must list at most "+strconv.Itoa(MaxSteps)+" steps")
	}
	steps := make([]StepSpec, len(sp.Steps))
	for i, st := range sp.Steps {
		at := "steps[" + strconv.Itoa(i) + "]."
		switch {
		case st.Offset < MinOffset || st.Offset > MaxOffset:
			return s, invalid(at+"offset", fmt.Sprintf("must be from %d to %d business days from the due date", MinOffset, MaxOffset))
		case i > 0 && st.Offset <= sp.Steps[i-1].Offset:
			return s, invalid(at+"offset", "must be greater than the offset of the step before it: steps go in order, each on a later day")
		case !slices.Contains(reminders.Tones(), reminders.Tone(st.Tone)):
			return s, invalid(at+"tone", "must be one of "+joined(reminders.Tones()))
		}
		if st.Language == "" {
			st.Language = string(reminders.PortugueseBR)
		}
		if !slices.Contains(reminders.Languages(), reminders.Language(st.Language)) {
			return s, invalid(at+"language", "must be one of "+joined(reminders.Languages()))
		}
		steps[i] = st
	}
	aud, fe := sp.Audience.normalized()
	if fe != nil {
		return s, fe
	}
	caps := Caps{PerCustomer7Days: DefaultPerCustomer, PerBatch: MaxPerBatch}
	if sp.Caps != nil {
		if n := sp.Caps.PerCustomer7Days; n != 0 {
			if n < 1 || n > MaxPerCustomer {
				return s, invalid("caps.perCustomer7Days", "must be from 1 to "+strconv.Itoa(MaxPerCustomer)+" messages")
			}
			caps.PerCustomer7Days = n
		}
		if n := sp.Caps.PerBatch; n != 0 {
			if n < 1 || n > MaxPerBatch {
				return s, invalid("caps.perBatch", "must be from 1 to "+strconv.Itoa(MaxPerBatch)+" messages")
			}
			caps.PerBatch = n
		}
	}
	w := calendar.DefaultWindow()
	if sp.Window != nil {
		var err error
		if w, err = calendar.ParseWindow(sp.Window.Zone, sp.Window.Open, sp.Window.Close, sp.Window.Days); err != nil {
			return s, windowFailure(err)
		}
	}
	if code, msg := value.DateCheck(sp.EndDate); code != "" {
		return s, invalid("endDate", msg)
	}
	end, err := calendar.ParseDate(sp.EndDate)
	if err != nil {
		return s, invalid("endDate", "must be a date in YYYY-MM-DD form")
	}
	if today != nil {
		t := today(w.Zone)
		if end.Before(t) {
			return s, invalid("endDate", "must not be before today ("+t.String()+" in "+w.Zone.String()+")")
		}
		if last := t.AddDays(MaxHorizonDays); end.After(last) {
			return s, invalid("endDate", fmt.Sprintf("must be at most %d days ahead: %s at the latest", MaxHorizonDays, last))
		}
	}
	s.Spec = Spec{Name: sp.Name, Steps: steps, Audience: aud, Caps: &caps, Window: windowSpec(w), EndDate: end.String()}
	s.Window, s.EndDate, s.State = w, end, Active
	return s, nil
}

// windowFailure is calendar.ParseWindow's refusal as the caller's failure, naming the field it
// names (window.zone, window.open, window.close, window.days).
func windowFailure(err error) *failure.Error {
	var ce *calendar.Error
	if errors.As(err, &ce) && ce.Field != "" {
		return invalid(ce.Field, ce.Message)
	}
	return invalid("window", err.Error())
}

// windowSpec writes w as a schedule shows it.
func windowSpec(w calendar.Window) *WindowSpec {
	days := make([]string, 0, len(w.Days))
	for _, d := range w.Days {
		days = append(days, strings.ToLower(d.String()[:3]))
	}
	return &WindowSpec{Zone: w.Zone.String(), Open: clock(w.Open), Close: clock(w.Close), Days: days}
}

// clock writes minutes since midnight as HH:MM (24:00 for the end of the day).
func clock(m int) string { return fmt.Sprintf("%02d:%02d", m/60, m%60) }

// normalized checks the audience: all, or at least one condition, never both.
func (a Audience) normalized() (Audience, *failure.Error) {
	conditions := a.CustomerIDs != nil || a.MinOpenCents != nil || a.MaxOpenCents != nil || a.MinBusinessDaysLate != nil || a.MaxBusinessDaysLate != nil
	switch {
	case a.All && conditions:
		return a, invalid("audience.all", "all: true chases every open invoice and takes no other condition; give all, or conditions")
	case !a.All && !conditions:
		return a, invalid("audience", "must say which invoices: all: true for every open invoice, or customerIds, an amount range or an overdue range")
	}
	if a.CustomerIDs != nil {
		switch n := len(a.CustomerIDs); {
		case n == 0 || n > MaxCustomers:
			return a, invalid("audience.customerIds", "must name 1 to "+strconv.Itoa(MaxCustomers)+" customers")
		}
		seen := make(map[string]bool, len(a.CustomerIDs))
		for i, id := range a.CustomerIDs {
			f := "audience.customerIds[" + strconv.Itoa(i) + "]"
			if p := customers.IDProblem(id); p != "" {
				return a, invalid(f, p)
			}
			if seen[id] {
				return a, invalid(f, "names a customer an earlier entry names")
			}
			seen[id] = true
		}
		a.CustomerIDs = slices.Clone(a.CustomerIDs)
	}
	for _, c := range []struct {
		field string
		v     *int64
	}{{"audience.minOpenCents", a.MinOpenCents}, {"audience.maxOpenCents", a.MaxOpenCents}} {
		if c.v != nil && (*c.v < 1 || *c.v > value.MaxAmountCents) {
			return a, invalid(c.field, "must be from 1 to "+strconv.FormatInt(value.MaxAmountCents, 10)+" minor units")
		}
	}
	if a.MinOpenCents != nil && a.MaxOpenCents != nil && *a.MaxOpenCents < *a.MinOpenCents {
		return a, invalid("audience.maxOpenCents", "must not be less than minOpenCents")
	}
	for _, c := range []struct {
		field string
		v     *int
	}{{"audience.minBusinessDaysOverdue", a.MinBusinessDaysLate}, {"audience.maxBusinessDaysOverdue", a.MaxBusinessDaysLate}} {
		if c.v != nil && (*c.v < MinOffset || *c.v > MaxOverdue) {
			return a, invalid(c.field, fmt.Sprintf("must be from %d to %d business days", MinOffset, MaxOverdue))
		}
	}
	if a.MinBusinessDaysLate != nil && a.MaxBusinessDaysLate != nil && *a.MaxBusinessDaysLate < *a.MinBusinessDaysLate {
		return a, invalid("audience.maxBusinessDaysOverdue", "must not be less than minBusinessDaysOverdue")
	}
	return a, nil
}

// joined lists values for a message: a, b or c.
func joined[T ~string](vs []T) string {
	ss := make([]string, len(vs))
	for i, v := range vs {
		ss[i] = string(v)
	}
	return strings.Join(ss, ", ")
}
