package web_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/cobranca/cobranca/internal/approval"
	"github.com/cobranca/cobranca/internal/auditlog"
	"github.com/cobranca/cobranca/internal/browsertest"
	"github.com/cobranca/cobranca/internal/collections"
	"github.com/cobranca/cobranca/internal/ledger"
	"github.com/cobranca/cobranca/internal/store/storetest"
	"github.com/cobranca/cobranca/internal/web"
)

// axePath is axe-core's script, installed by `npm ci` in clients/ (pinned there by
// package.json and package-lock.json; .ci/run installs it).
const axePath = "../../clients/node_modules/axe-core/axe.min.js"

// axeScript reads axe-core, or skips the test without it — except under CI=true, where that
// is a failure: CI never passes with the accessibility test skipped.
func axeScript(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(axePath)
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("axe-core is required when CI=true (npm ci in clients/): %v", err)
		}
		t.Skipf("axe-core is not installed (npm ci in clients/): %v", err)
	}
	return string(b)
}

// The development authorization server's sign-in form, and the approval page's buttons.
const (
	signInSubject = `input[name="subject"]`
	signInACR     = `input[name="acr"]`
	signInRoles   = `input[name="roles"]`
	signInSubmit  = `button[name="action"][value="allow"]`
	approveButton = `button[name="decision"][value="approve"]`
)

// tab is the test's browser tab.
type tab struct {
	t   *testing.T
	ctx context.Context
}

func (b tab) do(what string, steps ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	if err := chromedp.Do(b.ctx, steps...); err != nil {
		b.t.Fatalf("browser: %s: %v", what, err)
	}
}

// submit clicks sel and returns the status of the page that answers, after redirects.
func (b tab) submit(sel string) int64 {
	b.t.Helper()
	resp, err := chromedp.RunResponse(b.ctx, chromedp.WaitVisible(chromedp.CSS(sel)), chromedp.Click(chromedp.CSS(sel)))
	if err != nil {
		b.t.Fatalf("browser: click %s: %v", sel, err)
	}
	return resp.Status
}

func (b tab) text(sel string) string {
	b.t.Helper()
	s, err := chromedp.Run(b.ctx, chromedp.Text(chromedp.CSS(sel)))
	if err != nil {
		b.t.Fatalf("browser: the text of %s: %v", sel, err)
	}
	return s
}

func (b tab) location() string {
	b.t.Helper()
	loc, err := chromedp.Run(b.ctx, chromedp.Location())
	if err != nil {
		b.t.Fatalf("browser: location: %v", err)
	}
	return loc
}

// signIn fills the development sign-in page, shown now, as a person with acr and roles.
func (b tab) signIn(base, subject, acr, roles string) {
	b.t.Helper()
	b.do("wait for the sign-in page", chromedp.WaitVisible(chromedp.CSS(signInSubject)))
	if loc := b.location(); !strings.HasPrefix(loc, base+"/oauth/authorize?") {
		b.t.Fatalf("browser: at %s, want the development sign-in page", loc)
	}
	b.do("sign in as "+subject, chromedp.SetValue(chromedp.CSS(signInSubject), subject),
		chromedp.Click(chromedp.CSS(`input[name="kind"][value="person"]`)),
		chromedp.SetValue(chromedp.CSS(signInACR), acr), chromedp.SetValue(chromedp.CSS(signInRoles), roles))
	if status := b.submit(signInSubmit); status != http.StatusOK {
		b.t.Fatalf("browser: signing in as %s answered %d", subject, status)
	}
}

// violation is an axe-core violation, as much of it as a failure needs.
type violation struct {
	ID, Impact, Help string
	Nodes            []struct{ Target []any }
}

