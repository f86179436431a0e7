package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"html/template"
	"image"
	"image/color"
	"image/png"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/target"
	"github.com/chromedp/chromedp"
	"github.com/cobranca/cobranca/internal/auth"
	"github.com/cobranca/cobranca/internal/browsertest"
	"github.com/cobranca/cobranca/internal/collections"
	"github.com/cobranca/cobranca/internal/mcpapi"
	"github.com/cobranca/cobranca/internal/portfolio"
	"github.com/cobranca/cobranca/internal/tier"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// EnvViewScreenshot names the variable that, when set, is where
// TestResultViewInBrowser also writes its screenshot of the view.
const EnvViewScreenshot = "VIEW_SCREENSHOT"

// viewPortfolio is what the browser test analyzes: customers in every aging
// bucket, one left out (doNotContact), one whose name is markup, one with a
// paid invoice only; an invoice in dollars, a disputed one, a broken promise
// to pay (Bruno's priority goes up) and a pending one (João is paused).
func viewPortfolio() map[string]any {
	inv := func(id, cust, name, due string, cents int, status string, dnc bool, extra ...any) map[string]any {
		m := map[string]any{"id": id, "customerId": cust, "customerName": name, "dueDate": due,
			"amountCents": cents, "status": status, "doNotContact": dnc}
		for i := 0; i+1 < len(extra); i += 2 {
			m[extra[i].(string)] = extra[i+1]
		}
		return m
	}
	return map[string]any{
		"asOf": "2026-11-30",
		"invoices": []any{
			inv("inv-01", "c-ana", "Ana Ltda", "2026-07-15", 1_250_000, "open", false), // 138 days: 90+
			inv("inv-02", "c-ana", "Ana Ltda", "2026-12-20", 300_000, "open", false),   // current
			inv("inv-03", "c-bru", "Bruno SA", "2026-11-20", 45_000, "open", false, // 10 days: 1-30
				"promiseToPayDate", "2026-11-25"), // broken
			inv("inv-04", "c-car", "Carla ME", "2026-10-10", 99_000, "open", false),                                         // 51 days: 31-60
			inv("inv-05", "c-dio", "Diogo & Filhos", "2026-09-10", 210_000, "open", false),                                  // 81 days: 61-90
			inv("inv-06", "c-dio", "Diogo & Filhos", "2026-11-25", 5_000, "open", false),                                    // 5 days: 1-30
			inv("inv-07", "c-eva", `<img src=x onerror="document.title='pwned'">Eva`, "2026-11-01", 180_000, "open", false), // 29 days: 1-30
			inv("inv-08", "c-fab", "Fábio", "2026-08-01", 77_000, "open", true),                                             // left out
			inv("inv-09", "c-gil", "Gil", "2026-10-01", 33_000, "paid", false),                                              // nothing open
			inv("inv-10", "c-hel", "Helena Importadora", "2026-10-20", 20_000, "open", false, // US$ 200,00, 41 days: 31-60
				"currency", "USD"),
			inv("inv-11", "c-bru", "Bruno SA", "2026-09-01", 70_000, "open", false, // disputed: in the aging, not the queue
				"disputed", true, "disputeReason", "valor divergente"),
			inv("inv-12", "c-ivo", "Ivo", "2026-11-27", 10_000, "open", false), // 3 days, medium
			inv("inv-13", "c-joa", "João", "2026-11-10", 64_000, "open", false, // paused until the day after its promise
				"promiseToPayDate", "2026-12-05"),
		},
		"rates": []any{map[string]any{"currency": "USD", "rate": 5.17, "date": "2026-11-28"}},
	}
}

