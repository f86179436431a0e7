package ledger_test

import (
	"context"
	"encoding/json"
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
	if d, _ := store.DialectOf(db); d == store.SQLite {
		var lines []string
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
		if index == "" {
			tb.Logf("the plan of %+v:\n%s", f, strings.Join(lines, "\n"))
		}
		return index, sorts
	}
	var out string
	if err := db.QueryRow(context.Background(), `EXPLAIN (FORMAT JSON) `+sql, args...).Scan(&out); err != nil {
		tb.Fatal(err)
	}
	var doc []struct{ Plan node }
	if err := json.Unmarshal([]byte(out), &doc); err != nil || len(doc) != 1 {
		tb.Fatalf("EXPLAIN: %v\n%s", err, out)
	}
	var walk func(n node)
	walk = func(n node) {
		if strings.Contains(n.Type, "Sort") {
			sorts = true
		}
		if strings.HasPrefix(n.Index, "ledger_invoice") && index == "" {
			index = n.Index
		}
		for _, c := range n.Plans {
			walk(c)
		}
	}
	walk(doc[0].Plan)
	if index == "" {
		tb.Logf("the plan of %+v:\n%s", f, out)
	}
	return index, sorts
}

var usingIndex = regexp.MustCompile(`USING (?:COVERING )?INDEX (\S+)`)

type node struct {
	Type  string `json:"Node Type"`
	Index string `json:"Index Name"`
	Plans []node
}

// TestListInvoicesPlan: on both stores every usual list_invoices page
// reads the index it was made for, in the list's order, without sorting
// but where what it sorts is bounded (listCases), on a ledger big enough
// that a scan of the table would cost more (60 000 invoices; the
// benchmark checks the plans at 1 000 000).
func TestListInvoicesPlan(t *testing.T) {
	const n = 60_000
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
