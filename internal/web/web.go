// Package web is cobranca's pages for people: sign-in (internal/signin's relying party) and the
// approval page, where a signed-in person approves or rejects a critical call an agent asked
// for. Pages are server-rendered (html/template), work without JavaScript, and speak English
// and Brazilian Portuguese (Accept-Language, or ?lang=).
//
// The package is the HTTP surface only: who may decide, and the decision itself, are
// approval.Decider's (DecideAs, the check the CLI runs too); sessions, CSRF tokens and the
// step-up round trip are internal/signin's. It lives apart from internal/approval so that the
// domain package keeps no HTTP, templates or sessions, and apart from internal/signin so that
// sign-in serves the pages to come (an operations console) as well.
package web

import (
	"bytes"
	"context"
	"crypto/sha256"
	_ "embed"
	"encoding/base64"
	"errors"
	"fmt"
	"html/template"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/cobranca/cobranca/internal/approval"
	"github.com/cobranca/cobranca/internal/auditlog"
	"github.com/cobranca/cobranca/internal/auth"
	"github.com/cobranca/cobranca/internal/calendar"
	"github.com/cobranca/cobranca/internal/contract"
	"github.com/cobranca/cobranca/internal/failure"
	"github.com/cobranca/cobranca/internal/ident"
	"github.com/cobranca/cobranca/internal/limits"
	"github.com/cobranca/cobranca/internal/pix"
	"github.com/cobranca/cobranca/internal/request"
	"github.com/cobranca/cobranca/internal/signin"
	"github.com/cobranca/cobranca/internal/store"
)

// ApprovalPattern is the approval page's route (GET shows it, POST decides).
const ApprovalPattern = "/approvals/{id}"

// codeNotFound answers a path the pages do not have.
const codeNotFound failure.Code = "not_found"

//go:embed style.css
var css string

//go:embed page.html
var pageHTML string

// layout is the pages' templates (page.html), never executed itself: the other pages execute
// pageTemplate, its copy, and each console page a copy with its content (consoleTemplates).
// Each is parsed when a page first needs it, not when the process starts: a replica that
// serves only MCP never holds them (1.7 MB of parse trees, which a collector paced at
// GOGC 400 multiplies into about 8 MB of heap under load; docs/benchmarks.md, issue 31).
// TestTemplatesParse parses every one.
var layout = sync.OnceValue(func() *template.Template {
	return template.Must(template.New("").Funcs(template.FuncMap{
		"iso": func(t time.Time) string { return t.UTC().Format(time.RFC3339) },
		// seconds is n seconds, for texts.Age.
		"seconds": func(n int) time.Duration { return time.Duration(n) * time.Second },
	}).Parse(pageHTML))
})

var pageTemplate = sync.OnceValue(func() *template.Template { return template.Must(layout().Clone()) })

// Config is what the pages need.
type Config struct {
	// Signin configures sign-in; its Refuse is the pages' (set by New).
	Signin signin.Config
	// Decider decides approvals (its Store and DB also read them).
	Decider *approval.Decider
	// Admin runs the forbidden tools people run on the write-off page (WriteOffsPath); nil:
	// no such page.
	Admin Admin
	// WriteOffTool is the forbidden tool the write-off page runs
	// (collections.write_off_invoice): the pages name no tool of their own.
	WriteOffTool string
	// Ledger, when set, says what the receivables ledger holds now of the invoices action a is
	// about ("" when it is about none): the page reads it each time it is shown, beside the
	// preview written when the call was asked for.
	Ledger func(ctx context.Context, a *approval.Action) (string, error)
	// Tools lists the contracts of the tools served over MCP, for the console's tools page
	// (with Admin's forbidden ones); nil with a nil Admin: no tools page.
	Tools func() []*contract.Contract
	// Budgets are the rate limits the tools page says each call spends; nil: not shown.
	Budgets *limits.Policies
	// Runner runs MatchPaymentTool (collections.match_payment) for the console's payments
	// page, as a call of the tool; nil: the page offers no matching.
	Runner           Runner
	MatchPaymentTool string
	// Health reads the operator metrics for the console's health page; nil: no such page.
	Health HealthReader
	// Charts, with Health, draws the health page's charts; nil: none.
	Charts *Charts
	// Customers is the store the console's customers pages read (customers, their drafts and
	// sends); Outbox, the one its outbox page reads (the sent drafts, the bulk sends, the
	// outbox's depth). nil: no such page.
	Customers, Outbox store.Querier
	// Audit is the audit log the console's trail page reads, verifies and exports; nil: no
	// such page.
	Audit *auditlog.Log
	// Imports is the store the console's import page imports files into, auditing each
	// import in Audit; nil (or a nil Audit): no such page.
	Imports store.DB
	// Schedules is the store the console's schedules pages read (the schedules, and the ledger
	// their next batch is planned from); nil: no such page. Runner runs PauseScheduleTool and
	// ResumeScheduleTool (collections.pause_schedule, resume_schedule) for their forms; a
	// form whose tool is not served is not offered.
	Schedules                             store.Querier
	PauseScheduleTool, ResumeScheduleTool string
	Logger                                *slog.Logger
}

