package ledger_test

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/cobranca/cobranca/internal/ledger"
	"github.com/cobranca/cobranca/internal/store"
	"github.com/cobranca/cobranca/internal/store/storetest"
)

// chartLedger fills db with invoices in every aging bucket and payments in and around three
// weeks up to today (2026-12-01, a Tuesday).
func chartLedger(t *testing.T, db store.DB) {
	t.Helper()
	usd := inv("NF-USD", "C-9", 1000, "2026-11-01") // 30 days: 1-30
	usd.Currency = "USD"
	voided := inv("NF-VOID", "C-1", 9900, "2026-11-20")
	voided.Void = true
	must[ledger.UpsertCounts](t)(upsert(t, db,
		inv("NF-1", "C-1", 10000, "2026-12-10"), // current
		inv("NF-2", "C-1", 5000, "2026-12-01"),  // due today: current
		inv("NF-3", "C-2", 3000, "2026-11-30"),  // 1 day: 1-30
		inv("NF-4", "C-2", 7000, "2026-10-31"),  // 31 days: 31-60
		inv("NF-5", "C-3", 2000, "2026-09-01"),  // 91 days: 90+
		inv("NF-6", "C-3", 6000, "2026-09-02"),  // paid: left out
		inv("NF-7", "C-4", 8000, "2026-10-02"),  // 60 days: 31-60
		usd, voided))
	pay := func(ref string, cents int64, paidOn, currency string, plan ...ledger.Planned) {
		t.Helper()
		p := payment(ref, cents, paidOn)
		p.Currency = currency
		sp := record(t, db, p)
		if len(plan) > 0 {
			must[[]ledger.Allocation](t)(allocate(db, sp.ID, plan...))
		}
	}
	pay("p1", 6000, "2026-11-29", "BRL", ledger.Planned{InvoiceID: "NF-6", AmountCents: 6000}) // a Sunday: the week of 11-23
	pay("p2", 3000, "2026-11-30", "BRL", ledger.Planned{InvoiceID: "NF-7", AmountCents: 3000}) // a Monday: the week of 11-30
	pay("p3", 4000, "2026-11-16", "BRL")                                                       // not matched: not collected
	pay("p4", 1500, "2026-11-15", "BRL", ledger.Planned{InvoiceID: "NF-1", AmountCents: 1500}) // before the first week
	pay("p5", 500, "2026-12-01", "USD", ledger.Planned{InvoiceID: "NF-USD", AmountCents: 500})
	pay("p6", 1000, "2026-12-07", "BRL", ledger.Planned{InvoiceID: "NF-3", AmountCents: 1000}) // after today's week
}

func TestOpenByAging(t *testing.T) {
	storetest.Each(t, pg, func(t *testing.T, db store.DB) {
		chartLedger(t, db)
		got, err := ledger.OpenByAging(context.Background(), db, today)
		if err != nil {
			t.Fatal(err)
		}
		buckets := func(b ...int64) (out [5]ledger.AgingBucket) {
			for i, name := range []string{"current", "1-30", "31-60", "61-90", "90+"} {
				out[i] = ledger.AgingBucket{Name: name, OpenCents: b[2*i], Invoices: b[2*i+1]}
			}
			return out
		}
		want := []ledger.Aging{
			{Currency: "BRL", Buckets: buckets(8500+5000, 2, 2000, 1, 7000+5000, 2, 0, 0, 2000, 1)},
			{Currency: "USD", Buckets: buckets(0, 0, 500, 1, 0, 0, 0, 0, 0, 0)},
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("OpenByAging(%s) (-want +got):\n%s", today, diff)
		}
		// Each bucket holds what ListInvoices says is open, summed by hand.
		page, _, err := ledger.ListInvoices(context.Background(), db, ledger.ListFilter{States: []ledger.State{ledger.StateOpen, ledger.StatePartiallyPaid}, Limit: ledger.MaxPage})
		if err != nil {
			t.Fatal(err)
		}
		var listed, charted int64
		for _, inv := range page {
			listed += inv.OpenCents
		}
		for _, a := range got {
			for _, b := range a.Buckets {
				charted += b.OpenCents
			}
		}
		if listed != charted {
			t.Errorf("the aging sums to %d, the open invoices listed to %d", charted, listed)
		}
		if empty, err := ledger.OpenByAging(context.Background(), storetest.Fixtures(pg)[0].Migrated(t), today); err != nil || len(empty) != 0 {
			t.Errorf("OpenByAging of an empty ledger = %v, %v; want none", empty, err)
		}
	})
}

