package main

import (
	"context"
	"log/slog"
	"math"
	"sync"
	"time"

	"github.com/cobranca/cobranca/internal/approval"
	"github.com/cobranca/cobranca/internal/auditlog"
	"github.com/cobranca/cobranca/internal/idempotency"
	"github.com/cobranca/cobranca/internal/mcpapi"
	"github.com/cobranca/cobranca/internal/metrics"
	"github.com/cobranca/cobranca/internal/outbox"
	"github.com/cobranca/cobranca/internal/store"
	"github.com/cobranca/cobranca/internal/web"
)

// The operator metrics read from the store: what waits for people (approvals), for the mail
// server (the outbox), for the sealer (the audit log) and what the idempotency table holds.
// Every replica reports the same store-wide values: aggregate them with max, not sum
// (docs/operations.md, "Metrics").
const (
	metricApprovalsPending      = "cobranca_approvals_pending"
	metricApprovalOldestAge     = "cobranca_approval_oldest_pending_age_seconds"
	metricOutboxQueued          = "cobranca_outbox_messages_queued"
	metricOutboxRetrying        = "cobranca_outbox_messages_retrying"
	metricOutboxUndeliverable   = "cobranca_outbox_messages_undeliverable_total"
	metricAuditUnsealed         = "cobranca_audit_unsealed_events"
	metricAuditOldestUnsealed   = "cobranca_audit_oldest_unsealed_age_seconds"
	metricIdempotencyKeysStored = "cobranca_idempotency_keys_stored"
)

// operatorMetricsTTL is how long the store's values are kept between reads: a scrape storm
// costs the store one read (five small queries) per replica per TTL. operatorMetricsTimeout
// bounds one read; a value not read in time is NaN until the next.
const (
	operatorMetricsTTL     = 5 * time.Second
	operatorMetricsTimeout = 2 * time.Second
)

// operatorCountCap is where the counts saturate: each query reads at most this many index
// entries, so a scrape's cost is bounded however large a table grows.
const operatorCountCap = 1_000_000

// The store's operator metrics, by their place in one read.
const (
	readApprovalsPending = iota
	readApprovalOldestAge
	readOutboxQueued
	readOutboxRetrying
	readAuditUnsealed
	readAuditOldestUnsealed
	readIdempotencyKeys
	readings
)

// operatorSamples are the gauges of one read of the store, at their places.
var operatorSamples = [readings]metrics.Sample{
	readApprovalsPending:    {Name: metricApprovalsPending, Help: "Critical calls waiting for a person's approval now (pending, not expired), all replicas together."},
	readApprovalOldestAge:   {Name: metricApprovalOldestAge, Help: "Age of the oldest approval still pending, in seconds (0 when none)."},
	readOutboxQueued:        {Name: metricOutboxQueued, Help: "E-mail messages in the outbox not sent yet (waiting, being sent, or waiting for a retry), all replicas together."},
	readOutboxRetrying:      {Name: metricOutboxRetrying, Help: "Outbox messages waiting for a retry after a transient failure (the mail server deferred them or could not be reached)."},
	readAuditUnsealed:       {Name: metricAuditUnsealed, Help: "Committed audit events the sealer has not put in the hash chain yet (not covered by audit verify or a checkpoint)."},
	readAuditOldestUnsealed: {Name: metricAuditOldestUnsealed, Help: "Age of the oldest audit event not sealed yet, in seconds (0 when every event is sealed)."},
	readIdempotencyKeys:     {Name: metricIdempotencyKeysStored, Help: "Idempotency keys stored with their answers (expired ones not reaped yet included)."},
}

