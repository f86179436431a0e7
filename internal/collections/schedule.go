package collections

// The collection schedules' tools (issue 30): create, preview, pause, resume, get and list.
// internal/schedules holds the model, its rules, its store and the plan of a day; this file
// holds the contracts and the glue.

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/cobranca/cobranca/internal/approval"
	"github.com/cobranca/cobranca/internal/calendar"
	"github.com/cobranca/cobranca/internal/contract"
	"github.com/cobranca/cobranca/internal/failure"
	"github.com/cobranca/cobranca/internal/ident"
	"github.com/cobranca/cobranca/internal/pipeline"
	"github.com/cobranca/cobranca/internal/reminders"
	"github.com/cobranca/cobranca/internal/schedules"
	"github.com/cobranca/cobranca/internal/store"
	"github.com/cobranca/cobranca/internal/value"
	"github.com/google/jsonschema-go/jsonschema"
)

// The names of the schedules' tools.
const (
	CreateScheduleName  = "collections.create_schedule"
	PreviewScheduleName = "collections.preview_schedule"
	PauseScheduleName   = "collections.pause_schedule"
	ResumeScheduleName  = "collections.resume_schedule"
	GetScheduleName     = "collections.get_schedule"
	ListSchedulesName   = "collections.list_schedules"
)

// The scopes of the schedules' tools.
var (
	schedulesRead  = []string{"schedules:read"}
	schedulesWrite = []string{"schedules:write"}
)

const argScheduleID = "scheduleId"

// maxPlanSamples bounds the messages a plan shows.
const maxPlanSamples = 5

// The failure modes the schedules' tools share.
var (
	scheduleNotFoundMode = contract.FailureMode{Code: schedules.CodeNotFound, Meaning: "No schedule has this scheduleId (field scheduleId); nothing was done."}
	scheduleEndedMode    = contract.FailureMode{Code: schedules.CodeEnded, Meaning: "The schedule's endDate is past: it prepares nothing and cannot be resumed; create another. Nothing was done."}
)

// scheduleError is what the caller reads of an error of package schedules.
func scheduleError(err error) error {
	if errors.Is(err, schedules.ErrNotFound) {
		return &failure.Error{Code: schedules.CodeNotFound, Field: argScheduleID, Message: "names no schedule; nothing was done", Err: err}
	}
	return err
}

// --- views: what the tools answer of a schedule and of a plan ---

type stepView struct {
	Offset   int    `json:"offset"`
	Tone     string `json:"tone"`
	Language string `json:"language"`
	Template string `json:"template"`
}

type stampView struct {
	By    string `json:"by"`
	Actor string `json:"actor,omitempty"`
	At    string `json:"at"`
}

type scheduleView struct {
	ID       string               `json:"id,omitempty"`
	Name     string               `json:"name"`
	Steps    []stepView           `json:"steps"`
	Audience schedules.Audience   `json:"audience"`
	Caps     schedules.Caps       `json:"caps"`
	Window   schedules.WindowSpec `json:"window"`
	EndDate  string               `json:"endDate"`
	State    string               `json:"state"`
	Created  *stampView           `json:"created,omitempty"`
	Paused   *stampView           `json:"paused,omitempty"`
	Resumed  *stampView           `json:"resumed,omitempty"`
}

func stampOf(s schedules.Stamp) *stampView {
	if s.At.IsZero() {
		return nil
	}
	return &stampView{By: s.By, Actor: s.Actor, At: s.At.Format(time.RFC3339Nano)}
}

func viewOf(s schedules.Schedule) scheduleView {
	v := scheduleView{ID: s.ID, Name: s.Name, Audience: s.Audience, Caps: *s.Caps, Window: *s.Spec.Window, EndDate: s.Spec.EndDate,
		State: string(s.State), Created: stampOf(s.Created), Paused: stampOf(s.Paused), Resumed: stampOf(s.Resumed)}
	for _, st := range s.Steps {
		v.Steps = append(v.Steps, stepView{Offset: st.Offset, Tone: st.Tone, Language: st.Language, Template: st.Template()})
	}
	return v
}

type planSample struct {
	CustomerID string   `json:"customerId"`
	Step       int      `json:"step"`
	Tone       string   `json:"tone"`
	Language   string   `json:"language"`
	Currency   string   `json:"currency"`
	InvoiceIDs []string `json:"invoiceIds"`
	TotalCents int64    `json:"totalCents"`
}

type planView struct {
	ScheduleID   string          `json:"scheduleId,omitempty"`
	Date         string          `json:"date"`
	BusinessDay  bool            `json:"businessDay"`
	MessageCount int             `json:"messageCount"`
	InvoiceCount int             `json:"invoiceCount"`
	SkippedTotal int             `json:"skippedTotal"`
	Skipped      schedules.Skips `json:"skipped"`
	Samples      []planSample    `json:"samples"`
}

func planViewOf(p *schedules.DayPlan) *planView {
	v := &planView{ScheduleID: p.ScheduleID, Date: p.Date.String(), BusinessDay: p.BusinessDay, MessageCount: len(p.Messages),
		InvoiceCount: p.InvoiceCount(), SkippedTotal: p.Skipped.Total(), Skipped: p.Skipped, Samples: []planSample{}}
	for _, m := range p.Messages[:min(len(p.Messages), maxPlanSamples)] {
		s := planSample{CustomerID: m.CustomerID, Step: m.Step, Tone: string(m.Tone), Language: string(m.Language), Currency: m.Currency,
			TotalCents: m.TotalCents()}
		for _, inv := range m.Invoices {
			s.InvoiceIDs = append(s.InvoiceIDs, inv.ID)
		}
		v.Samples = append(v.Samples, s)
	}
	return v
}

// planSummary is a plan in one line of counts.
func planSummary(p *schedules.DayPlan) string {
	if !p.BusinessDay {
		return p.Date.String() + " is not a business day: no batch."
	}
	return fmt.Sprintf("On %s the batch would prepare %s for %s; %s left out.", p.Date,
		count(len(p.Messages), "message", "messages"), count(p.InvoiceCount(), "invoice", "invoices"), count(p.Skipped.Total(), "invoice", "invoices"))
}

