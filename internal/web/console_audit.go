package web

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/cobranca/cobranca/internal/auditlog"
	"github.com/cobranca/cobranca/internal/contract"
	"github.com/cobranca/cobranca/internal/failure"
	"github.com/cobranca/cobranca/internal/request"
	"github.com/cobranca/cobranca/internal/signin"
)

// The audit trail's routes: GET AuditPath shows the trail (POST verifies the chain, from its
// form); GET AuditExportPath downloads the events the same filters pick as JSON Lines
// (auditlog.Export), which `cobranca audit verify --file` checks offline.
const (
	AuditPath       = "/console/audit"
	AuditExportPath = "/console/audit/export"
)

// The console's audit events of the trail's actions.
const (
	// EventAuditVerified: a person verified the audit chain from the trail page; its details
	// count the events that verified (events) and name the first problem's seq (brokenAt).
	EventAuditVerified = "web.console.audit.verified"
	// EventAuditExported: a person downloaded an export of the trail; details: events.
	EventAuditExported = "web.console.audit.exported"
)

// The trail's page size and how many unsealed events the chain's status counts at most.
const (
	auditPageSize = 50
	auditLagLimit = 100_000
)

// trailTime is how the time filters are written: an <input type="datetime-local">'s value,
// in Brasília's time; a date alone is its midnight.
const (
	trailTime = "2006-01-02T15:04"
	trailDate = "2006-01-02"
)

// auditOutcomes are the outcomes the trail's filter offers.
var auditOutcomes = []auditlog.Outcome{auditlog.Allowed, auditlog.Rejected, auditlog.Denied, auditlog.RateLimited, auditlog.Failed,
	auditlog.InputRequired, auditlog.Replayed, auditlog.Unchanged, auditlog.DryRun, auditlog.Incomplete}

// auditTiers are the risk tiers the trail's filter offers.
var auditTiers = []contract.Risk{contract.Low, contract.Medium, contract.High, contract.Critical, contract.Forbidden}

// trailForm is the trail's filters as the query says them (strings, as typed).
type trailForm struct {
	Tool, Risk, Outcome, Subject, Actor, ClientID, Since, Until string
}

// auditView is the trail page.
type auditView struct {
	Form     trailForm
	Tiers    []contract.Risk
	Outcomes []auditlog.Outcome
	Events   []auditlog.Event
	// Next and First link to the next (older) page and back to the first; Through, when the
	// page was cut at the scan's bound, is how far back it searched.
	Next, First string
	Through     time.Time
	// Export downloads what the filters pick; Self is this page with its filters (the verify
	// form posts there).
	Export, Self string
	// Lag is the chain's status: the events not sealed yet, and how long the oldest waited.
	Lag    auditlog.Lag
	LagAge time.Duration
	// MayVerify: the signed-in person may verify the chain (verifyAudit); Verified is its
	// report, once verified.
	MayVerify bool
	Verified  *auditlog.Report
}

// trailFilter reads the trail's filters from q, each bad one a failure naming its field.
func trailFilter(q url.Values) (auditlog.TrailFilter, trailForm, error) {
	form := trailForm{Tool: q.Get("tool"), Risk: q.Get("risk"), Outcome: q.Get("outcome"), Subject: q.Get("subject"),
		Actor: q.Get("actor"), ClientID: q.Get("clientId"), Since: q.Get("since"), Until: q.Get("until")}
	f := auditlog.TrailFilter{Tool: form.Tool, Risk: form.Risk, Outcome: auditlog.Outcome(form.Outcome), Subject: form.Subject,
		Actor: form.Actor, ClientID: form.ClientID}
	bad := func(field, msg string) error {
		return &failure.Error{Code: failure.InvalidArguments, Field: field, Message: msg}
	}
	// Each field checked alone by the filter's own rules, so that the failure names it.
	for _, c := range [...]struct {
		field string
		f     auditlog.TrailFilter
	}{{"tool", auditlog.TrailFilter{Tool: f.Tool}}, {"risk", auditlog.TrailFilter{Risk: f.Risk}},
		{"outcome", auditlog.TrailFilter{Outcome: f.Outcome}}, {"subject", auditlog.TrailFilter{Subject: f.Subject}},
		{"actor", auditlog.TrailFilter{Actor: f.Actor}}, {"clientId", auditlog.TrailFilter{ClientID: f.ClientID}}} {
		if err := c.f.Check(); err != nil {
			return f, form, bad(c.field, err.Error())
		}
	}
	if f.Risk != "" && !knownTier(contract.Risk(f.Risk)) {
		return f, form, bad("risk", fmt.Sprintf("must be one of %v", auditTiers))
	}
	var err error
	if f.Since, err = parseTrailTime(form.Since); err != nil {
		return f, form, bad("since", err.Error())
	}
	if f.Until, err = parseTrailTime(form.Until); err != nil {
		return f, form, bad("until", err.Error())
	}
	if !f.Since.IsZero() && !f.Until.IsZero() && !f.Since.Before(f.Until) {
		return f, form, bad("until", "must be after since")
	}
	return f, form, nil
}