// hostPage is a minimal MCP Apps host: it shows the view's HTML in a
// sandboxed iframe (scripts only: an opaque origin, as a host's inner frame)
// and plays the host's side of SEP-1865 over postMessage — answers
// ui/initialize, then sends tool-input and tool-result once the view says
// initialized, resizes the frame as the view reports its size, and on
// request asks the view to tear down. Every message from the view is kept
// in window.hostLog. The page's Content-Security-Policy is the
// specification's default for a view that declares no domains, which the
// srcdoc frame inherits.
var hostPage = template.Must(template.New("host").Parse(`<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>test host</title>
<style>body{margin:0;background:#e9ebef;font:14px sans-serif} iframe{display:block;margin:16px;border:1px solid #c5c9d2;background:#fff;width:960px;height:120px}</style>
</head><body>
<iframe id="view" sandbox="allow-scripts" title="result view"></iframe>
<script>
"use strict";
const viewHTML = {{.HTML}};
const toolArgs = {{.Args}};
const toolResult = {{.Result}};
window.hostLog = [];
window.hostDone = {initialized: false, teardown: false};
const frame = document.getElementById("view");
function send(msg) { frame.contentWindow.postMessage(msg, "*"); }
window.addEventListener("message", (event) => {
  if (event.source !== frame.contentWindow) { return; }
  const msg = event.data;
  window.hostLog.push(msg);
  if (msg.method === "ui/initialize") {
    send({jsonrpc: "2.0", id: msg.id, result: {
      protocolVersion: "2026-01-26",
      hostInfo: {name: "cobranca-test-host", version: "1.0.0"},
      hostCapabilities: {},
      hostContext: {theme: "light", displayMode: "inline", availableDisplayModes: ["inline"],
        containerDimensions: {width: 960, maxHeight: 2000}, locale: "pt-BR", timeZone: "America/Sao_Paulo", platform: "web",
        styles: {variables: {"--color-background-info": "#2f6fdb"}}}
    }});
  } else if (msg.method === "ui/notifications/initialized") {
    window.hostDone.initialized = true;
    send({jsonrpc: "2.0", method: "ui/notifications/tool-input", params: {arguments: toolArgs}});
    send({jsonrpc: "2.0", method: "ui/notifications/tool-result", params: toolResult});
  } else if (msg.method === "ui/notifications/size-changed") {
    frame.style.height = msg.params.height + "px";
  } else if (msg.id === "teardown-1" && msg.result) {
    window.hostDone.teardown = true;
  }
});
window.teardownView = () => send({jsonrpc: "2.0", id: "teardown-1", method: "ui/resource-teardown", params: {reason: "test"}});
frame.srcdoc = viewHTML;
</script>
</body></html>`))

// hostCSP is SEP-1865's restrictive default for a view without ui.csp.
const hostCSP = "default-src 'none'; script-src 'self' 'unsafe-inline'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; media-src 'self' data:; connect-src 'none'; object-src 'none'"