// today is the date of the call's clock in loc.
func today(ctx context.Context) func(*time.Location) calendar.Date {
	now := pipeline.Now(ctx)
	return func(loc *time.Location) calendar.Date { return calendar.DateOf(now, loc) }
}

// stampFrom is the caller of the call in ctx, as a schedule records who acted.
func stampFrom(ctx context.Context, what string) (schedules.Stamp, error) {
	pr := pipeline.PrincipalFrom(ctx)
	if pr == nil { // the pipeline refuses a call without a caller before this
		return schedules.Stamp{}, errors.New(what + ": no caller")
	}
	return schedules.Stamp{By: pr.Subject, Actor: pr.Actor}, nil
}

// --- create_schedule ---

// createDecode reads create_schedule's arguments and checks everything but the end date's
// horizon, which needs the call's clock (DryRun, Preview and Execute check it).
func createDecode(b []byte) (any, int, error) {
	v, n, err := pipeline.Strict[schedules.Spec]()(b)
	if err != nil {
		return nil, 0, err
	}
	if _, fe := v.(*schedules.Spec).Validate(nil); fe != nil {
		return nil, 0, fe
	}
	return v, n, nil
}

// createAnswer is create_schedule's answer: the schedule, and with a dry run the plan of the
// next business day.
type createAnswer struct {
	DryRun    bool         `json:"dryRun"`
	Schedule  scheduleView `json:"schedule"`
	NextBatch *planView    `json:"nextBatch,omitempty"`
}

func createDryRun(ctx context.Context, q store.Querier, v any) (pipeline.Effect, error) {
	s, fe := v.(*schedules.Spec).Validate(today(ctx))
	if fe != nil {
		return pipeline.Effect{}, fe
	}
	now := pipeline.Now(ctx)
	next := calendar.Brazil().AddBusinessDays(s.Today(now), 1)
	p, err := schedules.Plan(ctx, q, s, next, now)
	if err != nil {
		return pipeline.Effect{}, err
	}
	return pipeline.Effect{
		Structured: &createAnswer{DryRun: true, Schedule: viewOf(s), NextBatch: planViewOf(p)},
		Summary:    "Dry run: the schedule is valid and nothing was stored. " + planSummary(p),
		Details:    map[string]int64{"messages": int64(len(p.Messages)), "invoicesSkipped": int64(p.Skipped.Total())},
	}, nil
}

func createPreview(ctx context.Context, _ store.Querier, v any) (string, error) {
	s, fe := v.(*schedules.Spec).Validate(today(ctx))
	if fe != nil {
		return "", fe
	}
	return "create the collection schedule " + describeSchedule(s) + " It prepares each business day's reminders for a person to approve; it sends nothing by itself.", nil
}

// describeSchedule is a schedule in words, for the person who confirms: customer text quoted.
func describeSchedule(s schedules.Schedule) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s, until %s. Steps:", quote(s.Name), s.Spec.EndDate)
	for i, st := range s.Steps {
		fmt.Fprintf(&b, " %d) %s business days from the due date, %s, %s;", i+1, signed(st.Offset), st.Tone, st.Language)
	}
	b.WriteString(" audience: ")
	a := s.Audience
	var conds []string
	if a.All {
		conds = append(conds, "every open invoice")
	}
	if a.CustomerIDs != nil {
		quoted := make([]string, 0, min(len(a.CustomerIDs), 5))
		for _, id := range a.CustomerIDs[:min(len(a.CustomerIDs), 5)] {
			quoted = append(quoted, quote(id))
		}
		more := ""
		if n := len(a.CustomerIDs) - len(quoted); n > 0 {
			more = fmt.Sprintf(" and %d more", n)
		}
		conds = append(conds, "customers "+strings.Join(quoted, ", ")+more)
	}
	if a.MinOpenCents != nil {
		conds = append(conds, fmt.Sprintf("open amount at least %d minor units", *a.MinOpenCents))
	}
	if a.MaxOpenCents != nil {
		conds = append(conds, fmt.Sprintf("open amount at most %d minor units", *a.MaxOpenCents))
	}
	if a.MinBusinessDaysLate != nil {
		conds = append(conds, fmt.Sprintf("at least %d business days overdue", *a.MinBusinessDaysLate))
	}
	if a.MaxBusinessDaysLate != nil {
		conds = append(conds, fmt.Sprintf("at most %d business days overdue", *a.MaxBusinessDaysLate))
	}
	b.WriteString(strings.Join(conds, ", "))
	w := s.Spec.Window
	fmt.Fprintf(&b, "; caps: %d messages per customer in any 7 days, %d per batch; send window %s–%s %s on %s, never on a holiday.",
		s.Caps.PerCustomer7Days, s.Caps.PerBatch, w.Open, w.Close, w.Zone, strings.Join(w.Days, ", "))
	return b.String()
}

func signed(n int) string {
	if n > 0 {
		return "+" + strconv.Itoa(n)
	}
	return strconv.Itoa(n)
}

func createExecute(ctx context.Context, tx store.Tx, v any) (pipeline.Effect, error) {
	s, fe := v.(*schedules.Spec).Validate(today(ctx))
	if fe != nil {
		return pipeline.Effect{}, fe
	}
	by, err := stampFrom(ctx, "create_schedule")
	if err != nil {
		return pipeline.Effect{}, err
	}
	s, err = schedules.Create(ctx, tx, s, by, pipeline.Now(ctx))
	if err != nil {
		return pipeline.Effect{}, err
	}
	return pipeline.Effect{
		Structured: &createAnswer{Schedule: viewOf(s)},
		Summary:    fmt.Sprintf("Schedule %s created, active, with %s until %s.", s.ID, count(len(s.Steps), "step", "steps"), s.Spec.EndDate),
		Details:    map[string]int64{"steps": int64(len(s.Steps))},
	}, nil
}