func knownTier(r contract.Risk) bool {
	for _, t := range auditTiers {
		if t == r {
			return true
		}
	}
	return false
}

// parseTrailTime reads a time filter ("": none), in Brasília's time.
func parseTrailTime(s string) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	layout := trailTime
	if len(s) == len(trailDate) {
		layout = trailDate
	}
	t, err := time.ParseInLocation(layout, s, brasilia)
	if err != nil || t.Year() < 2000 || t.Year() > 9999 {
		return time.Time{}, errors.New(`must be a date and time as "2026-12-02T09:45" (Brasília's time) or a date as "2026-12-02"`)
	}
	return t, nil
}

// readAudit reads the trail page: a page of the events the filters pick, newest first (keyset:
// ?after= the page's cursor), and the chain's status.
func (p *Pages) readAudit(ctx context.Context, r *http.Request, d *pageData) error {
	q := r.URL.Query()
	f, form, err := trailFilter(q)
	if err != nil {
		return err
	}
	after := q.Get("after")
	page, err := p.audit.Trail(ctx, f, after, auditPageSize)
	if errors.Is(err, auditlog.ErrBadCursor) {
		return &failure.Error{Code: failure.InvalidArguments, Field: "after", Message: "must be a place in the trail, as the page's own link writes it"}
	}
	if err != nil {
		return err
	}
	v := &auditView{Form: form, Tiers: auditTiers, Outcomes: auditOutcomes, Events: page.Events, MayVerify: may(d.Session.Principal, verifyAudit)}
	filters := form.values()
	if page.Next != "" {
		next := form.values()
		next.Set("after", page.Next)
		v.Next = pageLink(r, next)
		if len(page.Events) < auditPageSize {
			v.Through = page.Through
		}
	}
	if after != "" {
		v.First = linkTo(r, AuditPath, filters)
	}
	v.Self = linkTo(r, AuditPath, filters)
	v.Export = linkTo(r, AuditExportPath, form.values())
	if v.Lag, err = p.audit.Lag(ctx, auditLagLimit); err != nil {
		return err
	}
	if !v.Lag.Oldest.IsZero() {
		v.LagAge = max(p.now().Sub(v.Lag.Oldest), 0)
	}
	d.View = v
	return nil
}

// values are the filters set, as a query.
func (f trailForm) values() url.Values {
	q := url.Values{}
	for k, v := range map[string]string{"tool": f.Tool, "risk": f.Risk, "outcome": f.Outcome, "subject": f.Subject, "actor": f.Actor,
		"clientId": f.ClientID, "since": f.Since, "until": f.Until} {
		if v != "" {
			q.Set(k, v)
		}
	}
	return q
}

// linkTo is path with q and the chosen language.
func linkTo(r *http.Request, path string, q url.Values) string {
	u := *r
	u.URL = &url.URL{Path: path, RawQuery: r.URL.RawQuery}
	return pageLink(&u, q)
}

// auditPage is the trail's console page, nil when the console has none.
func (p *Pages) auditPage() *consolePage { return p.pageAt(AuditPath) }

// pageAt is the console's page at path, nil when the console has none.
func (p *Pages) pageAt(path string) *consolePage {
	for _, cp := range p.console {
		if cp.path == path {
			return cp
		}
	}
	return nil
}

// admitConsole starts a console answer for r (not a page of the navigation: the trail's
// verify and export, the import form): the signed-in person holding perm, else a refusal,
// audited as EventConsoleRefused of route (false: answered).
func (p *Pages) admitConsole(w http.ResponseWriter, r *http.Request, sess *signin.Session, perm permission, route string) bool {
	pr := sess.Principal
	var fe *failure.Error
	switch {
	case pr.IsAgent():
		fe = &failure.Error{Code: CodeConsoleAgent, Message: "an agent's session sees nothing of the console: sign in as a person"}
	case !may(pr, readConsole):
		fe = &failure.Error{Code: CodeConsoleRole, Message: "the console needs one of the roles " + strings.Join(Roles, ", ")}
	case !may(pr, perm) && perm == importFiles:
		fe = &failure.Error{Code: CodeOperatorRequired, Message: "importing a file needs the role " + RoleOperator}
	case !may(pr, perm):
		fe = &failure.Error{Code: CodeConsoleRole, Message: "verifying the audit chain needs one of the roles " +
			strings.Join([]string{RoleOperator, RoleApprover, RoleWriteOff}, ", ")}
	default:
		return true
	}
	if p.refusals != nil {
		p.refusals.Refused(r, auditlog.Event{Name: EventConsoleRefused, Tool: route, RequestID: request.From(r.Context()).ID,
			Outcome: auditlog.Denied, FailureCode: string(fe.Code)})
	}
	p.refuse(w, r, http.StatusForbidden, fe)
	return false
}

