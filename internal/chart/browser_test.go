package chart_test

import (
	"bytes"
	"context"
	"fmt"
	"image/png"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/cobranca/cobranca/internal/browsertest"
	"github.com/cobranca/cobranca/internal/chart"
)

// The pages' policy: nothing but what a hash admits, and here no hash at all.
const csp = "default-src 'none'; base-uri 'none'; frame-ancestors 'none'"

// recordViolations is run by the browser in each new document, before the page's own
// content, as DevTools can: it keeps the page's CSP violations for the test to read.
const recordViolations = `window.__violations = [];
document.addEventListener("securitypolicyviolation", e => window.__violations.push(e.violatedDirective + " " + (e.sample || "")));`

// TestChartsInBrowser: each golden chart, in a page under the console's CSP, is drawn by
// Chromium with its colors and no violation, at 1280 and 390 pixels wide; a screenshot of
// each is kept (t.ArtifactDir). A control page with a style attribute is refused, so the
// test can see a violation.
func TestChartsInBrowser(t *testing.T) {
	names := []string{"aging", "weekly", "hourly", "empty"}
	pages := map[string]string{
		"/control": `<!DOCTYPE html><html lang="pt-BR"><title>control</title><svg viewBox="0 0 10 10"><rect width="10" height="10" fill="#1f5fbf" style="fill: #ff0000"/></svg></html>`,
	}
	for _, name := range names {
		svg, err := os.ReadFile(filepath.Join("testdata", name+".svg"))
		if err != nil {
			t.Fatal(err)
		}
		pages["/"+name] = `<!DOCTYPE html><html lang="pt-BR"><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><title>` +
			name + `</title><body><main><h1>` + name + `</h1>` + string(svg) + `</main></body></html>`
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, ok := pages[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Content-Security-Policy", csp)
		_, _ = w.Write([]byte(p))
	}))
	defer srv.Close()

	// The palette as the browser computes a fill.
	var palette []string
	for _, c := range chart.Palette {
		v, err := strconv.ParseUint(c[1:], 16, 32)
		if err != nil {
			t.Fatal(err)
		}
		palette = append(palette, fmt.Sprintf("rgb(%d, %d, %d)", v>>16, v>>8&0xff, v&0xff))
	}

	ctx := browsertest.New(t, 2*time.Minute)
	rec, err := browsertest.Record(ctx)
	if err != nil {
		t.Fatal(err)
	}
	inject := func(ctx context.Context, tg *chromedp.Target) (chromedp.Void, error) {
		_, err := cdp.Call(ctx, tg, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: recordViolations})
		return chromedp.Void{}, err
	}
	if err := chromedp.Do(ctx, inject); err != nil {
		t.Fatal(err)
	}
	type drawn struct {
		Violations []string `json:"violations"`
		Width      float64  `json:"width"`
		Height     float64  `json:"height"`
		Fill       string   `json:"fill"` // the first bar's computed fill
		Bars       int      `json:"bars"`
		Label      string   `json:"label"`
	}
	read := func(t *testing.T, path string) drawn {
		t.Helper()
		if err := chromedp.Do(ctx, chromedp.Navigate(srv.URL+path), chromedp.WaitReady(chromedp.CSS("svg"))); err != nil {
			t.Fatal(err)
		}
		got, err := chromedp.Run(ctx, chromedp.Evaluate[drawn](`(() => {
			const svg = document.querySelector("svg"), r = svg.getBoundingClientRect();
			const bar = document.querySelector("g.bar rect") || document.querySelector("rect[style]");
			return {
				violations: window.__violations || ["the recorder did not run"],
				width: r.width, height: r.height,
				fill: bar ? getComputedStyle(bar).fill : "",
				bars: document.querySelectorAll("g.bar").length,
				label: svg.getAttribute("aria-label") || "",
			};
		})()`))
		if err != nil {
			t.Fatal(err)
		}
		return got
	}

	t.Run("control", func(t *testing.T) {
		got := read(t, "/control")
		if len(got.Violations) == 0 || !strings.Contains(got.Violations[0], "style-src") {
			t.Errorf("a style attribute under the CSP: violations %q, want one of style-src", got.Violations)
		}
		if got.Fill != "rgb(31, 95, 191)" {
			t.Errorf("the refused style's rect is filled %q, want its fill attribute's rgb(31, 95, 191)", got.Fill)
		}
		// The browser's own log says so too: what the recorder reads on the charts' pages.
		if !slices.ContainsFunc(rec.Events(browsertest.Event.Problem), func(e browsertest.Event) bool {
			return strings.Contains(e.Text, "Content Security Policy")
		}) {
			t.Errorf("the browser logged no CSP violation for the control: %v", rec.Events(browsertest.Event.Problem))
		}
		rec.TakeRequests()
	})
	defer func() {
		if l := rec.Events(browsertest.Event.Script); len(l) != 0 {
			t.Errorf("scripts ran or failed on the charts' pages: %q", l)
		}
	}()
	for _, width := range []int64{1280, 390} {
		if err := chromedp.Do(ctx, chromedp.EmulateViewport(width, 800)); err != nil {
			t.Fatal(err)
		}
		for _, name := range names {
			t.Run(name+"/"+strconv.FormatInt(width, 10), func(t *testing.T) {
				got := read(t, "/"+name)
				if len(got.Violations) != 0 {
					t.Errorf("CSP violations: %q", got.Violations)
				}
				// The chart loads nothing: the page is all the browser asked for (and the
				// icon Chromium itself asks each new site for).
				var page bool
				for _, r := range rec.TakeRequests() {
					switch {
					case r.URL == srv.URL+"/"+name:
						page = true
					case r.URL == srv.URL+"/favicon.ico" && r.Initiator == "other":
					default:
						t.Errorf("the browser requested %s (initiator %s): the chart loads something", r.URL, r.Initiator)
					}
				}
				if !page {
					t.Errorf("no request for the page itself was recorded: the record of requests is blind")
				}
				if got.Width < float64(width)/3 || got.Width > float64(width) || got.Height <= 0 {
					t.Errorf("the chart is drawn %.0f×%.0f px in a %d px window", got.Width, got.Height, width)
				}
				if name != "empty" && (got.Bars == 0 || !slices.Contains(palette, got.Fill)) {
					t.Errorf("%d bars, the first filled %q; want bars in the palette's colors %q", got.Bars, got.Fill, palette)
				}
				if got.Label == "" {
					t.Error("the chart has no accessible name")
				}
				shot, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
				if err != nil {
					t.Fatal(err)
				}
				if _, err := png.Decode(bytes.NewReader(shot)); err != nil {
					t.Fatalf("the screenshot is not a PNG: %v", err)
				}
				if err := os.WriteFile(filepath.Join(t.ArtifactDir(), name+"-"+strconv.FormatInt(width, 10)+".png"), shot, 0o644); err != nil {
					t.Fatal(err)
				}
			})
		}
	}
}
