package web_test

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/cobranca/cobranca/internal/approval"
	"github.com/cobranca/cobranca/internal/auditlog"
	"github.com/cobranca/cobranca/internal/failure"
	"github.com/cobranca/cobranca/internal/ledger"
	"github.com/cobranca/cobranca/internal/schedules"
	"github.com/cobranca/cobranca/internal/store/storetest"
	"github.com/cobranca/cobranca/internal/web"
	"github.com/cobranca/cobranca/internal/writeoffs"
)

// consoleFixtures writes what the console's pages show: a pending send_reminder, the ledger
// with an unmatched payment (seedConsoleLedger) and the charts' (seedLedger), customers with
// their messages (writeMessages), collection schedules (seedSchedules), the operator metrics
// and a few audit events.
func consoleFixtures(t *testing.T, e *env) (*approval.Action, ledgerFixture, scheduleFixture) {
	t.Helper()
	send := askSend(t, e)
	f := seedConsoleLedger(t, e)
	sf := seedSchedules(t, e)
	seedLedger(t, e, e.clock.Now().In(time.FixedZone("BRT", -3*60*60)))
	writeMessages(t, e)
	now := e.clock.Now()
	e.health.h.Store(&web.Health{RateLimited: 3, RateLimitedWindow: time.Hour, ApprovalsPending: 1, ApprovalOldest: send.Created,
		OutboxQueued: 2, OutboxRetrying: 1, AuditUnsealed: 4, AuditOldestUnsealed: now.Add(-2 * time.Second)})
	for _, ev := range []auditlog.Event{
		{Name: "collections.portfolio.analyzed", Tool: "collections.analyze_portfolio", Risk: "low", Subject: "ana", Actor: "collector-bot", ClientID: "collector-bot", Outcome: auditlog.Allowed},
		{Name: "collections.reminder.prepared", Tool: "collections.prepare_reminder", Risk: "medium", Subject: "ana", Actor: "collector-bot", ClientID: "collector-bot", Outcome: auditlog.Allowed},
		{Name: "collections.reminder.sent", Tool: "collections.send_reminder", Risk: "critical", Subject: "ana", Actor: "collector-bot", ClientID: "collector-bot",
			Outcome: auditlog.InputRequired, FailureCode: "approval_required"},
	} {
		if err := e.alog.Record(context.Background(), ev); err != nil {
			t.Fatal(err)
		}
	}
	return send, f, sf
}

// consoleData are things the console's pages show of the fixtures (consoleFixtures): the
// viewer reads each of them, an agent none.
func consoleData(send *approval.Action, f ledgerFixture) []string {
	return []string{send.ID, "send_reminder", "NF-A1", "Açaí", f.payment, "Mercado 1 Ltda", "collector-bot", "analyze_portfolio", "Régua <padrão>"}
}

// seen is what the page shows: its text, and the start of each console navigation, table and
// form but the sign-out.
func (b tab) seen() string {
	b.t.Helper()
	s, err := chromedp.Run(b.ctx, chromedp.Evaluate[string](`[...document.querySelectorAll("nav.console, table, form:not([action='/signout'])")]
		.map(n => n.outerHTML.slice(0, 80)).join("\n") + "\n" + document.body.innerText`))
	if err != nil {
		b.t.Fatalf("browser: what the page shows: %v", err)
	}
	return s
}

// viewerShots are the console's pages whose screenshots the viewer's page shows.
var viewerShots = []string{"inbox", "ledger", "invoice", "customer", "outbox", "audit", "health"}

