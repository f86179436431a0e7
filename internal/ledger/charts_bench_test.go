package ledger_test

import (
	"context"
	"testing"

	"github.com/cobranca/cobranca/internal/ledger"
	"github.com/cobranca/cobranca/internal/store"
	"github.com/cobranca/cobranca/internal/store/storetest"
)

// BenchmarkCharts: the console's two ledger charts over 1 000 000 invoices (300 000 of them
// unsettled) and 700 000 payments with their allocations (the setup takes minutes: it runs
// under -bench only). The plans are logged, for docs/benchmarks.md.
func BenchmarkCharts(b *testing.B) {
	const n = 1_000_000
	eachStore(b, func(b *testing.B, db store.DB) {
		ctx := context.Background()
		fill(b, db, n)
		if err := storetest.FillSettled(ctx, db, n); err != nil {
			b.Fatal(err)
		}
		if d, _ := store.DialectOf(db); d == store.Postgres {
			// VACUUM sets the visibility map an index-only scan needs, as autovacuum would.
			if _, err := db.Exec(ctx, `VACUUM ledger_invoice, ledger_payment, ledger_allocation`); err != nil {
				b.Fatal(err)
			}
		}
		b.Run("open_by_aging", func(b *testing.B) {
			b.Log(explain(b, db, ledger.AgingSQL))
			b.ReportAllocs()
			for b.Loop() {
				a, err := ledger.OpenByAging(ctx, db, "2026-06-01")
				if err != nil || len(a) != 1 || a[0].Buckets[4].Invoices == 0 {
					b.Fatalf("%+v, %v", a, err)
				}
			}
		})
		b.Run("cash_12_weeks", func(b *testing.B) {
			b.Log(explain(b, db, ledger.CashSQL, "2026-03-09", "2026-06-01"))
			b.ReportAllocs()
			for b.Loop() {
				c, err := ledger.CashCollected(ctx, db, "2026-05-31", 12)
				if err != nil || len(c) != 1 || c[0].Weeks[0].Cents == 0 {
					b.Fatalf("%+v, %v", c, err)
				}
			}
		})
	})
}

// explain is the plan of sql: PostgreSQL's EXPLAIN (ANALYZE, BUFFERS) as text, SQLite's
// EXPLAIN QUERY PLAN.
func explain(tb testing.TB, db store.DB, sql string, args ...any) string {
	tb.Helper()
	if d, _ := store.DialectOf(db); d == store.SQLite {
		lines, _, _ := sqlitePlan(tb, db, sql, args)
		var out string
		for _, l := range lines {
			out += l + "\n"
		}
		return out
	}
	var out string
	each(tb, db, `EXPLAIN (ANALYZE, BUFFERS) `+sql, args, func(r store.Rows) error {
		var line string
		err := r.Scan(&line)
		out += line + "\n"
		return err
	})
	return out
}
