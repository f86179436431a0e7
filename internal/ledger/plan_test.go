package ledger_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/cobranca/cobranca/internal/ledger"
	"github.com/cobranca/cobranca/internal/store"
	"github.com/cobranca/cobranca/internal/store/storetest"
)

// plan returns the ledger_invoice index that PostgreSQL's plan of f's
// list query reads, and whether the plan sorts.
func plan(tb testing.TB, db store.DB, f ledger.ListFilter) (index string, sorts bool) {
	tb.Helper()
	sql, args, fe := ledger.ListSQL(f)
	if fe != nil {
		tb.Fatal(fe)
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
	if index == "" || sorts {
		tb.Logf("the plan of %+v:\n%s", f, out)
	}
	return index, sorts
}

type node struct {
	Type  string `json:"Node Type"`
	Index string `json:"Index Name"`
	Plans []node
}

// TestListInvoicesPlan: on PostgreSQL every usual list_invoices page reads
// an index, in the list's order (no sort) but for one customer's, whose
// few invoices may be sorted, on a ledger big enough that a scan of the
// table would cost more (60 000 invoices; the benchmark checks the plans
// at 1 000 000).
func TestListInvoicesPlan(t *testing.T) {
	const n = 60_000
	db := storetest.Fixtures(pg)[1].Migrated(t)
	fill(t, db, n)
	want := map[string]string{
		"first_page": "ledger_invoice_due", "deep_page": "ledger_invoice_due", "open": "ledger_invoice_state",
		"customer": "ledger_invoice_customer", "overdue_30": "ledger_invoice_state",
	}
	for _, c := range listCases(midCursor(t, db, n)) {
		idx, sorts := plan(t, db, c.f)
		if w, ok := want[c.name]; ok && idx != w || idx == "" || sorts && c.name != "customer" {
			t.Errorf("%s: the plan reads index %q and sorts %v; want %q, no sort", c.name, idx, sorts, w)
		}
	}
}