func createScheduleContract() contract.Contract {
	return contract.Contract{
		Name:            CreateScheduleName,
		ContractVersion: "1.0.0",
		Title:           "Create a collection schedule",
		Description: "Use when a person wants reminders prepared on a schedule (a régua de cobrança): steps as offsets from each invoice's " +
			"due date in Brazilian banking business days (weekends and national bank holidays excluded), each with a tone and language; " +
			"an audience (all open invoices, or customerIds, an open-amount range, an overdue range); caps (messages per customer in any " +
			"7 days, messages per batch); a send window (default America/Sao_Paulo, 08:00–20:00, Monday to Saturday, never on a holiday); " +
			"an endDate at most " + strconv.Itoa(schedules.MaxHorizonDays) + " days ahead. Each business day the schedule prepares that day's " +
			"reminders for a person to approve as one bulk send: it never sends by itself. Call with dryRun true first to validate and see " +
			"the next business day's plan (collections.preview_schedule shows another day's). The agent's person confirms the real call.",
		Category:     "collections",
		RiskLevel:    contract.High,
		InputSchema:  createScheduleInputSchema(),
		OutputSchema: createScheduleOutputSchema(),
		Permissions:  schedulesWrite,
		SideEffects: contract.SideEffects{
			Changes:  []string{"a new collection schedule, active, recorded with who created it and when"},
			OnRepeat: "A repeat with the same idempotencyKey and arguments returns the first answer and creates nothing; another key creates another schedule.",
		},
		AuditEvent: "collections.schedule.created",
		FailureModes: []contract.FailureMode{
			{Code: failure.InvalidArguments, Meaning: "An argument breaks a rule of the schedule (steps out of order, an offset, tone or language " +
				"outside its list, an audience both all and conditioned or neither, a range upside down, a cap, a window, an endDate before today " +
				"or more than " + strconv.Itoa(schedules.MaxHorizonDays) + " days ahead in the window's zone); field names it, as steps[1].offset or window.open."},
		},
		Idempotency: contract.Idempotency{Kind: "key", Description: "idempotencyKey is required for the real call: a retry with the same key and arguments returns the first answer and creates nothing."},
		DryRun:      contract.ModeOptional,
	}
}

// --- preview_schedule ---

type previewArgs struct {
	ScheduleID string  `json:"scheduleId"`
	Date       *string `json:"date,omitempty"`
}

func (a *previewArgs) check() error {
	if a.Date != nil {
		if _, msg := value.DateCheck(*a.Date); msg != "" {
			return &failure.Error{Code: failure.InvalidArguments, Field: "date", Message: msg}
		}
	}
	return nil
}

func previewRead(ctx context.Context, q store.Querier, v any) (pipeline.Effect, error) {
	a := v.(*previewArgs)
	s, err := schedules.Get(ctx, q, a.ScheduleID)
	if err != nil {
		return pipeline.Effect{}, scheduleError(err)
	}
	now := pipeline.Now(ctx)
	date := s.Today(now)
	if a.Date != nil {
		if date, err = calendar.ParseDate(*a.Date); err != nil {
			return pipeline.Effect{}, &failure.Error{Code: failure.InvalidArguments, Field: "date", Message: "must be a date in YYYY-MM-DD form", Err: err}
		}
	}
	p, err := schedules.Plan(ctx, q, s, date, now)
	if err != nil {
		return pipeline.Effect{}, err
	}
	return pipeline.Effect{
		Structured: planViewOf(p),
		Summary:    planSummary(p) + " Nothing was prepared.",
		Details:    map[string]int64{"messages": int64(len(p.Messages)), "invoicesSkipped": int64(p.Skipped.Total())},
	}, nil
}

func previewScheduleContract() contract.Contract {
	return contract.Contract{
		Name:            PreviewScheduleName,
		ContractVersion: "1.0.0",
		Title:           "Preview a schedule's batch",
		Description: "Use to see what a collection schedule's batch would prepare on a date (today in the schedule's time zone when left out): " +
			"how many reminders for how many invoices, the first few as samples (customer, step, invoices, total), and the invoices it " +
			"would leave out, counted by reason (paid, void, written off, disputed, a promise to pay pending, no contact record, " +
			"do_not_contact or paused customer, the caps, past the end date, the schedule paused). Read-only: nothing is prepared.",
		Category:     "collections",
		RiskLevel:    contract.Low,
		InputSchema:  previewScheduleInputSchema(),
		OutputSchema: planOutputSchema(),
		Permissions:  schedulesRead,
		SideEffects: contract.SideEffects{
			Changes:  []string{},
			OnRepeat: "Nothing changes; a repeat computes the plan from the ledger as it is then.",
		},
		AuditEvent: "collections.schedule.previewed",
		FailureModes: []contract.FailureMode{
			{Code: failure.InvalidArguments, Meaning: "An argument does not match the input schema, or date is not a real date from " + value.MinDate + " to " + value.MaxDate + "; field names it."},
			scheduleNotFoundMode,
		},
		Idempotency: contract.Idempotency{Kind: "inherent", Description: "Read-only: repeating a call has no effect."},
		DryRun:      contract.ModeNone,
	}
}

// --- pause_schedule and resume_schedule ---

type scheduleIDArgs struct {
	ScheduleID string `json:"scheduleId"`
}

// stateAnswer is pause's and resume's answer.
type stateAnswer struct {
	Schedule scheduleView `json:"schedule"`
	Changed  bool         `json:"changed"`
}

// setState moves the schedule of v to state in tx, for pause and resume.
func setState(ctx context.Context, tx store.Tx, v any, state schedules.State, what string) (pipeline.Effect, error) {
	a := v.(*scheduleIDArgs)
	by, err := stampFrom(ctx, what)
	if err != nil {
		return pipeline.Effect{}, err
	}
	now := pipeline.Now(ctx)
	s, err := schedules.GetForUpdate(ctx, tx, a.ScheduleID)
	if err != nil {
		return pipeline.Effect{}, scheduleError(err)
	}
	if state == schedules.Active && s.Ended(s.Today(now)) {
		return pipeline.Effect{}, endedFailure(s)
	}
	s, changed, err := schedules.SetState(ctx, tx, s, state, by, now)
	if err != nil {
		return pipeline.Effect{}, scheduleError(err)
	}
	e := pipeline.Effect{Structured: &stateAnswer{Schedule: viewOf(s), Changed: changed}, Details: map[string]int64{"changed": 0}}
	if !changed {
		e.Summary, e.Unchanged = "The schedule was already "+string(state)+"; nothing changed.", true
		return e, nil
	}
	e.Details["changed"] = 1
	e.Summary = "Schedule " + s.ID + " is now " + string(state) + "."
	return e, nil
}

