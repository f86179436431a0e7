package ledger_test

import (
	"context"
	"regexp"
	"strings"
	"testing"

	"github.com/cobranca/cobranca/internal/ledger"
	"github.com/cobranca/cobranca/internal/store"
	"github.com/cobranca/cobranca/internal/store/storetest"
)

// plan returns the ledger_invoice index that the plan of f's list query
// reads first, and whether the plan sorts: PostgreSQL's EXPLAIN (FORMAT
// JSON), SQLite's EXPLAIN QUERY PLAN.
func plan(tb testing.TB, db store.DB, f ledger.ListFilter) (index string, sorts bool) {
	tb.Helper()
	sql, args, fe := ledger.ListSQL(f)
	if fe != nil {
		tb.Fatal(fe)
	}
	var text string
	if d, _ := store.DialectOf(db); d == store.SQLite {
		var lines []string
		lines, index, sorts = sqlitePlan(tb, db, sql, args)
		text = strings.Join(lines, "\n")
	} else {
		var root storetest.PlanNode
		root, text = storetest.ExplainPG(tb, db, sql, args...)
		root.Walk(func(n storetest.PlanNode) {
			if strings.Contains(n.Type, "Sort") {
				sorts = true
			}
			if strings.HasPrefix(n.Index, "ledger_invoice") && index == "" {
				index = n.Index
			}
		})
	}
	if index == "" {
		tb.Logf("the plan of %+v:\n%s", f, text)
	}
	return index, sorts
}

// sqlitePlan is SQLite's EXPLAIN QUERY PLAN of sql: the detail of each
// step, the first index a step reads, and whether a step sorts.
func sqlitePlan(tb testing.TB, db store.Querier, sql string, args []any) (lines []string, index string, sorts bool) {
	tb.Helper()
	each(tb, db, `EXPLAIN QUERY PLAN `+sql, args, func(r store.Rows) error {
		var id, parent, unused int64
		var detail string
		err := r.Scan(&id, &parent, &unused, &detail)
		lines = append(lines, detail)
		if m := usingIndex.FindStringSubmatch(detail); m != nil && index == "" {
			index = m[1]
		}
		sorts = sorts || strings.Contains(detail, "TEMP B-TREE")
		return err
	})
	return lines, index, sorts
}

var usingIndex = regexp.MustCompile(`USING (?:COVERING )?INDEX (\S+)`)

// TestListInvoicesPlan: on both stores every usual list_invoices page
// reads the index it was made for, in the list's order, without sorting
// but where what it sorts is bounded (listCases), on a ledger big enough
// that a scan of the table would cost more (60 000 invoices; the
// benchmark checks the plans at 1 000 000). Under -short the ledger has
// 10 000 invoices: the plans are the same (a dropped index fails it
// too), for a sixth of the filling.
func TestListInvoicesPlan(t *testing.T) {
	n := 60_000
	if testing.Short() {
		n = 10_000
	}
	for _, f := range storetest.Fixtures(pg) {
		t.Run(string(f.Dialect), func(t *testing.T) {
			t.Parallel()
			db := f.Migrated(t)
			fill(t, db, n)
			for _, c := range listCases(midCursor(t, db, n)) {
				if idx, sorts := plan(t, db, c.f); idx != c.index || sorts && !c.sorts {
					t.Errorf("%s: the plan reads index %q and sorts %v; want %q", c.name, idx, sorts, c.index)
				}
			}
		})
	}
}

