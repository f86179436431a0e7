// Package browsertest gives a test a real, headless Chromium of its own (driven by chromedp
// over the DevTools protocol), held to a hard time limit, that leaves a screenshot, the DOM
// and the pages it went through when the test fails; and a Recorder of what its pages request
// and report (exceptions, console calls, the browser's log), for the checks of every test.
//
// Chromium is Debian's `chromium` package (.ci/run installs it and exports
// BROWSERTEST_CHROMIUM). Without it the test is skipped, saying why — except under CI=true,
// where that is a failure: CI never passes with the browser tests skipped.
//
// Under the race detector (go test -race) every browser test is skipped, saying so: -race
// checks our concurrency, not Chromium's, and a browser's paint, slowed several times by it
// on a small machine, is no test of ours. CI runs them in its plain `go test` stage.
//
//	ctx := browsertest.New(t, time.Minute)
//	err := chromedp.Do(ctx, chromedp.Navigate(url), chromedp.Click(chromedp.CSS("button")))
package browsertest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"github.com/cobranca/cobranca/internal/tier"
)

// EnvBinary names the variable that says where Chromium is; without it, Binary looks on PATH.
const EnvBinary = "BROWSERTEST_CHROMIUM"

// names are the binaries Binary looks for on PATH, in order.
var names = []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"}

// Binary returns the Chromium to run: $BROWSERTEST_CHROMIUM when set (it must be there), else
// the first of chromium, chromium-browser, google-chrome on PATH.
func Binary() (string, error) {
	if p := os.Getenv(EnvBinary); p != "" {
		abs, err := exec.LookPath(p)
		if err != nil {
			return "", fmt.Errorf("%s=%s: %w", EnvBinary, p, err)
		}
		return abs, nil
	}
	for _, n := range names {
		if p, err := exec.LookPath(n); err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("no Chromium: %s is not set and none of %s is on PATH (Debian: apt-get install chromium; .ci/run installs it)",
		EnvBinary, strings.Join(names, ", "))
}

// New starts a headless Chromium for t and returns the context of its first tab. The context
// ends when timeout has passed since New was called — the hard limit of the whole browser
// part of the test, start included — or when the test ends, which stops the browser.
//
// Running as root (CI containers), Chromium's sandbox cannot start, so the browser runs with
// --no-sandbox then, and only then; New logs it.
//
// When the test has failed by its end, the tab's screenshot (screenshot.png), DOM (dom.html)
// and the document responses it received (pages.txt) are written to t.ArtifactDir() (kept
// with `go test -artifacts`), and the URL, the pages and the DOM are logged.
//
// A test with a browser is end to end (package tier): under -short, New skips it.
func New(t *testing.T, timeout time.Duration) context.Context {
	t.Helper()
	tier.EndToEnd(t)
	if raceEnabled {
		t.Skip("browsertest: browser tests do not run under -race (it checks our concurrency, not Chromium's); the plain go test runs them")
	}
	bin, err := Binary()
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("browsertest: Chromium is required when CI=true: %v", err)
		}
		t.Skipf("browsertest: %v", err)
	}
	deadline := time.Now().Add(timeout)
	log := &logger{t: t}
	t.Cleanup(log.stop) // runs last: nothing logs after the test

	root := os.Geteuid() == 0
	if root {
		t.Log("browsertest: running as root: Chromium runs with --no-sandbox")
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(bin),
		chromedp.Flag("no-sandbox", root), // chromedp's own default is the same; said here, not assumed
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1024, 900),
	)
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	t.Cleanup(cancelAlloc) // stops the browser and waits for it

	pages := &trail{}
	tab, cancelTab := chromedp.NewContext(allocCtx,
		chromedp.WithErrorf(log.logf), chromedp.WithListener(pages.listen))
	t.Cleanup(cancelTab)

	// The first run starts the browser and ties the tab to tab's life (not to the deadline's
	// context, so that a timed-out test still gets its screenshot).
	started := make(chan error, 1)
	go func() { started <- chromedp.Do(tab) }()
	select {
	case err := <-started:
		if err != nil {
			t.Fatalf("browsertest: starting %s: %v", bin, err)
		}
	case <-time.After(time.Until(deadline)):
		cancelAlloc()
		t.Fatalf("browsertest: %s did not start within %v", bin, timeout)
	}

	t.Cleanup(func() {
		if t.Failed() {
			dump(tab, t.ArtifactDir(), pages, t.Logf)
		}
	})
	ctx, cancel := context.WithDeadline(tab, deadline)
	t.Cleanup(cancel)
	return ctx
}

// dump saves and logs what the tab shows. Each read has five seconds of its own, whatever the
// test's deadline did, so that one that hangs (a page still loading) leaves the others.
func dump(tab context.Context, dir string, pages *trail, logf func(string, ...any)) {
	var errs []error
	url := read(tab, chromedp.Location(), &errs)
	// Evaluated, not queried: a query waits for its node, which a blank page never has.
	dom := read(tab, chromedp.Evaluate[string](`document.documentElement ? document.documentElement.outerHTML : ""`), &errs)
	shot := read(tab, chromedp.FullScreenshot(100), &errs)
	if len(shot) > 0 {
		errs = append(errs, os.WriteFile(filepath.Join(dir, "screenshot.png"), shot, 0o644))
	}
	errs = append(errs, os.WriteFile(filepath.Join(dir, "dom.html"), []byte(dom), 0o644))
	errs = append(errs, os.WriteFile(filepath.Join(dir, "pages.txt"), []byte(pages.String()), 0o644))
	logf("browsertest: the browser, at the end of the failed test (saved in %s):\nURL: %s\npages:\n%s\nDOM:\n%s", dir, url, pages, dom)
	if err := errors.Join(errs...); err != nil {
		logf("browsertest: saving what the browser showed: %v", err)
	}
}

// read runs a in tab for five seconds at most, adding its error to errs.
func read[T any](tab context.Context, a chromedp.Action[T], errs *[]error) T {
	ctx, cancel := context.WithTimeout(tab, 5*time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, a)
	*errs = append(*errs, err)
	return v
}

// trail records the document responses the tab received, in order: the pages a test went
// through, redirects included.
type trail struct {
	mu    sync.Mutex
	lines []string
}

func (p *trail) listen(ev any) {
	var line string
	switch ev := ev.(type) {
	case *network.EventRequestWillBeSent: // a redirect's response comes with the next request
		if ev.Type == network.ResourceTypeDocument && ev.RedirectResponse != nil {
			line = fmt.Sprintf("%d %s", ev.RedirectResponse.Status, ev.RedirectResponse.URL)
		}
	case *network.EventResponseReceived:
		if ev.Type == network.ResourceTypeDocument && ev.Response != nil {
			line = fmt.Sprintf("%d %s", ev.Response.Status, ev.Response.URL)
		}
	}
	if line != "" {
		p.mu.Lock()
		p.lines = append(p.lines, line)
		p.mu.Unlock()
	}
}

func (p *trail) String() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return strings.Join(p.lines, "\n")
}

// logger forwards chromedp's errors to the test's log until the test ends; the browser's
// goroutines may outlive it by a moment, and a test must not be logged to once ended.
type logger struct {
	t       *testing.T
	mu      sync.Mutex
	stopped bool
}

func (l *logger) logf(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.stopped {
		l.t.Logf("chromedp: "+format, args...)
	}
}

func (l *logger) stop() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.stopped = true
}