func endedFailure(s schedules.Schedule) *failure.Error {
	return &failure.Error{Code: schedules.CodeEnded, Field: argScheduleID, Message: "the schedule ended on " + s.Spec.EndDate + ": it cannot be resumed; create another"}
}

func pauseExecute(ctx context.Context, tx store.Tx, v any) (pipeline.Effect, error) {
	return setState(ctx, tx, v, schedules.Paused, "pause_schedule")
}

func resumeExecute(ctx context.Context, tx store.Tx, v any) (pipeline.Effect, error) {
	return setState(ctx, tx, v, schedules.Active, "resume_schedule")
}

// resumePreview is what the person confirms: which schedule resumes, and its next batch's date.
func resumePreview(ctx context.Context, q store.Querier, v any) (string, error) {
	a := v.(*scheduleIDArgs)
	var s schedules.Schedule
	var err error
	if tx, ok := q.(store.Tx); ok {
		s, err = schedules.GetForUpdate(ctx, tx, a.ScheduleID)
	} else {
		s, err = schedules.Get(ctx, q, a.ScheduleID)
	}
	if err != nil {
		return "", scheduleError(err)
	}
	now := pipeline.Now(ctx)
	if s.Ended(s.Today(now)) {
		return "", endedFailure(s)
	}
	if s.State == schedules.Active {
		return fmt.Sprintf("leave the schedule %s (%s) as it is: it is already active; nothing would change.", s.ID, quote(s.Name)), nil
	}
	return fmt.Sprintf("resume the schedule %s: %s From the next business day on, its batches are prepared again for a person to approve.",
		s.ID, describeSchedule(s)), nil
}

func pauseScheduleContract() contract.Contract {
	return contract.Contract{
		Name:            PauseScheduleName,
		ContractVersion: "1.0.0",
		Title:           "Pause a collection schedule",
		Description: "Use to stop a collection schedule from preparing batches, at once: from the next batch on it prepares nothing until " +
			"a person resumes it (collections.resume_schedule). Stopping is always safe: no confirmation is asked. Pausing a paused schedule changes nothing.",
		Category:     "collections",
		RiskLevel:    contract.Medium,
		InputSchema:  scheduleIDInputSchema("The schedule to pause."),
		OutputSchema: stateOutputSchema(),
		Permissions:  schedulesWrite,
		SideEffects: contract.SideEffects{
			Changes:  []string{"the schedule's state becomes paused, recorded with who paused it and when"},
			OnRepeat: "A repeat with the same idempotencyKey returns the first answer. Pausing a paused schedule, with any key, changes nothing and answers changed: false.",
		},
		AuditEvent:   "collections.schedule.paused",
		FailureModes: []contract.FailureMode{scheduleNotFoundMode},
		Idempotency: contract.Idempotency{Kind: "key", Description: "idempotencyKey is required: a retry with the same key and arguments returns the first answer. " +
			"Pausing is also naturally idempotent: a paused schedule is not paused again."},
		DryRun: contract.ModeNone,
	}
}

func resumeScheduleContract() contract.Contract {
	return contract.Contract{
		Name:            ResumeScheduleName,
		ContractVersion: "1.0.0",
		Title:           "Resume a collection schedule",
		Description: "Use when a person wants a paused collection schedule to prepare its batches again, from the next business day on. " +
			"The agent's person confirms it first. A schedule past its endDate cannot be resumed. Resuming an active schedule changes nothing.",
		Category:     "collections",
		RiskLevel:    contract.High,
		InputSchema:  scheduleIDInputSchema("The schedule to resume."),
		OutputSchema: stateOutputSchema(),
		Permissions:  schedulesWrite,
		SideEffects: contract.SideEffects{
			Changes:  []string{"the schedule's state becomes active, recorded with who resumed it and when"},
			OnRepeat: "A repeat with the same idempotencyKey returns the first answer. Resuming an active schedule, with any key, changes nothing and answers changed: false.",
		},
		AuditEvent:   "collections.schedule.resumed",
		FailureModes: []contract.FailureMode{scheduleNotFoundMode, scheduleEndedMode},
		Idempotency: contract.Idempotency{Kind: "key", Description: "idempotencyKey is required: a retry with the same key and arguments returns the first answer. " +
			"Resuming is also naturally idempotent: an active schedule is not resumed again."},
		DryRun: contract.ModeNone,
	}
}

// --- get_schedule and list_schedules ---

// batchView is a schedule's batch as get_schedule answers it.
type batchView struct {
	Date          string         `json:"date"`
	Outcome       string         `json:"outcome"`
	ApprovalID    string         `json:"approvalId,omitempty"`
	ApprovalState string         `json:"approvalState,omitempty"`
	BulkID        string         `json:"bulkId,omitempty"`
	Drafts        int            `json:"drafts"`
	Recipients    int            `json:"recipients"`
	Skipped       batchSkipsView `json:"skipped"`
	CreatedAt     string         `json:"createdAt"`
}

// batchSkipsView is a batch's skips as get_schedule answers them: the bulk send's and the
// send's by skipCounts' reasons.
type batchSkipsView struct {
	Plan schedules.Skips `json:"plan"`
	Bulk skipCounts      `json:"bulk"`
	Send *skipCounts     `json:"send,omitempty"`
}

// skipCountsOf reads counts by reason (skipCounts.counts) back.
func skipCountsOf(m map[string]int) skipCounts {
	var c skipCounts
	raw, _ := json.Marshal(m) // a map of ints always marshals, and reads back into ints
	_ = json.Unmarshal(raw, &c)
	return c
}

func batchViewOf(b schedules.Batch, now time.Time) batchView {
	sk := batchSkipsView{Plan: b.Skipped.Plan, Bulk: skipCountsOf(b.Skipped.Bulk)}
	if b.Skipped.Send != nil {
		send := skipCountsOf(b.Skipped.Send)
		sk.Send = &send
	}
	var state string
	if b.ApprovalState != "" {
		state = string(approval.StateAt(approval.State(b.ApprovalState), b.ApprovalExpires, now))
	}
	return batchView{Date: b.Date, Outcome: b.Outcome, ApprovalID: b.ApprovalID, ApprovalState: state, BulkID: b.BulkID,
		Drafts: b.Drafts, Recipients: b.Recipients, Skipped: sk, CreatedAt: b.CreatedAt.Format(time.RFC3339Nano)}
}

