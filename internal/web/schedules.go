package web

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/cobranca/cobranca/internal/approval"
	"github.com/cobranca/cobranca/internal/auditlog"
	"github.com/cobranca/cobranca/internal/auth"
	"github.com/cobranca/cobranca/internal/contract"
	"github.com/cobranca/cobranca/internal/failure"
	"github.com/cobranca/cobranca/internal/ident"
	"github.com/cobranca/cobranca/internal/pipeline"
	"github.com/cobranca/cobranca/internal/request"
	"github.com/cobranca/cobranca/internal/schedules"
	"github.com/cobranca/cobranca/internal/signin"
)

// The collection schedules' console pages (issue 30): the schedules, one schedule with its
// latest batches and its next batch, and the forms that pause and resume one (POST).
const (
	SchedulesPath      = "/console/schedules"
	SchedulePath       = "/console/schedules/detail" // ?id=
	SchedulePausePath  = "/console/schedules/pause"
	ScheduleResumePath = "/console/schedules/resume"
)

// The schedules forms' refusals.
const (
	// CodePauseRole: a person without a role that pauses schedules sent the pause form.
	CodePauseRole failure.Code = "console_pause_role_required"
	// CodeResumeRole: a person without the approver's role sent the resume form.
	CodeResumeRole failure.Code = "console_approver_required"
)

const (
	schedulesPageSize = 50
	// planSamples is how many of the next batch's messages the page shows.
	planSamples = 5
)

// schedulePages are the schedules' console pages: the list, and a schedule (not in the
// navigation).
func (p *Pages) schedulePages() []*consolePage {
	return []*consolePage{
		{path: SchedulesPath, file: "console_schedules.html", name: func(t *texts) string { return t.Schedules.Title }, read: p.readSchedules},
		{path: SchedulePath, file: "console_schedule.html", name: func(t *texts) string { return t.Schedules.ScheduleTitle }, read: p.readSchedule, under: SchedulesPath},
	}
}

type scheduleRow struct {
	schedules.Schedule
	Href string
}

type schedulesView struct {
	State   schedules.State
	States  []schedules.State
	LangTag string
	Rows    []scheduleRow
	// Next is the next page's link ("" on the last); First, the first's, when not on it.
	Next, First string
}

// readSchedules reads the schedules, the newest first, 50 a page (?after=), of one state or
// all (?state=active|paused).
func (p *Pages) readSchedules(ctx context.Context, r *http.Request, d *pageData) error {
	q := r.URL.Query()
	v := &schedulesView{State: schedules.State(q.Get("state")), States: schedules.States(), LangTag: q.Get("lang")}
	if v.State != "" && !slices.Contains(v.States, v.State) {
		return badParam("state", "must be active or paused, or left out for every schedule")
	}
	after, err := parseSchedulePosition(q.Get("after"))
	if err != nil {
		return err
	}
	page, err := schedules.List(ctx, p.schedules, schedules.Filter{State: v.State, After: after, Limit: schedulesPageSize + 1})
	if err != nil {
		return err
	}
	keep := url.Values{}
	if v.State != "" {
		keep.Set("state", string(v.State))
	}
	if len(page) > schedulesPageSize {
		page = page[:schedulesPageSize]
		nq := cloneQuery(keep)
		nq.Set("after", formatSchedulePosition(schedules.PositionOf(page[len(page)-1])))
		v.Next = pageLink(r, nq)
	}
	if after != nil {
		v.First = pageLink(r, keep)
	}
	for _, s := range page {
		v.Rows = append(v.Rows, scheduleRow{Schedule: s, Href: linkWith(r, SchedulePath, url.Values{"id": {s.ID}})})
	}
	d.View = v
	return nil
}

// A list position is written <microseconds since 1970>.<schedule id>, as the inbox's cursor.
func formatSchedulePosition(pos schedules.Position) string {
	return strconv.FormatInt(pos.CreatedAt, 10) + "." + pos.ID
}

// parseSchedulePosition reads ?after=; "" is the first page (nil).
func parseSchedulePosition(s string) (*schedules.Position, error) {
	if s == "" {
		return nil, nil
	}
	us, id, ok := strings.Cut(s, ".")
	n, err := strconv.ParseInt(us, 10, 64)
	if !ok || err != nil || n < 0 || !schedules.ValidID(id) || strconv.FormatInt(n, 10) != us {
		return nil, badParam("after", "must be a place in the list, as the page's own link writes it")
	}
	return &schedules.Position{CreatedAt: n, ID: id}, nil
}