// registerOperatorMetrics exposes the store's operator metrics on m (read at most once per
// operatorMetricsTTL, on the clock now) and the outbox's count of undeliverable messages.
func registerOperatorMetrics(m *metrics.Metrics, db store.DB, approvals *approval.Store, alog *auditlog.Log, mailer *outbox.Outbox, now func() time.Time, log *slog.Logger) {
	read := func(ctx context.Context) []float64 {
		vals := make([]float64, readings)
		for i := range vals {
			vals[i] = math.NaN()
		}
		t := now()
		age := func(oldest time.Time) float64 {
			if oldest.IsZero() {
				return 0
			}
			return max(t.Sub(oldest).Seconds(), 0)
		}
		failed := func(what string, err error) {
			log.WarnContext(ctx, "operator metrics: a store read failed; its metrics read NaN until the next", "metric", what, "err", err)
		}
		if n, oldest, err := approvals.Pending(ctx, db, operatorCountCap); err != nil {
			failed(metricApprovalsPending, err)
		} else {
			vals[readApprovalsPending], vals[readApprovalOldestAge] = float64(n), age(oldest)
		}
		if d, err := outbox.ReadDepth(ctx, db, operatorCountCap); err != nil {
			failed(metricOutboxQueued, err)
		} else {
			vals[readOutboxQueued], vals[readOutboxRetrying] = float64(d.Queued), float64(d.Retrying)
		}
		if lag, err := alog.Lag(ctx, operatorCountCap); err != nil {
			failed(metricAuditUnsealed, err)
		} else {
			vals[readAuditUnsealed], vals[readAuditOldestUnsealed] = float64(lag.Unsealed), age(lag.Oldest)
		}
		if n, err := idempotency.Stored(ctx, db, operatorCountCap); err != nil {
			failed(metricIdempotencyKeysStored, err)
		} else {
			vals[readIdempotencyKeys] = float64(n)
		}
		return vals
	}
	m.Sampled(operatorMetricsTTL, operatorMetricsTimeout, now, read, operatorSamples[:]...)
	m.CounterFunc(metricOutboxUndeliverable, "Messages this process's delivery workers gave up on: refused for good by the mail server (5xx), or deferred on every attempt; each is recorded on its reminder draft (undeliverable).",
		func() float64 { return float64(mailer.Undeliverable()) })
}

// refusalWindow is how far back the console's health page counts rate-limit refusals.
const refusalWindow = time.Hour

// recentRefusals counts the requests this replica refused for a rate limit (429 at the HTTP
// level) in the last refusalWindow, a minute at a time (60 counters, whatever the traffic),
// and passes each on to next (the metrics' counter by policy).
type recentRefusals struct {
	next mcpapi.RefusalCounter
	now  func() time.Time
	mu   sync.Mutex
	// count[i] is what was refused in the minute minute[i] (minutes since 1970), the minute
	// m being at i = m % len.
	count, minute [refusalWindow / time.Minute]int64
}

func (c *recentRefusals) Refused(policy string) {
	if c.next != nil {
		c.next.Refused(policy)
	}
	m := c.now().Unix() / 60
	i := m % int64(len(c.count))
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.minute[i] != m {
		c.minute[i], c.count[i] = m, 0
	}
	c.count[i]++
}

// Recent is how many were refused in the last refusalWindow (this minute included).
func (c *recentRefusals) Recent() int64 {
	m := c.now().Unix() / 60
	c.mu.Lock()
	defer c.mu.Unlock()
	var n int64
	for i, at := range c.minute {
		if at > m-int64(len(c.minute)) && at <= m {
			n += c.count[i]
		}
	}
	return n
}

// consoleHealth reads the console's health page (web.HealthReader): the operator metrics'
// store reads, and the refusals this replica counted recently.
type consoleHealth struct {
	db        store.DB
	approvals *approval.Store
	alog      *auditlog.Log
	refusals  *recentRefusals
}

func (h *consoleHealth) ReadHealth(ctx context.Context) (web.Health, error) {
	out := web.Health{RateLimited: h.refusals.Recent(), RateLimitedWindow: refusalWindow}
	var err error
	if out.ApprovalsPending, out.ApprovalOldest, err = h.approvals.Pending(ctx, h.db, operatorCountCap); err != nil {
		return out, err
	}
	d, err := outbox.ReadDepth(ctx, h.db, operatorCountCap)
	if err != nil {
		return out, err
	}
	out.OutboxQueued, out.OutboxRetrying = d.Queued, d.Retrying
	lag, err := h.alog.Lag(ctx, operatorCountCap)
	if err != nil {
		return out, err
	}
	out.AuditUnsealed, out.AuditOldestUnsealed = lag.Unsealed, lag.Oldest
	return out, nil
}