// getScheduleView is get_schedule's answer: the schedule and its latest batches.
type getScheduleView struct {
	scheduleView
	LatestBatches []batchView `json:"latestBatches"`
}

func getScheduleRead(ctx context.Context, q store.Querier, v any) (pipeline.Effect, error) {
	s, err := schedules.Get(ctx, q, v.(*scheduleIDArgs).ScheduleID)
	if err != nil {
		return pipeline.Effect{}, scheduleError(err)
	}
	batches, err := schedules.LatestBatches(ctx, q, s.ID, schedules.LatestShown)
	if err != nil {
		return pipeline.Effect{}, err
	}
	out := getScheduleView{scheduleView: viewOf(s), LatestBatches: make([]batchView, 0, len(batches))}
	for _, b := range batches {
		out.LatestBatches = append(out.LatestBatches, batchViewOf(b, pipeline.Now(ctx)))
	}
	return pipeline.Effect{Structured: &out, Summary: fmt.Sprintf("Schedule %s: %s, %s, until %s; %s.", s.ID, s.State,
		count(len(s.Steps), "step", "steps"), s.Spec.EndDate, count(len(batches), "latest batch", "latest batches"))}, nil
}

func getScheduleContract() contract.Contract {
	return contract.Contract{
		Name:            GetScheduleName,
		ContractVersion: "1.2.0",
		Title:           "Get a collection schedule",
		Description:     "Use to read one collection schedule: its steps, audience, caps, send window, end date, state, who created, paused and resumed it, and its latest daily batches (outcome, approval, bulk send, counts, skips). Read-only.",
		Category:        "collections",
		RiskLevel:       contract.Low,
		InputSchema:     scheduleIDInputSchema("The schedule to read."),
		OutputSchema:    getScheduleOutputSchema(),
		Permissions:     schedulesRead,
		SideEffects:     contract.SideEffects{Changes: []string{}, OnRepeat: "Nothing changes; a repeat reads the schedule as it is then."},
		AuditEvent:      "collections.schedule.read",
		FailureModes: []contract.FailureMode{
			{Code: failure.InvalidArguments, Meaning: "An argument does not match the input schema (scheduleId is not a schedule id); field names it."},
			scheduleNotFoundMode,
		},
		Idempotency: contract.Idempotency{Kind: "inherent", Description: "Read-only: repeating a call has no effect."},
		DryRun:      contract.ModeNone,
	}
}

// The page sizes of list_schedules.
const (
	defaultSchedulesLimit = 20
	maxSchedulesLimit     = 100
)

type listSchedulesArgs struct {
	State  *string `json:"state,omitempty"`
	Limit  *int    `json:"limit,omitempty"`
	Cursor *string `json:"cursor,omitempty"`

	filter schedules.Filter // made by check
}

func (a *listSchedulesArgs) check() error {
	a.filter = schedules.Filter{Limit: defaultSchedulesLimit}
	if a.State != nil {
		a.filter.State = schedules.State(*a.State) // the schema's enum held it to the states
	}
	if a.Limit != nil {
		a.filter.Limit = *a.Limit
	}
	if a.Cursor != nil {
		pos, ok := openScheduleCursor(*a.Cursor, a.filter.State)
		if !ok {
			return &failure.Error{Code: failure.InvalidArguments, Field: "cursor",
				Message: "is not a cursor this tool gave for the same state: pass nextCursor back as it came, with the same state, or leave cursor out for the first page"}
		}
		a.filter.After = &pos
	}
	return nil
}

type listSchedulesResult struct {
	Schedules  []scheduleView `json:"schedules"`
	NextCursor string         `json:"nextCursor,omitempty"`
}

func listSchedulesRead(ctx context.Context, q store.Querier, v any) (pipeline.Effect, error) {
	a := v.(*listSchedulesArgs)
	f := a.filter
	f.Limit++
	all, err := schedules.List(ctx, q, f)
	if err != nil {
		return pipeline.Effect{}, err
	}
	out := listSchedulesResult{Schedules: []scheduleView{}}
	for i, s := range all {
		if i == a.filter.Limit {
			out.NextCursor = sealScheduleCursor(schedules.PositionOf(all[i-1]), a.filter.State)
			break
		}
		out.Schedules = append(out.Schedules, viewOf(s))
	}
	summary := fmt.Sprintf("%s listed", count(len(out.Schedules), "schedule", "schedules"))
	if out.NextCursor != "" {
		summary += "; more follow: pass nextCursor as cursor"
	}
	return pipeline.Effect{Structured: &out, Summary: summary + ".", Details: map[string]int64{"scheduleCount": int64(len(out.Schedules))}}, nil
}

func listSchedulesContract() contract.Contract {
	return contract.Contract{
		Name:            ListSchedulesName,
		ContractVersion: "1.0.0",
		Title:           "List collection schedules",
		Description:     "Use to see which collection schedules exist: newest first, optionally of one state (active, paused), a page at a time (pass nextCursor back as cursor). Read-only.",
		Category:        "collections",
		RiskLevel:       contract.Low,
		InputSchema:     listSchedulesInputSchema(),
		OutputSchema:    listSchedulesOutputSchema(),
		Permissions:     schedulesRead,
		SideEffects:     contract.SideEffects{Changes: []string{}, OnRepeat: "Nothing changes; a repeat lists the schedules as they are then (new ones come before the first page)."},
		AuditEvent:      "collections.schedules.listed",
		FailureModes: []contract.FailureMode{
			{Code: failure.InvalidArguments, Meaning: "An argument does not match the input schema, or cursor is not one this tool gave for the same state; field names it."},
		},
		Idempotency: contract.Idempotency{Kind: "inherent", Description: "Read-only: repeating a call has no effect."},
		DryRun:      contract.ModeNone,
	}
}

