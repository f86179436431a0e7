package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"html"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/cobranca/cobranca/internal/approval"
	"github.com/cobranca/cobranca/internal/browsertest"
	"github.com/cobranca/cobranca/internal/failure"
	"github.com/cobranca/cobranca/internal/mcpapi"
	"github.com/cobranca/cobranca/internal/outbox/outboxtest"
	"github.com/cobranca/cobranca/internal/smtptest"
	"github.com/cobranca/cobranca/internal/tier"
)

// The acr values of the round trip: the server's step-up accepts strongACR only; weakACR is
// a sign-in with a password alone.
const (
	strongACR = "urn:cobranca:acr:mfa"
	weakACR   = "urn:cobranca:acr:password"
	mailFrom  = "cobranca@cobranca.test"
)

// browserBudget is the hard limit of one browser's part of a test.
const browserBudget = 2 * time.Minute

// TestCriticalRoundTrip is issue 13's whole critical round trip, on `cobranca serve` in
// development mode with SMTP at an in-process server, on SQLite and on PostgreSQL. For each
// protocol revision a real go-sdk client (an agent's token) prepares a reminder draft and
// calls collections.send_reminder; the answer carries the approval's URL (a URL-mode
// elicitation on 2026-07-28, approval_required on 2025-11-25). Headless Chromium opens it,
// is sent to sign in, signs in through the development authorization server's page as a
// person with a weak acr, clicks Approve, is sent to step up (acr_values, max_age,
// prompt=login), signs in again with the required acr and approves (on 2025-11-25 the same
// browser, its stepped-up session still recent enough, approves at once). The client's retry
// returns the queued result; the SMTP server receives exactly one message, under the
// outbox's Message-ID; a repeat gets the stored answer and sends nothing more.
//
// Then the refusals in the browser, on a third call's approval: an agent identity signing in
// sees approver_is_agent, no buttons and no preview; a person whose step-up sign-in comes back
// with an acr the server does not accept sees insufficient_user_authentication (403); a form
// posted to the approval from a page of another origin — same-site (127.0.0.1, another port:
// the Lax cookie goes along) and cross-site (localhost) — is refused with cross_origin_request
// (403). Each leaves the approval pending and sends nothing. Last, the person rejects it, and
// the agent's retry is approval_rejected.
func TestCriticalRoundTrip(t *testing.T) {
	tier.EndToEnd(t)
	eachStoreAtOnce(t, testCriticalRoundTrip)
}

// roundTrip is a running `cobranca serve` with what the round trip needs around it.
type roundTrip struct {
	t       *testing.T
	base    string // http://127.0.0.1:PORT
	environ []string
	mail    *smtptest.Server
	logs    *serveLog
	agent   string // an agent's access token: alice through collector-bot
}

func startRoundTrip(t *testing.T, db []string) *roundTrip {
	t.Helper()
	addr := freeAddr(t)
	r := &roundTrip{t: t, base: "http://" + addr, mail: smtptest.New(t)}
	r.environ = append([]string{"COBRANCA_DATA_DIR=" + t.TempDir(), "COBRANCA_ADDR=" + addr, "COBRANCA_METRICS_ADDR=off",
		"COBRANCA_SMTP_URL=" + r.mail.URL(), "COBRANCA_MAIL_FROM=" + mailFrom,
		"COBRANCA_STEPUP_ACR=" + strongACR,
		// Every critical call counts, retries and repeats included: more than the default burst.
		"COBRANCA_RATE_CRITICAL=100/1h,burst=50",
		// On a loaded machine a fresh PostgreSQL can take longer than 200 ms to answer the
		// limiter, which then fails medium and critical calls closed (unavailable): this test
		// is about approvals, not the limiter's patience.
		"COBRANCA_RATE_STORE_TIMEOUT=5s"}, db...)
	r.cli("migrate")
	r.logs, _ = startServe(t, r.environ...)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("serve's log:\n%s", r.logs)
		}
	})
	r.agent = strings.TrimSpace(r.cli("token", "--sub", "alice", "--agent", "collector-bot",
		"--scope", "reminders:write reminders:send collections:read"))
	return r
}

// cli runs a cobranca command on the server's data directory and store.
func (r *roundTrip) cli(args ...string) string {
	r.t.Helper()
	return mustRun(r.t, r.environ, args...)
}

