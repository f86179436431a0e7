package reminders_test

import (
	"bytes"
	"encoding/base64"
	"image"
	"image/png"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/cobranca/cobranca/internal/browsertest"
	"github.com/cobranca/cobranca/internal/pix"
	"github.com/cobranca/cobranca/internal/reminders"
)

// markupName is a customer name that runs a script if it is ever read as markup.
const markupName = `<img src=x onerror="document.title='pwned'">`

// TestHTMLInBrowser: the HTML part of a reminder, each language and tone, with a PIX code and a
// customer whose name is markup that would run a script, shown by headless Chromium as a mail
// client shows it (the cid: URL of the QR code replaced by the image's data: URL): the browser
// requests nothing but the page itself, no script runs (the title stays the subject, no image
// but the QR code, no element with an event handler), the name shows as the literal text, and
// the QR code is drawn (internal/pix's real PNG of the message's code). The screenshots are the test's artifacts (go test -artifacts keeps
// them): reminder-LANGUAGE.TONE.png. A control page with the same name written unescaped
// shows that this browser runs such a script, so the checks above can fail.
func TestHTMLInBrowser(t *testing.T) {
	tpl := templates(t)
	qr, err := pix.QRPNG(bacenCode) // the code pixMessage carries
	if err != nil {
		t.Fatal(err)
	}
	qrSize, err := png.DecodeConfig(bytes.NewReader(qr))
	if err != nil {
		t.Fatal(err)
	}
	dataURL := "data:image/png;base64," + base64.StdEncoding.EncodeToString(qr)
	pages := map[string]string{}
	subjects := map[string]string{}
	for _, lang := range reminders.Languages() {
		for _, tone := range reminders.Tones() {
			r, err := tpl.Render(lang, tone, pixMessage(markupName))
			if err != nil {
				t.Fatal(err)
			}
			cid := `src="cid:` + reminders.QRContentID + `"`
			if strings.Count(r.HTML, cid) != 1 {
				t.Fatalf("Render(%s, %s): the HTML names the QR code %d times, want once", lang, tone, strings.Count(r.HTML, cid))
			}
			path := "/" + string(lang) + "." + string(tone)
			pages[path] = strings.Replace(r.HTML, cid, `src="`+dataURL+`"`, 1)
			subjects[path] = r.Subject
		}
	}
	pages["/control"] = "<!DOCTYPE html><title>control</title><p>" + markupName + "</p>"
	var servedMu sync.Mutex
	var served []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		servedMu.Lock()
		served = append(served, r.URL.Path)
		servedMu.Unlock()
		page, ok := pages[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write([]byte(page))
	}))
	defer srv.Close()

	ctx := browsertest.New(t, 2*time.Minute)
	rec, err := browsertest.Record(ctx)
	if err != nil {
		t.Fatal(err)
	}
	paths := slices.Sorted(maps.Keys(subjects))
	for _, path := range paths {
		t.Run(strings.TrimPrefix(path, "/"), func(t *testing.T) {
			url := srv.URL + path
			if err := chromedp.Do(ctx, chromedp.Navigate(url), chromedp.WaitReady(chromedp.CSS("body"))); err != nil {
				t.Fatal(err)
			}
			// Every image has loaded or failed by the load event Navigate waits for; the QR
			// code is decoded once it reports its natural size.
			type state struct {
				Title    string   `json:"title"`
				Images   []string `json:"images"`
				QRWidth  int      `json:"qrWidth"`
				Scripts  int      `json:"scripts"`
				Handlers []string `json:"handlers"`
				Text     string   `json:"text"`
				Greeting string   `json:"greeting"`
				Width    int      `json:"width"`
			}
			got, err := chromedp.Run(ctx, chromedp.Evaluate[state](`(() => {
				const all = [...document.querySelectorAll("*")];
				return {
					title: document.title,
					images: [...document.images].map(i => i.src.slice(0, 22)),
					qrWidth: document.images.length ? document.images[0].naturalWidth : 0,
					scripts: document.scripts.length,
					handlers: all.flatMap(e => [...e.attributes].filter(a => a.name.startsWith("on")).map(a => e.tagName + " " + a.name)),
					text: document.body.innerText,
					greeting: document.querySelector("p").textContent,
					width: document.querySelector("table table").getBoundingClientRect().width,
				};
			})()`))
			if err != nil {
				t.Fatal(err)
			}
			if got.Title != subjects[path] {
				t.Errorf("title = %q, want the subject %q (a script changed it?)", got.Title, subjects[path])
			}
			if !slices.Equal(got.Images, []string{"data:image/png;base64,"}) || got.QRWidth != qrSize.Width {
				t.Errorf("images = %q, the first %d px wide; want the QR code alone, drawn (%d px)", got.Images, got.QRWidth, qrSize.Width)
			}
			if got.Scripts != 0 || len(got.Handlers) != 0 {
				t.Errorf("%d scripts and event handlers %q on the page, want none", got.Scripts, got.Handlers)
			}
			if !strings.Contains(got.Greeting, markupName) || !strings.Contains(got.Text, markupName) {
				t.Errorf("the greeting reads %q; want the name as written, %s", got.Greeting, markupName)
			}
			for _, want := range []string{bacenCode, boletoItauLine, "R$\u00a02.524,99"} {
				if !strings.Contains(got.Text, want) {
					t.Errorf("the page does not show %q", want)
				}
			}
			if got.Width > 600 || got.Width < 500 {
				t.Errorf("the message is %d px wide in a 1024 px window, want at most 600 (and near it)", got.Width)
			}
			// Only the page, the QR code's data: URL, and the icon Chromium itself asks each new
			// site for (no document names it; a mail client shows no site icon).
			var page bool
			for _, r := range rec.TakeRequests() {
				switch {
				case r.URL == url:
					page = true
				case strings.HasPrefix(r.URL, "data:image/png;base64,"):
				case r.URL == srv.URL+"/favicon.ico" && r.Initiator == "other":
				default:
					t.Errorf("the browser requested %s (initiator %s): the message loads something", r.URL, r.Initiator)
				}
			}
			if !page {
				t.Errorf("no request for the page itself was recorded: the record of requests is blind")
			}
			shot, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
			if err != nil {
				t.Fatal(err)
			}
			img, err := png.Decode(bytes.NewReader(shot))
			if err != nil {
				t.Fatalf("the screenshot is not a PNG: %v", err)
			}
			if b := img.Bounds(); b.Dx() < 600 || b.Dy() < 800 || colors(img) < 32 {
				t.Errorf("the screenshot is %dx%d with %d colors: not the message", b.Dx(), b.Dy(), colors(img))
			}
			file := filepath.Join(t.ArtifactDir(), "reminder"+strings.ReplaceAll(path, "/", "-")+".png")
			if err := os.WriteFile(file, shot, 0o644); err != nil {
				t.Fatal(err)
			}
			t.Logf("screenshot: %s", file)
		})
	}
	if l := rec.Events(browsertest.Event.Script); len(l) != 0 {
		t.Errorf("scripts ran or failed on the reminders' pages: %q", l)
	}
	servedMu.Lock()
	served = slices.DeleteFunc(served, func(p string) bool { return p == "/favicon.ico" })
	if want := paths; !slices.Equal(served, want) {
		t.Errorf("the server was asked for %q, want the pages alone %q", served, want)
	}
	servedMu.Unlock()

	// The control: the same name written as markup runs its script in this browser.
	if err := chromedp.Do(ctx, chromedp.Navigate(srv.URL+"/control"),
		chromedp.Poll[chromedp.Void](`document.title === "pwned"`, chromedp.WithPollingTimeout(10*time.Second))); err != nil {
		t.Errorf("the control page's script did not run (%v): the checks above prove nothing", err)
	}
}

// colors counts the distinct colors of img, sampled every other pixel: a blank page has few.
func colors(img image.Image) int {
	seen := map[[3]uint32]bool{}
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y += 2 {
		for x := b.Min.X; x < b.Max.X; x += 2 {
			r, g, bl, _ := img.At(x, y).RGBA()
			seen[[3]uint32{r >> 8, g >> 8, bl >> 8}] = true
		}
	}
	return len(seen)
}