// TestForAnalysisPlan: analyze_ledger's read needs no sort and no JIT. On
// SQLite, which has no statistics until ANALYZE (never run by the server),
// it reads ledger_invoice_unsettled in its order, not the state index and
// a sort of every unsettled row. On PostgreSQL, over 60 000 unsettled
// invoices, its plan costs less than jit_above_cost: compiling it took
// longer than the read (docs/benchmarks.md). Under -short, over 10 000,
// it costs less than a sixth of it.
func TestForAnalysisPlan(t *testing.T) {
	n := 60_000
	if testing.Short() {
		n = 10_000
	}
	for _, f := range storetest.Fixtures(pg) {
		t.Run(string(f.Dialect), func(t *testing.T) {
			t.Parallel()
			db := f.Migrated(t)
			ctx := context.Background()
			sql, args := ledger.ForAnalysisSQL(f.Dialect, nil)
			if f.Dialect == store.SQLite {
				lines, index, sorts := sqlitePlan(t, db, sql, args)
				if index != "ledger_invoice_unsettled" || sorts {
					t.Errorf("the plan reads %q and sorts %v; want ledger_invoice_unsettled, no sort:\n%s", index, sorts, strings.Join(lines, "\n"))
				}
				return
			}
			fill(t, db, n)
			// Every invoice unsettled, one in 20 disputed: analyze_ledger's worst case.
			if _, err := db.Exec(ctx, `UPDATE ledger_invoice SET state = 'open', open_cents = amount_cents, allocated_cents = 0 WHERE state = 'paid'`); err != nil {
				t.Fatal(err)
			}
			if _, err := db.Exec(ctx, `INSERT INTO ledger_dispute (id, invoice_id, reason, opened_by, opened_at)
 SELECT 'dsp-' || id, id, 'other', 'ana', 0 FROM ledger_invoice WHERE right(id, 1) = '7' AND right(id, 2) < '57'`); err != nil {
				t.Fatal(err)
			}
			if _, err := db.Exec(ctx, `UPDATE ledger_invoice SET dispute_id = 'dsp-' || id WHERE right(id, 1) = '7' AND right(id, 2) < '57'`); err != nil {
				t.Fatal(err)
			}
			if _, err := db.Exec(ctx, `ANALYZE`); err != nil {
				t.Fatal(err)
			}
			var jitAbove float64
			if err := db.QueryRow(ctx, `SELECT current_setting('jit_above_cost')::float8`).Scan(&jitAbove); err != nil {
				t.Fatal(err)
			}
			jitAbove = jitAbove * float64(n) / 60_000 // the read's cost grows with the invoices it reads
			if root, out := storetest.ExplainPG(t, db, sql, args...); root.Cost >= jitAbove {
				t.Errorf("the plan costs %.0f, at least %.0f (jit_above_cost for %d invoices):\n%s", root.Cost, jitAbove, n, out)
			}
		})
	}
}

// TestMatchPlan: matching's reads, its candidates (the invoices not
// settled that carry a payment's reference, their own or recorded by a
// reminder, or belong to its customer) and the recorded references, are
// answered by indexes on both stores: no step reads all of ledger_invoice
// or ledger_reference, on a ledger of 60 000 invoices (10 000 under
// -short) each with a recorded reference, one in two with a nosso número.
func TestMatchPlan(t *testing.T) {
	n := 60_000
	if testing.Short() {
		n = 10_000
	}
	for _, f := range storetest.Fixtures(pg) {
		t.Run(string(f.Dialect), func(t *testing.T) {
			t.Parallel()
			db := f.Migrated(t)
			ctx := context.Background()
			fill(t, db, n)
			for _, sql := range []string{
				`UPDATE ledger_invoice SET our_number = substr(id, 3) WHERE amount_cents % 2 = 0`,
				`INSERT INTO ledger_reference (invoice_id, reference, source, source_id, created_at)
 SELECT id, 'TX' || substr(id, 3), 'reminder', 'd_' || id, 0 FROM ledger_invoice`,
				`ANALYZE`,
			} {
				if _, err := db.Exec(ctx, sql); err != nil {
					t.Fatalf("%s: %v", sql, err)
				}
			}
			refs, custs := `["TX0000042", "0000043", "pedido 7", "TX0000777", "0000778"]`, `["C-42", "C-777"]`
			for _, q := range []struct {
				name string
				sql  string
				args []any
			}{
				{"candidates", ledger.CandidateSQL(f.Dialect), []any{refs, custs}},
				{"recorded", ledger.RecordedSQL(f.Dialect), []any{refs}},
			} {
				var full []string
				var text string
				if f.Dialect == store.SQLite {
					var lines []string
					lines, _, _ = sqlitePlan(t, db, q.sql, q.args)
					for _, l := range lines {
						// SCAN reads a whole table (or index); SEARCH a range of an index.
						if strings.HasPrefix(l, "SCAN ledger_") {
							full = append(full, l)
						}
					}
					text = strings.Join(lines, "\n")
				} else {
					var root storetest.PlanNode
					root, text = storetest.ExplainPG(t, db, q.sql, q.args...)
					root.Walk(func(n storetest.PlanNode) {
						if n.Type == "Seq Scan" && strings.HasPrefix(n.Relation, "ledger_") {
							full = append(full, n.Type+" on "+n.Relation)
						}
					})
				}
				if len(full) > 0 {
					t.Errorf("%s: the plan reads whole tables %v:\n%s", q.name, full, text)
				}
			}
		})
	}
}