// TestConsoleInBrowser (issue 29): in headless Chromium, an approver signs in through the
// development authorization server (a password only), finds the pending send_reminder in the
// console's inbox, follows it to the approval page, approves, is sent to step up, and
// approves, and finds the approval's event in the audit trail; then axe-core, injected into each page, finds no serious or critical violation on
// the inbox, tools, health, audit, approval, write-off, customers, customer, outbox, ledger,
// invoice and payments pages in either language, and each page is kept as a screenshot at
// 1280×800 and 390×844 (t.ArtifactDir; go test -artifacts); last, the approver, an operator
// too, matches an unmatched payment in one click and sees the invoice paid.
func TestConsoleInBrowser(t *testing.T) {
	axe := axeScript(t)
	b := tab{t: t, ctx: browsertest.New(t, 3*time.Minute)}
	e := newEnv(t, storetest.SQLite(t), false)
	send := e.ask(t, collections.SendReminderName)
	roles := strings.Join([]string{web.RoleApprover, web.RoleWriteOff, web.RoleOperator}, " ")
	ledgerSeeded := seedConsoleLedger(t, e)

	b.do("open the console", chromedp.Navigate(e.base+web.ConsolePath))
	b.signIn(e.base, "bruno", "urn:cobranca:password", roles)
	if loc := b.location(); loc != e.base+web.ConsolePath {
		t.Fatalf("after sign-in the browser is at %s, want the console", loc)
	}
	row := b.text(`#main table tbody tr`)
	if !strings.Contains(row, collections.SendReminderName) || !strings.Contains(row, "ana") || !strings.Contains(row, "collector-bot") {
		t.Errorf("the inbox's first row = %q, want the pending send_reminder asked by ana's collector-bot", row)
	}
	b.do("follow the approval", chromedp.Click(chromedp.CSS(`a.primary[href="/approvals/`+send.ID+`"]`)), chromedp.WaitVisible(chromedp.CSS(approveButton)))
	if status := b.submit(approveButton); status != http.StatusOK {
		t.Fatalf("approving with a password only answered %d, want the step-up sign-in", status)
	}
	if loc := b.location(); !strings.Contains(loc, "acr_values=") || !strings.Contains(loc, "prompt=login") {
		t.Fatalf("approving with a password only went to %s, want a step-up sign-in", loc)
	}
	b.signIn(e.base, "bruno", mfa, roles)
	if loc := b.location(); loc != e.base+"/approvals/"+send.ID {
		t.Fatalf("after the step-up the browser is at %s, want back at the approval", loc)
	}
	b.submit(approveButton)
	if state := b.text(".state"); !strings.HasPrefix(state, "approved") || e.state(t, send.ID) != approval.Approved {
		t.Fatalf("after approving the page says %q and the store %s, want approved", state, e.state(t, send.ID))
	}

	// The trail shows the approval's audit event, bruno's.
	b.do("open the audit trail", chromedp.Navigate(e.base+web.AuditPath+"?subject=bruno"), chromedp.WaitReady(chromedp.CSS("main")))
	if row := b.text(`#main table tbody tr`); !strings.Contains(row, approval.EventApproved) || !strings.Contains(row, send.ID) || !strings.Contains(row, "allowed") {
		t.Errorf("the trail's newest event of bruno = %q, want %s of %s, allowed", row, approval.EventApproved, send.ID)
	}

	// Every page, for axe-core: a pending approval shows its buttons.
	pending := e.ask(t, collections.SendReminderName)
	// The health page's charts, with bars to draw.
	insertCall(t, e.db, e.clock.Now().Add(-3*time.Hour), "low", auditlog.Allowed)
	insertCall(t, e.db, e.clock.Now().Add(-50*time.Hour), "critical", auditlog.Denied)
	seedLedger(t, e, e.clock.Now().In(time.FixedZone("BRT", -3*60*60)))
	writeMessages(t, e) // customers, drafts, sends and a bulk send, for their pages
	dir := t.ArtifactDir()
	for _, lang := range []string{"en", "pt-BR"} {
		for name, path := range map[string]string{"inbox": web.ConsolePath, "tools": web.ToolsPath, "health": web.HealthPath, "audit": web.AuditPath,
			"approval": "/approvals/" + pending.ID, "write-off": web.WriteOffsPath,
			"customers": web.CustomersPath, "customer": web.CustomerPath + "?id=C-1", "outbox": web.OutboxPath + "?state=undeliverable",
			"ledger": web.LedgerPath, "invoice": web.InvoicePath + "?id=NF-B1", "payments": web.PaymentsPath} {
			sep := "?"
			if strings.Contains(path, "?") {
				sep = "&"
			}
			url := e.base + path + sep + "lang=" + lang
			b.do("open "+url, chromedp.Navigate(url), chromedp.WaitReady(chromedp.CSS("main")))
			if loc := b.location(); loc != url {
				t.Fatalf("%s: the browser is at %s", url, loc)
			}
			b.do("inject axe-core", chromedp.Evaluate[chromedp.Void](axe))
			for _, size := range [][2]int64{{1280, 800}, {390, 844}} {
				b.do("viewport", chromedp.EmulateViewport(size[0], size[1]))
				raw, err := chromedp.Run(b.ctx, chromedp.Evaluate[string](`axe.run(document).then(r => JSON.stringify(r.violations))`, chromedp.EvalAwaitPromise))
				if err != nil {
					t.Fatalf("%s: axe.run: %v", url, err)
				}
				var vs []violation
				if err := json.Unmarshal([]byte(raw), &vs); err != nil {
					t.Fatalf("%s: axe's answer: %v", url, err)
				}
				for _, v := range vs {
					switch v.Impact {
					case "serious", "critical":
						t.Errorf("%s at %dx%d: %s violation %s (%s) at %v", url, size[0], size[1], v.Impact, v.ID, v.Help, v.Nodes)
					default:
						t.Logf("%s at %dx%d: %s violation %s (%s)", url, size[0], size[1], v.Impact, v.ID, v.Help)
					}
				}
				shot, err := chromedp.Run(b.ctx, chromedp.FullScreenshot(100))
				if err != nil {
					t.Fatalf("%s: screenshot: %v", url, err)
				}
				file := filepath.Join(dir, fmt.Sprintf("%s-%s-%dx%d.png", name, lang, size[0], size[1]))
				if err := os.WriteFile(file, shot, 0o644); err != nil {
					t.Fatal(err)
				}
			}
		}
	}

	browserMatch(t, b, e, ledgerSeeded)
}

// browserMatch: the operator (bruno holds the role) matches the unmatched payment to NF-A1
// with its one-click form on the payments page, and lands on the invoice, paid.
func browserMatch(t *testing.T, b tab, e *env, f ledgerFixture) {
	t.Helper()
	b.do("open the payments", chromedp.Navigate(e.base+web.PaymentsPath), chromedp.WaitReady(chromedp.CSS("main")))
	button := `form[action="` + web.MatchPath + `"]:has(input[name="invoiceId"][value="NF-A1"]) button`
	if status := b.submit(button); status != http.StatusOK {
		t.Fatalf("matching %s to NF-A1 answered %d", f.payment, status)
	}
	if loc := b.location(); loc != e.base+web.InvoicePath+"?id=NF-A1" {
		t.Errorf("after the match the browser is at %s, want NF-A1's page", loc)
	}
	if state := b.text("#invoice-state"); state != "paid" || invoiceState(t, e, "NF-A1") != ledger.StatePaid {
		t.Errorf("after the match NF-A1's page says %q and the ledger %s, want paid", state, invoiceState(t, e, "NF-A1"))
	}
}