type skipRow struct {
	Reason string // Skips' JSON name, which the page's words are keyed by
	N      int
}

// scheduleFormView is the pause or resume form a reader may send: its action and idempotency key.
type scheduleFormView struct {
	Action, Key string
}

// stepRow is a step with its number (from 1).
type stepRow struct {
	N int
	schedules.StepSpec
}

// sampleRow is one of the next batch's messages with its step's number (from 1).
type sampleRow struct {
	N int
	schedules.Message
}

// batchRow is one of the schedule's latest batches as the page shows it.
type batchRow struct {
	schedules.Batch
	// Result is its outcome, or "sent" once an opened batch's bulk send ran (BulkID): the
	// key of the outcome's words.
	Result string
	// State is what its approval's state reads now ("" without an approval).
	State approval.State
	// Plan, Bulk and Send are its skips by reason: the schedule plan's (invoices, by Skips'
	// JSON names), the bulk send's when it opened and the send's (drafts, by their reasons'
	// names, the most first).
	Plan, Bulk, Send []skipRow
}

type scheduleView struct {
	S     schedules.Schedule
	Steps []stepRow
	// Batches are its latest batches, newest first, Shown at most (schedules.LatestShown).
	Batches []batchRow
	Shown   int
	// Back is the schedules page's link.
	Back string
	// Plan is the next business day's batch, computed on request only (?preview=next; nil
	// otherwise, and PreviewHref asks for it); IfResumed: the schedule is paused, and Plan is
	// what its batch would be were it resumed (a paused schedule's own plan skips everything).
	Plan        *schedules.DayPlan
	PreviewHref string
	IfResumed   bool
	// Ended: the schedule's end date is past: it cannot be resumed.
	Ended   bool
	Skips   []skipRow
	Samples []sampleRow
	// Pause and Resume are the forms the reader may send (nil: none); ResumeNeedsApprover: the
	// schedule is paused and the reader may pause but not resume it.
	Pause, Resume       *scheduleFormView
	ResumeNeedsApprover bool
	// ResumeNeedsPreview: the reader may resume, once the next batch is shown (the form's
	// confirmation is that the reader read it).
	ResumeNeedsPreview bool
}

// readSchedule reads a schedule (?id=), its latest batches with their approvals, its next
// business day's batch when asked (?preview=next), and the forms the reader may send.
func (p *Pages) readSchedule(ctx context.Context, r *http.Request, d *pageData) error {
	id := r.URL.Query().Get("id")
	if !schedules.ValidID(id) {
		return badParam("id", "must be a schedule id, as the schedules page links it: "+ident.Describe(schedules.IDPrefix))
	}
	s, err := schedules.Get(ctx, p.schedules, id)
	if errors.Is(err, schedules.ErrNotFound) {
		return &failure.Error{Code: codeNotFound, Field: "id", Message: "names no schedule"}
	}
	if err != nil {
		return err
	}
	now := p.now()
	today := s.Today(now)
	next := p.calendar.AddBusinessDays(today, 1)
	planned := s
	v := &scheduleView{S: s, Ended: s.Ended(today), Back: withLang(r, SchedulesPath), Shown: schedules.LatestShown}
	for i, st := range s.Steps {
		v.Steps = append(v.Steps, stepRow{N: i + 1, StepSpec: st})
	}
	if s.State == schedules.Paused && !v.Ended {
		planned.State, v.IfResumed = schedules.Active, true
	}
	batches, err := schedules.LatestBatches(ctx, p.schedules, s.ID, schedules.LatestShown)
	if err != nil {
		return err
	}
	for _, b := range batches {
		v.Batches = append(v.Batches, batchRowOf(b, now))
	}
	// The plan reads the whole audience (seconds at 100 000 open invoices): only on request.
	switch r.URL.Query().Get("preview") {
	case "":
		v.PreviewHref = linkWith(r, SchedulePath, url.Values{"id": {s.ID}, "preview": {"next"}})
	case "next":
		if v.Plan, err = schedules.Plan(ctx, p.schedules, planned, next, now); err != nil {
			return err
		}
		v.Skips = skipRows(v.Plan.Skipped)
		for _, m := range v.Plan.Messages[:min(len(v.Plan.Messages), planSamples)] {
			v.Samples = append(v.Samples, sampleRow{N: m.Step + 1, Message: m})
		}
	default:
		return badParam("preview", "must be next, or left out")
	}
	pr := d.Session.Principal
	switch {
	case s.State == schedules.Active && may(pr, pauseSchedules) && p.servedContract(p.pauseTool) != nil:
		v.Pause = &scheduleFormView{Action: withLang(r, SchedulePausePath), Key: newKey()}
	case s.State == schedules.Paused && !v.Ended && may(pr, resumeSchedules) && p.servedContract(p.resumeTool) != nil && v.Plan == nil:
		v.ResumeNeedsPreview = true
	case s.State == schedules.Paused && !v.Ended && may(pr, resumeSchedules) && p.servedContract(p.resumeTool) != nil:
		v.Resume = &scheduleFormView{Action: withLang(r, ScheduleResumePath), Key: newKey()}
	case s.State == schedules.Paused && !v.Ended && may(pr, pauseSchedules):
		v.ResumeNeedsApprover = true
	}
	d.View = v
	return nil
}