// state is the approval's state as `cobranca approvals show` says it.
func (r *roundTrip) state(id string) string {
	r.t.Helper()
	m := regexp.MustCompile(`(?m)^state +(\S+)$`).FindStringSubmatch(r.cli("approvals", "show", id))
	if m == nil {
		r.t.Fatalf("approvals show %s: no state", id)
	}
	return m[1]
}

// client connects a go-sdk client as the agent, speaking version; elicit answers URL-mode
// elicitations (nil: the client declares none).
func (r *roundTrip) client(version string, elicit func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error)) *mcp.ClientSession {
	r.t.Helper()
	opts := &mcp.ClientOptions{}
	if elicit != nil {
		opts.ElicitationHandler = elicit
		opts.Capabilities = &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{URL: &mcp.URLElicitationCapabilities{}}}
	}
	c := mcp.NewClient(&mcp.Implementation{Name: "roundtrip", Version: "1"}, opts)
	sess, err := c.Connect(r.t.Context(), &mcp.StreamableClientTransport{Endpoint: r.base + "/mcp",
		HTTPClient: &http.Client{Transport: bearer(r.agent)}}, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		r.t.Fatal(err)
	}
	r.t.Cleanup(func() { sess.Close() })
	return sess
}

// prepare writes a reminder draft for customer id and returns its id.
func (r *roundTrip) prepare(sess *mcp.ClientSession, id, email, key string) string {
	r.t.Helper()
	return prepare(r.t, sess, id, email, key)
}

// prepare calls prepare_reminder for customer id at email with key and returns the draft's id.
func prepare(t *testing.T, sess *mcp.ClientSession, id, email, key string) string {
	t.Helper()
	res, err := sess.CallTool(t.Context(), &mcp.CallToolParams{Name: "collections.prepare_reminder", Arguments: prepareArgs(id, email, key)})
	return draftOf(t, res, err)
}

// prepareArgs are prepare_reminder's arguments for one invoice of customer id at email, with key.
func prepareArgs(id, email, key string) map[string]any {
	return map[string]any{
		"customer": map[string]any{"id": id, "name": "Ana " + id + " Ltda", "email": email},
		"invoices": []map[string]any{{"id": "inv-" + id, "dueDate": "2026-11-01", "amountCents": 150000}},
		"tone":     "friendly", "idempotencyKey": key}
}

// draftOf is the draft id prepare_reminder answered, failing the test on any other answer.
func draftOf(t *testing.T, res *mcp.CallToolResult, err error) string {
	t.Helper()
	if err != nil || res.IsError {
		t.Fatalf("prepare_reminder: %v %s", err, resultText(res))
	}
	draft, _ := res.StructuredContent.(map[string]any)["draftId"].(string)
	if draft == "" {
		t.Fatalf("prepare_reminder answered no draftId: %v", res.StructuredContent)
	}
	return draft
}

// send calls send_reminder for draft with key.
func (r *roundTrip) send(sess *mcp.ClientSession, draft, key string) (*mcp.CallToolResult, error) {
	r.t.Helper()
	return sess.CallTool(r.t.Context(), &mcp.CallToolParams{Name: "collections.send_reminder",
		Arguments: map[string]any{"draftId": draft, "idempotencyKey": key}})
}

// resultText is a tool result's text, for messages.
func resultText(res *mcp.CallToolResult) string {
	if res == nil {
		return "<nil>"
	}
	var sb strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			sb.WriteString(tc.Text)
		}
	}
	return sb.String()
}

// toolError is the failure detail of a tool error result.
func toolError(t *testing.T, res *mcp.CallToolResult) failure.Detail {
	t.Helper()
	raw, err := json.Marshal(res.Meta[mcpapi.ErrorMetaKey])
	if err != nil {
		t.Fatal(err)
	}
	var d failure.Detail
	if err := json.Unmarshal(raw, &d); err != nil || d.Code == "" {
		t.Fatalf("not a tool error: %s (%s)", resultText(res), raw)
	}
	return d
}

// approvalURL matches the approval URL a message carries.
var approvalURL = regexp.MustCompile(`http://[^\s"]+/approvals/(a_[A-Za-z0-9_-]+)`)