// A schedules cursor is list_drafts' cursor for schedules: base64url (no padding) of a version
// byte, the first 8 bytes of the SHA-256 of the state filter, the position's creation time
// (µs, big-endian) and the 16 bytes of its id. Not secret, not signed: a forged one lists
// schedules the caller may list anyway.
const scheduleCursorLen = ((1+8+8+ident.Size)*8 + 5) / 6

func stateDigest(s schedules.State) []byte {
	h := sha256.Sum256([]byte("state:" + string(s)))
	return h[:8]
}

func sealScheduleCursor(p schedules.Position, state schedules.State) string {
	id, _ := ident.Decode(schedules.IDPrefix, p.ID)
	b := append([]byte{cursorVersion}, stateDigest(state)...)
	b = binary.BigEndian.AppendUint64(b, uint64(p.CreatedAt))
	return cursorEncoding.EncodeToString(append(b, id[:]...))
}

func openScheduleCursor(s string, state schedules.State) (schedules.Position, bool) {
	if len(s) != scheduleCursorLen {
		return schedules.Position{}, false
	}
	b, err := cursorEncoding.DecodeString(s)
	if err != nil || len(b) != 1+8+8+ident.Size || b[0] != cursorVersion || !bytes.Equal(b[1:9], stateDigest(state)) {
		return schedules.Position{}, false
	}
	at := binary.BigEndian.Uint64(b[9:17])
	if at > math.MaxInt64 {
		return schedules.Position{}, false
	}
	return schedules.Position{CreatedAt: int64(at), ID: ident.Encode(schedules.IDPrefix, [ident.Size]byte(b[17:]))}, true
}

// --- schemas ---

// strictSchema closes every object of s (no other property; every property required but
// optional's names) and makes Go's pointers plain types: left out, never null.
func strictSchema(s *jsonschema.Schema, optional ...string) {
	if s == nil {
		return
	}
	if len(s.Types) > 0 {
		for _, t := range s.Types {
			if t != "null" {
				s.Type = t
			}
		}
		s.Types = nil
	}
	if s.Type == "object" && s.Properties != nil {
		closeObject(s)
		s.Required = slices.DeleteFunc(s.Required, func(n string) bool { return slices.Contains(optional, n) })
		for _, p := range s.Properties {
			strictSchema(p, optional...)
		}
	}
	strictSchema(s.Items, optional...)
}

func describe(s *jsonschema.Schema, texts map[string]string) {
	for name, text := range texts {
		s.Properties[name].Description = text
	}
}

// specSchema describes a schedule as written (schedules.Spec), in input or output.
func specSchema(s *jsonschema.Schema) {
	p := s.Properties
	p["name"] = textSchema("The schedule's name, as people will read it.")
	steps := p["steps"]
	steps.MinItems, steps.MaxItems = ptr(1), ptr(schedules.MaxSteps)
	steps.Description = fmt.Sprintf("1 to %d steps, in order of offset, each on a later business day than the one before.", schedules.MaxSteps)
	st := steps.Items
	st.Properties["offset"].Minimum, st.Properties["offset"].Maximum = ptr(float64(schedules.MinOffset)), ptr(float64(schedules.MaxOffset))
	st.Properties["tone"].Enum = enum(reminders.Tones())
	st.Properties["language"].Enum = enum(reminders.Languages())
	describe(st, map[string]string{
		"offset":   "Banking business days from the invoice's due date (Brazil: weekends and national bank holidays do not count); negative is before it, 0 the due date (or the next business day).",
		"tone":     "The reminder's tone.",
		"language": "The reminder's language; pt-BR when left out.",
	})
	a := p["audience"]
	a.Description = "Which invoices the schedule chases: {\"all\": true} for every open invoice, or one or more conditions, all of which must hold."
	ids := a.Properties["customerIds"]
	ids.MinItems, ids.MaxItems, ids.UniqueItems = ptr(1), ptr(schedules.MaxCustomers), true
	ids.Items = customerIDSchema()
	for _, n := range []string{"minOpenCents", "maxOpenCents"} {
		a.Properties[n].Minimum, a.Properties[n].Maximum = ptr(1.0), ptr(float64(value.MaxAmountCents))
	}
	for _, n := range []string{"minBusinessDaysOverdue", "maxBusinessDaysOverdue"} {
		a.Properties[n].Minimum, a.Properties[n].Maximum = ptr(float64(schedules.MinOffset)), ptr(float64(schedules.MaxOverdue))
	}
	a.Properties["all"].Const = jsonschema.Ptr[any](true)
	describe(a, map[string]string{
		"all":                    "true: every open invoice; takes no other condition.",
		"customerIds":            fmt.Sprintf("Only these customers' invoices, 1 to %d, each once.", schedules.MaxCustomers),
		"minOpenCents":           "Only invoices whose open amount is at least this, in minor units of the invoice's currency.",
		"maxOpenCents":           "Only invoices whose open amount is at most this, in minor units of the invoice's currency.",
		"minBusinessDaysOverdue": "Only invoices at least this many business days past their due date.",
		"maxBusinessDaysOverdue": "Only invoices at most this many business days past their due date.",
	})
	c := p["caps"]
	c.Description = "Caps on the messages the schedule prepares."
	c.Properties["perCustomer7Days"].Minimum, c.Properties["perCustomer7Days"].Maximum = ptr(1.0), ptr(float64(schedules.MaxPerCustomer))
	c.Properties["perBatch"].Minimum, c.Properties["perBatch"].Maximum = ptr(1.0), ptr(float64(schedules.MaxPerBatch))
	describe(c, map[string]string{
		"perCustomer7Days": fmt.Sprintf("Messages a customer may get in any rolling 7 days, from anything (sent, or drafts still open); %d when left out.", schedules.DefaultPerCustomer),
		"perBatch":         fmt.Sprintf("Messages one day's batch may hold; %d (one bulk send's most) when left out.", schedules.MaxPerBatch),
	})
	w := p["window"]
	w.Description = "When messages may go out: America/Sao_Paulo, 08:00 to 20:00, Monday to Saturday when left out; never on a holiday."
	describe(w, map[string]string{
		"zone":  "An IANA time zone, like America/Sao_Paulo.",
		"open":  "The time it opens, HH:MM in the zone.",
		"close": "The time it closes, HH:MM in the zone, later than open.",
		"days":  "The weekdays it opens on: mon, tue, wed, thu, fri, sat, sun.",
	})
	w.Properties["days"].MinItems, w.Properties["days"].MaxItems, w.Properties["days"].UniqueItems = ptr(1), ptr(7), true
	w.Properties["days"].Items.Enum = []any{"mon", "tue", "wed", "thu", "fri", "sat", "sun"}
	p["endDate"].Pattern = `^[0-9]{4}-[0-9]{2}-[0-9]{2}$`
	p["endDate"].Description = fmt.Sprintf("The last day the schedule prepares a batch (YYYY-MM-DD, in the window's zone): today at the earliest, %d days ahead at the latest.", schedules.MaxHorizonDays)
}

