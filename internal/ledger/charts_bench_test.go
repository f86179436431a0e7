package ledger_test

import (
	"context"
	"testing"

	"github.com/cobranca/cobranca/internal/ledger"
	"github.com/cobranca/cobranca/internal/store"
)

// fillPaymentsSQL gives each paid invoice of fillSQL's ledger (7 in 10) a payment made three
// days after its due date and its allocation: 700 000 of each for a million invoices.
var fillPaymentsSQL = map[store.Dialect][]string{
	store.Postgres: {`INSERT INTO ledger_payment (id, source, source_ref, amount_cents, currency, paid_on, method, left_cents, recorded_by, created_at)
SELECT 'P-' || lpad(g::text, 7, '0'), 'bench', 'r' || g, 1000 + g % 5000, 'BRL', to_char(date '2025-01-01' + (g % 730) + 3, 'YYYY-MM-DD'), 'pix', 0, 'bench', g
FROM generate_series(1, $1::int) g WHERE g % 10 < 7`,
		`INSERT INTO ledger_allocation (payment_id, invoice_id, amount_cents, rule, allocated_by, created_at)
SELECT 'P-' || lpad(g::text, 7, '0'), 'B-' || lpad(g::text, 7, '0'), 1000 + g % 5000, 'reference', 'bench', g
FROM generate_series(1, $1::int) g WHERE g % 10 < 7`},
	store.SQLite: {`WITH RECURSIVE s(g) AS (SELECT 1 UNION ALL SELECT g + 1 FROM s WHERE g < $1)
INSERT INTO ledger_payment (id, source, source_ref, amount_cents, currency, paid_on, method, left_cents, recorded_by, created_at)
SELECT printf('P-%07d', g), 'bench', 'r' || g, 1000 + g % 5000, 'BRL', date('2025-01-01', '+' || (g % 730 + 3) || ' days'), 'pix', 0, 'bench', g
FROM s WHERE g % 10 < 7`,
		`WITH RECURSIVE s(g) AS (SELECT 1 UNION ALL SELECT g + 1 FROM s WHERE g < $1)
INSERT INTO ledger_allocation (payment_id, invoice_id, amount_cents, rule, allocated_by, created_at)
SELECT printf('P-%07d', g), printf('B-%07d', g), 1000 + g % 5000, 'reference', 'bench', g
FROM s WHERE g % 10 < 7`},
}

// BenchmarkCharts: the console's two ledger charts over 1 000 000 invoices (300 000 of them
// unsettled) and 700 000 payments with their allocations (the setup takes minutes: it runs
// under -bench only). The plans are logged, for docs/benchmarks.md.
func BenchmarkCharts(b *testing.B) {
	const n = 1_000_000
	eachStore(b, func(b *testing.B, db store.DB) {
		ctx := context.Background()
		fill(b, db, n)
		d, _ := store.DialectOf(db)
		for _, sql := range fillPaymentsSQL[d] {
			if _, err := db.Exec(ctx, sql, n); err != nil {
				b.Fatal(err)
			}
		}
		if _, err := db.Exec(ctx, `ANALYZE`); err != nil {
			b.Fatal(err)
		}
		if d == store.Postgres {
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