// approvalRequired calls send_reminder as a 2025-11-25 client, which the server answers with
// approval_required; it returns the URL and the id of the approval its message names.
func (r *roundTrip) approvalRequired(sess *mcp.ClientSession, draft, key string) (url, id string) {
	r.t.Helper()
	res, err := r.send(sess, draft, key)
	if err != nil || !res.IsError || toolError(r.t, res).Code != failure.ApprovalRequired {
		r.t.Fatalf("send_reminder: %v %s, want approval_required", err, resultText(res))
	}
	m := approvalURL.FindStringSubmatch(toolError(r.t, res).Message)
	if m == nil || !strings.HasPrefix(m[0], r.base+"/approvals/") {
		r.t.Fatalf("approval_required's message %q carries no approval URL of %s", toolError(r.t, res).Message, r.base)
	}
	return m[0], m[1]
}

// messageIDs are the Message-IDs of the outbox's entries, in order, from the store: River's
// job id and the entry's token, under the sender's domain.
func (r *roundTrip) messageIDs() []string {
	r.t.Helper()
	db, err := openStore(r.t.Context(), mustConfig(r.t, r.environ), slog.New(slog.DiscardHandler))
	if err != nil {
		r.t.Fatal(err)
	}
	defer db.Close()
	var ids []string
	for _, e := range outboxtest.Entries(r.t, db) {
		ids = append(ids, e.MessageID(mailFrom))
	}
	return ids
}

// step runs one step of a test that goes on from where the last one left: not a subtest,
// which could not fail the test the shared server and browser belong to.
func step(t *testing.T, name string, f func()) {
	t.Helper()
	t.Logf("step: %s", name)
	f()
}

