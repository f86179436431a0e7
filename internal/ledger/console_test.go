package ledger_test

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/cobranca/cobranca/internal/ledger"
	"github.com/cobranca/cobranca/internal/store"
	"github.com/cobranca/cobranca/internal/store/storetest"
	"github.com/cobranca/cobranca/internal/tier"
)

// The console's ledger pages (issue 29) on a ledger of 1 000 000 invoices
// on PostgreSQL: every page under 50 ms of server time, each read from an
// index whatever the ledger's size (docs/benchmarks.md, "Console reads").

// consoleInvoices is the ledger's size of the console's tests of scale.
const consoleInvoices = 1_000_000

// consolePayments is how many payments the console's tests of scale hold:
// three in four with something left, one in two quoting a reference no
// invoice carries, each naming one of fill's customers.
const consolePayments = 100_000

// fillPayments writes n payments (storetest.FillPayments) and the
// planner's statistics.
func fillPayments(tb testing.TB, db store.DB, n int) {
	tb.Helper()
	if err := storetest.FillPayments(context.Background(), db, n); err != nil {
		tb.Fatal(err)
	}
}

// consoleLedger is a PostgreSQL ledger of consoleInvoices invoices and
// consolePayments payments.
func consoleLedger(tb testing.TB) store.DB {
	tb.Helper()
	db := storetest.Fixtures(pg)[1].Migrated(tb)
	if d, _ := store.DialectOf(db); d != store.Postgres {
		tb.Fatalf("the second fixture is %s, not PostgreSQL", d)
	}
	fill(tb, db, consoleInvoices)
	fillPayments(tb, db, consolePayments)
	return db
}

// unmatchedMid is the cursor of the unmatched payments' page that ends in
// the middle of them.
func unmatchedMid(tb testing.TB, db store.DB) string {
	tb.Helper()
	var at int64
	var id string
	if err := db.QueryRow(context.Background(), `SELECT created_at, id FROM ledger_payment WHERE left_cents > 0
 ORDER BY created_at, id LIMIT 1 OFFSET $1`, consolePayments*3/8).Scan(&at, &id); err != nil {
		tb.Fatal(err)
	}
	return ledger.Cursor(strconv.FormatInt(at, 10), id)
}

// suggestPage is a page of payments as the console's payments page
// reads them (paymentsPageSize: 20), after after.
func suggestPage(tb testing.TB, db store.DB, after string) []ledger.StoredPayment {
	tb.Helper()
	page, _, err := ledger.ListUnmatched(context.Background(), db, after, 20)
	if err != nil || len(page) != 20 {
		tb.Fatalf("ListUnmatched = %d payments, %v; want 20", len(page), err)
	}
	return page
}

// suggestArgs are the arguments of Suggest's two queries for page: the
// JSON lists of its references, and of its customers with a page's size.
func suggestArgs(page []ledger.StoredPayment) (refs, custs []any) {
	var rs, cs []string
	for _, p := range page {
		if p.Reference != "" {
			rs = append(rs, p.Reference)
		}
		if p.CustomerID != "" {
			cs = append(cs, p.CustomerID)
		}
	}
	r, _ := json.Marshal(rs)
	c, _ := json.Marshal(cs)
	return []any{string(r), `[]`}, []any{string(c), ledger.MaxSuggestions + 1}
}

