package web_test

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/json"
	"flag"
	"fmt"
	"image"
	"image/color"
	"image/draw"
	"image/png"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	cdpbrowser "github.com/chromedp/cdproto/browser"
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

// signIn fills the development sign-in page, shown now, as a person with acr and roles, and
// expects the page it leads to.
func (b tab) signIn(base, subject, acr, roles string) {
	b.t.Helper()
	if status := b.signInAs(base, "person", subject, acr, roles); status != http.StatusOK {
		b.t.Fatalf("browser: signing in as %s answered %d", subject, status)
	}
}

// signInAs fills the development sign-in page, shown now, as kind ("person" or "agent": the
// client then acts for subject, the act claim) with acr and roles, and returns the status of
// the page it leads to.
func (b tab) signInAs(base, kind, subject, acr, roles string) int64 {
	b.t.Helper()
	b.do("wait for the sign-in page", chromedp.WaitVisible(chromedp.CSS(signInSubject)))
	if loc := b.location(); !strings.HasPrefix(loc, base+"/oauth/authorize?") {
		b.t.Fatalf("browser: at %s, want the development sign-in page", loc)
	}
	b.do("sign in as "+kind+" "+subject, chromedp.SetValue(chromedp.CSS(signInSubject), subject),
		chromedp.Click(chromedp.CSS(`input[name="kind"][value="`+kind+`"]`)),
		chromedp.SetValue(chromedp.CSS(signInACR), acr), chromedp.SetValue(chromedp.CSS(signInRoles), roles))
	return b.submit(signInSubmit)
}

// open navigates to url and returns the status of the page that answers.
func (b tab) open(url string) int64 {
	b.t.Helper()
	resp, err := chromedp.RunResponse(b.ctx, chromedp.Navigate(url))
	if err != nil {
		b.t.Fatalf("browser: open %s: %v", url, err)
	}
	if loc := b.location(); loc != url {
		b.t.Fatalf("browser: opening %s went to %s", url, loc)
	}
	return resp.Status
}

// refusalCode is the code the refusal page shows ("" when the page is none).
func (b tab) refusalCode() string {
	b.t.Helper()
	code, err := chromedp.Run(b.ctx, chromedp.Evaluate[string](`document.querySelector("#main .refusal code")?.textContent ?? ""`))
	if err != nil {
		b.t.Fatalf("browser: the refusal's code: %v", err)
	}
	return code
}

// actionsJS lists the page's actions: each form that posts (but the header's sign-out) as its
// path and its buttons ("name=value text").
const actionsJS = `JSON.stringify([...document.forms]
	.filter(f => f.method === "post" && new URL(f.action).pathname !== "/signout")
	.map(f => new URL(f.action).pathname + ": " + [...f.querySelectorAll("button, input[type=submit]")]
		.map(b => (b.name ? b.name + "=" + b.value + " " : "") + b.textContent.trim()).join(" | ")))`

// actions are the actions the page offers (actionsJS).
func (b tab) actions() []string {
	b.t.Helper()
	raw, err := chromedp.Run(b.ctx, chromedp.Evaluate[string](actionsJS))
	if err != nil {
		b.t.Fatalf("browser: the page's actions: %v", err)
	}
	var out []string
	if err := json.Unmarshal([]byte(raw), &out); err != nil {
		b.t.Fatalf("browser: the page's actions %s: %v", raw, err)
	}
	return out
}

// forgeJS builds a form in the page posting the fields, and the session's own CSRF token (the
// header's sign-out form holds it), to an action, and submits it, as a person's own script
// would: the request is the page's, same-site, with the session's cookie and token.
const forgeJS = `((action, fields) => {
	const f = document.createElement("form");
	f.method = "post";
	f.action = action;
	fields.csrf = document.querySelector('form[action="/signout"] input[name="csrf"]').value;
	for (const [name, value] of Object.entries(fields)) {
		const i = document.createElement("input");
		i.type = "hidden";
		i.name = name;
		i.value = value;
		f.append(i);
	}
	document.body.append(f);
	f.submit();
})(%s, %s)`