// Pages serves the pages.
type Pages struct {
	rp      *signin.RP
	decider *approval.Decider
	admin   Admin
	// writeOffTool is Config.WriteOffTool.
	writeOffTool string
	ledger       func(ctx context.Context, a *approval.Action) (string, error)
	tools        func() []*contract.Contract
	budgets      *limits.Policies
	health       HealthReader
	charts       Charts
	ledgerMemo   *ledgerMemo // nil: no ledger charts
	customers    store.Querier
	outbox       store.Querier
	audit        *auditlog.Log
	imports      store.DB
	runner       Runner
	matchTool    string
	schedules    store.Querier
	pauseTool    string
	resumeTool   string
	calendar     *calendar.Calendar
	refusals     signin.Refusals
	console      []*consolePage
	clock        func() time.Time
	log          *slog.Logger
	csp          string
	mux          *http.ServeMux
}

// New returns the pages' handler.
func New(cfg Config) (*Pages, error) {
	if cfg.Decider == nil {
		return nil, errors.New("web: a Decider is required")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	p := &Pages{decider: cfg.Decider, admin: cfg.Admin, writeOffTool: cfg.WriteOffTool, ledger: cfg.Ledger, tools: cfg.Tools,
		budgets: cfg.Budgets, health: cfg.Health, customers: cfg.Customers, outbox: cfg.Outbox, audit: cfg.Audit, imports: cfg.Imports, runner: cfg.Runner, matchTool: cfg.MatchPaymentTool,
		schedules: cfg.Schedules, pauseTool: cfg.PauseScheduleTool, resumeTool: cfg.ResumeScheduleTool,
		refusals: cfg.Signin.Refusals, clock: cfg.Signin.Now, log: cfg.Logger}
	if cfg.Schedules != nil {
		p.calendar = calendar.Brazil()
	}
	cfg.Signin.Refuse = p.refuse
	if cfg.Signin.Logger == nil {
		cfg.Signin.Logger = cfg.Logger
	}
	rp, err := signin.New(cfg.Signin)
	if err != nil {
		return nil, err
	}
	p.rp = rp
	if cfg.Charts != nil {
		p.charts = *cfg.Charts
		if p.charts.Ledger != nil {
			p.ledgerMemo = newLedgerMemo(p.charts.Ledger, p.now, p.log)
		}
	}
	p.csp = csp(cfg.Signin.Issuer, cfg.Signin.PublicURL)
	mux := http.NewServeMux()
	mux.Handle("GET "+signin.SignInPath, rp.SignIn())
	mux.Handle("GET "+signin.CallbackPath, rp.Callback())
	mux.Handle("POST "+signin.SignOutPath, rp.SignOut())
	mux.HandleFunc("GET "+ApprovalPattern, p.show)
	mux.HandleFunc("POST "+ApprovalPattern, p.decide)
	if cfg.Admin != nil {
		mux.HandleFunc("GET "+WriteOffsPath, p.showWriteOff)
		mux.HandleFunc("POST "+WriteOffsPath, p.runWriteOff)
	}
	p.console = p.consolePages(cfg)
	for _, cp := range p.console {
		mux.HandleFunc("GET "+cp.path, p.serveConsole(cp))
	}
	if cfg.Audit != nil {
		mux.HandleFunc("POST "+AuditPath, p.verifyAuditChain)
		mux.HandleFunc("GET "+AuditExportPath, p.exportAudit)
	}
	mux.HandleFunc("POST "+MatchPath, p.runMatch)
	if p.pageAt(ImportPath) != nil {
		mux.HandleFunc("POST "+ImportPath, p.runImport)
	}
	if cfg.Schedules != nil {
		mux.HandleFunc("POST "+SchedulePausePath, p.scheduleForm(pauseForm))
		mux.HandleFunc("POST "+ScheduleResumePath, p.scheduleForm(resumeForm))
	}
	// Any other path under the console, a page not built yet among them, is no page.
	mux.HandleFunc(ConsolePath+"/", func(w http.ResponseWriter, r *http.Request) {
		p.refuse(w, r, http.StatusNotFound, &failure.Error{Code: codeNotFound, Message: "no such page"})
	})
	p.mux = mux
	return p, nil
}

// csp is the pages' Content-Security-Policy: nothing but the one inline style (by its hash);
// no script at all; forms post only here — and, when the issuer is another origin, there,
// because a form whose answer redirects to the issuer (a step-up) is held to form-action all
// along the redirect chain; no framing.
func csp(issuer, public string) string {
	sum := sha256.Sum256([]byte(css))
	formAction := "'self'"
	if o := origin(issuer); o != "" && o != origin(public) {
		formAction += " " + o
	}
	return "default-src 'none'; style-src 'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'; form-action " + formAction +
		"; frame-ancestors 'none'; base-uri 'none'"
}

func origin(s string) string {
	u, err := url.Parse(s)
	if err != nil || u.Host == "" {
		return ""
	}
	return u.Scheme + "://" + u.Host
}

// ServeHTTP serves signin's paths, ApprovalPattern, WriteOffsPath and the console, with the security headers on every answer.
// The referrer policy is same-origin, not no-referrer: under no-referrer a browser sends a
// form's POST with "Origin: null" (Fetch's origin serialization), which the Origin guard in
// front of /admin refuses (the write-off form); same-origin still sends no referrer to another
// site, as the development sign-in page does (authserver).
func (p *Pages) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Security-Policy", p.csp)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Cache-Control", "no-store")
	h.Set("Referrer-Policy", "same-origin")
	p.mux.ServeHTTP(w, r)
}