// TestConsolePlans: over 1 000 000 invoices and 100 000 payments on
// PostgreSQL, the console's ledger reads each read the index made for
// them: list_invoices' pages (the first, a deep one, and each filter),
// the unmatched payments' first and deep pages without sorting, and the
// candidates of a payment without reading a ledger table whole.
func TestConsolePlans(t *testing.T) {
	tier.Volume(t)
	t.Parallel()
	db := consoleLedger(t)
	for _, c := range listCases(midCursor(t, db, consoleInvoices)) {
		if idx, sorts := plan(t, db, c.f); idx != c.index || sorts && !c.sorts {
			t.Errorf("invoices %s: the plan reads index %q and sorts %v; want %q", c.name, idx, sorts, c.index)
		}
	}
	for name, after := range map[string]string{"first": "", "deep": unmatchedMid(t, db)} {
		sql, args, fe := ledger.UnmatchedSQL(after, 50)
		if fe != nil {
			t.Fatal(fe)
		}
		root, text := storetest.ExplainPG(t, db, sql, args...)
		t.Logf("unmatched %s page:\n%s", name, root.Outline())
		if idx := root.Indexes(); len(idx) != 1 || idx[0] != "ledger_payment_left" || root.Sorts() {
			t.Errorf("unmatched %s page: the plan reads %v, sorts %v; want ledger_payment_left alone, no sort:\n%s", name, idx, root.Sorts(), text)
		}
	}
	for name, after := range map[string]string{"first": "", "deep": unmatchedMid(t, db)} {
		page := suggestPage(t, db, after)
		refs, custs := suggestArgs(page)
		root, text := storetest.ExplainPG(t, db, ledger.SuggestSQL(store.Postgres), refs...)
		t.Logf("suggest, %s page, the references' invoices:\n%s", name, root.Outline())
		if seq := root.SeqScans("ledger_"); len(seq) > 0 || !contains(root.Indexes(), "ledger_reference_reference") {
			t.Errorf("suggest, %s page: the references' plan reads %v whole, indexes %v; want ledger_reference_reference and no table whole:\n%s", name, seq, root.Indexes(), text)
		}
		root, text = storetest.ExplainPG(t, db, ledger.CustomerPagesSQL(store.Postgres), custs...)
		t.Logf("suggest, %s page, the customers' pages:\n%s", name, root.Outline())
		if seq := root.SeqScans("ledger_"); len(seq) > 0 || !contains(root.Indexes(), "ledger_invoice_unsettled") {
			t.Errorf("suggest, %s page: the customers' plan reads %v whole, indexes %v; want ledger_invoice_unsettled and no table whole:\n%s", name, seq, root.Indexes(), text)
		}
		// The page's offers read together are each payment's read alone.
		offers, err := ledger.Suggest(context.Background(), db, page)
		if err != nil {
			t.Fatal(err)
		}
		for i, p := range page {
			alone, err := ledger.Suggest(context.Background(), db, page[i:i+1])
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(alone[0], offers[i]); diff != "" {
				t.Errorf("%s page, payment %s: Suggest(page) differs from Suggest alone (-alone +page):\n%s", name, p.ID, diff)
			}
		}
	}
}

// BenchmarkConsoleReads: each of the console's ledger reads over
// 1 000 000 invoices and 100 000 payments on PostgreSQL (the setup takes
// a minute; it runs under -bench only).
func BenchmarkConsoleReads(b *testing.B) {
	db := consoleLedger(b)
	ctx := context.Background()
	invMid, payMid := midCursor(b, db, consoleInvoices), unmatchedMid(b, db)
	first, deep := suggestPage(b, db, ""), suggestPage(b, db, payMid)
	type read struct {
		name string
		fn   func() (int, error)
	}
	var reads []read
	for _, c := range listCases(invMid) {
		if c.f.Disputed != nil || c.f.PromisePending {
			continue // empty in this ledger: BenchmarkListInvoices times them
		}
		reads = append(reads, read{"invoices_" + c.name, func() (int, error) {
			page, _, err := ledger.ListInvoices(ctx, db, c.f)
			return len(page), err
		}})
	}
	reads = append(reads,
		read{"unmatched_first", func() (int, error) {
			page, _, err := ledger.ListUnmatched(ctx, db, "", 50)
			return len(page), err
		}},
		read{"unmatched_deep", func() (int, error) {
			page, _, err := ledger.ListUnmatched(ctx, db, payMid, 50)
			return len(page), err
		}},
		read{"suggest_first", func() (int, error) {
			offers, err := ledger.Suggest(ctx, db, first)
			return len(offers), err
		}},
		read{"suggest_deep", func() (int, error) {
			offers, err := ledger.Suggest(ctx, db, deep)
			return len(offers), err
		}},
		read{"suggest_one", func() (int, error) {
			offers, err := ledger.Suggest(ctx, db, first[:1])
			return len(offers), err
		}},
		read{"invoice", func() (int, error) {
			inv, err := ledger.GetInvoice(ctx, db, "B-0500000")
			if err != nil {
				return 0, err
			}
			allocs, err := ledger.Allocations(ctx, db, inv.InvoiceID)
			return 1 + len(allocs), err
		}},
	)
	for _, r := range reads {
		b.Run(r.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if n, err := r.fn(); err != nil || n == 0 {
					b.Fatalf("%s: %d rows, %v", strings.ReplaceAll(r.name, "_", " "), n, err)
				}
			}
		})
	}
}
