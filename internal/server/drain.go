package server

import (
	"context"
	"errors"
	"net/http"
	"sync/atomic"

	"github.com/cobranca/cobranca/internal/failure"
)

// ErrDraining is /readyz's answer once the server is shutting down.
var ErrDraining = errors.New("shutting down")

// Drain is the public listener's shutdown: once Start is called, /readyz answers 503 at once
// (a load balancer takes the replica out), every new request but the probes is refused with
// 503 and Connection: close, and Wait returns when the requests already in flight have
// finished. The listener stays open meanwhile, so that probes get their 503 rather than a
// refused connection; it is closed (http.Server.Shutdown) after Wait. Unready, before Start,
// turns /readyz to 503 alone, while requests are still served.
type Drain struct {
	unready  atomic.Bool // /readyz answers 503
	draining atomic.Bool // new requests are refused
	inflight atomic.Int64
	wake     chan struct{} // a request ended while draining with none left in flight
}

// NewDrain returns a Drain that is not draining.
func NewDrain() *Drain { return &Drain{wake: make(chan struct{}, 1)} }

// Handler counts next's requests in flight and, while draining, refuses new ones.
func (d *Drain) Handler(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if probe(r.URL.Path) { // answered while draining: they report it
			next.ServeHTTP(w, r)
			return
		}
		// Counted before the check: Start, which sets draining before it reads the count,
		// sees every request that passed.
		d.inflight.Add(1)
		defer d.leave()
		if d.draining.Load() {
			w.Header().Set("Connection", "close")
			w.Header().Set("Retry-After", "1")
			failure.WriteHTTP(w, http.StatusServiceUnavailable, &failure.Error{Code: failure.Unavailable,
				Message: "the server is shutting down; send the request again (another replica answers it)"})
			return
		}
		next.ServeHTTP(w, r)
	})
}

func (d *Drain) leave() {
	if d.inflight.Add(-1) == 0 && d.draining.Load() {
		select {
		case d.wake <- struct{}{}:
		default:
		}
	}
}

// Unready makes the readiness check answer ErrDraining from now on, while requests are still
// served: a load balancer that polls readiness stops sending before Start refuses any.
func (d *Drain) Unready() { d.unready.Store(true) }

// Start begins draining (unready, and every new request but the probes refused) and returns
// how many requests are in flight.
func (d *Drain) Start() int {
	d.unready.Store(true)
	d.draining.Store(true)
	return int(d.inflight.Load())
}

// Wait returns nil once no request is in flight (after Start), or ctx's error first.
func (d *Drain) Wait(ctx context.Context) error {
	for d.inflight.Load() != 0 {
		select {
		case <-d.wake:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// Ready is ready, answering ErrDraining instead once draining: the store is not asked, and a
// check that was asking it when the drain began answers ErrDraining too, not its 200.
func (d *Drain) Ready(ready func(context.Context) error) func(context.Context) error {
	return func(ctx context.Context) error {
		if d.unready.Load() {
			return ErrDraining
		}
		if ready == nil {
			return nil
		}
		err := ready(ctx)
		if d.unready.Load() { // the drain began while the store was asked: not ready either
			return ErrDraining
		}
		return err
	}
}
