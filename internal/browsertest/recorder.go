package browsertest

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"

	cdplog "github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// Recorder keeps what a browser's targets tell of their pages: every request they make, and
// every event that tells of a script or of a problem — an uncaught exception, a console call,
// a browser log entry (a CSP violation, a failed load). One recorder may listen to several
// targets: the tab (Record), and a frame's target attached to later (its Listen passed to
// chromedp.WithListener).
type Recorder struct {
	mu       sync.Mutex
	requests []Request
	events   []Event
}

// Request is one request a page made: its URL, and what started it — the document's
// "parser", a "script", or "other" (the browser itself, as its request for a site's icon).
type Request struct {
	URL, Initiator string
}

// Event is an uncaught exception, a console call or a browser log entry.
type Event struct {
	Kind  string // "exception", "console" or "log"
	Level string // a console call's type (log, error, warning…), a log entry's level; "" for an exception
	Text  string // the exception's text and value, the call's arguments (JSON), the entry's source and text
}

// String is the event as a test reports it: "exception: …", "console.error: […]",
// "log error network: …".
func (e Event) String() string {
	switch e.Kind {
	case "exception":
		return "exception: " + e.Text
	case "console":
		return "console." + e.Level + ": " + e.Text
	}
	return e.Kind + " " + e.Level + " " + e.Text
}

// Script reports whether e tells that a script ran or failed: an exception or a console call.
func (e Event) Script() bool { return e.Kind == "exception" || e.Kind == "console" }

// Problem reports whether e is one: an exception, or a console call or log entry of level
// error or warning.
func (e Event) Problem() bool {
	return e.Kind == "exception" || e.Level == string(runtime.ConsoleAPICalledTypeError) ||
		e.Level == string(runtime.ConsoleAPICalledTypeWarning) || e.Level == string(cdplog.EntryLevelError) ||
		e.Level == string(cdplog.EntryLevelWarning)
}

// Record starts recording the events of ctx's target (a tab of New's).
func Record(ctx context.Context) (*Recorder, error) {
	r := &Recorder{}
	if err := chromedp.Listen(ctx, r.Listen); err != nil {
		return nil, fmt.Errorf("browsertest: recording the tab's events: %w", err)
	}
	return r, nil
}

// Listen records ev, one of a target's events; the others are ignored.
func (r *Recorder) Listen(ev any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch ev := ev.(type) {
	case *network.EventRequestWillBeSent:
		r.requests = append(r.requests, Request{URL: ev.Request.URL, Initiator: string(ev.Initiator.Type)})
	case *runtime.EventExceptionThrown:
		r.events = append(r.events, Event{Kind: "exception", Text: ev.ExceptionDetails.Text + " " + marshal(ev.ExceptionDetails.Exception)})
	case *runtime.EventConsoleAPICalled:
		r.events = append(r.events, Event{Kind: "console", Level: string(ev.Type), Text: marshal(ev.Args)})
	case *cdplog.EventEntryAdded:
		r.events = append(r.events, Event{Kind: "log", Level: string(ev.Entry.Level), Text: string(ev.Entry.Source) + ": " + ev.Entry.Text})
	}
}

// TakeRequests returns the requests recorded since the last call, in order, and forgets them.
func (r *Recorder) TakeRequests() []Request {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.requests
	r.requests = nil
	return out
}

// Events returns the events recorded so far that keep reports true, in order.
func (r *Recorder) Events(keep func(Event) bool) []Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.DeleteFunc(slices.Clone(r.events), func(e Event) bool { return !keep(e) })
}

func marshal(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