// TestConsoleViewerInBrowser (issue 29): in headless Chromium, a viewer (collections.viewer
// alone) signs in through the development authorization server and reads every console page,
// the approval page and the write-off page (which refuses her): she reads the console's data
// (consoleData), and no page offers an action (a form that posts, but
// the sign-out); then forms built in the page with the session's own CSRF token, as a script
// of the viewer's would, post an approval, a match, a verification of the chain and a
// write-off: each is refused with its code, audited, and nothing changes in the store.
func TestConsoleViewerInBrowser(t *testing.T) {
	b := newTab(t, 2*time.Minute)
	e := newEnv(t, storetest.SQLite(t), false)
	send, f, sf := consoleFixtures(t, e)

	b.do("open the console", chromedp.Navigate(e.base+web.ConsolePath))
	b.signIn(e.base, "carla", mfa, web.RoleViewer)
	pages := append(slices.Clone(consolePaths), sf.page(), namedPath{"approval", "/approvals/" + send.ID}, namedPath{"write-off", web.WriteOffsPath})
	var read strings.Builder
	for _, p := range pages {
		status, want, code := b.open(e.base+p.path), int64(http.StatusOK), ""
		read.WriteString(b.seen())
		if p.path == web.WriteOffsPath {
			want, code = http.StatusForbidden, string(failure.PersonLacksRole)
		}
		if got := b.refusalCode(); status != want || got != code {
			t.Errorf("the viewer's %s: %d %q, want %d %q", p.path, status, got, want, code)
		}
		if acts := b.actions(); len(acts) != 0 {
			t.Errorf("the viewer's %s offers %q, want no action", p.path, acts)
		}
		if slices.Contains(viewerShots, p.name) {
			b.shoot("viewer-" + p.name)
		}
	}
	for _, d := range consoleData(send, f) {
		if !strings.Contains(read.String(), d) {
			t.Errorf("no page shows the viewer %q", d)
		}
	}
	b.open(e.base + web.LedgerPath + "?lang=pt-BR")
	b.shoot("viewer-ledger-pt-BR")

	// Forged forms, each from a page of the console.
	b.open(e.base + "/approvals/" + send.ID)
	if note := b.text("#lacks-role"); !strings.Contains(note, "cannot approve or reject") {
		t.Errorf("the viewer's approval page says %q, want that she cannot decide", note)
	}
	for _, forged := range []struct {
		action string
		fields map[string]string
		code   string
	}{
		{"/approvals/" + send.ID, map[string]string{"decision": "approve"}, string(approval.CodeApproverLacksRole)},
		{web.MatchPath, map[string]string{"paymentId": f.payment, "invoiceId": "NF-A1", "amountCents": "15000", "idempotencyKey": "forged-match-1"},
			string(web.CodeOperatorRequired)},
		{web.AuditPath, map[string]string{"verify": "chain"}, string(web.CodeConsoleRole)},
		{web.SchedulePausePath, map[string]string{"scheduleId": sf.active, "idempotencyKey": "forged-pause-1"}, string(web.CodePauseRole)},
		{web.ScheduleResumePath, map[string]string{"scheduleId": sf.paused, "confirm": "yes", "idempotencyKey": "forged-resume-1"}, string(web.CodeResumeRole)},
		{web.WriteOffsPath, map[string]string{"invoiceId": "NF-C", "customerId": "C-2", "amountCents": "123456", "reason": "forged",
			"idempotencyKey": "forged-write-off-1"}, string(failure.PersonLacksRole)},
	} {
		b.open(e.base + web.ConsolePath)
		if status, code := b.forge(forged.action, forged.fields), b.refusalCode(); status != http.StatusForbidden || code != forged.code {
			t.Errorf("the viewer's forged POST %s: %d %q, want 403 %q", forged.action, status, code, forged.code)
		}
	}
	if s := e.state(t, send.ID); s != approval.Pending {
		t.Errorf("after the forged approval the call is %s, want pending", s)
	}
	if s := invoiceState(t, e, "NF-A1"); s != ledger.StateOpen {
		t.Errorf("after the forged match NF-A1 is %s, want open", s)
	}
	if left, _, err := ledger.ListUnmatched(context.Background(), e.db, "", 10); err != nil || len(left) != 1 || left[0].ID != f.payment || left[0].LeftCents != left[0].AmountCents {
		t.Errorf("after the forged match the unmatched payments = %+v, %v; want %s untouched", left, err, f.payment)
	}
	if n := e.audited(t, web.EventAuditVerified, auditlog.Allowed); n != 0 {
		t.Errorf("the forged verification verified (%d audited)", n)
	}
	if s := invoiceState(t, e, "NF-C"); s == ledger.StateWrittenOff {
		t.Errorf("after the forged write-off NF-C is %s", s)
	}
	if _, err := writeoffs.ForInvoice(context.Background(), e.db, "NF-C"); !errors.Is(err, writeoffs.ErrNotFound) {
		t.Errorf("the forged write-off of NF-C: %v, want none recorded", err)
	}
	if a, p := scheduleState(t, e, sf.active), scheduleState(t, e, sf.paused); a.State != schedules.Active || p.State != schedules.Paused {
		t.Errorf("after the forged pause and resume the schedules are %s and %s, want active and paused", a.State, p.State)
	}
	refusals := consoleRefusals(t, e)
	for _, want := range []string{"POST " + web.MatchPath + " " + string(web.CodeOperatorRequired), "POST " + web.AuditPath + " " + string(web.CodeConsoleRole),
		"POST " + web.SchedulePausePath + " " + string(web.CodePauseRole), "POST " + web.ScheduleResumePath + " " + string(web.CodeResumeRole)} {
		if !slices.Contains(refusals, want) {
			t.Errorf("the console's refusals audited = %q, want %q among them", refusals, want)
		}
	}
}

