package server

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/cobranca/cobranca/internal/failure"
)

// TestDrain: once draining starts, /readyz answers 503 at once without asking the store, a new
// request is refused with 503 unavailable and Connection: close, and the request in flight
// finishes with its own answer; Wait returns only after it has.
func TestDrain(t *testing.T) {
	d := NewDrain()
	storeAsked := 0
	started, release := make(chan struct{}), make(chan struct{})
	mux := http.NewServeMux()
	mux.Handle("GET /readyz", readyz(d.Ready(func(context.Context) error { storeAsked++; return nil }), slog.New(slog.DiscardHandler)))
	mux.HandleFunc("GET /slow", func(w http.ResponseWriter, _ *http.Request) {
		close(started)
		<-release
		_, _ = io.WriteString(w, "the slow answer")
	})
	mux.HandleFunc("GET /other", func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "other") })
	srv := httptest.NewServer(d.Handler(mux))
	defer srv.Close()
	get := func(path string) (*http.Response, string) {
		t.Helper()
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, string(b)
	}
	if resp, _ := get("/readyz"); resp.StatusCode != http.StatusOK || storeAsked != 1 {
		t.Fatalf("/readyz before the drain = %d (store asked %d times), want 200", resp.StatusCode, storeAsked)
	}
	slow := make(chan string, 1)
	go func() {
		resp, err := http.Get(srv.URL + "/slow")
		if err != nil {
			slow <- err.Error()
			return
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		slow <- resp.Status + " " + string(b)
	}()
	<-started
	if n := d.Start(); n != 1 {
		t.Errorf("Start = %d in flight, want 1", n)
	}
	if resp, body := get("/readyz"); resp.StatusCode != http.StatusServiceUnavailable || body != "not ready: shutting down\n" || storeAsked != 1 {
		t.Errorf("/readyz while draining = %d %q (store asked %d times), want 503 shutting down, the store not asked", resp.StatusCode, body, storeAsked)
	}
	resp, body := get("/other")
	var refusal failure.Body
	_ = json.Unmarshal([]byte(body), &refusal)
	if resp.StatusCode != http.StatusServiceUnavailable || refusal.Error.Code != failure.Unavailable || !resp.Close || resp.Header.Get("Retry-After") != "1" {
		t.Errorf("a new request while draining = %d %v (close %v, Retry-After %q), want 503 unavailable, Connection: close, Retry-After 1",
			resp.StatusCode, body, resp.Close, resp.Header.Get("Retry-After"))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if err := d.Wait(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Wait with a request in flight = %v, want the deadline", err)
	}
	close(release)
	if got := <-slow; got != "200 OK the slow answer" {
		t.Errorf("the request in flight got %q, want its own answer", got)
	}
	if err := d.Wait(context.Background()); err != nil {
		t.Errorf("Wait after the request ended = %v", err)
	}
}

// BenchmarkDrainHandler is what Drain adds to every request (serve wraps the public listener's
// handler in it): compare with /bare, the same request without it.
func BenchmarkDrainHandler(b *testing.B) {
	next := http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})
	r := httptest.NewRequest(http.MethodPost, "/mcp", nil)
	w := httptest.NewRecorder()
	for _, bm := range []struct {
		name string
		h    http.Handler
	}{{"bare", next}, {"drain", NewDrain().Handler(next)}} {
		b.Run(bm.name, func(b *testing.B) {
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					bm.h.ServeHTTP(w, r)
				}
			})
		})
	}
}

// TestDrainReadyDuringCheck: a readiness check that was asking the store when the drain
// began answers that the server is shutting down, not the store's "ready": a load balancer
// must not see a 200 from a replica that already refuses new requests.
func TestDrainReadyDuringCheck(t *testing.T) {
	d := NewDrain()
	asking, answer := make(chan struct{}), make(chan struct{})
	ready := d.Ready(func(context.Context) error { close(asking); <-answer; return nil })
	got := make(chan error, 1)
	go func() { got <- ready(context.Background()) }()
	<-asking
	d.Start()
	close(answer)
	if err := <-got; !errors.Is(err, ErrDraining) {
		t.Errorf("a check in flight when the drain began = %v, want %v", err, ErrDraining)
	}
}

// TestDrainUnready: Unready turns /readyz to 503 without asking the store while requests are
// still answered; Start, after it, refuses new ones.
func TestDrainUnready(t *testing.T) {
	d := NewDrain()
	storeAsked := 0
	mux := http.NewServeMux()
	mux.Handle("GET /readyz", readyz(d.Ready(func(context.Context) error { storeAsked++; return nil }), slog.New(slog.DiscardHandler)))
	mux.HandleFunc("GET /work", func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "done") })
	srv := httptest.NewServer(d.Handler(mux))
	defer srv.Close()
	status := func(path string) int {
		t.Helper()
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	d.Unready()
	if got := status("/readyz"); got != http.StatusServiceUnavailable || storeAsked != 0 {
		t.Errorf("/readyz after Unready = %d (store asked %d times), want 503 without asking", got, storeAsked)
	}
	if got := status("/work"); got != http.StatusOK {
		t.Errorf("a request after Unready = %d, want it served (200)", got)
	}
	if n := d.Start(); n != 0 {
		t.Errorf("Start = %d in flight, want 0", n)
	}
	if got := status("/work"); got != http.StatusServiceUnavailable {
		t.Errorf("a request after Start = %d, want 503", got)
	}
	if got := status("/readyz"); got != http.StatusServiceUnavailable {
		t.Errorf("/readyz after Start = %d, want 503", got)
	}
}