// skipRows are the plan's skips that happened, in the order docs/schedules.md gives the
// reasons (the first that applies is the one counted), by Skips' JSON names.
func skipRows(s schedules.Skips) []skipRow {
	var out []skipRow
	for _, r := range []skipRow{{"paid", s.Paid}, {"void", s.Void}, {"writtenOff", s.WrittenOff}, {"disputed", s.Disputed},
		{"promisePending", s.PromisePending}, {"noContact", s.NoContact}, {"doNotContact", s.DoNotContact},
		{"customerPaused", s.CustomerPaused}, {"capCustomer", s.CapCustomer}, {"capBatch", s.CapBatch},
		{"pastEndDate", s.PastEndDate}, {"schedulePaused", s.SchedulePaused}} {
		if r.N > 0 {
			out = append(out, r)
		}
	}
	return out
}

// batchRowOf is b as the page shows it at now.
func batchRowOf(b schedules.Batch, now time.Time) batchRow {
	row := batchRow{Batch: b, Result: b.Outcome, Plan: skipRows(b.Skipped.Plan), Bulk: countRows(b.Skipped.Bulk), Send: countRows(b.Skipped.Send)}
	if b.Outcome == schedules.BatchOpened && b.BulkID != "" {
		row.Result = batchSent
	}
	if b.ApprovalState != "" {
		row.State = approval.StateAt(approval.State(b.ApprovalState), b.ApprovalExpires, now)
	}
	return row
}

// batchSent is the words' key of an opened batch whose bulk send ran.
const batchSent = "sent"

// countRows are a bulk send's skips by reason (m, keyed by the reasons' JSON names) that
// happened, the most first, then by name.
func countRows(m map[string]int) []skipRow {
	var out []skipRow
	for reason, n := range m {
		if n > 0 {
			out = append(out, skipRow{Reason: reason, N: n})
		}
	}
	slices.SortFunc(out, func(a, b skipRow) int { return cmp.Or(cmp.Compare(b.N, a.N), cmp.Compare(a.Reason, b.Reason)) })
	return out
}

// servedContract is the contract of the tool name the runner serves, nil when none.
func (p *Pages) servedContract(name string) *contract.Contract {
	if p.runner == nil || name == "" {
		return nil
	}
	cs := p.runner.Contracts()
	if i := slices.IndexFunc(cs, func(c *contract.Contract) bool { return c.Name == name }); i >= 0 {
		return cs[i]
	}
	return nil
}

// scheduleAction is a schedule form: its route, the tool it runs, who may send it.
type scheduleAction struct {
	path string
	tool func(*Pages) string
	perm permission
	// code and msg: the refusal of a person lacking perm.
	code failure.Code
	msg  string
	// confirm: the form carries the person's confirmation (confirm=yes), as the tool asks an
	// agent's person in band.
	confirm bool
}