// forge posts fields to action from the page shown now (forgeJS) and returns the status of
// the answer.
func (b tab) forge(action string, fields map[string]string) int64 {
	b.t.Helper()
	a, err := json.Marshal(action)
	if err != nil {
		b.t.Fatal(err)
	}
	f, err := json.Marshal(fields)
	if err != nil {
		b.t.Fatal(err)
	}
	resp, err := chromedp.RunResponse(b.ctx, chromedp.Evaluate[chromedp.Void](fmt.Sprintf(forgeJS, a, f)))
	if err != nil {
		b.t.Fatalf("browser: a form posted to %s: %v", action, err)
	}
	return resp.Status
}

// screenshots is where the browser tests write the screenshots the role pages (docs/roles)
// show; from the repository's root: go test ./internal/web -run 'InBrowser$' -screenshots
// "$PWD/docs/img/console" (docs/console.md, Screenshots).
var screenshots = flag.String("screenshots", "", "write the role pages' screenshots (PNG, 1280×800) to this folder")

// The browser tests' viewport: a finance team's laptop, the size of the docs' screenshots.
const viewWidth, viewHeight = 1280, 800

// newTab starts a browser for t (browsertest.New) with the viewport the docs show.
func newTab(t *testing.T, timeout time.Duration) tab {
	t.Helper()
	b := tab{t: t, ctx: browsertest.New(t, timeout)}
	b.do("viewport", chromedp.EmulateViewport(viewWidth, viewHeight))
	return b
}

// docShots are the screenshots the role pages (docs/roles) show: the browser tests, given
// -screenshots, write each as <name>.png (tab.shoot), and docs/img/console holds them.
var docShots = []string{
	"approver-inbox", "approver-approval", "approver-approved", "approver-trail",
	"operator-payments", "operator-matched", "operator-verified",
	"write-off-form", "write-off-done",
	"viewer-inbox", "viewer-ledger", "viewer-invoice", "viewer-customer", "viewer-outbox", "viewer-audit", "viewer-health",
	"viewer-ledger-pt-BR",
}

// shoot writes what the viewport shows as name.png to the -screenshots folder, when given;
// name must be one the role pages show (docShots).
func (b tab) shoot(name string) {
	b.t.Helper()
	if !slices.Contains(docShots, name) {
		b.t.Fatalf("screenshot %s is not among the role pages' (docShots)", name)
	}
	if *screenshots == "" {
		return
	}
	b.do("viewport", chromedp.EmulateViewport(viewWidth, viewHeight))
	shot, err := chromedp.Run(b.ctx, chromedp.CaptureScreenshot())
	if err != nil {
		b.t.Fatalf("browser: screenshot %s: %v", name, err)
	}
	if shot, err = shrink(shot); err != nil {
		b.t.Fatalf("screenshot %s: %v", name, err)
	}
	if err := os.WriteFile(filepath.Join(*screenshots, name+".png"), shot, 0o644); err != nil {
		b.t.Fatal(err)
	}
}

// shotColors is how many colours a committed screenshot keeps.
const shotColors = 96

// shrink redraws a screenshot (PNG) in its shotColors most frequent colours, each pixel the
// nearest of them, undithered: a page is a few colours and the antialiasing between them, so
// the text stays crisp and the file is a third of the size or less.
func shrink(shot []byte) ([]byte, error) {
	img, err := png.Decode(bytes.NewReader(shot))
	if err != nil {
		return nil, err
	}
	r := img.Bounds()
	counts := map[color.RGBA]int{}
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			counts[color.RGBAModel.Convert(img.At(x, y)).(color.RGBA)]++
		}
	}
	colors := slices.SortedFunc(maps.Keys(counts), func(a, b color.RGBA) int {
		if c := cmp.Compare(counts[b], counts[a]); c != 0 {
			return c
		}
		return cmp.Compare(uint32(a.R)<<24|uint32(a.G)<<16|uint32(a.B)<<8|uint32(a.A), uint32(b.R)<<24|uint32(b.G)<<16|uint32(b.B)<<8|uint32(b.A))
	})
	pal := make(color.Palette, 0, shotColors)
	for _, c := range colors[:min(len(colors), shotColors)] {
		pal = append(pal, c)
	}
	out := image.NewPaletted(r, pal)
	draw.Draw(out, r, img, r.Min, draw.Src)
	var buf bytes.Buffer
	if err := (&png.Encoder{CompressionLevel: png.BestCompression}).Encode(&buf, out); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// violation is an axe-core violation, as much of it as a failure needs.
