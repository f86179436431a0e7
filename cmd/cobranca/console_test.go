package main

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/cobranca/cobranca/internal/clocktest"
	"github.com/cobranca/cobranca/internal/contract"
	"github.com/cobranca/cobranca/internal/contract/contracttest"
	"github.com/cobranca/cobranca/internal/store"
	"github.com/cobranca/cobranca/internal/store/storetest"
	"github.com/cobranca/cobranca/internal/web"
)

// countRefusals counts by policy what recentRefusals passes on.
type countRefusals map[string]int

func (c countRefusals) Refused(policy string) { c[policy]++ }

// TestRecentRefusals: the health page's count covers the last hour, a minute at a time, and
// every refusal still reaches the metrics.
func TestRecentRefusals(t *testing.T) {
	clock := &clocktest.Clock{}
	next := countRefusals{}
	c := &recentRefusals{next: next, now: clock.Now}
	for range 3 {
		c.Refused("origin")
	}
	clock.Advance(30 * time.Minute)
	c.Refused("principal")
	if got := c.Recent(); got != 4 {
		t.Errorf("Recent() = %d, want 4", got)
	}
	clock.Advance(31 * time.Minute) // the first three are more than an hour old
	if got := c.Recent(); got != 1 {
		t.Errorf("Recent() an hour on = %d, want 1", got)
	}
	clock.Advance(2 * time.Hour)
	c.Refused("origin") // reuses a minute's counter: the old count is not added to it
	if got := c.Recent(); got != 1 {
		t.Errorf("Recent() after hours = %d, want 1", got)
	}
	if next["origin"] != 4 || next["principal"] != 1 {
		t.Errorf("passed on %v, want origin 4, principal 1", next)
	}
}

// TestConsoleHealth: the health page reads what the operator metrics read.
func TestConsoleHealth(t *testing.T) {
	storetest.Each(t, pg, func(t *testing.T, db store.DB) {
		f := newOpsFixture(t, db)
		f.add(t, 2, 3, 4, 0)
		f.clock.Advance(time.Minute)
		refused := &recentRefusals{now: f.clock.Now}
		refused.Refused("origin")
		h, err := (&consoleHealth{db: db, approvals: f.approvals, alog: f.alog, refusals: refused}).ReadHealth(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if h.ApprovalsPending != 2 || h.ApprovalOldest.IsZero() || h.OutboxQueued != 4 || h.AuditUnsealed != 3 || h.AuditOldestUnsealed.IsZero() ||
			h.RateLimited != 1 || h.RateLimitedWindow != time.Hour {
			t.Errorf("ReadHealth = %+v, want 2 approvals, 4 messages, 3 unsealed events, 1 refusal in an hour", h)
		}
	})
}

// TestConsoleRoles: the development sign-in page offers the contracts' roles and the
// console's, each once.
func TestConsoleRoles(t *testing.T) {
	c := contracttest.New("test.critical", contract.Critical, "test:critical")
	got := consoleRoles([]*contract.Contract{c}, []*contract.Contract{c})
	want := append([]string{contracttest.ApproverRole}, web.Roles...)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("consoleRoles = %v, want %v", got, want)
	}
}
