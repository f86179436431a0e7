package web_test

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/cobranca/cobranca/internal/approval"
	"github.com/cobranca/cobranca/internal/auditlog"
	"github.com/cobranca/cobranca/internal/contract/contracttest"
	"github.com/cobranca/cobranca/internal/failure"
	"github.com/cobranca/cobranca/internal/store"
	"github.com/cobranca/cobranca/internal/store/storetest"
	"github.com/cobranca/cobranca/internal/web"
)

// TestConsole: the console's pages, on both stores.
func TestConsole(t *testing.T) {
	storetest.Each(t, pg, func(t *testing.T, db store.DB) {
		e := newEnv(t, db, false)
		t.Run("roles", func(t *testing.T) { consoleRoles(t, e) })
		t.Run("inbox", func(t *testing.T) { consoleInbox(t, e) })
		t.Run("languages and escaping", func(t *testing.T) { consoleLanguages(t, e) })
		t.Run("tools", func(t *testing.T) { consoleTools(t, e) })
		t.Run("health", func(t *testing.T) { consoleHealth(t, e) })
	})
}

// approver and viewer are the console's people: bruno approves test.critical's calls (its
// contract's role, test.approver) and carla only reads.
var (
	approver = personWith("bruno", mfa, web.RoleApprover, contracttest.ApproverRole)
	viewer   = personWith("carla", mfa, web.RoleViewer)
)

// consoleRoles: a person holding a console role reads it; the viewer sees no action, and a
// decision forged by hand is refused all the same; a person with no console role, and an
// agent, see nothing of it — a refusal (403), counted for the audit log.
func consoleRoles(t *testing.T, e *env) {
	a := e.ask(t, tool)

	b := e.browser(t)
	p := b.open(t, web.ConsolePath, viewer)
	if p.resp.StatusCode != http.StatusOK || !strings.Contains(p.body, a.ID) || !strings.Contains(p.body, tool) {
		t.Fatalf("the viewer's inbox = %d, want 200 listing %s:\n%s", p.resp.StatusCode, a.ID, p.body)
	}
	if strings.Contains(p.body, `class="button primary"`) || strings.Contains(p.body, "Review and decide") || strings.Count(p.body, "<form") != 1 {
		t.Errorf("the viewer's inbox shows an action (want only the sign-out form):\n%s", p.body)
	}
	if !strings.Contains(p.body, `<code>`+web.RoleViewer+`</code>`) {
		t.Errorf("the header does not name the viewer's role:\n%s", p.body)
	}
	// The viewer forges the approval page's form, with the session's own CSRF token.
	csrf := csrfRE.FindStringSubmatch(p.body)[1]
	forged := b.do(t, http.MethodPost, "/approvals/"+a.ID, url.Values{"csrf": {csrf}, "decision": {"approve"}}, b.sameSite())
	refused(t, "the viewer's forged approval", forged, http.StatusForbidden, string(approval.CodeApproverLacksRole))
	if s := e.state(t, a.ID); s != approval.Pending {
		t.Errorf("after the viewer's forged approval the call is %s, want pending", s)
	}
	// The approval page leads back to the console, for who reads it.
	if ap := b.get(t, "/approvals/"+a.ID); !strings.Contains(ap.body, `<nav class="console" aria-label="Console"><ul><li><a href="/console">Approvals</a>`) {
		t.Errorf("the approval page shows the viewer no way back to the console:\n%s", ap.body)
	}
	if ap := e.browser(t).open(t, "/approvals/"+a.ID, person("edu", mfa)); ap.resp.StatusCode != http.StatusOK || strings.Contains(ap.body, `class="console"`) {
		t.Errorf("the approval page shows the console to a person without its roles (%d):\n%s", ap.resp.StatusCode, ap.body)
	}
	// A form the console has not got is no page.
	refused(t, "a POST to a console form that does not exist", b.do(t, http.MethodPost, web.ConsolePath+"/nothing/here",
		url.Values{"csrf": {csrf}}, b.sameSite()), http.StatusNotFound, "not_found")
	refused(t, "a console page not built", b.get(t, web.ConsolePath+"/nothing"), http.StatusNotFound, "not_found")

	ap := e.browser(t).open(t, web.ConsolePath, approver)
	if ap.resp.StatusCode != http.StatusOK || !strings.Contains(ap.body, `class="button primary" href="/approvals/`+a.ID+`"`) {
		t.Errorf("the approver's inbox does not offer to decide %s:\n%s", a.ID, ap.body)
	}

	before := len(consoleRefusals(t, e))
	none := e.browser(t).open(t, web.ConsolePath, personWith("dora", mfa))
	refused(t, "a person with no console role", none, http.StatusForbidden, string(web.CodeConsoleRole))
	bot := e.browser(t).open(t, web.ToolsPath, agent("ana"))
	refused(t, "an agent's session", bot, http.StatusForbidden, string(web.CodeConsoleAgent))
	for what, p := range map[string]page{"no role": none, "agent": bot} {
		if strings.Contains(p.body, a.ID) || strings.Contains(p.body, tool) || strings.Contains(p.body, `aria-label="Console"`) {
			t.Errorf("%s: the refusal shows the console:\n%s", what, p.body)
		}
	}
	evs := consoleRefusals(t, e)
	if got := evs[before:]; len(got) != 2 || got[0] != "GET /console "+string(web.CodeConsoleRole) || got[1] != "GET /console/tools "+string(web.CodeConsoleAgent) {
		t.Errorf("console refusals audited = %q, want the role's and the agent's", got)
	}
	settle(t, e, a)
}

