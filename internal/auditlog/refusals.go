package auditlog

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"sync"
	"time"
)

// Refusals audits the refusals anyone can cause at will — a form posted from another site,
// without its CSRF token or its session; a sign-in callback that fails; a forged download
// link — without letting a flood of them fill the log: it counts them, and Run writes, once a
// minute, one event per class and client carrying the count (the detail "count").
//
// A class is an event's name, outcome, tool (the object, when the refusal names one) and
// failure code. A client is what Client names (an IPv4 address or an IPv6 /64: the per-origin
// rate limit's limits.ClientIP); the event carries it as a keyed digest in ArgsDigest, so the
// log holds no address, yet whoever holds the audit key can tell whether an address was the
// one. The event's RequestID is the first refusal's of the minute: its access log line has
// the rest.
//
// Memory is bounded: a minute tells at most MaxClients (class, client) pairs apart; the
// refusals past them are counted per class with no client, in an event with the detail
// "otherClients": 1, and past MaxClients+maxRefusalClasses entries they are only counted in
// the log line of the next write. So a minute writes at most that many events per replica.
//
// Each replica counts its own: a client whose refusals reach N replicas has up to N events
// per class a minute, whose counts add up. Counts a replica holds when it dies (a minute's at
// most) are lost; Run writes what it holds when it stops.
type Refusals struct {
	write  func(context.Context, Event) error
	digest *Digester
	client func(*http.Request) string
	max    int
	log    *slog.Logger

	mu      sync.Mutex
	counts  map[refusalKey]*refusalCount
	order   []refusalKey // first seen first: the events are written in that order
	dropped int64        // refusals past every bound since the last write
}

type refusalKey struct{ name, outcome, tool, code, client string }

type refusalCount struct {
	ev Event
	n  int64
}

// DefaultMaxClients is RefusalsOptions.MaxClients's default.
const DefaultMaxClients = 4096

// maxRefusalClasses bounds the per-class entries kept past MaxClients.
const maxRefusalClasses = 256

// RefusalsOptions configure NewRefusals.
type RefusalsOptions struct {
	// Write writes an event (Log.Keep). Required.
	Write func(context.Context, Event) error
	// Digest makes the client's digest. Required.
	Digest *Digester
	// Client names the client of a request (limits.ClientIP with the trusted proxy header).
	// Required.
	Client func(*http.Request) string
	// MaxClients bounds the (class, client) pairs a minute tells apart (DefaultMaxClients).
	MaxClients int
	Logger     *slog.Logger
}

// NewRefusals returns an empty Refusals.
func NewRefusals(o RefusalsOptions) (*Refusals, error) {
	if o.Write == nil || o.Digest == nil || o.Client == nil {
		return nil, errors.New("auditlog: refusals need Write, Digest and Client")
	}
	if o.MaxClients <= 0 {
		o.MaxClients = DefaultMaxClients
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return &Refusals{write: o.Write, digest: o.Digest, client: o.Client, max: o.MaxClients, log: o.Logger,
		counts: map[refusalKey]*refusalCount{}}, nil
}

// Refused counts the refusal ev (Name, Outcome, FailureCode; Tool when it names an object;
// RequestID) of r's client.
func (a *Refusals) Refused(r *http.Request, ev Event) { a.Add(a.client(r), ev) }

// Add counts the refusal ev of client.
func (a *Refusals) Add(client string, ev Event) {
	k := refusalKey{ev.Name, string(ev.Outcome), ev.Tool, ev.FailureCode, client}
	a.mu.Lock()
	defer a.mu.Unlock()
	c := a.counts[k]
	if c == nil && len(a.counts) >= a.max {
		k.tool, k.client = "", "" // counted per class, with no client
		c = a.counts[k]
	}
	if c == nil {
		if len(a.counts) >= a.max+maxRefusalClasses {
			a.dropped++
			return
		}
		c = &refusalCount{ev: Event{Name: ev.Name, Outcome: ev.Outcome, Tool: k.tool, FailureCode: ev.FailureCode, RequestID: ev.RequestID}}
		if k.client != "" {
			c.ev.ArgsDigest = a.digest.Bytes([]byte("refused client\x00" + k.client))
		} else {
			c.ev.Details = map[string]int64{"otherClients": 1}
		}
		a.counts[k] = c
		a.order = append(a.order, k)
	}
	c.n++
}

// Len is how many (class, client) pairs are counted and not yet written.
func (a *Refusals) Len() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.counts)
}

// Flush writes one event per (class, client) counted since the last write, and starts
// counting afresh. A failed write is logged and its count lost.
func (a *Refusals) Flush(ctx context.Context) {
	a.mu.Lock()
	counts, order, dropped := a.counts, a.order, a.dropped
	a.counts, a.order, a.dropped = make(map[refusalKey]*refusalCount, len(counts)), nil, 0
	a.mu.Unlock()
	if dropped > 0 {
		a.log.WarnContext(ctx, "refusals not audited: too many kinds in a minute", "count", dropped)
	}
	for _, k := range order {
		c := counts[k]
		if c.ev.Details == nil {
			c.ev.Details = map[string]int64{}
		}
		c.ev.Details["count"] = c.n
		if err := a.write(ctx, c.ev); err != nil {
			a.log.ErrorContext(ctx, "audit write failed", "request_id", c.ev.RequestID, "event", c.ev.Name, "count", c.n, "err", err)
		}
	}
}

// Run writes the counts every interval (a minute in serve) until ctx ends, then once more,
// within drainTimeout.
func (a *Refusals) Run(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			last, cancel := context.WithTimeout(context.WithoutCancel(ctx), drainTimeout)
			defer cancel()
			a.Flush(last)
			return
		case <-t.C:
			a.Flush(ctx)
		}
	}
}
