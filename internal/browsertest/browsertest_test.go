package browsertest

import (
	"context"
	"errors"
	"fmt"
	"html"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/cobranca/cobranca/internal/tier"
)

// formSite serves a form at / whose POST redirects (303) to /done, which shows the name sent.
func formSite(t *testing.T) *httptest.Server {
	t.Helper()
	var name string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/" && r.Method == http.MethodGet:
			fmt.Fprint(w, `<!doctype html><title>f</title><form method="post" action="/"><input name="name"><button id="go">Send</button></form>`)
		case r.URL.Path == "/" && r.Method == http.MethodPost:
			name = r.PostFormValue("name")
			http.Redirect(w, r, "/done", http.StatusSeeOther)
		case r.URL.Path == "/done":
			fmt.Fprintf(w, `<!doctype html><title>done</title><p id="got">%s</p>`, html.EscapeString(name))
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestNew: the browser fills and submits a plain form (no JavaScript on the page), follows the
// redirect and reads the result; the pages it went through are recorded, redirects included.
func TestNew(t *testing.T) {
	tier.EndToEnd(t)
	srv := formSite(t)
	ctx := New(t, time.Minute)
	if err := chromedp.Do(ctx,
		chromedp.Navigate(srv.URL+"/"),
		chromedp.SendKeys(chromedp.CSS(`input[name="name"]`), "Ana Ltda"),
		chromedp.Click(chromedp.CSS("#go")),
		chromedp.WaitVisible(chromedp.CSS("#got")),
	); err != nil {
		t.Fatal(err)
	}
	got, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("#got")))
	if err != nil || got != "Ana Ltda" {
		t.Fatalf("the result page says %q (%v), want Ana Ltda", got, err)
	}
	if loc, _ := chromedp.Run(ctx, chromedp.Location()); loc != srv.URL+"/done" {
		t.Errorf("Location = %s, want %s/done", loc, srv.URL)
	}
}

// TestNewDeadline: the context New returns ends at the hard limit, and a step waiting on a page
// that never comes returns then, with the deadline's error. (The limit is generous: it counts
// the browser's start, which takes seconds on a loaded CI machine.)
func TestNewDeadline(t *testing.T) {
	tier.EndToEnd(t)
	const limit = 15 * time.Second
	srv := formSite(t)
	before := time.Now()
	ctx := New(t, limit)
	after := time.Now()
	deadline, ok := ctx.Deadline()
	if !ok || deadline.Before(before.Add(limit)) || deadline.After(after.Add(limit)) {
		t.Fatalf("Deadline() = %v, %v; want %v after the call of New (%v to %v)", deadline, ok, limit, before, after)
	}
	if err := chromedp.Do(ctx, chromedp.Navigate(srv.URL+"/")); err != nil {
		t.Fatal(err)
	}
	err := chromedp.Do(ctx, chromedp.WaitVisible(chromedp.CSS("#never")))
	if !errors.Is(err, context.DeadlineExceeded) || !errors.Is(ctx.Err(), context.DeadlineExceeded) {
		t.Fatalf("waiting for a missing element = %v (ctx: %v), want the deadline", err, ctx.Err())
	}
	if now := time.Now(); now.Before(deadline) {
		t.Errorf("the wait returned at %v, before the deadline %v", now, deadline)
	}
}

// TestDump: what a failed test leaves: the screenshot, the DOM and the pages, saved and logged.
func TestDump(t *testing.T) {
	tier.EndToEnd(t)
	srv := formSite(t)
	ctx := New(t, time.Minute)
	if err := chromedp.Do(ctx, chromedp.Navigate(srv.URL+"/nowhere"), chromedp.Navigate(srv.URL+"/")); err != nil {
		t.Fatal(err)
	}
	pages := &trail{}
	pages.lines = []string{"404 " + srv.URL + "/nowhere", "200 " + srv.URL + "/"}
	dir := t.TempDir()
	var logged strings.Builder
	dump(ctx, dir, pages, func(f string, a ...any) { fmt.Fprintf(&logged, f, a...) })
	for _, want := range []string{"URL: " + srv.URL + "/", "404 " + srv.URL + "/nowhere", `<input name="name">`} {
		if !strings.Contains(logged.String(), want) {
			t.Errorf("the log lacks %q:\n%s", want, logged.String())
		}
	}
	if strings.Contains(logged.String(), "saving what the browser showed") {
		t.Errorf("dump failed: %s", logged.String())
	}
	shot, err := os.ReadFile(filepath.Join(dir, "screenshot.png"))
	if err != nil || !strings.HasPrefix(string(shot), "\x89PNG") {
		t.Errorf("screenshot.png: %v, %d bytes, want a PNG", err, len(shot))
	}
	if dom, err := os.ReadFile(filepath.Join(dir, "dom.html")); err != nil || !strings.Contains(string(dom), `<button id="go">`) {
		t.Errorf("dom.html = %q, %v", dom, err)
	}
}

