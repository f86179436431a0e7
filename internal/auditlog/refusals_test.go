package auditlog

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// written collects what a Refusals writes.
type written struct {
	mu  sync.Mutex
	evs []Event
}

func (w *written) write(_ context.Context, ev Event) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.evs = append(w.evs, ev)
	return nil
}

func (w *written) take() []Event {
	w.mu.Lock()
	defer w.mu.Unlock()
	evs := w.evs
	w.evs = nil
	return evs
}

func newRefusals(t *testing.T, w *written, maxClients int) *Refusals {
	t.Helper()
	d, err := NewDigester([]byte(strings.Repeat("k", 32)))
	if err != nil {
		t.Fatal(err)
	}
	a, err := NewRefusals(RefusalsOptions{Write: w.write, Digest: d, MaxClients: maxClients,
		Client: func(r *http.Request) string { return r.RemoteAddr }})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func refusal(code, requestID string) Event {
	return Event{Name: "web.form.refused", Tool: "POST /approvals/{id}", Outcome: Denied, FailureCode: code, RequestID: requestID}
}

// TestRefusalsFlood: 10 000 refusals of one class from one client within a minute are one
// event with the count 10 000, written when the minute ends; another client, and another
// class, are events of their own; a minute without refusals writes nothing; what is counted
// when Run stops is written then.
func TestRefusalsFlood(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := &written{}
		a := newRefusals(t, w, 0)
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan struct{})
		go func() { defer close(done); a.Run(ctx, time.Minute) }()

		for i := range 10000 {
			a.Add("192.0.2.1", refusal("csrf_token_invalid", fmt.Sprintf("r%d", i)))
		}
		a.Add("192.0.2.2", refusal("csrf_token_invalid", "other-client"))
		a.Add("192.0.2.1", refusal("cross_origin_request", "other-class"))
		time.Sleep(59 * time.Second)
		synctest.Wait()
		if evs := w.take(); len(evs) != 0 {
			t.Fatalf("%d events before the minute ended, want none yet", len(evs))
		}
		time.Sleep(time.Second)
		synctest.Wait()
		evs := w.take()
		if len(evs) != 3 {
			t.Fatalf("%d events after a minute, want 3: %+v", len(evs), evs)
		}
		first := evs[0]
		if first.Details["count"] != 10000 || first.RequestID != "r0" || first.FailureCode != "csrf_token_invalid" || first.Outcome != Denied ||
			first.Name != "web.form.refused" || first.Tool != "POST /approvals/{id}" || len(first.ArgsDigest) != 64 {
			t.Errorf("the flood's event = %+v, want count 10000, the first request's id, the class, the client's digest", first)
		}
		if strings.Contains(fmt.Sprint(evs), "192.0.2") {
			t.Errorf("an event holds the client's address: %+v", evs)
		}
		if evs[1].Details["count"] != 1 || evs[1].ArgsDigest == first.ArgsDigest {
			t.Errorf("another client's event = %+v, want count 1 and another digest than %s", evs[1], first.ArgsDigest)
		}
		if evs[2].Details["count"] != 1 || evs[2].FailureCode != "cross_origin_request" || evs[2].ArgsDigest != first.ArgsDigest {
			t.Errorf("another class's event = %+v, want count 1 and the same client's digest", evs[2])
		}

		time.Sleep(time.Minute)
		synctest.Wait()
		if evs := w.take(); len(evs) != 0 {
			t.Errorf("a minute without refusals wrote %d events", len(evs))
		}
		a.Add("192.0.2.1", refusal("csrf_token_invalid", "last"))
		cancel()
		<-done
		if evs := w.take(); len(evs) != 1 || evs[0].Details["count"] != 1 || evs[0].RequestID != "last" {
			t.Errorf("on stop: %+v, want the one refusal counted", evs)
		}
	})
}

// TestRefusalsBounded: however many clients and classes a flood uses, a Refusals holds at most
// MaxClients (class, client) pairs and maxRefusalClasses classes past them; the refusals past
// MaxClients are counted per class, with no client (otherClients), and none is lost while the
// classes fit.
func TestRefusalsBounded(t *testing.T) {
	w := &written{}
	a := newRefusals(t, w, 100)
	for i := range 10000 {
		a.Refused(&http.Request{RemoteAddr: fmt.Sprintf("10.%d.%d.%d", i>>16, i>>8&255, i&255)}, refusal("not_signed_in", ""))
	}
	if n := a.Len(); n != 101 {
		t.Errorf("%d pairs held after 10 000 clients, want 100 and one class of other clients", n)
	}
	a.Flush(t.Context())
	evs := w.take()
	var total int64
	for _, ev := range evs {
		total += ev.Details["count"]
	}
	last := evs[len(evs)-1]
	if len(evs) != 101 || total != 10000 || last.Details["otherClients"] != 1 || last.Details["count"] != 9900 || last.ArgsDigest != "" {
		t.Errorf("%d events counting %d, the last %+v; want 101 counting 10000, the last 9900 of other clients", len(evs), total, last)
	}
	for i := range 10000 {
		a.Add(fmt.Sprint(i), Event{Name: "x", Outcome: Denied, FailureCode: fmt.Sprintf("code_%d", i)})
	}
	if n := a.Len(); n != 100+maxRefusalClasses {
		t.Errorf("%d pairs held after 10 000 classes, want %d", n, 100+maxRefusalClasses)
	}
}