// consoleRefusals are the console's refusals audited so far ("<tool> <code>"), flushed first.
func consoleRefusals(t *testing.T, e *env) []string {
	t.Helper()
	e.refusals.Flush(context.Background())
	rows, err := e.db.Query(context.Background(), `SELECT tool, failure_code, outcome FROM audit_event WHERE event = $1 ORDER BY id`, web.EventConsoleRefused)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var tool, code, outcome string
		if err := rows.Scan(&tool, &code, &outcome); err != nil {
			t.Fatal(err)
		}
		if outcome != string(auditlog.Denied) {
			t.Errorf("a console refusal audited as %s, want denied", outcome)
		}
		out = append(out, tool+" "+code)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// settle decides the approvals left pending, so that the next test's inbox starts empty.
func settle(t *testing.T, e *env, as ...*approval.Action) {
	t.Helper()
	for _, a := range as {
		if err := e.db.InTx(context.Background(), func(ctx context.Context, tx store.Tx) error {
			_, err := e.approvals.Decide(ctx, tx, a.ID, false, approval.Approver{Subject: "settle"})
			if errors.Is(err, approval.ErrDecided) {
				return nil
			}
			return err
		}); err != nil {
			t.Fatal(err)
		}
	}
}

var pendingRowRE = regexp.MustCompile(`href="/approvals/(a_[a-z0-9]+)"`)

// consoleInbox: the pending approvals, oldest first, 50 a page with a link to the next; the
// decided ones with who and when; a place in the list that no link wrote is refused naming
// the field.
func consoleInbox(t *testing.T, e *env) {
	var asked []*approval.Action
	for range 52 {
		asked = append(asked, e.ask(t, tool))
		e.clock.Advance(time.Second)
	}
	decided := asked[51]
	settle(t, e, decided)
	b := e.browser(t)
	p := b.open(t, web.ConsolePath, approver)
	pending, recent, _ := strings.Cut(p.body, `id="decided"`)
	ids := pendingRowRE.FindAllStringSubmatch(pending, -1)
	if len(ids) != 50 || ids[0][1] != asked[0].ID || ids[49][1] != asked[49].ID {
		t.Fatalf("the inbox's first page lists %d approvals, want the 50 oldest, oldest first:\n%s", len(ids), p.body)
	}
	if !strings.Contains(recent, decided.ID) || !strings.Contains(recent, "settle") || !strings.Contains(recent, "rejected") {
		t.Errorf("recently decided does not show %s rejected by settle:\n%s", decided.ID, recent)
	}
	next := regexp.MustCompile(`<a href="([^"]*)" rel="next">`).FindStringSubmatch(p.body)
	if next == nil {
		t.Fatalf("no link to the next page:\n%s", p.body)
	}
	p2 := b.get(t, strings.ReplaceAll(next[1], "&amp;", "&"))
	pending2, _, _ := strings.Cut(p2.body, `id="decided"`)
	if ids := pendingRowRE.FindAllStringSubmatch(pending2, -1); len(ids) != 1 || ids[0][1] != asked[50].ID || strings.Contains(p2.body, `rel="next"`) ||
		!strings.Contains(p2.body, "First page") {
		t.Errorf("the second page lists %v, want %s alone, a link to the first and none to a next:\n%s", ids, asked[50].ID, p2.body)
	}
	for _, bad := range []string{"x", "12", "12.b_abc", "-5." + asked[0].ID, "012." + asked[0].ID, "1e3." + asked[0].ID} {
		p := b.get(t, web.ConsolePath+"?after="+url.QueryEscape(bad))
		refused(t, "after="+bad, p, http.StatusBadRequest, string(failure.InvalidArguments))
		if !strings.Contains(p.body, "after") {
			t.Errorf("after=%s: the refusal does not name the field:\n%s", bad, p.body)
		}
	}
	settle(t, e, asked...)
}

// consoleLanguages: the console speaks Portuguese when asked (?lang=, Accept-Language),
// keeps the chosen language in its links, writes dates as a Brazilian reads them, shows the
// preview's text as text, and carries the pages' security headers.
func consoleLanguages(t *testing.T, e *env) {
	a := e.ask(t, tool)
	b := e.browser(t)
	en := b.open(t, web.ConsolePath, approver)
	pt := b.get(t, web.ConsolePath+"?lang=pt-BR")
	b.lang = "pt-BR,pt;q=0.9"
	accept := b.get(t, web.ConsolePath)
	b.lang = ""
	created := a.Created.In(time.FixedZone("BRT", -3*60*60))
	for _, tc := range []struct {
		name string
		p    page
		want []string
	}{
		{"English", en, []string{`<html lang="en">`, "<h1>Approvals</h1>", "Waiting for a decision", created.Format("2006-01-02 15:04 MST"), `href="/console/tools"`}},
		{"?lang=pt-BR", pt, []string{`<html lang="pt-BR">`, "<h1>Aprovações</h1>", "Aguardando decisão", created.Add(15 * time.Minute).Format("02/01/2006 15:04"),
			`href="/console/tools?lang=pt-BR"`, `href="/approvals/` + a.ID + `?lang=pt-BR"`, "Pular para o conteúdo"}},
		{"Accept-Language", accept, []string{`<html lang="pt-BR">`, "<h1>Aprovações</h1>", `href="/console/tools"`}},
	} {
		for _, want := range tc.want {
			if !strings.Contains(tc.p.body, want) {
				t.Errorf("%s: the inbox lacks %q:\n%s", tc.name, want, tc.p.body)
			}
		}
		if strings.Contains(tc.p.body, "<script") || !strings.Contains(tc.p.body, "&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;") {
			t.Errorf("%s: the preview's summary is not shown as text:\n%s", tc.name, tc.p.body)
		}
		h := tc.p.resp.Header
		if csp := h.Get("Content-Security-Policy"); !strings.HasPrefix(csp, "default-src 'none'; style-src 'sha256-") || strings.Contains(csp, "script-src") ||
			h.Get("X-Frame-Options") != "DENY" || h.Get("Cache-Control") != "no-store" {
			t.Errorf("%s: headers %v, want the pages' CSP and headers", tc.name, h)
		}
	}
	settle(t, e, a)
}

// consoleTools: every tool by tier, for people: what it may do, who approves, step-up, and
// the budgets each tier spends, in the reader's numbers.
func consoleTools(t *testing.T, e *env) {
	b := e.browser(t)
	p := b.open(t, web.ToolsPath, viewer)
	critical, _, ok := strings.Cut(p.body[strings.Index(p.body, `id="tier-critical"`)+1:], `id="tier-forbidden"`)
	if !ok || !strings.Contains(critical, "<code>"+tool+"</code>") || !strings.Contains(critical, "<code>"+contracttest.ApproverRole+"</code>") ||
		!strings.Contains(critical, "required (5 min)") {
		t.Errorf("the critical tier does not list %s approved by %s after a step-up of 5 min:\n%s", tool, contracttest.ApproverRole, p.body)
	}
	forbidden := p.body[strings.Index(p.body, `id="tier-forbidden"`):]
	if !strings.Contains(forbidden, "<code>collections.write_off_invoice</code>") || !strings.Contains(forbidden, "<code>collections.write_off</code>") {
		t.Errorf("the forbidden tier does not list the write-off and its role:\n%s", forbidden)
	}
	if !strings.Contains(p.body, "1,200 / 1 min, bursts up to 100") {
		t.Errorf("the budgets do not say the per-person budget:\n%s", p.body)
	}
	if pt := b.get(t, web.ToolsPath+"?lang=pt-BR"); !strings.Contains(pt.body, "1.200 /") || !strings.Contains(pt.body, "Proibido a agentes") {
		t.Errorf("the tools page in Portuguese:\n%s", pt.body)
	}
}

// consoleHealth: the operator metrics, in the reader's numbers; a failed read is the internal
// error page, with its reference.
func consoleHealth(t *testing.T, e *env) {
	now := e.clock.Now()
	e.health.h.Store(&web.Health{RateLimited: 1234, RateLimitedWindow: time.Hour, ApprovalsPending: 7, ApprovalOldest: now.Add(-90 * time.Minute),
		OutboxQueued: 1_000_000, OutboxRetrying: 3, AuditUnsealed: 0})
	b := e.browser(t)
	p := b.open(t, web.HealthPath+"?lang=pt-BR", viewer)
	for _, want := range []string{"<h1>Saúde</h1>", ">1.234<", ">7<", ">1 h 30 min<", ">1.000.000<", ">3<", ">0<", `aria-current="page">Saúde`} {
		if !strings.Contains(p.body, want) {
			t.Errorf("the health page lacks %q:\n%s", want, p.body)
		}
	}
	err := errors.New("the store is down")
	e.health.err.Store(&err)
	defer e.health.err.Store(nil)
	refused(t, "a failed read", b.get(t, web.HealthPath), http.StatusInternalServerError, string(failure.Internal))
}
