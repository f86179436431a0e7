package web

import (
	"context"
	"net/http"
	"time"
)

// Health is what the health page shows: the operator metrics (cmd/cobranca's
// opsmetrics.go reads them from the store, as /metrics does).
type Health struct {
	// RateLimited is how many requests were refused for a rate limit (429) within
	// RateLimitedWindow, by this replica.
	RateLimited       int64
	RateLimitedWindow time.Duration
	// ApprovalsPending wait for a person's decision now; the oldest was asked for at
	// ApprovalOldest (zero: none waits).
	ApprovalsPending int64
	ApprovalOldest   time.Time
	// OutboxQueued are the messages not sent yet, OutboxRetrying those of them waiting for a
	// retry.
	OutboxQueued, OutboxRetrying int64
	// AuditUnsealed are the audit events not in the hash chain yet; the oldest was written at
	// AuditOldestUnsealed (zero: every event is sealed).
	AuditUnsealed       int64
	AuditOldestUnsealed time.Time
}

// HealthReader reads the operator metrics for the health page.
type HealthReader interface {
	ReadHealth(ctx context.Context) (Health, error)
}

type healthView struct {
	Health
	// ApprovalAge and AuditLag are how long the oldest pending approval and the oldest
	// unsealed event have waited (0: none).
	ApprovalAge, AuditLag time.Duration
	// Charts are the page's charts (Config.Charts).
	Charts *chartsView
}

// readHealth reads the health page.
func (p *Pages) readHealth(ctx context.Context, _ *http.Request, d *pageData) error {
	charts, err := p.readCharts(ctx, d.T)
	if err != nil {
		return err
	}
	h, err := p.health.ReadHealth(ctx)
	if err != nil {
		return err
	}
	v := &healthView{Health: h, Charts: charts}
	now := p.now()
	if !h.ApprovalOldest.IsZero() {
		v.ApprovalAge = max(now.Sub(h.ApprovalOldest), 0)
	}
	if !h.AuditOldestUnsealed.IsZero() {
		v.AuditLag = max(now.Sub(h.AuditOldestUnsealed), 0)
	}
	d.View = v
	return nil
}
