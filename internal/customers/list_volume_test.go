package customers_test

import (
	"context"
	"slices"
	"testing"

	"github.com/cobranca/cobranca/internal/customers"
	"github.com/cobranca/cobranca/internal/store"
	"github.com/cobranca/cobranca/internal/store/storetest"
	"github.com/cobranca/cobranca/internal/tier"
)

// manyCustomers is the customer table's size of List's tests of scale.
const manyCustomers = 200_000

// fillCustomers writes n customers straight into the table (far faster
// than upserts): one in ten do not contact, one in a thousand paused, the
// rest contactable; then the planner's statistics.
func fillCustomers(tb testing.TB, db store.DB, n int) {
	tb.Helper()
	ctx := context.Background()
	if _, err := db.Exec(ctx, `INSERT INTO customer (id, name, email, email_key, contact_status, paused_until, status_reason, status_set_by, status_set_at, created_at, updated_at)
SELECT 'C-' || lpad(g::text, 7, '0'), 'Loja ' || g, 'contas' || g || '@loja.example', 'contas' || g || '@loja.example',
 CASE WHEN g % 10 = 0 THEN 'do_not_contact' WHEN g % 1000 = 1 THEN 'paused' ELSE 'contactable' END,
 CASE WHEN g % 1000 = 1 THEN '2027-01-10' ELSE '' END, CASE WHEN g % 10 = 0 OR g % 1000 = 1 THEN 'pediu' ELSE '' END,
 CASE WHEN g % 10 = 0 OR g % 1000 = 1 THEN 'ana' ELSE '' END, CASE WHEN g % 10 = 0 OR g % 1000 = 1 THEN 1 ELSE 0 END, 1, 1
FROM generate_series(1, $1::int) g`, n); err != nil {
		tb.Fatal(err)
	}
	if _, err := db.Exec(ctx, `ANALYZE`); err != nil {
		tb.Fatal(err)
	}
}

// listVolumeCases are the console's customer pages: the first and one
// deep (after half the table), of all, of those not to be contacted (one
// in ten: the primary key, skipping the others, is as good as their
// index) and of the paused (one in a thousand: their index), and the
// indexes each may read.
var listVolumeCases = []struct {
	name    string
	f       customers.ListFilter
	indexes []string
}{
	{"all_first", customers.ListFilter{Limit: 50}, []string{"customer_pkey"}},
	{"all_deep", customers.ListFilter{Limit: 50, After: "C-0100000"}, []string{"customer_pkey"}},
	{"do_not_contact_first", customers.ListFilter{Limit: 50, Status: customers.DoNotContact}, []string{"customer_pkey", "customer_status"}},
	{"do_not_contact_deep", customers.ListFilter{Limit: 50, Status: customers.DoNotContact, After: "C-0100000"}, []string{"customer_pkey", "customer_status"}},
	{"paused_first", customers.ListFilter{Limit: 50, Status: customers.Paused}, []string{"customer_status"}},
	{"paused_deep", customers.ListFilter{Limit: 50, Status: customers.Paused, After: "C-0100000"}, []string{"customer_status"}},
}

func volumeCustomers(tb testing.TB) store.DB {
	tb.Helper()
	db := storetest.Fixtures(pg)[1].Migrated(tb)
	if d, _ := store.DialectOf(db); d != store.Postgres {
		tb.Fatalf("the second fixture is %s, not PostgreSQL", d)
	}
	fillCustomers(tb, db, manyCustomers)
	return db
}

// TestListPlans: over 200 000 customers on PostgreSQL, each of the
// console's pages reads an index from where the previous page ended,
// without sorting: a rare status its own index, not the whole table.
func TestListPlans(t *testing.T) {
	tier.Volume(t)
	t.Parallel()
	db := volumeCustomers(t)
	for _, c := range listVolumeCases {
		sql, args := customers.ListSQL(c.f)
		root, text := storetest.ExplainPG(t, db, sql, args...)
		t.Logf("%s:\n%s", c.name, root.Outline())
		if idx := root.Indexes(); len(idx) != 1 || !slices.Contains(c.indexes, idx[0]) || root.Sorts() {
			t.Errorf("%s: the plan reads %v, sorts %v; want one of %v alone, no sort:\n%s", c.name, idx, root.Sorts(), c.indexes, text)
		}
		page, _, err := customers.List(context.Background(), db, c.f)
		if err != nil || len(page) != 50 {
			t.Errorf("%s: %d customers, %v; want a page of 50", c.name, len(page), err)
		}
	}
}

// BenchmarkList: each of the console's customer pages over 200 000
// customers on PostgreSQL.
func BenchmarkList(b *testing.B) {
	db := volumeCustomers(b)
	for _, c := range listVolumeCases {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if page, _, err := customers.List(context.Background(), db, c.f); err != nil || len(page) != 50 {
					b.Fatalf("%d, %v", len(page), err)
				}
			}
		})
	}
}
