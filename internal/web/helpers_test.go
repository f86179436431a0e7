package web_test

import (
	"context"
	"crypto/sha256"
	"html"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cobranca/cobranca/internal/approval"
	"github.com/cobranca/cobranca/internal/auditlog"
	"github.com/cobranca/cobranca/internal/auth"
	"github.com/cobranca/cobranca/internal/authserver"
	"github.com/cobranca/cobranca/internal/authserver/authservertest"
	"github.com/cobranca/cobranca/internal/clocktest"
	"github.com/cobranca/cobranca/internal/collections"
	"github.com/cobranca/cobranca/internal/contract"
	"github.com/cobranca/cobranca/internal/contract/contracttest"
	"github.com/cobranca/cobranca/internal/idempotency"
	"github.com/cobranca/cobranca/internal/limits"
	"github.com/cobranca/cobranca/internal/mcpapi"
	"github.com/cobranca/cobranca/internal/pgtest"
	"github.com/cobranca/cobranca/internal/pipeline"
	"github.com/cobranca/cobranca/internal/pipeline/pipelinetest"
	"github.com/cobranca/cobranca/internal/reqstate"
	"github.com/cobranca/cobranca/internal/server"
	"github.com/cobranca/cobranca/internal/signin"
	"github.com/cobranca/cobranca/internal/store"
	"github.com/cobranca/cobranca/internal/web"
)

var pg = pgtest.New()

func TestMain(m *testing.M) { pg.Run(m) }

const (
	mfa      = "urn:cobranca:mfa" // COBRANCA_STEPUP_ACR
	tool     = "test.critical"
	selfTool = "test.self_approved" // the requester may approve
	scope    = "test:critical"
	// preview is customer text: the page must show it as text.
	preview = `Lembrete para <b>Cliente & Filhos</b> <script>alert("x")</script> "R$ 1.234,56"`
)

// clock is the test's movable clock: the pages', the sessions', the approvals' and the
// Decider's, and (shifted by skew) the development authorization server's.
type clock struct {
	clocktest.Clock
	skew atomic.Int64
}

func (c *clock) asNow() time.Time { return c.Now().Add(time.Duration(c.skew.Load())) }

// env is cobranca's real route table in development mode — the development authorization
// server and the pages — on a loopback port, over http or https.
type env struct {
	base      string
	auth      *auth.Authenticator
	db        store.DB
	clock     *clock
	approvals *approval.Store
	tls       *http.Client // trusts the https server's certificate; nil over http
	// h is the route table the server serves, to drive in-process.
	h http.Handler
	// refusals counts the refusals of forms and sign-ins for the audit log; a test flushes it.
	refusals *auditlog.Refusals
	// issuerDown makes the issuer's discovery answer 503, as an issuer that is down.
	issuerDown atomic.Bool
	// ledger is what the pages' Ledger says of an approval of tool now (nil: nothing).
	ledger atomic.Pointer[string]
	// health is what the console's health page reads.
	health fakeHealth
	// alog is the audit log (the trail page's), under auditKey.
	alog     *auditlog.Log
	auditKey []byte
}

// fakeHealth is the health page's HealthReader: what it holds, or its error.
type fakeHealth struct {
	h   atomic.Pointer[web.Health]
	err atomic.Pointer[error]
}

func (f *fakeHealth) ReadHealth(context.Context) (web.Health, error) {
	if err := f.err.Load(); err != nil {
		return web.Health{}, *err
	}
	if h := f.h.Load(); h != nil {
		return *h, nil
	}
	return web.Health{}, nil
}

// testAuditKey is every env's audit key.
var testAuditKey = []byte(strings.Repeat("a", auditlog.MinKeyLen))

// budgets are the rate limits the tools page shows.
var budgets = limits.Policies{Principal: limits.Limit{Rate: 1200, Period: time.Minute, Burst: 100},
	Write: limits.Limit{Rate: 30, Period: time.Minute, Burst: 5}, Critical: limits.Limit{Rate: 10, Period: time.Hour, Burst: 3}}