// TestMissingChromium: without Chromium the test is skipped, saying why, and under CI=true it
// fails; under -race it is skipped before any Chromium is looked for, saying so, CI or not.
// Run in a child test binary, as the rule decides a whole test.
func TestMissingChromium(t *testing.T) {
	if os.Getenv("BROWSERTEST_CHILD") != "" {
		New(t, time.Minute)
		t.Log("child: got a browser")
		return
	}
	type want struct {
		fails          bool
		sayWhich, name string
	}
	for _, tc := range []struct {
		ci    string
		plain want
		race  want // built with -race: skipped before looking for Chromium, saying so
	}{
		{"", want{false, "--- SKIP: TestMissingChromium", "/nonexistent/chromium"}, want{false, "--- SKIP: TestMissingChromium", "-race"}},
		{"true", want{true, "--- FAIL: TestMissingChromium", "/nonexistent/chromium"}, want{false, "--- SKIP: TestMissingChromium", "-race"}},
	} {
		w := tc.plain
		if raceEnabled {
			w = tc.race
		}
		cmd := exec.Command(os.Args[0], "-test.run", "^TestMissingChromium$", "-test.v", "-test.count", "1")
		cmd.Env = append(os.Environ(), "BROWSERTEST_CHILD=1", EnvBinary+"=/nonexistent/chromium", "CI="+tc.ci)
		out, err := cmd.CombinedOutput()
		if (err != nil) != w.fails || !strings.Contains(string(out), w.sayWhich) || !strings.Contains(string(out), w.name) {
			t.Errorf("CI=%q (race: %v): %v\n%s\nwant %q naming %s", tc.ci, raceEnabled, err, out, w.sayWhich, w.name)
		}
		if strings.Contains(string(out), "child: got a browser") {
			t.Errorf("CI=%q: the child got a browser", tc.ci)
		}
	}
}

// TestDumpBlank: a browser that failed before it opened any page still leaves its URL and a
// screenshot, and soon: no read waits for a node that never comes.
func TestDumpBlank(t *testing.T) {
	tier.EndToEnd(t)
	ctx := New(t, time.Minute)
	dir := t.TempDir()
	var logged strings.Builder
	begin := time.Now()
	dump(ctx, dir, &trail{}, func(f string, a ...any) { fmt.Fprintf(&logged, f, a...) })
	if took := time.Since(begin); took > 5*time.Second {
		t.Errorf("dump took %v", took)
	}
	if !strings.Contains(logged.String(), "URL: about:blank") || strings.Contains(logged.String(), "saving what the browser showed") {
		t.Errorf("dump logged:\n%s", logged.String())
	}
	if _, err := os.Stat(filepath.Join(dir, "screenshot.png")); err != nil {
		t.Error(err)
	}
}

// TestRecorder: a page's requests, who started them, its console calls, its uncaught
// exception and the browser's log entry of a failed load are recorded, in order; which tell of
// a script and which are problems.
func TestRecorder(t *testing.T) {
	tier.EndToEnd(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/" {
			http.NotFound(w, r)
			return
		}
		fmt.Fprint(w, `<!doctype html><title>r</title><link rel="icon" href="data:,"><p>page</p>`+
			`<script>console.log("hello", 1); console.error("bad"); fetch("/missing"); setTimeout(() => { throw new Error("boom") });</script>`)
	}))
	t.Cleanup(srv.Close)
	ctx := New(t, time.Minute)
	rec, err := Record(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(ctx, chromedp.Navigate(srv.URL+"/")); err != nil {
		t.Fatal(err)
	}
	// The exception and the failed fetch come after the load: wait for both.
	for deadline := time.Now().Add(10 * time.Second); len(rec.Events(Event.Problem)) < 3 && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
	}
	var reqs []string
	for _, r := range rec.TakeRequests() {
		reqs = append(reqs, r.Initiator+" "+strings.TrimPrefix(r.URL, srv.URL))
	}
	if want := []string{"other /", "script /missing"}; !slices.Equal(reqs, want) {
		t.Errorf("requests = %q, want %q", reqs, want)
	}
	if again := rec.TakeRequests(); len(again) != 0 {
		t.Errorf("TakeRequests again = %q, want none: taken once", again)
	}
	str := func(es []Event) []string {
		var out []string
		for _, e := range es {
			out = append(out, e.String())
		}
		return out
	}
	scripts := str(rec.Events(Event.Script))
	if len(scripts) != 3 || scripts[0] != `console.log: [{"type":"string","value":"hello"},{"type":"number","value":1,"description":"1"}]` ||
		!strings.HasPrefix(scripts[1], `console.error: [{"type":"string","value":"bad"}]`) || !strings.Contains(scripts[2], "exception: Uncaught") || !strings.Contains(scripts[2], "boom") {
		t.Errorf("script events = %q, want the two console calls and the exception", scripts)
	}
	problems := str(rec.Events(Event.Problem))
	if len(problems) != 3 || !slices.ContainsFunc(problems, func(s string) bool { return strings.HasPrefix(s, "log error network: ") && strings.Contains(s, "404") }) {
		t.Errorf("problems = %q, want the console error, the exception and the 404's log entry", problems)
	}
}