func createScheduleInputSchema() *jsonschema.Schema {
	s := mustFor[schedules.Spec]()
	strictSchema(s, "language", "all", "customerIds", "minOpenCents", "maxOpenCents", "minBusinessDaysOverdue", "maxBusinessDaysOverdue",
		"perCustomer7Days", "perBatch", "caps", "window")
	specSchema(s)
	s.Description = "The schedule: name, steps, audience and endDate; caps and window take their defaults when left out."
	return s
}

func scheduleOutputSchema() *jsonschema.Schema {
	s := mustFor[scheduleView]()
	strictSchema(s, "id", "actor", "created", "paused", "resumed", "all", "customerIds", "minOpenCents", "maxOpenCents",
		"minBusinessDaysOverdue", "maxBusinessDaysOverdue")
	specSchema(s)
	s.Description = "A collection schedule, its defaults filled."
	s.Properties["id"].Pattern = ident.Pattern(schedules.IDPrefix)
	s.Properties["id"].Description = "The schedule's id: " + ident.Describe(schedules.IDPrefix) + "; absent in a dry run."
	s.Properties["state"].Enum = enum(schedules.States())
	s.Properties["state"].Description = "active: it prepares a batch each business day; paused: it prepares nothing until resumed."
	s.Properties["steps"].Items.Properties["template"].Description = "The reminder template the step writes with: LANGUAGE.TONE."
	for name, what := range map[string]string{"created": "created it", "paused": "last paused it (absent while never)", "resumed": "last resumed it (absent while never)"} {
		st := s.Properties[name]
		st.Description = "Who " + what + " and when."
		st.Properties["by"].Description = "The person's subject."
		st.Properties["actor"].Description = "The agent acting for the person; absent when the person acted."
		st.Properties["at"].Format = "date-time"
		st.Properties["at"].Description = "When (RFC 3339, UTC)."
	}
	return s
}

func getScheduleOutputSchema() *jsonschema.Schema {
	s := scheduleOutputSchema()
	s.Description = "A collection schedule, its defaults filled, and its latest daily batches."
	b := mustFor[[]batchView]()
	strictSchema(b, "approvalId", "approvalState", "bulkId")
	b.MaxItems = ptr(schedules.LatestShown)
	b.Description = fmt.Sprintf("The schedule's latest daily batches, newest first, at most %d; empty before its first.", schedules.LatestShown)
	it := b.Items
	it.Properties["date"].Pattern = `^[0-9]{4}-[0-9]{2}-[0-9]{2}$`
	it.Properties["outcome"].Enum = []any{BatchOpened, BatchEmpty, BatchClosed, BatchLapsed}
	it.Properties["approvalId"].Pattern = ident.Pattern(approval.Prefix)
	it.Properties["approvalState"].Enum = enum(approval.States())
	it.Properties["createdAt"].Format = "date-time"
	describe(it, map[string]string{
		"date":          "The business day of the batch (YYYY-MM-DD, in the window's zone).",
		"outcome":       "opened: its drafts were prepared and one bulk send of them asked for approval; empty: nothing to send, no approval asked; closed: the schedule was paused or past its end date; lapsed: its approval expired or was rejected before the send, or nothing approved was still sendable when it ran: its drafts discarded.",
		"approvalId":    "The approval of the batch's bulk send (opened and lapsed batches only).",
		"approvalState": "That approval's state now: pending (until the send window it goes out in closes), approved (sent as soon as the window is open), executed (sent), rejected or expired.",
		"bulkId":        "The bulk send the approved batch ran (collections.get_bulk_send reads its progress); absent until it ran.",
		"drafts":        "Reminder drafts the batch prepared.",
		"recipients":    "Messages its bulk send's plan sends.",
		"skipped":       "What the batch left out, by reason: plan, invoices the schedule's plan left out (as preview_schedule's skipped); bulk, drafts prepared but not sendable (as bulk_send_reminders' dry run skips them); send, once it ran, approved drafts left out because the ledger or the customer changed between approval and sending (absent before).",
		"createdAt":     "When the batch was made (RFC 3339, UTC).",
	})
	for _, n := range []string{"drafts", "recipients"} {
		it.Properties[n].Minimum = ptr(0.0)
	}
	strictSchema(it.Properties["skipped"], "send")
	for _, part := range []string{"plan", "bulk", "send"} {
		for _, p := range it.Properties["skipped"].Properties[part].Properties {
			p.Minimum = ptr(0.0)
		}
	}
	s.Properties["latestBatches"] = b
	s.Required = append(s.Required, "latestBatches")
	return s
}