// newEnv starts the environment; each of configure may change the pages' sign-in settings.
func newEnv(t testing.TB, db store.DB, https bool, configure ...func(*signin.Config)) *env {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	scheme := "http"
	if https {
		scheme = "https"
	}
	e := &env{base: scheme + "://" + ln.Addr().String(), db: db, clock: &clock{}}
	log := slog.New(slog.DiscardHandler)
	a, err := auth.New(context.Background(), auth.Config{DataDir: t.TempDir(), BaseURL: e.base, Logger: log, StepUpACR: []string{mfa}, Now: e.clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	e.auth = a
	h, err := mcpapi.New(mcpapi.Options{Logger: log, Scopes: a, Pipeline: pipelinetest.Product(t, pipeline.Options{Logger: log})})
	if err != nil {
		t.Fatal(err)
	}
	as, err := authserver.New(authserver.Options{Auth: a, DB: db, Scopes: []string{scope}, StepUpACR: []string{mfa}, Roles: []string{contracttest.ApproverRole},
		Now: e.clock.asNow, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	if e.approvals, err = approval.New(15*time.Minute, e.clock.Now); err != nil {
		t.Fatal(err)
	}
	critical := contracttest.New(tool, contract.Critical, scope)
	critical.StepUpAuth.MaxAgeSeconds = 300
	self := *contracttest.New(selfTool, contract.Critical, scope)
	self.RequesterMayApprove = true
	// The console's approvers decide send_reminder's calls, as the real contract says.
	send := contracttest.New(collections.SendReminderName, contract.Critical, scope)
	send.ApproverRoles = []string{web.RoleApprover}
	send.StepUpAuth.MaxAgeSeconds = 300
	contracts := map[string]*contract.Contract{tool: critical, selfTool: &self, send.Name: send}
	e.auditKey = testAuditKey
	alog, err := auditlog.New(db, e.auditKey, auditlog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	e.alog = alog
	digest, err := auditlog.NewDigester(e.auditKey)
	if err != nil {
		t.Fatal(err)
	}
	// The forbidden tools' pipeline, on the store: the write-off page runs write_off_invoice.
	keys, err := idempotency.New(db.Dialect(), time.Hour, e.clock.Now)
	if err != nil {
		t.Fatal(err)
	}
	admin := pipelinetest.Product(t, pipeline.Options{Logger: log, Now: e.clock.Now, DB: db, Keys: keys, StepUp: []string{mfa},
		Auditor: pipeline.NewAuditor(alog, digest)})
	decider := &approval.Decider{Store: e.approvals, DB: db, Verifier: a, Audit: alog, StepUpACR: []string{mfa}, Now: e.clock.Now,
		Contract: func(name string) *contract.Contract { return contracts[name] }}

	// The server starts first (over https, its certificate makes the client the pages use to
	// reach the issuer); the routes are in place before any request.
	var routes atomic.Pointer[http.Handler]
	ts := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if e.issuerDown.Load() && r.URL.Path == authserver.OpenIDConfigPath {
			http.Error(w, "down", http.StatusServiceUnavailable)
			return
		}
		(*routes.Load()).ServeHTTP(w, r)
	}))
	ts.Listener.Close()
	ts.Listener = ln
	if https {
		ts.StartTLS()
		e.tls = ts.Client()
	} else {
		ts.Start()
	}
	t.Cleanup(ts.Close)
	stateKeys, err := reqstate.NewRing(reqstate.Key{ID: "k1", Secret: []byte(strings.Repeat("k", 32))})
	if err != nil {
		t.Fatal(err)
	}
	if e.refusals, err = auditlog.NewRefusals(auditlog.RefusalsOptions{Write: alog.Keep, Digest: digest,
		Client: func(r *http.Request) string { return limits.ClientIP(r, "") }}); err != nil {
		t.Fatal(err)
	}
	sc := signin.Config{Issuer: a.Issuer(), ClientID: auth.DevWebClientID, PublicURL: e.base, DB: db, Keys: stateKeys, Now: e.clock.Now, HTTPClient: e.tls,
		Refusals: e.refusals}
	for _, f := range configure {
		f(&sc)
	}
	ledgerNow := func(ctx context.Context, a *approval.Action) (string, error) {
		if s := e.ledger.Load(); s != nil && a.Tool == tool {
			return *s, nil
		}
		return "", nil
	}
	served := func() []*contract.Contract { return []*contract.Contract{critical, &self, send} }
	pages, err := web.New(web.Config{Signin: sc, Decider: decider, Admin: admin, WriteOffTool: collections.WriteOffName, Ledger: ledgerNow,
		Tools: served, Budgets: &budgets, Health: &e.health, Charts: &web.Charts{Calls: auditlog.NewCallsCache(alog, e.clock.Now, 0), Ledger: db},
		Logger: log, Customers: db, Outbox: db, Audit: alog, Imports: db, Runner: admin, MatchPaymentTool: collections.MatchPaymentName,
		Schedules: db, PauseScheduleTool: collections.PauseScheduleName, ResumeScheduleTool: collections.ResumeScheduleName})
	if err != nil {
		t.Fatal(err)
	}
	charts, stopCharts := context.WithCancel(context.Background())
	chartsDone := make(chan struct{})
	go func() { defer close(chartsDone); pages.RunCharts(charts) }()
	t.Cleanup(func() { stopCharts(); <-chartsDone })
	var h2 http.Handler = server.Routes(server.Deps{Logger: log, MCP: h, MaxBodyBytes: 1 << 20, Auth: a, AuthServer: as, Web: pages,
		Admin: admin, Sessions: pages})
	routes.Store(&h2)
	e.h = h2
	return e
}

// ask records a pending approval of tool, asked by ana's collector-bot.
func (e *env) ask(t testing.TB, name string) *approval.Action {
	t.Helper()
	a, err := e.approvals.Create(context.Background(), e.db, name, sha256.Sum256([]byte(t.Name())), preview,
		[]string{"sends one e-mail to the customer"}, approval.Requester{Subject: "ana", Client: "collector-bot", Actor: "collector-bot"})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func (e *env) state(t testing.TB, id string) approval.State {
	t.Helper()
	a, err := e.approvals.Get(context.Background(), e.db, id)
	if err != nil {
		t.Fatal(err)
	}
	return a.State
}

func (e *env) audited(t testing.TB, name string, outcome auditlog.Outcome) int {
	t.Helper()
	var n int64
	if err := e.db.QueryRow(context.Background(), `SELECT COUNT(*) FROM audit_event WHERE event = $1 AND outcome = $2`, name, string(outcome)).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return int(n)
}

// browser is a person's browser: a cookie jar, redirects followed one hop at a time (so a
// test sees and may alter each), and the headers a browser sends with a same-site form.
type browser struct {
	e    *env
	c    *http.Client
	lang string // Accept-Language
	hops []*http.Response
}

func (e *env) browser(t testing.TB) *browser {
	t.Helper()
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	c := &http.Client{Jar: jar, Timeout: 30 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	if e.tls != nil {
		c.Transport = e.tls.Transport
	}
	return &browser{e: e, c: c}
}

// page is an answer as the browser got it.
type page struct {
	resp *http.Response
	url  *url.URL
	body string
}

func (p page) location() string { return p.resp.Header.Get("Location") }

// do sends one request (a form when form is not nil) and reads the answer; no redirect is
// followed.
func (b *browser) do(t testing.TB, method, target string, form url.Values, header map[string]string) page {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	if !u.IsAbs() {
		u = mustParse(t, b.e.base).ResolveReference(u)
	}
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, u.String(), body)
	if err != nil {
		t.Fatal(err)
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	if b.lang != "" {
		req.Header.Set("Accept-Language", b.lang)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := b.c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	b.hops = append(b.hops, resp)
	return page{resp: resp, url: u, body: string(data)}
}

// sameSite are the headers of a form posted from a page of the same origin.
func (b *browser) sameSite() map[string]string {
	return map[string]string{"Origin": b.e.base, "Sec-Fetch-Site": "same-origin"}
}

// follow follows p's redirects with GETs, as a browser does, letting alter change each next
// URL first; it returns the first answer that is no redirect.
func (b *browser) follow(t testing.TB, p page, alter func(*url.URL)) page {
	t.Helper()
	for i := 0; p.resp.StatusCode >= 300 && p.resp.StatusCode < 400; i++ {
		if i == 10 {
			t.Fatalf("more than 10 redirects, the last to %s", p.location())
		}
		next := p.url.ResolveReference(mustParse(t, p.location()))
		if alter != nil {
			alter(next)
		}
		p = b.do(t, http.MethodGet, next.String(), nil, nil)
	}
	return p
}

func (b *browser) get(t testing.TB, path string) page {
	t.Helper()
	return b.follow(t, b.do(t, http.MethodGet, path, nil, nil), nil)
}

// person, agent: how the developer fills the development sign-in page.
func person(subject, acr string) func(url.Values) {
	return func(v url.Values) { v.Set("subject", subject); v.Set("kind", "person"); v.Set("acr", acr) }
}

// personWith is a person signed in with roles (the sign-in page's roles field).
func personWith(subject, acr string, roles ...string) func(url.Values) {
	return func(v url.Values) { person(subject, acr)(v); v.Set("roles", strings.Join(roles, " ")) }
}

func agent(subject string) func(url.Values) {
	return func(v url.Values) { v.Set("subject", subject); v.Set("kind", "agent"); v.Set("acr", mfa) }
}

// signIn takes the browser, which has just been sent to the development sign-in page (p),
// through it as choose fills it, and back: it returns the answer after the callback's
// redirects. alter may change each URL on the way back (the callback's, then the page's).
func (b *browser) signIn(t testing.TB, p page, choose func(url.Values), alter func(*url.URL)) page {
	t.Helper()
	if p.resp.StatusCode != http.StatusOK || p.url.Path != authserver.AuthorizePath {
		t.Fatalf("at %s: %d, want the development sign-in page:\n%s", p.url, p.resp.StatusCode, p.body)
	}
	action, values := parseForm(t, p.body)
	choose(values)
	values.Set("action", "allow")
	sent := b.do(t, http.MethodPost, action, values, b.sameSite())
	if sent.resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("POST the sign-in form = %d, want 303:\n%s", sent.resp.StatusCode, sent.body)
	}
	return b.follow(t, sent, alter)
}

// open signs in (as choose says) on the way to path, and returns the page it arrives at.
func (b *browser) open(t testing.TB, path string, choose func(url.Values)) page {
	t.Helper()
	return b.signIn(t, b.get(t, path), choose, nil)
}

var csrfRE = regexp.MustCompile(`<input type="hidden" name="csrf" value="([^"]*)">`)

// parseForm reads the page's form as a browser submits it (authservertest.ParseForm).
func parseForm(t testing.TB, body string) (string, url.Values) {
	t.Helper()
	action, values, err := authservertest.ParseForm(body)
	if err != nil {
		t.Fatalf("%v:\n%s", err, body)
	}
	return action, values
}

// decide posts the approval page's form (as a browser, from that page) with decision.
func (b *browser) decide(t testing.TB, p page, decision string) page {
	t.Helper()
	m := csrfRE.FindStringSubmatch(p.body)
	if m == nil {
		t.Fatalf("no CSRF token on the page:\n%s", p.body)
	}
	return b.do(t, http.MethodPost, p.url.RequestURI(), url.Values{"csrf": {html.UnescapeString(m[1])}, "decision": {decision}}, b.sameSite())
}

func mustParse(t testing.TB, s string) *url.URL {
	t.Helper()
	u, err := url.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// refused checks that p is the refusal page of code with status.
func refused(t testing.TB, what string, p page, status int, code string) {
	t.Helper()
	if p.resp.StatusCode != status || !strings.Contains(p.body, "<code>"+code+"</code>") {
		t.Errorf("%s: %d, want %d naming %s:\n%s", what, p.resp.StatusCode, status, code, p.body)
	}
}