// TestResultViewInBrowser: the view, read by resources/read from a real
// server, renders the result of a real tools/call of analyze_portfolio in
// headless Chromium under a test host: the rows in the queue's order, a
// click on a column header sorts it (aria-sort says how), the keyboard does
// the same, the chart has a bar per aging bucket with its count, a customer
// name made of markup stays text, and no script error or CSP violation
// happens. The screenshot shows the table and the chart.
func TestResultViewInBrowser(t *testing.T) {
	tier.EndToEnd(t)
	s := newAuthServer(t, false)
	tok := mint(t, s.auth, auth.MintOptions{})
	// As a host does: the tool's view, then the call.
	sess := s.session(t, tok, "")
	ctx := context.Background()
	uri := viewOf(t, sess, collections.AnalyzeName)
	read, err := sess.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
	if err != nil || len(read.Contents) != 1 || read.Contents[0].MIMEType != mcpapi.AppsMIMEType {
		t.Fatalf("resources/read %q = %+v, %v", uri, read, err)
	}
	args := viewPortfolio()
	res, err := sess.CallTool(ctx, &mcp.CallToolParams{Name: collections.AnalyzeName, Arguments: args})
	if err != nil || res.IsError {
		t.Fatalf("tools/call = %+v, %v", res, err)
	}
	var a portfolio.Analysis
	if err := json.Unmarshal(mustMarshal(t, res.StructuredContent), &a); err != nil {
		t.Fatal(err)
	}
	if len(a.Accounts) < 4 {
		t.Fatalf("the analysis has %d accounts, want at least 4 to sort", len(a.Accounts))
	}

	// A tool error too: the result of a call the server refused.
	bad := viewPortfolio()
	bad["asOf"] = "2026-02-30"
	refused, err := sess.CallTool(ctx, &mcp.CallToolParams{Name: collections.AnalyzeName, Arguments: bad})
	if err != nil || !refused.IsError {
		t.Fatalf("tools/call of an invalid portfolio = %+v, %v; want a tool error", refused, err)
	}
	// A base currency whose ISO 4217 minor units Intl's CLDR data does not
	// share (HUF: 2 in ISO, 0 in CLDR): amounts are in the ISO ones.
	huf := map[string]any{"asOf": "2026-11-30", "baseCurrency": "HUF", "invoices": []any{map[string]any{
		"id": "h-1", "customerId": "c-hu", "customerName": "Budapest Kft", "dueDate": "2026-11-01",
		"amountCents": 123456, "status": "open", "doNotContact": false, "currency": "HUF"}}}
	hufRes, err := sess.CallTool(ctx, &mcp.CallToolParams{Name: collections.AnalyzeName, Arguments: huf})
	if err != nil || hufRes.IsError {
		t.Fatalf("tools/call of a HUF portfolio = %+v, %v", hufRes, err)
	}
	pages := map[string][]byte{}
	for path, call := range map[string]struct {
		args   any
		result *mcp.CallToolResult
	}{"/": {args, res}, "/refused": {bad, refused}, "/huf": {huf, hufRes}} {
		var page bytes.Buffer
		if err := hostPage.Execute(&page, map[string]any{
			"HTML": read.Contents[0].Text, "Args": json.RawMessage(mustMarshal(t, call.args)), "Result": json.RawMessage(mustMarshal(t, call.result)),
		}); err != nil {
			t.Fatal(err)
		}
		pages[path] = page.Bytes()
	}
	host := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Content-Security-Policy", hostCSP)
		_, _ = w.Write(pages[r.URL.Path])
	}))
	defer host.Close()

	// The view's frame is a target of its own: attached to (viewFrame) and
	// let go once the browser's screenshot of a failure is taken, which
	// the browser's own cleanups do.
	var frames frameCancels
	t.Cleanup(frames.cancel)
	bctx := browsertest.New(t, 90*time.Second)
	// Every uncaught exception, console error or warning and browser log error (a CSP
	// violation is one) of the page, and of the view's frame from when viewFrame attaches.
	seen, err := browsertest.Record(bctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(bctx, chromedp.Navigate(host.URL),
		chromedp.Poll[chromedp.Void](`window.hostDone && window.hostDone.initialized`, chromedp.WithPollingTimeout(0))); err != nil {
		t.Fatal(err)
	}
	view := viewFrame(t, bctx, seen, &frames)
	if err := chromedp.Do(view, chromedp.WaitVisible(chromedp.CSS(`body[data-state="rendered"] #accounts tbody tr`))); err != nil {
		t.Fatal(err)
	}

	// The queue's order, as the server ranked it.
	want := ids(a.Accounts)
	if got := rowIDs(t, view); !slices.Equal(got, want) {
		t.Errorf("rows = %v, want the queue's order %v", got, want)
	}
	// A click on "Valor em aberto" sorts by amount, largest first; a second
	// click, smallest first.
	byAmount := slices.Clone(a.Accounts)
	slices.SortStableFunc(byAmount, func(x, y portfolio.Account) int { return int(y.AmountCents - x.AmountCents) })
	click(t, view, "amount")
	if got := rowIDs(t, view); !slices.Equal(got, ids(byAmount)) {
		t.Errorf("after a click on the amount: rows = %v, want %v", got, ids(byAmount))
	}
	checkSort(t, view, "amount", "descending")
	click(t, view, "amount")
	slices.Reverse(byAmount)
	if got := rowIDs(t, view); !slices.Equal(got, ids(byAmount)) {
		t.Errorf("after a second click: rows = %v, want %v", got, ids(byAmount))
	}
	checkSort(t, view, "amount", "ascending")
	// The keyboard: Enter on the focused "Dias em atraso" header sorts by
	// days overdue, most first.
	byDays := slices.Clone(a.Accounts)
	slices.SortStableFunc(byDays, func(x, y portfolio.Account) int { return y.DaysOverdue - x.DaysOverdue })
	if err := chromedp.Do(view, chromedp.Focus(chromedp.CSS(`th[data-key="days"] button`)), chromedp.KeyEvent("\r")); err != nil {
		t.Fatal(err)
	}
	if got := rowIDs(t, view); !slices.Equal(got, ids(byDays)) {
		t.Errorf("after Enter on days overdue: rows = %v, want %v", got, ids(byDays))
	}
	checkSort(t, view, "days", "descending")

	// Markup in a customer name is text.
	imgs := evaluate[int](t, view, `document.querySelectorAll("#accounts img, #accounts script").length`)
	names := evaluate[[]string](t, view, `[...document.querySelectorAll("#accounts td.customer")].map(td => td.firstChild.textContent)`)
	if imgs != 0 || !slices.Contains(names, `<img src=x onerror="document.title='pwned'">Eva`) {
		t.Errorf("a customer name made of markup: %d elements made of it, names %q", imgs, names)
	}

	// The chart: the five buckets, in order, with their counts.
	type bar struct {
		Bucket string `json:"bucket"`
		Count  string `json:"count"`
		Height string `json:"height"`
	}
	bars := evaluate[[]bar](t, view, `[...document.querySelectorAll("#chart g[data-bucket]")].map(g => ({bucket: g.dataset.bucket, count: g.dataset.count, height: g.querySelector("rect").getAttribute("height")}))`)
	if len(a.Summary.Aging) != 5 || len(bars) != 5 {
		t.Fatalf("aging: %d buckets in the result, %d bars drawn; want 5 of each", len(a.Summary.Aging), len(bars))
	}
	for i, b := range a.Summary.Aging {
		if bars[i].Bucket != b.Bucket.String() || bars[i].Count != fmt.Sprint(b.InvoiceCount) || (b.AmountCents > 0) != (bars[i].Height != "0") {
			t.Errorf("bar %d = %+v, want bucket %s with %d invoices (amount %d)", i, bars[i], b.Bucket, b.InvoiceCount, b.AmountCents)
		}
	}

	// The handshake as the host saw it, then the teardown.
	saveScreenshot(t, paintedScreenshot(t, bctx, view))
	if err := chromedp.Do(bctx, chromedp.Evaluate[chromedp.Void](`window.teardownView()`),
		chromedp.Poll[chromedp.Void](`window.hostDone.teardown`, chromedp.WithPollingTimeout(0))); err != nil {
		t.Fatal(err)
	}
	checkHandshake(t, evaluate[[]map[string]any](t, bctx, `window.hostLog`))

	// The tool error: its text, and no table.
	if err := chromedp.Do(bctx, chromedp.Navigate(host.URL+"/refused"),
		chromedp.Poll[chromedp.Void](`window.hostDone && window.hostDone.initialized`, chromedp.WithPollingTimeout(0))); err != nil {
		t.Fatal(err)
	}
	view = viewFrame(t, bctx, seen, &frames)
	if err := chromedp.Do(view, chromedp.WaitVisible(chromedp.CSS(`body[data-state="error"] #status`))); err != nil {
		t.Fatal(err)
	}
	text := refused.Content[0].(*mcp.TextContent).Text
	if status := evaluate[string](t, view, `document.getElementById("status").textContent`); !strings.Contains(status, text) ||
		!evaluate[bool](t, view, `document.getElementById("queue").hidden && document.getElementById("chart-box").hidden`) {
		t.Errorf("a tool error shows %q (table hidden: want), want its text %q", status, text)
	}

	// HUF 1.234,56 (123456 minor units), not HUF 123.456.
	if err := chromedp.Do(bctx, chromedp.Navigate(host.URL+"/huf"),
		chromedp.Poll[chromedp.Void](`window.hostDone && window.hostDone.initialized`, chromedp.WithPollingTimeout(0))); err != nil {
		t.Fatal(err)
	}
	view = viewFrame(t, bctx, seen, &frames)
	if err := chromedp.Do(view, chromedp.WaitVisible(chromedp.CSS(`body[data-state="rendered"] #accounts tbody tr`))); err != nil {
		t.Fatal(err)
	}
	if total := evaluate[string](t, view, `document.querySelectorAll("#summary strong")[1].textContent`); !strings.Contains(total, "HUF") || !strings.Contains(total, "1.234,56") {
		t.Errorf("the total of 123456 minor units of HUF shows as %q, want HUF 1.234,56", total)
	}
	if p := seen.Events(browsertest.Event.Problem); len(p) > 0 {
		t.Errorf("the browser reported problems:\n%v", p)
	}
}