func TestCashCollected(t *testing.T) {
	storetest.Each(t, pg, func(t *testing.T, db store.DB) {
		chartLedger(t, db)
		got, err := ledger.CashCollected(context.Background(), db, today, 3)
		if err != nil {
			t.Fatal(err)
		}
		want := []ledger.CashWeeks{
			{Currency: "BRL", Weeks: []ledger.WeekCash{{Week: "2026-11-16"}, {Week: "2026-11-23", Cents: 6000, Payments: 1}, {Week: "2026-11-30", Cents: 3000, Payments: 1}}},
			{Currency: "USD", Weeks: []ledger.WeekCash{{Week: "2026-11-16"}, {Week: "2026-11-23"}, {Week: "2026-11-30", Cents: 500, Payments: 1}}},
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("CashCollected(%s, 3) (-want +got):\n%s", today, diff)
		}
		// The naive restatement: the allocations of the payments made in the weeks, joined.
		var joined int64
		each(t, db, `SELECT coalesce(sum(a.amount_cents), 0) FROM ledger_allocation a JOIN ledger_payment p ON p.id = a.payment_id
WHERE p.paid_on >= '2026-11-16' AND p.paid_on < '2026-12-07'`, nil, func(r store.Rows) error { return r.Scan(&joined) })
		var charted int64
		for _, c := range got {
			for _, w := range c.Weeks {
				charted += w.Cents
			}
		}
		if charted != joined {
			t.Errorf("the weeks sum to %d, the allocations of their payments to %d", charted, joined)
		}
		// Through a Sunday is the same week as through its Monday.
		sunday, err := ledger.CashCollected(context.Background(), db, "2026-12-06", 3)
		if diff := cmp.Diff(want, sunday); err != nil || diff != "" {
			t.Errorf("CashCollected(2026-12-06, 3) = %v (-want +got):\n%s", err, diff)
		}
		one, err := ledger.CashCollected(context.Background(), db, "2026-12-07", 1)
		wantOne := []ledger.CashWeeks{{Currency: "BRL", Weeks: []ledger.WeekCash{{Week: "2026-12-07", Cents: 1000, Payments: 1}}}}
		if diff := cmp.Diff(wantOne, one); err != nil || diff != "" {
			t.Errorf("CashCollected(2026-12-07, 1) = %v (-want +got):\n%s", err, diff)
		}
	})
}

func TestChartsRefuseBadArguments(t *testing.T) {
	db := storetest.Fixtures(pg)[0].Migrated(t)
	ctx := context.Background()
	for _, tc := range []struct {
		name  string
		err   error
		field string
	}{
		{"aging without a date", second(ledger.OpenByAging(ctx, db, "")), "asOf"},
		{"aging on no date", second(ledger.OpenByAging(ctx, db, "2026-02-30")), "asOf"},
		{"cash on no date", second(ledger.CashCollected(ctx, db, "12/01/2026", 4)), "through"},
		{"no weeks", second(ledger.CashCollected(ctx, db, today, 0)), "weeks"},
		{"too many weeks", second(ledger.CashCollected(ctx, db, today, ledger.MaxCashWeeks+1)), "weeks"},
	} {
		var fe *ledger.FieldError
		if !errors.As(tc.err, &fe) || fe.Field != tc.field {
			t.Errorf("%s: error = %v, want one naming the field %s", tc.name, tc.err, tc.field)
		}
	}
}

func second[T any](_ T, err error) error { return err }