func testCriticalRoundTrip(t *testing.T, db []string) {
	r := startRoundTrip(t, db)
	person := newPerson(t, r.base)

	step(t, "2026-07-28", func() {
		// The client shows the person the URL (its elicitation handler) and waits for them;
		// the person, here the test's own goroutine, approves in the browser.
		urls, decided := make(chan *mcp.ElicitParams, 1), make(chan bool, 1)
		var asked int
		sess := r.client("2026-07-28", func(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			asked++
			select {
			case urls <- req.Params:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			select {
			case ok := <-decided:
				if ok {
					return &mcp.ElicitResult{Action: "accept"}, nil
				}
			case <-ctx.Done():
			}
			return &mcp.ElicitResult{Action: "cancel"}, nil
		})
		draft := r.prepare(sess, "c-2026", "ana2026@cliente.example", "p-2026")
		var res *mcp.CallToolResult
		var err error
		called := make(chan struct{})
		go func() { defer close(called); res, err = r.send(sess, draft, "s-2026") }()
		var params *mcp.ElicitParams
		select {
		case params = <-urls:
		case <-called:
			t.Fatalf("send_reminder answered without asking for approval: %v %s", err, resultText(res))
		}
		func() {
			defer func() { decided <- params != nil && !t.Failed() }()
			want := r.base + "/approvals/" + params.ElicitationID
			if params.Mode != "url" || params.URL != want {
				t.Fatalf("elicitation %+v, want mode url at %s", params, want)
			}
			// The person sees what they approve: the tool, who asked through which agent,
			// and the message's recipient.
			person.approveSteppingUp(params.URL, "collections.send_reminder", "alice", "collector-bot", "ana2026@cliente.example")
		}()
		for done := false; !done; {
			select {
			case <-called:
				done = true
			case again := <-urls: // asked again: the approval did not count
				t.Errorf("asked for approval again after approving: %+v", again)
				decided <- false
			}
		}
		if err != nil || res.IsError || asked != 1 {
			t.Fatalf("send_reminder: %v %s after %d elicitations, want the queued result after 1", err, resultText(res), asked)
		}
		r.checkSent(t, res, draft, "ana2026@cliente.example", 1)
		// The same call again: the stored answer, no elicitation, no second message.
		again, err := r.send(sess, draft, "s-2026")
		if err != nil || again.IsError || asked != 1 || !sameResult(res, again) {
			t.Errorf("repeat: %v %s after %d elicitations; want the stored answer", err, resultText(again), asked)
		}
		r.checkNoMore(t, 1)
		if st := r.state(params.ElicitationID); st != string(approval.Executed) {
			t.Errorf("approval %s is %s, want executed", params.ElicitationID, st)
		}
	})

	step(t, "2025-11-25", func() {
		sess := r.client("2025-11-25", nil)
		draft := r.prepare(sess, "c-2025", "ana2025@cliente.example", "p-2025")
		url, _ := r.approvalRequired(sess, draft, "s-2025")
		// The browser's session is a stepped-up person's, signed in a moment ago: it
		// approves without signing in again.
		person.approve(url, "ana2025@cliente.example")
		res, err := r.send(sess, draft, "s-2025")
		if err != nil || res.IsError {
			t.Fatalf("retry after approval: %v %s", err, resultText(res))
		}
		r.checkSent(t, res, draft, "ana2025@cliente.example", 2)
		again, err := r.send(sess, draft, "s-2025")
		if err != nil || again.IsError || !sameResult(res, again) {
			t.Errorf("repeat: %v %s; want the stored answer", err, resultText(again))
		}
		r.checkNoMore(t, 2)
	})

	step(t, "refusals", func() {
		sess := r.client("2025-11-25", nil)
		draft := r.prepare(sess, "c-refused", "carla@cliente.example", "p-refused")
		url, id := r.approvalRequired(sess, draft, "s-refused")

		step(t, "an agent approves", func() {
			agent := newPerson(t, r.base)
			agent.open(url)
			agent.signIn("collector-bot", "agent", strongACR)
			agent.waitPage(url)
			// The page tells the agent it cannot decide, shows no buttons and withholds the
			// preview (the customer's address); a forged POST is refused by the same check
			// (internal/web's TestPages).
			if body := agent.text(); !strings.Contains(body, string(approval.CodeApproverIsAgent)) ||
				strings.Contains(body, "carla@cliente.example") || strings.Contains(body, "Reject") {
				t.Errorf("an agent's approval page says:\n%s\nwant %s, no preview and no Approve or Reject button", body, approval.CodeApproverIsAgent)
			}
			if st := r.state(id); st != string(approval.Pending) {
				t.Errorf("approval %s is %s, want pending", id, st)
			}
		})

		// The person's browser is signed in (and stepped up): a page of another origin posts
		// the approval form to the server. From 127.0.0.1 on another port the post is
		// same-site, so the Lax cookie goes with it: only the origin check stops it; from
		// localhost it is cross-site, and the cookie stays home too.
		for _, host := range []string{"127.0.0.1", "localhost"} {
			step(t, "a form post from "+host, func() {
				evil := attackerSite(t, url, host)
				person.open(evil)
				status := person.submit(`#go`)
				if body := person.text(); status != http.StatusForbidden || !strings.Contains(body, "cross_origin_request") {
					t.Errorf("after the other site's form post the page (%d) says:\n%s\nwant 403 cross_origin_request", status, body)
				}
				if st := r.state(id); st != string(approval.Pending) {
					t.Errorf("approval %s is %s, want pending", id, st)
				}
			})
		}

		step(t, "the step-up sign-in gives an acr not allowed", func() {
			weak := newPerson(t, r.base)
			weak.open(url)
			weak.signIn("carla", "person", weakACR)
			weak.waitPage(url)
			if status := weak.submit(approveButton); status != http.StatusOK {
				t.Fatalf("approving with a password only answered %d, want the step-up sign-in:\n%s", status, weak.text())
			}
			weak.signInAnswering("carla", "person", weakACR, http.StatusForbidden)
			if body := weak.text(); !strings.Contains(body, string(failure.InsufficientUserAuthentication)) {
				t.Errorf("after a step-up with acr %s the page says:\n%s\nwant %s", weakACR, body, failure.InsufficientUserAuthentication)
			}
			if st := r.state(id); st != string(approval.Pending) {
				t.Errorf("approval %s is %s, want pending", id, st)
			}
		})

		step(t, "rejected", func() {
			person.open(url)
			if status := person.submit(rejectButton); status != http.StatusOK {
				t.Fatalf("Reject answered %d:\n%s", status, person.text())
			}
			if st := r.state(id); st != string(approval.Rejected) {
				t.Fatalf("approval %s is %s, want rejected", id, st)
			}
			res, err := r.send(sess, draft, "s-refused")
			if err != nil || !res.IsError || toolError(t, res).Code != failure.ApprovalRejected {
				t.Errorf("the retry after Reject: %v %s, want %s", err, resultText(res), failure.ApprovalRejected)
			}
		})
		r.checkNoMore(t, 2)
	})
}

// checkSent checks that the retry's result says the draft is queued, and that the SMTP server
// receives exactly n messages, the last one to to under the outbox's Message-ID.
func (r *roundTrip) checkSent(t *testing.T, res *mcp.CallToolResult, draft, to string, n int) {
	t.Helper()
	out, _ := res.StructuredContent.(map[string]any)
	if out["draftId"] != draft || out["state"] != "queued" || out["to"] != to {
		t.Errorf("send_reminder answered %v, want draft %s queued to %s", res.StructuredContent, draft, to)
	}
	got := r.mail.Wait(t, n, 30*time.Second)
	ids := r.messageIDs()
	if len(got) != n || len(ids) != n {
		t.Fatalf("%d messages received, %d outbox entries; want %d", len(got), len(ids), n)
	}
	last := got[n-1]
	if len(last.To) != 1 || last.To[0] != to || last.From != mailFrom || last.MessageID != ids[n-1] || last.MessageID != out["messageId"] {
		t.Errorf("received %s → %v under %s; want %s → %s under the outbox entry's %s, which the answer gives (%v)",
			last.From, last.To, last.MessageID, mailFrom, to, ids[n-1], out["messageId"])
	}
}

// checkNoMore checks that, a moment later, the SMTP server still has n messages.
func (r *roundTrip) checkNoMore(t *testing.T, n int) {
	t.Helper()
	time.Sleep(time.Second)
	if got := r.mail.Messages(); len(got) != n {
		t.Errorf("the SMTP server received %d messages, want %d", len(got), n)
	}
	if ids := r.messageIDs(); len(ids) != n {
		t.Errorf("the outbox holds %d entries, want %d", len(ids), n)
	}
}

func sameResult(a, b *mcp.CallToolResult) bool {
	ja, _ := json.Marshal(a.StructuredContent)
	jb, _ := json.Marshal(b.StructuredContent)
	return bytes.Equal(ja, jb) && resultText(a) == resultText(b)
}

// attackerSite serves, on host (another port), a page with a form that posts an approval to
// target — without the session's CSRF token, which it cannot read — and returns its URL.
func attackerSite(t *testing.T, target, host string) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintf(w, `<!doctype html><title>Win a prize</title><form method="post" action="%s">`+
			`<input type="hidden" name="decision" value="approve"><input type="hidden" name="csrf" value="guess">`+
			`<button id="go">Claim</button></form>`, html.EscapeString(target))
	}))
	t.Cleanup(srv.Close)
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(srv.URL, "http://"))
	return "http://" + net.JoinHostPort(host, port) + "/"
}

