package web

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/cobranca/cobranca/internal/ledger"
	"github.com/cobranca/cobranca/internal/store"
)

// ledgerMemoAge is how old the ledger charts' numbers may be before a page asks for fresh ones:
// reading them takes ~100–150 ms at 1 000 000 invoices (every unsettled invoice, every payment
// of 12 weeks; docs/benchmarks.md), past the 50 ms a page may take, so no page reads them: a
// page shows the last numbers, as of when they were read, and a minute old is fine for a chart.
const ledgerMemoAge = time.Minute

// ledgerCharts are the ledger charts' numbers of day asOf (Brasília), read at at.
type ledgerCharts struct {
	asOf  string
	at    time.Time
	aging []ledger.Aging
	cash  []ledger.CashWeeks
}

// ledgerMemo holds the ledger charts' last numbers, per process, and refreshes them in the
// background (run, which Pages.RunCharts is): one read at a time, started when a page finds
// them stale, so that a page never waits for the read — but the pages that come before the
// first read ends, which wait for that one (or the request's end: run must be running).
type ledgerMemo struct {
	// read reads the numbers of day asOf.
	read func(ctx context.Context, asOf string) ([]ledger.Aging, []ledger.CashWeeks, error)
	now  func() time.Time
	log  *slog.Logger
	// wake asks run for a read; it holds one request at most.
	wake chan struct{}

	mu   sync.Mutex
	last ledgerCharts // zero until a read succeeds
	err  error        // the last read's failure, nil after a success
	// done is closed when the read under way, or the next, ends.
	done chan struct{}
}

func newLedgerMemo(q store.Querier, now func() time.Time, log *slog.Logger) *ledgerMemo {
	return &ledgerMemo{
		read: func(ctx context.Context, asOf string) ([]ledger.Aging, []ledger.CashWeeks, error) {
			aging, err := ledger.OpenByAging(ctx, q, asOf)
			if err != nil {
				return nil, nil, err
			}
			cash, err := ledger.CashCollected(ctx, q, asOf, cashWeeks)
			return aging, cash, err
		},
		now: now, log: log, wake: make(chan struct{}, 1), done: make(chan struct{}),
	}
}

// today is the ledger charts' day at t: Brasília's.
func today(t time.Time) string { return t.In(brasilia).Format(time.DateOnly) }

// run reads the numbers at once, then again each time a page asks (wake), until ctx ends.
// The pages that asked while a read ran are answered by it: it started after they found the
// numbers old.
func (m *ledgerMemo) run(ctx context.Context) {
	for {
		m.refresh(ctx)
		select {
		case <-m.wake:
		default:
		}
		select {
		case <-ctx.Done():
			return
		case <-m.wake:
		}
	}
}

// refresh reads the numbers once, keeps them (a failure keeps the last ones, and is logged),
// and tells the pages waiting for it.
func (m *ledgerMemo) refresh(ctx context.Context) {
	at := m.now()
	c := ledgerCharts{asOf: today(at), at: at}
	var err error
	c.aging, c.cash, err = m.read(ctx, c.asOf)
	if err != nil && ctx.Err() == nil {
		m.log.Error("the health page's ledger charts: read failed; the last ones are shown", "err", err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.err = err; err == nil {
		m.last = c
	}
	close(m.done)
	m.done = make(chan struct{})
}

// charts returns the last numbers, asking for fresh ones when they are older than
// ledgerMemoAge or of another day than now's; only when there are none yet does it wait, for
// the read under way or the next.
func (m *ledgerMemo) charts(ctx context.Context, now time.Time) (ledgerCharts, error) {
	m.mu.Lock()
	c, done := m.last, m.done
	m.mu.Unlock()
	if !c.at.IsZero() && c.asOf == today(now) && !c.at.After(now) && now.Sub(c.at) < ledgerMemoAge {
		return c, nil
	}
	select {
	case m.wake <- struct{}{}:
	default: // a read is asked for already
	}
	if !c.at.IsZero() {
		return c, nil
	}
	select {
	case <-done:
	case <-ctx.Done():
		return c, ctx.Err()
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.last.at.IsZero() {
		return m.last, m.err
	}
	return m.last, nil
}

// RunCharts reads the health page's ledger charts at once, then again each time a page finds
// them a minute old (ledgerMemoAge), one read at a time, until ctx ends; it returns at once
// when the pages have no ledger charts (Config.Charts.Ledger). The process runs it beside
// the pages, for as long as it serves them.
func (p *Pages) RunCharts(ctx context.Context) {
	if p.ledgerMemo != nil {
		p.ledgerMemo.run(ctx)
	}
}