// TestConsoleAgentInBrowser (issue 29): in headless Chromium, an agent's session (the
// development authorization server's "an agent" choice: the client acts for ana, the act
// claim) opens every console page and the trail's export: each answers the refusal page,
// 403 console_person_required, with no navigation, table, form or data of the console; each
// refusal is audited.
func TestConsoleAgentInBrowser(t *testing.T) {
	b := newTab(t, 2*time.Minute)
	e := newEnv(t, storetest.SQLite(t), false)
	send, f, sf := consoleFixtures(t, e)

	b.do("open the console", chromedp.Navigate(e.base+web.ConsolePath))
	// The agent asks for every console role: an agent's session holds none, whatever it asks.
	if status := b.signInAs(e.base, "agent", "ana", mfa, strings.Join(web.Roles, " ")); status != http.StatusForbidden {
		t.Errorf("the agent's sign-in led to %d, want the console's refusal", status)
	}
	// The approval page, which an agent's session may open, says whose it is.
	b.open(e.base + "/approvals/" + send.ID)
	if who, note := b.text(".who"), b.text("#agent"); !strings.Contains(who, "an agent:") || !strings.Contains(note, "approver_is_agent") {
		t.Fatalf("the approval page says %q and %q, want an agent's session", who, note)
	}
	data := consoleData(send, f)
	pages := append(slices.Clone(consolePaths), sf.page(), namedPath{"export", web.AuditExportPath})
	for _, p := range pages {
		status := b.open(e.base + p.path)
		if code := b.refusalCode(); status != http.StatusForbidden || code != string(web.CodeConsoleAgent) {
			t.Errorf("the agent's %s: %d %q, want 403 %s", p.path, status, code, web.CodeConsoleAgent)
		}
		seen := b.seen()
		for _, d := range append(data, `class="console"`, "<table", "<form") {
			if strings.Contains(seen, d) {
				t.Errorf("the agent's %s shows %q:\n%s", p.path, d, seen)
			}
		}
	}
	refusals := consoleRefusals(t, e)
	for _, p := range pages {
		path, _, _ := strings.Cut(p.path, "?")
		if want := "GET " + path + " " + string(web.CodeConsoleAgent); !slices.Contains(refusals, want) {
			t.Errorf("the console's refusals audited = %q, want %q among them", refusals, want)
		}
	}
}