// The pages' controls, as the server writes them.
const (
	approveButton = `button[name="decision"][value="approve"]`
	rejectButton  = `button[name="decision"][value="reject"]`
	// The development authorization server's sign-in form.
	signInSubject = `input[name="subject"]`
	signInACR     = `input[name="acr"]`
	signInSubmit  = `button[name="action"][value="allow"]`
)

// person is someone's browser: a headless Chromium of its own.
type person struct {
	t    *testing.T
	ctx  context.Context
	base string
}

func newPerson(t *testing.T, base string) *person {
	return &person{t: t, ctx: browsertest.New(t, browserBudget), base: base}
}

func (p *person) do(what string, steps ...chromedp.Action[chromedp.Void]) {
	p.t.Helper()
	if err := chromedp.Do(p.ctx, steps...); err != nil {
		p.t.Fatalf("browser: %s: %v", what, err)
	}
}

func (p *person) open(url string) { p.t.Helper(); p.do("open "+url, chromedp.Navigate(url)) }

// submit clicks sel, a form's button, waits for the page that answers (after redirects) and
// returns its HTTP status.
func (p *person) submit(sel string) int64 {
	p.t.Helper()
	resp, err := chromedp.RunResponse(p.ctx, chromedp.WaitVisible(chromedp.CSS(sel)), chromedp.Click(chromedp.CSS(sel)))
	if err != nil {
		p.t.Fatalf("browser: submit %s: %v", sel, err)
	}
	return resp.Status
}