type violation struct {
	ID, Impact, Help string
	Nodes            []struct{ Target []any }
}

// namedPath is a page of the console, by the name its screenshots take.
type namedPath struct{ name, path string }

// consolePaths are the console's pages, each with data to show once the test's fixtures are
// written (seedConsoleLedger, seedLedger, writeMessages, seedSchedules): the customer C-1, the
// undeliverable sends, the invoice NF-B1, the schedules. A schedule's page, whose id is the
// fixture's, is scheduleFixture.page: the browser tests add it.
var consolePaths = []namedPath{{"inbox", web.ConsolePath}, {"tools", web.ToolsPath}, {"health", web.HealthPath}, {"audit", web.AuditPath},
	{"customers", web.CustomersPath}, {"customer", web.CustomerPath + "?id=C-1"}, {"outbox", web.OutboxPath + "?state=undeliverable"},
	{"ledger", web.LedgerPath}, {"invoice", web.InvoicePath + "?id=NF-B1"}, {"payments", web.PaymentsPath}, {"import", web.ImportPath}, {"schedules", web.SchedulesPath}}

// sendPreview is a send_reminder's preview as the tool writes it, for the pages to show.
const sendPreview = `send the reminder draft drf_01JDOCS by e-mail, once, to "Padaria São João" at "financeiro@padaria.example" — customer "C-1", contact status in effect: contactable.
Invoices (the draft's amount; the ledger's state now):
- "NF-1001" due 2026-11-20, R$ 1.234,56 — ledger: open
Subject: "Fatura NF-1001 em aberto"
Body:
| Olá, equipe da Padaria São João,
| a fatura NF-1001, de R$ 1.234,56, venceu em 20/11/2026.
| Se já pagou, desconsidere este lembrete.`

