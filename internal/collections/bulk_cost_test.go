package collections_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/cobranca/cobranca/internal/collections"
	"github.com/cobranca/cobranca/internal/failure"
	"github.com/cobranca/cobranca/internal/limits"
	limitspg "github.com/cobranca/cobranca/internal/limits/postgres"
	limitssqlite "github.com/cobranca/cobranca/internal/limits/sqlite"
	"github.com/cobranca/cobranca/internal/pipeline"
	"github.com/cobranca/cobranca/internal/pipeline/pipelinetest"
	"github.com/cobranca/cobranca/internal/reminders"
	"github.com/cobranca/cobranca/internal/store"
	"github.com/cobranca/cobranca/internal/store/postgres"
	"github.com/cobranca/cobranca/internal/store/storetest"
)

// TestBulkCost: bulk_send_reminders spends one unit of the write budget per 50 drafts a call
// selects — the open drafts a filter selects, counted before the plan, or draftIds — on a
// real limiter over each store.
func TestBulkCost(t *testing.T) {
	storetest.Each(t, pg, func(t *testing.T, db store.DB) {
		e := newSendEnv(t, db)
		var backend limits.Backend = limitssqlite.New(db, e.clock)
		if pgdb, ok := db.(*postgres.DB); ok {
			backend = limitspg.New(pgdb.Pool())
		}
		const interval = 6 * time.Minute // 10/1h: nothing refills during the test
		opts := e.opts
		opts.Limits = limits.New(backend, limits.Options{Policies: limits.Policies{Write: limits.Limit{Rate: 10, Period: time.Hour, Burst: 10}}, Now: e.clock})
		e.p = pipelinetest.Product(t, opts)
		seedBulk(t, e, 600)

		// 600 drafts by filter: 12 units, more than the burst of 10: run on the full budget, and
		// the next call waits until 3 units refilled (12 spent, 10 held, 1 for the next).
		if dr := e.dry(t, sender, map[string]any{"filter": map[string]any{}}); dr.RecipientCount != 600 {
			t.Fatalf("dry run of the filter: %d recipients, want 600", dr.RecipientCount)
		}
		res := e.do(sender, urlClient, bulk, bulkArgs(map[string]any{"draftIds": []string{firstDraft(t, e)}}, true, "", ""))
		if res.Kind != pipeline.ToolError || res.Err.Code != failure.RateLimited || (res.Err.RetryAfter-3*interval).Abs() > time.Second {
			t.Fatalf("a dry run of one draft after one of 600: %v %+v, want rate_limited, retry after ≈%v", res.Kind, res.Err, 3*interval)
		}
	})
}

// firstDraft is the id of the first open draft.
func firstDraft(t *testing.T, e *sendEnv) string {
	t.Helper()
	var id string
	if err := e.db.QueryRow(context.Background(), `SELECT id FROM reminder_draft ORDER BY id LIMIT 1`).Scan(&id); err != nil {
		t.Fatal(err)
	}
	return id
}

// BenchmarkBulkDryRun measures, on each store, what bulk_send_reminders' cost rule weighs: a dry
// run of 10 000 drafts (a filter selecting them all: the plan, no locks) against a plain call
// in the same run on the same database — prepare_reminder writing a new draft, a medium-tier
// write of one unit — each through pipeline.Do, one at a time. The ratio of the two is how many
// plain calls one such dry run is worth, from which the contract's units are set
// (docs/benchmarks.md, "Cost-weighted calls").
func BenchmarkBulkDryRun(b *testing.B) {
	for _, f := range storetest.Fixtures(pg) {
		b.Run(string(f.Dialect), func(b *testing.B) {
			e := newSendEnv(b, f.Migrated(b))
			seedBulk(b, e, reminders.MaxBulk)
			sel := map[string]any{"filter": map[string]any{"tone": "friendly"}}
			b.Run("dry_run_10000", func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					if dr := e.dry(b, sender, sel); dr.RecipientCount != reminders.MaxBulk {
						b.Fatalf("dry run: %d recipients, want %d", dr.RecipientCount, reminders.MaxBulk)
					}
				}
			})
			n := 0
			b.Run("prepare_reminder", func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					n++
					// A firm draft of a new customer: never one the dry run above selects.
					args := fmt.Sprintf(`{"customer":{"id":"P-%d","name":"Padaria %[1]d","email":"p%[1]d@padaria.example"},`+
						`"invoices":[{"id":"NF-P-%[1]d","dueDate":"2026-06-01","amountCents":150000}],"tone":"firm","idempotencyKey":"k-%[1]d"}`, n)
					if err := complete(e.do(agent, modern, collections.PrepareReminderName, args), `"created":true`); err != nil {
						b.Fatal(err)
					}
				}
			})
		})
	}
}