// viewFrame returns the context to run actions in the view's frame, which
// Chromium runs in a process of its own (a sandboxed frame without
// allow-same-origin is isolated): a target of its own, attached to.
func viewFrame(t *testing.T, ctx context.Context, rec *browsertest.Recorder, cancels *frameCancels) context.Context {
	t.Helper()
	// Polled until the browser's deadline: the frame's target comes when
	// Chromium has made its process, however long that takes.
	for ctx.Err() == nil {
		infos, err := chromedp.Targets(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, info := range infos {
			if info.Type == "iframe" && !slices.Contains(cancels.ids, info.TargetID) {
				fctx, cancel := chromedp.NewContext(ctx, chromedp.WithTargetID(info.TargetID), chromedp.WithListener(rec.Listen))
				cancels.ids = append(cancels.ids, info.TargetID)
				cancels.funcs = append(cancels.funcs, cancel)
				return fctx
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatal("the view's frame has no target of its own")
	return nil
}

// frameCancels end the contexts attached to frames' targets (ids): cancelling
// one closes its target, so they end after browsertest has looked at the
// page.
type frameCancels struct {
	ids   []target.ID
	funcs []context.CancelFunc
}

func (f *frameCancels) cancel() {
	for _, c := range f.funcs {
		c()
	}
}

func rowIDs(t *testing.T, view context.Context) []string {
	t.Helper()
	return evaluate[[]string](t, view, `[...document.querySelectorAll("#accounts tbody tr")].map(tr => tr.dataset.customerId)`)
}

func ids(accounts []portfolio.Account) []string {
	out := make([]string, len(accounts))
	for i, a := range accounts {
		out[i] = a.CustomerID
	}
	return out
}

func click(t *testing.T, view context.Context, key string) {
	t.Helper()
	if err := chromedp.Do(view, chromedp.Click(chromedp.CSS(`th[data-key="`+key+`"] button`))); err != nil {
		t.Fatal(err)
	}
}

// checkSort: the column key says how it sorts, every other says none.
func checkSort(t *testing.T, view context.Context, key, dir string) {
	t.Helper()
	got := evaluate[map[string]string](t, view, `Object.fromEntries([...document.querySelectorAll("#accounts th")].map(th => [th.dataset.key, th.getAttribute("aria-sort")]))`)
	if len(got) != 6 || got[key] != dir {
		t.Errorf("aria-sort by column = %v, want 6 columns and %s %s", got, key, dir)
	}
	for k, v := range got {
		want := "none"
		if k == key {
			want = dir
		}
		if v != want {
			t.Errorf("aria-sort of %s = %q, want %q", k, v, want)
		}
	}
}

// checkHandshake: the view asked ui/initialize first, with the 2026-01-26
// protocol and its info, then said initialized, reported a size, and
// answered the teardown.
func checkHandshake(t *testing.T, log []map[string]any) {
	t.Helper()
	var methods []string
	for _, m := range log {
		if method, ok := m["method"].(string); ok {
			methods = append(methods, method)
		}
	}
	if len(log) == 0 || log[0]["method"] != "ui/initialize" {
		t.Fatalf("the view's first message is not ui/initialize: %v", log)
	}
	params, _ := log[0]["params"].(map[string]any)
	if params["protocolVersion"] != "2026-01-26" || params["appInfo"] == nil || params["appCapabilities"] == nil {
		t.Errorf("ui/initialize params = %v", params)
	}
	if i := slices.Index(methods, "ui/notifications/initialized"); i != 1 {
		t.Errorf("ui/notifications/initialized is message %d, want 1: %v", i, methods)
	}
	sized := false
	for _, m := range log {
		if m["method"] == "ui/notifications/size-changed" {
			p, _ := m["params"].(map[string]any)
			w, _ := p["width"].(float64)
			h, _ := p["height"].(float64)
			sized = sized || w > 0 && h > 200
		}
	}
	if !sized {
		t.Errorf("no size-changed notification with the rendered size: %v", methods)
	}
}

// paintedScreenshot is the page's screenshot once the view's frame, which
// Chromium paints in a process of its own, shows in it: it waits for the
// view to have drawn two animation frames since it rendered, then takes
// screenshots until one is not blank. Slow paint (a loaded machine) only
// makes it wait, up to the browser's deadline; a view that never paints
// leaves saveScreenshot a blank one to report.
func paintedScreenshot(t *testing.T, page, view context.Context) []byte {
	t.Helper()
	if err := chromedp.Do(view, chromedp.Evaluate[chromedp.Void](
		`new Promise(done => requestAnimationFrame(() => requestAnimationFrame(() => done())))`, chromedp.EvalAwaitPromise)); err != nil {
		t.Fatal(err)
	}
	for {
		shot, err := chromedp.Run(page, chromedp.FullScreenshot(100))
		if err != nil {
			t.Fatal(err)
		}
		if img, err := png.Decode(bytes.NewReader(shot)); err != nil || blank(img) == "" || page.Err() != nil {
			return shot
		}
		// The next frame, on the page: not a time, an event of the browser's.
		if err := chromedp.Do(page, chromedp.Evaluate[chromedp.Void](
			`new Promise(done => requestAnimationFrame(() => done()))`, chromedp.EvalAwaitPromise)); err != nil {
			return shot
		}
	}
}

// blank says how img looks blank (few colors, or one on nearly all of it),
// or "" when it shows something.
func blank(img image.Image) string {
	b := img.Bounds()
	colors := map[color.RGBA]int{}
	for y := b.Min.Y; y < b.Max.Y; y += 2 {
		for x := b.Min.X; x < b.Max.X; x += 2 {
			r, g, bl, _ := img.At(x, y).RGBA()
			colors[color.RGBA{uint8(r >> 8), uint8(g >> 8), uint8(bl >> 8), 255}]++
		}
	}
	most := 0
	for _, n := range colors {
		most = max(most, n)
	}
	total := (b.Dx() / 2) * (b.Dy() / 2)
	if len(colors) < 32 || most > total*97/100 {
		return fmt.Sprintf("%d colors, the commonest on %d of %d pixels", len(colors), most, total)
	}
	return ""
}

// saveScreenshot writes the PNG to the test's directory, and to
// $VIEW_SCREENSHOT when set, after checking it shows something: the
// window's size, and far from one color.
func saveScreenshot(t *testing.T, shot []byte) {
	t.Helper()
	img, err := png.Decode(bytes.NewReader(shot))
	if err != nil {
		t.Fatalf("the screenshot is not a PNG: %v", err)
	}
	b := img.Bounds()
	if b.Dx() < 900 || b.Dy() < 300 {
		t.Errorf("screenshot is %dx%d, want the page (at least 900x300)", b.Dx(), b.Dy())
	}
	if why := blank(img); why != "" {
		t.Errorf("the screenshot looks blank: %s", why)
	}
	paths := []string{filepath.Join(t.TempDir(), "view.png")}
	if p := os.Getenv(EnvViewScreenshot); p != "" {
		paths = append(paths, p)
	}
	for _, p := range paths {
		if err := os.WriteFile(p, shot, 0o644); err != nil {
			t.Error(err)
		}
	}
	t.Logf("screenshot (%dx%d) written to %s", b.Dx(), b.Dy(), strings.Join(paths, ", "))
}

func mustMarshal(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// evaluate is the value of a JavaScript expression in ctx's frame.
func evaluate[T any](t *testing.T, ctx context.Context, expr string) T {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		t.Fatalf("%s: %v", expr, err)
	}
	return v
}