// askSend records a pending send_reminder, asked by ana through her collector-bot.
func askSend(t *testing.T, e *env) *approval.Action {
	t.Helper()
	a, err := e.approvals.Create(context.Background(), e.db, collections.SendReminderName, sha256.Sum256([]byte(t.Name())), sendPreview,
		[]string{"sends one e-mail to the customer"}, approval.Requester{Subject: "ana", Client: "collector-bot", Actor: "collector-bot"})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// TestConsoleInBrowser (issue 29): in headless Chromium, an approver signs in through the
// development authorization server (a password only), finds the pending send_reminder in the
// console's inbox, follows it to the approval page, approves, is sent to step up, and
// approves, and finds the approval's event in the audit trail; exports the trail from its
// page, and the file verifies offline as `cobranca audit verify --file` checks it (a copy with
// one byte changed does not); verifies the chain from the page; then axe-core, injected into
// each page, finds no serious or critical violation on the inbox, tools, health, audit,
// approval, write-off, customers, customer, outbox, ledger, invoice, payments and import pages
// in either language, and each page is kept as a screenshot at 1280×800 and 390×844
// (t.ArtifactDir; go test -artifacts); last, the approver, an operator too, matches an
// unmatched payment in one click and sees the invoice paid, and, holding the write-off role
// too, writes an invoice off from the write-off page; and uploads a file of invoices from the
// import page and sees the counts.
func TestConsoleInBrowser(t *testing.T) {
	axe := axeScript(t)
	b := newTab(t, 4*time.Minute)
	e := newEnv(t, storetest.SQLite(t), false)
	send := askSend(t, e)
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
	b.shoot("approver-inbox")
	b.do("follow the approval", chromedp.Click(chromedp.CSS(`a.primary[href="/approvals/`+send.ID+`"]`)), chromedp.WaitVisible(chromedp.CSS(approveButton)))
	if acts := b.actions(); len(acts) != 1 || !strings.Contains(acts[0], "decision=approve") || !strings.Contains(acts[0], "decision=reject") {
		t.Errorf("the approver's approval page offers %q, want its approve and reject", acts)
	}
	b.shoot("approver-approval")
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
	b.shoot("approver-approved")

	// The trail shows the approval's audit event, bruno's.
	b.open(e.base + web.AuditPath + "?subject=bruno")
	if row := b.text(`#main table tbody tr`); !strings.Contains(row, approval.EventApproved) || !strings.Contains(row, send.ID) || !strings.Contains(row, "allowed") {
		t.Errorf("the trail's newest event of bruno = %q, want %s of %s, allowed", row, approval.EventApproved, send.ID)
	}
	b.shoot("approver-trail")
	browserExport(t, b, e, send)
	browserVerify(t, b, e)

	// Every page, for axe-core: a pending approval shows its buttons.
	pending := askSend(t, e)
	// The health page's charts, with bars to draw.
	insertCall(t, e.db, e.clock.Now().Add(-3*time.Hour), "low", auditlog.Allowed)
	insertCall(t, e.db, e.clock.Now().Add(-50*time.Hour), "critical", auditlog.Denied)
	seedLedger(t, e, e.clock.Now().In(time.FixedZone("BRT", -3*60*60)))
	// The ledger charts were read when the pages started: read again, with the ledger's bars.
	hb := e.browser(t)
	hb.open(t, web.HealthPath, viewer)
	freshCharts(t, e, func() string { return hb.get(t, web.HealthPath).body })
	writeMessages(t, e) // customers, drafts, sends and a bulk send, for their pages
	sf := seedSchedules(t, e)
	seedBatches(t, e, sf) // the schedule page's latest batches: each outcome, each approval state
	dir := t.ArtifactDir()
	// The paused schedule's preview shows the approver the resume form and its confirmation.
	pages := append(slices.Clone(consolePaths), sf.page(), namedPath{"schedule-preview", sf.page().path + "&preview=next"},
		namedPath{"schedule-paused", web.SchedulePath + "?id=" + sf.paused + "&preview=next"},
		namedPath{"payment", web.PaymentPath + "?id=" + ledgerSeeded.payment},
		namedPath{"approval", "/approvals/" + pending.ID}, namedPath{"write-off", web.WriteOffsPath})
	for _, lang := range []string{"en", "pt-BR"} {
		for _, p := range pages {
			sep := "?"
			if strings.Contains(p.path, "?") {
				sep = "&"
			}
			url := e.base + p.path + sep + "lang=" + lang
			if status := b.open(url); status != http.StatusOK {
				t.Errorf("%s: %d, want 200", url, status)
			}
			axeCheck(b, axe, url, filepath.Join(dir, p.name+"-"+lang))
		}
	}

	browserMatch(t, b, e, ledgerSeeded)
	browserWriteOff(t, b, e)
	browserImport(t, b, e, axe, dir)
}

// axeCheck injects axe-core into the page shown (what names it) and runs it at 1280×800 and
// 390×844: a serious or critical violation fails the test; each size is kept as a screenshot,
// file-WxH.png.
func axeCheck(b tab, axe, what, file string) {
	t := b.t
	t.Helper()
	b.do("inject axe-core", chromedp.Evaluate[chromedp.Void](axe))
	for _, size := range [][2]int64{{1280, 800}, {390, 844}} {
		b.do("viewport", chromedp.EmulateViewport(size[0], size[1]))
		raw, err := chromedp.Run(b.ctx, chromedp.Evaluate[string](`axe.run(document).then(r => JSON.stringify(r.violations))`, chromedp.EvalAwaitPromise))
		if err != nil {
			t.Fatalf("%s: axe.run: %v", what, err)
		}
		var vs []violation
		if err := json.Unmarshal([]byte(raw), &vs); err != nil {
			t.Fatalf("%s: axe's answer: %v", what, err)
		}
		for _, v := range vs {
			switch v.Impact {
			case "serious", "critical":
				t.Errorf("%s at %dx%d: %s violation %s (%s) at %v", what, size[0], size[1], v.Impact, v.ID, v.Help, v.Nodes)
			default:
				t.Logf("%s at %dx%d: %s violation %s (%s)", what, size[0], size[1], v.Impact, v.ID, v.Help)
			}
		}
		shot, err := chromedp.Run(b.ctx, chromedp.FullScreenshot(100))
		if err != nil {
			t.Fatalf("%s: screenshot: %v", what, err)
		}
		if err := os.WriteFile(fmt.Sprintf("%s-%dx%d.png", file, size[0], size[1]), shot, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	b.do("viewport", chromedp.EmulateViewport(viewWidth, viewHeight))
}

// browserImport: the operator uploads a file of invoices from the import page and sees the
// counts, and the ledger holds them; then a file with a bad row, and sees its line named;
// axe-core checks both answers.
func browserImport(t *testing.T, b tab, e *env, axe, dir string) {
	t.Helper()
	good := filepath.Join(t.TempDir(), "titulos.csv")
	bad := filepath.Join(t.TempDir(), "titulos-ruins.csv")
	for name, content := range map[string]string{good: "invoiceId,customerId,customerName,amountCents,dueDate\nNF-U1,cust-u,Upload Ltda,4200,2026-12-31\nNF-U2,cust-u,Upload Ltda,4300,2027-01-31\n",
		bad: "invoiceId,customerId,amountCents,dueDate\nNF-U3,cust-u,4400,2026-12-31\nNF-U4,cust-u,not-cents,2026-12-31\n"} {
		if err := os.WriteFile(name, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	b.open(e.base + web.ImportPath)
	b.do("choose the file of invoices", chromedp.Click(chromedp.CSS(`input[name="kind"][value="invoices"]`)),
		chromedp.SetUploadFiles(chromedp.CSS(`input[type="file"]`), []string{good}))
	if status := b.submit(`form[enctype="multipart/form-data"] button[type="submit"]`); status != http.StatusOK {
		t.Fatalf("importing the file of invoices answered %d", status)
	}
	if created := b.text("#count-created"); created != "2" || invoiceState(t, e, "NF-U1") != ledger.StateOpen {
		t.Errorf("after the upload the page counts %q created and NF-U1 is %s, want 2 and open", created, invoiceState(t, e, "NF-U1"))
	}
	axeCheck(b, axe, "the import's counts", filepath.Join(dir, "import-imported"))
	b.do("choose the bad file", chromedp.SetUploadFiles(chromedp.CSS(`input[type="file"]`), []string{bad}))
	if status := b.submit(`form[enctype="multipart/form-data"] button[type="submit"]`); status != http.StatusBadRequest {
		t.Fatalf("importing the bad file answered %d, want 400", status)
	}
	if problems := b.text(`[role="alert"] table tbody`); !strings.Contains(problems, "line 3") || !strings.Contains(problems, "amountCents") {
		t.Errorf("the bad file's problems = %q, want line 3's amountCents", problems)
	}
	axeCheck(b, axe, "the import's problems", filepath.Join(dir, "import-refused"))
}

// browserExport: on the trail page (bruno's events, with the approval's), the approver clicks
// Export; the file the browser downloads verifies offline as `cobranca audit verify --file`
// verifies one (auditlog.VerifyFile with the audit key) and holds the approval's event; a
// copy with one byte of that event changed is refused, naming its line.
func browserExport(t *testing.T, b tab, e *env, send *approval.Action) {
	t.Helper()
	// The export holds the sealed events: the sealer (auditlog.Log.RunSealer) does this in
	// the server.
	if _, err := e.alog.Seal(context.Background()); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	progress := chromedp.Events(b.ctx, cdpbrowser.DownloadProgress)
	b.do("export the trail", chromedp.Func(func(ctx context.Context, _ *chromedp.Target) error {
		_, err := chromedp.Call(ctx, cdpbrowser.SetDownloadBehavior, cdpbrowser.SetDownloadBehaviorParams{
			Behavior: cdpbrowser.SetDownloadBehaviorBehaviorAllowAndName, DownloadPath: dir, EventsEnabled: new(true)})
		return err
	}), chromedp.Click(chromedp.CSS(`a[download][href^="`+web.AuditExportPath+`?"]`)))
	var file string
	for ev, err := range progress {
		if err != nil {
			t.Fatalf("browser: waiting for the export's download: %v", err)
		}
		if ev.State == cdpbrowser.DownloadProgressStateCanceled {
			t.Fatalf("browser: the export's download was canceled")
		}
		if ev.State == cdpbrowser.DownloadProgressStateCompleted {
			file = filepath.Join(dir, ev.GUID)
			break
		}
	}
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := auditlog.VerifyFile(bufio.NewReader(bytes.NewReader(data)), e.auditKey, nil)
	if err != nil || rep.Problem != nil || rep.Count < 1 || !rep.MACsChecked {
		t.Fatalf("the downloaded export verifies as %v, %v:\n%s", rep, err, data)
	}
	// The approval's event, and in it bruno: one byte of it changed is caught.
	at := bytes.Index(data, []byte(`"event":"`+approval.EventApproved+`"`))
	name := bytes.Index(data[max(at, 0):], []byte(`"subject":"bruno"`))
	if at < 0 || name < 0 || !bytes.Contains(data, []byte(send.ID)) {
		t.Fatalf("the export holds no %s of bruno's for %s:\n%s", approval.EventApproved, send.ID, data)
	}
	flipped := slices.Clone(data)
	i := at + name + len(`"subject":"brun`)
	flipped[i] = 'a' // bruno → bruna
	line := bytes.Count(data[:i], []byte("\n")) + 1
	bad, err := auditlog.VerifyFile(bufio.NewReader(bytes.NewReader(flipped)), e.auditKey, nil)
	if err != nil || bad.Problem == nil || bad.Problem.Line != line || bad.Problem.Kind != auditlog.Altered {
		t.Errorf("the export with line %d changed verifies as %v, %v; want altered at line %d", line, bad, err, line)
	}
}

// browserVerify: the approver verifies the audit chain from the trail page and reads the
// report.
func browserVerify(t *testing.T, b tab, e *env) {
	t.Helper()
	b.open(e.base + web.AuditPath)
	if status := b.submit(`button[name="verify"]`); status != http.StatusOK {
		t.Fatalf("verifying the chain answered %d", status)
	}
	if h, report := b.text(".verified h3"), b.text(".verified .report"); h != "The chain verified" || !strings.HasPrefix(report, "OK ") {
		t.Errorf("after verifying the page says %q: %q, want the chain verified", h, report)
	}
	if n := e.audited(t, web.EventAuditVerified, auditlog.Allowed); n != 1 {
		t.Errorf("%d verifications audited, want 1", n)
	}
	b.shoot("operator-verified")
}

// browserMatch: the operator (bruno holds the role) matches the unmatched payment to NF-A1
// with its one-click form on the payments page, and lands on the invoice, paid.
func browserMatch(t *testing.T, b tab, e *env, f ledgerFixture) {
	t.Helper()
	b.open(e.base + web.PaymentsPath)
	b.shoot("operator-payments")
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
	b.shoot("operator-matched")
}

// browserWriteOff: bruno, holding the write-off role and stepped up, writes NF-C (C-2's, 100
// days overdue) off from the write-off page, and the ledger closes it.
func browserWriteOff(t *testing.T, b tab, e *env) {
	t.Helper()
	b.open(e.base + web.WriteOffsPath)
	b.do("fill the write-off form", chromedp.SetValue(chromedp.CSS("#invoiceId"), "NF-C"), chromedp.SetValue(chromedp.CSS("#customerId"), "C-2"),
		chromedp.SetValue(chromedp.CSS("#amountCents"), "123456"), chromedp.SetValue(chromedp.CSS("#reason"), "cliente em recuperação judicial"))
	b.shoot("write-off-form")
	if status := b.submit(`#main form button[type="submit"]`); status != http.StatusOK {
		t.Fatalf("writing NF-C off answered %d", status)
	}
	if h := b.text("#written-off"); h != "Invoice written off" || invoiceState(t, e, "NF-C") != ledger.StateWrittenOff {
		t.Errorf("after writing off the page says %q and the ledger %s, want written off", h, invoiceState(t, e, "NF-C"))
	}
	b.shoot("write-off-done")
}