// location is the page's URL.
func (p *person) location() string {
	p.t.Helper()
	loc, err := chromedp.Run(p.ctx, chromedp.Location())
	if err != nil {
		p.t.Fatalf("browser: location: %v", err)
	}
	return loc
}

// text is what the page shows.
func (p *person) text() string {
	p.t.Helper()
	s, err := chromedp.Run(p.ctx, chromedp.Text(chromedp.CSS("body")))
	if err != nil {
		p.t.Fatalf("browser: the page's text: %v", err)
	}
	return s
}

// waitPage waits until the browser shows url (after redirects).
func (p *person) waitPage(url string) {
	p.t.Helper()
	for {
		loc := p.location()
		if loc == url {
			p.do("wait for "+url, chromedp.WaitReady(chromedp.CSS("body")))
			return
		}
		select {
		case <-p.ctx.Done():
			p.t.Fatalf("browser: at %s, never got to %s", loc, url)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// onSignIn waits for the development authorization server's sign-in page and returns its URL.
func (p *person) onSignIn() string {
	p.t.Helper()
	p.do("wait for the sign-in page", chromedp.WaitVisible(chromedp.CSS(signInSubject)))
	loc := p.location()
	if !strings.HasPrefix(loc, p.base+"/oauth/authorize?") {
		p.t.Fatalf("browser: the sign-in page is at %s, want %s/oauth/authorize", loc, p.base)
	}
	return loc
}

// signIn fills the development authorization server's page, shown now: subject, person or
// agent, acr; and submits it.
func (p *person) signIn(subject, kind, acr string) {
	p.t.Helper()
	p.signInAnswering(subject, kind, acr, http.StatusOK)
}

// signInAnswering signs in as signIn does; the page that answers has status want.
func (p *person) signInAnswering(subject, kind, acr string, want int64) {
	p.t.Helper()
	p.onSignIn()
	p.do("sign in as "+subject,
		chromedp.SetValue(chromedp.CSS(signInSubject), subject),
		chromedp.Click(chromedp.CSS(`input[name="kind"][value="`+kind+`"]`)),
		chromedp.SetValue(chromedp.CSS(signInACR), acr))
	if status := p.submit(signInSubmit); status != want {
		p.t.Fatalf("browser: signing in as %s answered %d, want %d:\n%s", subject, status, want, p.text())
	}
}

// approveSteppingUp is a person's first approval: open the URL, be sent to sign in, sign in
// with a password only, click Approve, be sent to step up, sign in with the required acr,
// approve.
func (p *person) approveSteppingUp(url string, shows ...string) {
	p.t.Helper()
	p.open(url)
	p.signIn("bruno", "person", weakACR)
	p.waitPage(url)
	if status := p.submit(approveButton); status != http.StatusOK {
		p.t.Fatalf("browser: approving with a password only answered %d, want the step-up sign-in:\n%s", status, p.text())
	}
	stepUp := p.onSignIn()
	for _, want := range []string{"acr_values=" + strings.ReplaceAll(strongACR, ":", "%3A"), "max_age=", "prompt=login"} {
		if !strings.Contains(stepUp, want) {
			p.t.Errorf("the step-up sign-in %s lacks %s", stepUp, want)
		}
	}
	p.signIn("bruno", "person", strongACR)
	p.waitPage(url)
	p.approve(url, shows...)
}

// approve opens url, signed in already, checks that the page shows each of shows, and
// approves; the page then says approved.
func (p *person) approve(url string, shows ...string) {
	p.t.Helper()
	if p.location() != url {
		p.open(url)
	}
	body := p.text()
	for _, want := range shows {
		if !strings.Contains(body, want) {
			p.t.Errorf("the approval page does not show %q:\n%s", want, body)
		}
	}
	status := p.submit(approveButton)
	state, err := chromedp.Run(p.ctx, chromedp.Text(chromedp.CSS(".state")))
	if status != http.StatusOK || err != nil || !strings.HasPrefix(state, "approved") {
		p.t.Fatalf("after Approve the page (%d) says the state is %q (%v):\n%s\nwant approved", status, state, err, p.text())
	}
}