func planOutputSchema() *jsonschema.Schema {
	s := mustFor[planView]()
	strictSchema(s, "scheduleId")
	s.Description = "What a schedule's batch would prepare on a date: counts, samples, and the invoices left out by reason."
	s.Properties["samples"].MaxItems = ptr(maxPlanSamples)
	describe(s, map[string]string{
		"scheduleId":   "The schedule's id (absent in create_schedule's dry run).",
		"date":         "The day planned (YYYY-MM-DD).",
		"businessDay":  "false: not a banking business day; no batch, nothing counted.",
		"messageCount": "Reminders the batch would prepare: one per customer, step and currency.",
		"invoiceCount": "Invoices those reminders list.",
		"skippedTotal": "Invoices with a step due that the batch leaves out (the sum of skipped).",
		"skipped":      "Invoices with a step due that the batch leaves out, by the first reason that applies.",
		"samples":      fmt.Sprintf("The first reminders of the batch, in batch order (earliest due date first), at most %d.", maxPlanSamples),
	})
	for _, n := range []string{"messageCount", "invoiceCount", "skippedTotal"} {
		s.Properties[n].Minimum = ptr(0.0)
	}
	for name, what := range map[string]string{
		"paid": "paid", "void": "void", "writtenOff": "written off", "disputed": "under an open dispute",
		"promisePending": "under a promise to pay dated on or after the day", "noContact": "of a customer with no contact record (no address)",
		"doNotContact": "of a do_not_contact customer", "customerPaused": "of a customer whose contact is paused on the day",
		"capCustomer": "whose reminder would pass the cap per customer in 7 days", "capBatch": "whose reminder would pass the cap per batch",
		"pastEndDate": "whose reminder the schedule, past its end date, no longer prepares", "schedulePaused": "whose reminder the paused schedule does not prepare",
	} {
		p := s.Properties["skipped"].Properties[name]
		p.Minimum = ptr(0.0)
		p.Description = "Invoices " + what + "."
	}
	it := s.Properties["samples"].Items
	it.Properties["tone"].Enum = enum(reminders.Tones())
	it.Properties["language"].Enum = enum(reminders.Languages())
	it.Properties["step"].Minimum = ptr(0.0)
	it.Properties["totalCents"].Minimum = ptr(1.0)
	describe(it, map[string]string{
		"customerId": "The customer.", "step": "The step's index in the schedule's steps, from 0.", "tone": "The step's tone.",
		"language": "The step's language.", "currency": "The currency of the invoices (ISO 4217).",
		"invoiceIds": "The invoices the reminder lists.", "totalCents": "Their open amounts' sum, in minor units.",
	})
	return s
}

func createScheduleOutputSchema() *jsonschema.Schema {
	s := mustFor[createAnswer]()
	strictSchema(s, "nextBatch")
	s.Properties["schedule"] = scheduleOutputSchema()
	s.Properties["nextBatch"] = planOutputSchema()
	s.Properties["nextBatch"].Description = "Dry run: the plan of the next business day. " + s.Properties["nextBatch"].Description
	s.Properties["dryRun"].Description = "true: nothing was stored; this is the schedule the call would create."
	s.Description = "The schedule created (dryRun false), or validated with its next business day's plan (dryRun true)."
	return s
}

func stateOutputSchema() *jsonschema.Schema {
	s := mustFor[stateAnswer]()
	strictSchema(s)
	s.Properties["schedule"] = scheduleOutputSchema()
	s.Properties["changed"].Description = "false when the schedule already was in that state: nothing was written."
	s.Description = "The schedule after the call, and whether its state changed."
	return s
}

func scheduleIDInputSchema(what string) *jsonschema.Schema {
	s := mustFor[scheduleIDArgs]()
	strictSchema(s)
	s.Description = what
	s.Properties[argScheduleID].Pattern = ident.Pattern(schedules.IDPrefix)
	s.Properties[argScheduleID].Description = "The schedule's id: " + ident.Describe(schedules.IDPrefix) + "."
	return s
}

func previewScheduleInputSchema() *jsonschema.Schema {
	s := scheduleIDInputSchema("The schedule, and the day to plan.")
	s.Properties["date"] = &jsonschema.Schema{Type: "string", Pattern: `^[0-9]{4}-[0-9]{2}-[0-9]{2}$`,
		Description: "The day to plan (YYYY-MM-DD); today in the schedule's time zone when left out."}
	return s
}

func listSchedulesInputSchema() *jsonschema.Schema {
	s := mustFor[listSchedulesArgs]()
	strictSchema(s, "state", "limit", "cursor")
	s.Description = "Which schedules to list; every argument is optional."
	s.Properties["state"].Enum = enum(schedules.States())
	s.Properties["state"].Description = "Only the schedules in this state."
	lim := s.Properties["limit"]
	lim.Minimum, lim.Maximum = ptr(1.0), ptr(float64(maxSchedulesLimit))
	lim.Description = fmt.Sprintf("Schedules per page, 1 to %d; %d when left out.", maxSchedulesLimit, defaultSchedulesLimit)
	cur := s.Properties["cursor"]
	cur.MinLength, cur.MaxLength, cur.Pattern = ptr(scheduleCursorLen), ptr(scheduleCursorLen), "^[A-Za-z0-9_-]+$"
	cur.Description = "nextCursor of the previous page, as it came, with the same state; left out for the first page."
	return s
}

func listSchedulesOutputSchema() *jsonschema.Schema {
	s := mustFor[listSchedulesResult]()
	strictSchema(s, "nextCursor")
	s.Description = "One page of schedules, newest first."
	s.Properties["schedules"].Items = scheduleOutputSchema()
	s.Properties["schedules"].MaxItems = ptr(maxSchedulesLimit)
	s.Properties["schedules"].Description = "The schedules of this page, newest first (then by id); empty when none."
	s.Properties["nextCursor"].Pattern = "^[A-Za-z0-9_-]{" + strconv.Itoa(scheduleCursorLen) + "}$"
	s.Properties["nextCursor"].Description = "Present when more schedules follow: pass it as cursor, with the same state, for the next page."
	return s
}

// scheduleTools are the schedules' tools, in listing order.
func scheduleTools() []toolDecl {
	return []toolDecl{
		{createScheduleContract, pipeline.Tool{Decode: createDecode, DryRun: createDryRun, Preview: createPreview, Execute: createExecute}},
		{previewScheduleContract, pipeline.Tool{Decode: func(b []byte) (any, int, error) { return checked(b, (*previewArgs).check) }, Read: previewRead}},
		{pauseScheduleContract, pipeline.Tool{Decode: pipeline.Strict[scheduleIDArgs](), Execute: pauseExecute}},
		{resumeScheduleContract, pipeline.Tool{Decode: pipeline.Strict[scheduleIDArgs](), Preview: resumePreview, Execute: resumeExecute}},
		{getScheduleContract, pipeline.Tool{Decode: pipeline.Strict[scheduleIDArgs](), Read: getScheduleRead}},
		{listSchedulesContract, pipeline.Tool{Decode: func(b []byte) (any, int, error) { return checked(b, (*listSchedulesArgs).check) }, Read: listSchedulesRead}},
	}
}