var (
	pauseForm = scheduleAction{path: SchedulePausePath, tool: func(p *Pages) string { return p.pauseTool }, perm: pauseSchedules,
		code: CodePauseRole, msg: "pausing a schedule needs the role " + RoleOperator + " or " + RoleApprover}
	resumeForm = scheduleAction{path: ScheduleResumePath, tool: func(p *Pages) string { return p.resumeTool }, perm: resumeSchedules,
		code: CodeResumeRole, msg: "resuming a schedule needs the role " + RoleApprover, confirm: true}
)

// scheduleForm serves POST a.path (csrf, scheduleId, idempotencyKey, and confirm for resume):
// a person allowed to runs the tool on the schedule through the pipeline, as a call of the
// tool (audited, budgeted), then the schedule's page shows what it became. Anyone else is
// refused (403) and the refusal audited; a resume not confirmed is refused naming confirm,
// and nothing is run.
func (p *Pages) scheduleForm(a scheduleAction) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		c := p.servedContract(a.tool(p))
		if c == nil {
			p.refuse(w, r, http.StatusNotFound, &failure.Error{Code: codeNotFound, Message: "no such page"})
			return
		}
		sess, ok := p.rp.CheckForm(w, r, "POST "+a.path)
		if !ok {
			return
		}
		info := request.From(r.Context())
		info.Subject, info.Client = sess.Principal.Subject, sess.Principal.ClientID
		pr := sess.Principal
		if !may(pr, a.perm) {
			fe := &failure.Error{Code: a.code, Message: a.msg}
			if pr.IsAgent() {
				fe = &failure.Error{Code: CodeConsoleAgent, Message: "an agent's session sees nothing of the console: sign in as a person"}
			}
			if p.refusals != nil {
				p.refusals.Refused(r, auditlog.Event{Name: EventConsoleRefused, Tool: "POST " + a.path, RequestID: info.ID,
					Outcome: auditlog.Denied, FailureCode: string(fe.Code)})
			}
			p.refuse(w, r, http.StatusForbidden, fe)
			return
		}
		id := r.PostFormValue("scheduleId")
		d := newPage(r, func(t *texts) string { return t.Schedules.ScheduleTitle })
		d.Session = sess
		back, backText := withLang(r, SchedulesPath), d.T.Schedules.BackToSchedules
		if schedules.ValidID(id) {
			back, backText = linkWith(r, SchedulePath, url.Values{"id": {id}}), d.T.Schedules.BackToSchedule
		}
		fail := func(fe *failure.Error) {
			d.Refusal = p.refusalOf(d, failure.HTTPStatus(fe.Code), fe)
			d.Refusal.Back, d.Refusal.BackText = back, backText
			p.render(w, r, d.Refusal.Status, d)
		}
		if a.confirm && r.PostFormValue("confirm") != "yes" {
			fail(&failure.Error{Code: failure.InvalidArguments, Field: "confirm",
				Message: "must be ticked: resuming prepares the schedule's batches again, from the next business day on"})
			return
		}
		args, err := json.Marshal(map[string]string{"scheduleId": id, "idempotencyKey": r.PostFormValue("idempotencyKey")})
		if err != nil {
			p.internal(w, r, err)
			return
		}
		// The console is cobranca's own client acting for the person: it holds the tool's
		// scopes; the person's role is what the page decided on, above. A person's call of a
		// high-tier tool runs without the in-band confirmation an agent's asks its person
		// for: the person confirmed here (confirm), on the page showing the next batch.
		caller := *pr
		caller.Scopes = append(slices.Clone(pr.Scopes), c.Permissions...)
		res := p.runner.Do(r.Context(), pipeline.Call{Principal: &caller, RequestID: info.ID, Tool: c.Name, Args: args})
		switch res.Kind {
		case pipeline.Complete:
			http.Redirect(w, r, back, http.StatusSeeOther)
			return
		case pipeline.Denied:
			p.internal(w, r, errors.New("schedule form: the tool denied the page's scopes"))
			return
		}
		if su, ok := errors.AsType[*auth.StepUpError](res.Err); ok {
			http.Redirect(w, r, signin.SignInURL(back, &su.Required), http.StatusSeeOther)
			return
		}
		fe := res.Err
		if fe == nil {
			fe = &failure.Error{Code: failure.Internal, Message: "internal error (ref " + info.ID + ")"}
		}
		fail(fe)
	}
}