// langLink is one entry of the language switch.
type langLink struct {
	Tag, Name, Href string
	Current         bool
}

// refusal is a refusal as a page shows it.
type refusal struct {
	Status           int
	Code             failure.Code
	Headline, Detail string
	SignIn, Back     string // links: sign in and come back; back to the approval
	BackText         string // what Back says
}

type pageData struct {
	Lang    string
	T       *texts
	CSS     template.CSS
	Title   string
	Langs   []langLink
	Here    string // this page's local path, with ?lang= when chosen
	Session *signin.Session
	Action  *approval.Action
	StepUp  string
	// Roles are those deciding the action needs (any one); LacksRole says the signed-in
	// person holds none of them, and the page then shows no buttons (the POST is checked
	// all the same, by DecideAs).
	Roles     []string
	LacksRole bool
	// IsAgent: an agent signed in; it sees no buttons (DecideAs refuses it all the same).
	IsAgent bool
	// Withheld: the preview and the side effects (customer data) are not shown, because the
	// signed-in identity can neither decide the call nor is the person it was asked for.
	Withheld bool
	// Ledger is what the receivables ledger says now of the call's invoices ("" when nothing).
	Ledger string
	// QR draws each PIX code (BR Code) the preview carries as a QR code, in the preview's
	// order: the approver sees the very code the customer will scan.
	QR      []template.HTML
	Refusal *refusal
	// WriteOff is the write-off page's form (and, once done, the write-off).
	WriteOff *writeOffForm
	// Console is a console page's header (navigation), View the page's own data, which its
	// template ("content") reads.
	Console *consoleData
	View    any
}

// ApprovalHref is the approval page of id, in the page's language when it is not the
// default: the links the console's pages (inbox, outbox, schedule) make to an approval.
func (d *pageData) ApprovalHref(id string) string {
	if d.Lang == english.Tag {
		return "/approvals/" + id
	}
	return "/approvals/" + id + "?" + url.Values{"lang": {d.Lang}}.Encode()
}

// newPage starts a page for r in its language.
func newPage(r *http.Request, title func(*texts) string) *pageData {
	q := r.URL.Query()
	t := pick(q.Get("lang"), r.Header.Get("Accept-Language"))
	d := &pageData{Lang: t.Tag, T: t, CSS: template.CSS(css), Title: title(t), Here: r.URL.Path}
	if q.Get("lang") != "" {
		d.Here += "?" + url.Values{"lang": {t.Tag}}.Encode()
	}
	for i := range supported {
		s := &supported[i]
		d.Langs = append(d.Langs, langLink{Tag: s.Tag, Name: s.Name, Current: s == t,
			Href: r.URL.Path + "?" + url.Values{"lang": {s.Tag}}.Encode()})
	}
	return d
}