// consoleEvent is the audit event of a console action by the signed-in person.
func consoleEvent(r *http.Request, sess *signin.Session, name, route string) auditlog.Event {
	pr := sess.Principal
	return auditlog.Event{Name: name, Tool: route, Risk: string(contract.Low), Subject: pr.Subject, Actor: pr.Actor, ClientID: pr.ClientID,
		ACR: pr.ACR, RequestID: request.From(r.Context()).ID, Outcome: auditlog.Allowed}
}

// verifyAuditChain serves POST AuditPath (csrf), the trail page's verify form: a person who
// may (verifyAudit: the operator, approver and write-off roles, for it walks the whole chain)
// verifies it (auditlog.Log.Verify, read-only but for sealing what waits), audited as
// EventAuditVerified; the trail page, with the filters of the form's query, shows the report.
func (p *Pages) verifyAuditChain(w http.ResponseWriter, r *http.Request) {
	const route = "POST " + AuditPath
	cp := p.auditPage()
	sess, ok := p.rp.CheckForm(w, r, route)
	if !ok {
		return
	}
	info := request.From(r.Context())
	info.Subject, info.Client = sess.Principal.Subject, sess.Principal.ClientID
	if !p.admitConsole(w, r, sess, verifyAudit, route) {
		return
	}
	d := newPage(r, cp.name)
	d.Session = sess
	d.Console = p.consoleHeader(r, d, cp)
	ctx := r.Context()
	report, err := p.audit.Verify(ctx)
	if err != nil {
		p.internal(w, r, err)
		return
	}
	ev := consoleEvent(r, sess, EventAuditVerified, route)
	ev.Details = map[string]int64{"events": report.Count}
	if report.Problem != nil {
		ev.Details["brokenAt"] = report.Problem.Seq
	}
	if err := p.audit.Record(ctx, ev); err != nil {
		p.internal(w, r, err)
		return
	}
	if err := cp.read(ctx, r, d); err != nil {
		if fe, ok := failure.As(err); ok {
			d.Console = nil
			d.Refusal = p.refusalOf(d, failure.HTTPStatus(fe.Code), fe)
			p.render(w, r, d.Refusal.Status, d)
			return
		}
		p.internal(w, r, err)
		return
	}
	d.View.(*auditView).Verified = &report
	p.renderWith(w, r, cp.tmpl(), http.StatusOK, d)
}

// exportAudit serves GET AuditExportPath: the sealed events the trail's filters pick, as a
// JSON Lines file to download (auditlog.Export), audited as EventAuditExported.
func (p *Pages) exportAudit(w http.ResponseWriter, r *http.Request) {
	const route = "GET " + AuditExportPath
	d := newPage(r, p.auditPage().name)
	sess, ok := p.signedIn(w, r, d.Here)
	if !ok || !p.admitConsole(w, r, sess, readConsole, route) {
		return
	}
	f, _, err := trailFilter(r.URL.Query())
	if err != nil {
		fe, _ := failure.As(err)
		d.Session = sess
		d.Refusal = p.refusalOf(d, failure.HTTPStatus(fe.Code), fe)
		p.render(w, r, d.Refusal.Status, d)
		return
	}
	ctx := r.Context()
	out := &lazyDownload{w: w, name: "cobranca-audit-" + p.now().UTC().Format("20060102T150405Z") + ".jsonl"}
	sum, err := p.audit.Export(ctx, out, f)
	if err != nil {
		if !out.started {
			p.internal(w, r, err)
			return
		}
		// The file is cut before its end line: VerifyFile says so.
		p.log.ErrorContext(ctx, "audit export failed midway", "err", err)
		return
	}
	if !out.started {
		out.start()
	}
	ev := consoleEvent(r, sess, EventAuditExported, route)
	ev.Details = map[string]int64{"events": sum.Events}
	if err := p.audit.Record(ctx, ev); err != nil {
		p.log.ErrorContext(ctx, "audit export: the export's audit event", "err", err)
	}
}

// lazyDownload writes an attachment's headers on its first byte, so that a failure before any
// is still an error page.
type lazyDownload struct {
	w       http.ResponseWriter
	name    string
	started bool
}

func (l *lazyDownload) start() {
	l.started = true
	h := l.w.Header()
	h.Set("Content-Type", "application/jsonl; charset=utf-8")
	h.Set("Content-Disposition", `attachment; filename="`+l.name+`"`)
	l.w.WriteHeader(http.StatusOK)
}

func (l *lazyDownload) Write(b []byte) (int, error) {
	if !l.started {
		l.start()
	}
	return l.w.Write(b)
}

var _ io.Writer = (*lazyDownload)(nil)