func (p *Pages) render(w http.ResponseWriter, r *http.Request, status int, d *pageData) {
	p.renderWith(w, r, pageTemplate(), status, d)
}

// renderWith renders d with t: the layout with a console page's content, or the others'.
func (p *Pages) renderWith(w http.ResponseWriter, r *http.Request, t *template.Template, status int, d *pageData) {
	var b bytes.Buffer
	if err := t.ExecuteTemplate(&b, "page", d); err != nil {
		p.log.ErrorContext(r.Context(), "page failed to render", slog.Any("err", err))
		http.Error(w, "internal error (ref "+request.From(r.Context()).ID+")", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write(b.Bytes())
}

// refuse renders a refusal: what happened in the reader's language, and the stable code,
// field and message (fe.Text()) beside it. It is signin's Refuser too.
func (p *Pages) refuse(w http.ResponseWriter, r *http.Request, status int, fe *failure.Error) {
	d := newPage(r, func(t *texts) string { return t.RefusalTitle })
	d.Refusal = p.refusalOf(d, status, fe)
	if r.URL.Path == signin.SignInPath && fe.Code == signin.CodeCrossOrigin {
		// A sign-in another site started: the same sign-in, from this page, is this site's.
		d.Refusal.SignIn = r.URL.RequestURI()
	}
	p.render(w, r, status, d)
}

// refusalOf is fe as page d shows it, with the links that help: sign in (as someone else) and
// come back, or back to the page the refused form was on.
func (p *Pages) refusalOf(d *pageData, status int, fe *failure.Error) *refusal {
	headline, ok := d.T.Codes[fe.Code]
	if !ok {
		headline = d.T.Unknown
	}
	ref := &refusal{Status: status, Code: fe.Code, Headline: headline, Detail: fe.Text()}
	switch fe.Code {
	case signin.CodeNotSignedIn, approval.CodeApproverIsAgent, approval.CodeApproverIsRequester, approval.CodeApproverLacksRole,
		failure.PersonRequired, failure.PersonLacksRole:
		// Sign in (as someone else) and come back to this page.
		ref.SignIn = signin.SignInURL(d.Here, nil)
	}
	switch {
	case strings.HasPrefix(d.Here, "/approvals/") && fe.Code != approval.CodeNotFound:
		ref.Back, ref.BackText = d.Here, d.T.BackToApproval
	case strings.HasPrefix(d.Here, WriteOffsPath) && d.WriteOff == nil:
		ref.Back, ref.BackText = d.Here, d.T.BackToWriteOff
	}
	return ref
}

// validID reports whether id can name an approval; another one is refused before sign-in.
func validID(id string) bool { return ident.Valid(approval.Prefix, id) }

// signedIn returns the request's session, sending the browser to sign in (and back) when it
// has none — from a link on another site, showing the sign-in link instead; false: answered.
func (p *Pages) signedIn(w http.ResponseWriter, r *http.Request, here string) (*signin.Session, bool) {
	sess, err := p.rp.Session(r)
	if err != nil {
		p.internal(w, r, err)
		return nil, false
	}
	if sess == nil {
		if signin.CrossSite(r) {
			// A link on another site (a webmail's): /signin refuses a sign-in that site's
			// redirect would start, so the person follows the sign-in link on this page.
			p.refuse(w, r, http.StatusUnauthorized, &failure.Error{Code: signin.CodeNotSignedIn, Message: "sign in to see this page"})
			return nil, false
		}
		http.Redirect(w, r, signin.SignInURL(here, nil), http.StatusSeeOther)
		return nil, false
	}
	info := request.From(r.Context())
	info.Subject, info.Client = sess.Principal.Subject, sess.Principal.ClientID
	return sess, true
}

// show serves GET /approvals/{id}: the approval, for a signed-in person.
func (p *Pages) show(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if !validID(id) {
		p.refuse(w, r, http.StatusNotFound, &failure.Error{Code: approval.CodeNotFound, Field: "id", Message: "names no approval"})
		return
	}
	d := newPage(r, func(t *texts) string { return t.ApprovalTitle })
	sess, ok := p.signedIn(w, r, d.Here)
	if !ok {
		return
	}
	a, err := p.decider.Store.Get(r.Context(), p.decider.DB, id)
	if errors.Is(err, approval.ErrNotFound) {
		p.refuse(w, r, http.StatusNotFound, &failure.Error{Code: approval.CodeNotFound, Field: "id", Message: "names no approval"})
		return
	}
	if err != nil {
		p.internal(w, r, err)
		return
	}
	d.Session, d.Action = sess, a
	d.Console = p.consoleHeader(r, d, nil)
	if su, ok := p.decider.StepUpFor(a.Tool); ok {
		d.StepUp = su.Message()
	}
	d.Roles = p.decider.RolesFor(a.Tool)
	d.LacksRole = !sess.Principal.HasAnyRole(d.Roles)
	d.IsAgent = sess.Principal.IsAgent()
	// Only what the decision needs, to whom it concerns: a person who may decide (one of the
	// roles) and the person the call was asked for see the preview and the side effects; an
	// agent, or another person without the role, sees who asked and the state, not the content.
	d.Withheld = d.IsAgent || d.LacksRole && sess.Principal.Subject != a.Requester.Subject
	if !d.Withheld && p.ledger != nil {
		if d.Ledger, err = p.ledger(r.Context(), a); err != nil {
			p.internal(w, r, err)
			return
		}
	}
	if !d.Withheld {
		if d.QR, err = qrCodes(a.Preview); err != nil {
			p.internal(w, r, err)
			return
		}
	}
	p.render(w, r, http.StatusOK, d)
}

// statusOf is the HTTP status of a decision's refusal.
var statusOf = map[failure.Code]int{
	approval.CodeApproverIsAgent:           http.StatusForbidden,
	approval.CodeApproverIsRequester:       http.StatusForbidden,
	approval.CodeApproverLacksRole:         http.StatusForbidden,
	failure.InsufficientUserAuthentication: http.StatusForbidden,
	approval.CodeDecided:                   http.StatusConflict,
	approval.CodeNotFound:                  http.StatusNotFound,
}

// decide serves POST /approvals/{id} (decision=approve|reject, csrf): the signed-in person
// decides through approval.Decider.DecideAs. A session that fails the contract's step-up is
// sent to sign in again as it demands (acr_values, max_age, prompt=login), then back to the
// page, where the person decides again.
func (p *Pages) decide(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	sess, ok := p.rp.CheckForm(w, r, "POST "+ApprovalPattern)
	if !ok {
		return
	}
	info := request.From(r.Context())
	info.Subject, info.Client = sess.Principal.Subject, sess.Principal.ClientID
	var approve bool
	switch r.PostFormValue("decision") {
	case "approve":
		approve = true
	case "reject":
	default:
		p.refuse(w, r, http.StatusBadRequest, &failure.Error{Code: signin.CodeInvalidRequest, Field: "decision", Message: `must be "approve" or "reject"`})
		return
	}
	here := newPage(r, func(t *texts) string { return "" }).Here
	_, err := p.decider.DecideAs(r.Context(), id, sess.Principal, approve)
	if err == nil {
		http.Redirect(w, r, here, http.StatusSeeOther)
		return
	}
	if su, ok := errors.AsType[*auth.StepUpError](err); ok {
		http.Redirect(w, r, signin.SignInURL(here, &su.Required), http.StatusSeeOther)
		return
	}
	if fe, ok := failure.As(err); ok {
		status, known := statusOf[fe.Code]
		if !known {
			status = http.StatusForbidden
		}
		p.refuse(w, r, status, fe)
		return
	}
	p.internal(w, r, err)
}

func (p *Pages) internal(w http.ResponseWriter, r *http.Request, err error) {
	ref := request.From(r.Context()).ID
	p.log.ErrorContext(r.Context(), "page failed", slog.String("ref", ref), slog.Any("err", err))
	p.refuse(w, r, http.StatusInternalServerError, &failure.Error{Code: failure.Internal, Message: fmt.Sprintf("internal error (ref %s)", ref)})
}

// qrCodes draws the PIX codes in preview, each once, as inline SVG: markup, not a fetch, so the pages'
// Content-Security-Policy (default-src 'none') stands. pix.QRSVG writes it from the code's
// modules alone; no text of the preview reaches it but the code, whose CRC pix.Codes checked.
func qrCodes(preview string) ([]template.HTML, error) {
	var out []template.HTML
	seen := map[string]bool{}
	for _, code := range pix.Codes(preview) {
		if seen[code] { // the preview shows it twice: its PIX line and the body's
			continue
		}
		seen[code] = true
		svg, err := pix.QRSVG(code)
		if err != nil {
			return nil, fmt.Errorf("web: draw the PIX code: %w", err)
		}
		out = append(out, template.HTML(svg)) //nolint:gosec // our own SVG, drawn from the code's modules
	}
	return out, nil
}
