package ledger_test

import (
	"context"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/cobranca/cobranca/internal/ledger"
	"github.com/cobranca/cobranca/internal/store"
	"github.com/cobranca/cobranca/internal/store/storetest"
)

// The ledger's speed goals (issue 26, docs/benchmarks.md "Ledger"): 100 000
// invoices upserted in ≤ 10 s, 10 000 payments imported and matched in
// ≤ 10 s, a list_invoices page in ≤ 20 ms with 1 000 000 invoices, and the
// send-time check in one round trip. Each runs on both stores, as the
// database's owner, on a fresh migrated database.

// cpuTime is the CPU time this process has used, user and system: on
// SQLite, whose work runs in the process, what a call costs whatever the
// machine's load (the wall time is not, on a shared machine).
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// reportCPU reports the process's CPU seconds per call since start,
// excluding the time the timer was stopped for (setup) as measured by
// setup.
func reportCPU(b *testing.B, start, setup time.Duration) {
	b.ReportMetric((cpuTime()-start-setup).Seconds()/float64(b.N), "cpu-s/op")
}

func eachStore(b *testing.B, fn func(b *testing.B, db store.DB)) {
	for _, f := range storetest.Fixtures(pg) {
		b.Run(string(f.Dialect), func(b *testing.B) { fn(b, f.Migrated(b)) })
	}
}

// invoices makes n valid invoice records named prefix-i, of n/2 customers,
// with a nosso número and due dates over a year.
func invoices(prefix string, n int) []ledger.InvoiceRecord {
	recs := make([]ledger.InvoiceRecord, n)
	for i := range recs {
		recs[i] = ledger.InvoiceRecord{InvoiceID: fmt.Sprintf("%s-%07d", prefix, i), CustomerID: fmt.Sprintf("%s-C%d", prefix, i/2),
			AmountCents: int64(1000 + i%9000), Currency: "BRL", DueDate: time.Date(2026, 1, 1+i%365, 0, 0, 0, 0, time.UTC).Format(time.DateOnly),
			OurNumber: fmt.Sprintf("%s%07d", prefix, i)}
	}
	return recs
}

// BenchmarkUpsertInvoices: 100 000 new invoices in one transaction (an
// import of the largest file), then the same 100 000 again, unchanged.
func BenchmarkUpsertInvoices(b *testing.B) {
	const n = 100_000
	eachStore(b, func(b *testing.B, db store.DB) {
		ctx := context.Background()
		iter := 0
		var recs []ledger.InvoiceRecord
		b.Run("new", func(b *testing.B) {
			b.ReportAllocs()
			start, setup := cpuTime(), time.Duration(0)
			for b.Loop() {
				b.StopTimer()
				s := cpuTime()
				iter++
				recs = invoices(fmt.Sprintf("U%d", iter), n)
				setup += cpuTime() - s
				b.StartTimer()
				err := db.InTx(ctx, func(ctx context.Context, tx store.Tx) error {
					c, err := ledger.UpsertInvoices(ctx, tx, recs, t0)
					if err == nil && c.Created != n {
						err = fmt.Errorf("created %d", c.Created)
					}
					return err
				})
				if err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "invoices/s")
			reportCPU(b, start, setup)
		})
		b.Run("unchanged", func(b *testing.B) {
			b.ReportAllocs()
			start := cpuTime()
			for b.Loop() {
				err := db.InTx(ctx, func(ctx context.Context, tx store.Tx) error {
					c, err := ledger.UpsertInvoices(ctx, tx, recs, t0)
					if err == nil && c.Unchanged != n {
						err = fmt.Errorf("unchanged %d", c.Unchanged)
					}
					return err
				})
				if err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "invoices/s")
			reportCPU(b, start, 0)
		})
	})
}

// BenchmarkImportPayments: a bank file of 10 000 payments recorded and
// matched in one transaction, half by their nosso número, half by exact
// amount and customer, over a ledger of 10 000 fresh open invoices per
// file (made outside the timer) beside those of the files before.
func BenchmarkImportPayments(b *testing.B) {
	const n = 10_000
	eachStore(b, func(b *testing.B, db store.DB) {
		ctx := context.Background()
		iter := 0
		b.ReportAllocs()
		start, setup := cpuTime(), time.Duration(0)
		for b.Loop() {
			b.StopTimer()
			s := cpuTime()
			iter++
			prefix := fmt.Sprintf("P%d", iter)
			recs := invoices(prefix, n)
			if err := db.InTx(ctx, func(ctx context.Context, tx store.Tx) error {
				_, err := ledger.UpsertInvoices(ctx, tx, recs, t0)
				return err
			}); err != nil {
				b.Fatal(err)
			}
			ps := make([]ledger.PaymentRecord, n)
			for i, r := range recs {
				ps[i] = ledger.PaymentRecord{Source: "cnab240:341", SourceRef: r.OurNumber, AmountCents: r.AmountCents, Currency: "BRL",
					PaidOn: r.DueDate, Method: ledger.MethodBoleto}
				if i%2 == 0 {
					ps[i].Reference = r.OurNumber
				} else {
					ps[i].CustomerID = r.CustomerID
				}
			}
			setup += cpuTime() - s
			b.StartTimer()
			err := db.InTx(ctx, func(ctx context.Context, tx store.Tx) error {
				c, err := ledger.ImportPayments(ctx, tx, ps, ana, t0)
				if err == nil && (c.MatchedReference != n/2 || c.MatchedAmount != n/2) {
					err = fmt.Errorf("matched %+v", c)
				}
				return err
			})
			if err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "payments/s")
		reportCPU(b, start, setup)
	})
}

// fill writes n invoices (storetest.FillInvoices) and the planner's statistics.
func fill(tb testing.TB, db store.DB, n int) {
	tb.Helper()
	if err := storetest.FillInvoices(context.Background(), db, n); err != nil {
		tb.Fatal(err)
	}
}

// listCase is a list_invoices page: its filter, the index its plan must
// read, and whether the plan may sort (what it sorts is bounded: one
// customer's invoices, a page per state, the invoices under a promise).
type listCase struct {
	name  string
	f     ledger.ListFilter
	index string
	sorts bool
}

// listCases are list_invoices' usual pages: the first of all, one deep in
// the ledger (after half of it), the open ones, the unsettled ones (two
// states), one customer's, those 30 days overdue, the disputed ones, those
// under a promise.
func listCases(after string) []listCase {
	yes := true
	return []listCase{
		{"first_page", ledger.ListFilter{Limit: 50}, "ledger_invoice_due", false},
		{"deep_page", ledger.ListFilter{Limit: 50, After: after}, "ledger_invoice_due", false},
		{"open", ledger.ListFilter{Limit: 50, States: []ledger.State{ledger.StateOpen}}, "ledger_invoice_state", false},
		{"unsettled", ledger.ListFilter{Limit: 50, States: []ledger.State{ledger.StateOpen, ledger.StatePartiallyPaid}}, "ledger_invoice_state", true},
		{"customer", ledger.ListFilter{Limit: 50, CustomerID: "C-777"}, "ledger_invoice_customer", true},
		{"overdue_30", ledger.ListFilter{Limit: 50, MinDaysOverdue: 30, Today: "2026-06-01", States: []ledger.State{ledger.StateOpen}}, "ledger_invoice_state", false},
		{"disputed", ledger.ListFilter{Limit: 50, Disputed: &yes}, "ledger_invoice_disputed", false},
		{"promise_pending", ledger.ListFilter{Limit: 50, PromisePending: true, Today: "2026-06-01"}, "ledger_invoice_promised", true},
	}
}

// midCursor is the cursor of the page that ends in the middle of a ledger
// of n filled invoices.
func midCursor(tb testing.TB, db store.DB, n int) string {
	tb.Helper()
	var due, id string
	if err := db.QueryRow(context.Background(), `SELECT due_date, id FROM ledger_invoice ORDER BY due_date, id LIMIT 1 OFFSET $1`, n/2).Scan(&due, &id); err != nil {
		tb.Fatal(err)
	}
	return ledger.Cursor(due, id)
}

// BenchmarkListInvoices: a page of 50 of a ledger of 1 000 000 invoices
// (the setup takes minutes: it runs under -bench only).
func BenchmarkListInvoices(b *testing.B) {
	const n = 1_000_000
	eachStore(b, func(b *testing.B, db store.DB) {
		fill(b, db, n)
		after := midCursor(b, db, n)
		for _, c := range listCases(after) {
			b.Run(c.name, func(b *testing.B) {
				if idx, sorts := plan(b, db, c.f); idx != c.index || sorts && !c.sorts {
					b.Errorf("the plan reads index %q and sorts %v; want %q", idx, sorts, c.index)
				}
				// The filled ledger has no disputes or promises: those pages
				// are empty, found so by their index.
				empty := c.f.Disputed != nil || c.f.PromisePending
				b.ReportAllocs()
				for b.Loop() {
					page, _, err := ledger.ListInvoices(context.Background(), db, c.f)
					if err != nil || (len(page) == 0) != empty {
						b.Fatalf("%d, %v", len(page), err)
					}
				}
			})
		}
	})
}

// BenchmarkCheckContactRoundTrips: what the send-time check adds to a
// send's transaction, on PostgreSQL through a proxy that counts round
// trips: a transaction of one statement (the send's own work, here a
// SELECT 1), then the same with the check of a draft of 1 and of 20
// invoices after it. The check is one round trip more, whatever the
// draft's size.
func BenchmarkCheckContactRoundTrips(b *testing.B) {
	storetest.BenchRoundTrips(b, pg, func(b *testing.B, db store.DB) []storetest.Case {
		ctx := context.Background()
		recs := invoices("R", 20)
		if err := db.InTx(ctx, func(ctx context.Context, tx store.Tx) error {
			_, err := ledger.UpsertInvoices(ctx, tx, recs, t0)
			return err
		}); err != nil {
			b.Fatal(err)
		}
		send := func(k int) func() error {
			expect := make([]ledger.Expected, k)
			for i := range expect {
				expect[i] = ledger.Expected{InvoiceID: recs[i].InvoiceID, OpenCents: recs[i].AmountCents}
			}
			return func() error {
				return db.InTx(ctx, func(ctx context.Context, tx store.Tx) error {
					var one int64
					if err := tx.QueryRow(ctx, `SELECT 1`).Scan(&one); err != nil || k == 0 {
						return err
					}
					v, err := ledger.CheckContact(ctx, tx, today, expect)
					if err == nil && (len(v) != k || v[0].Code != "") {
						err = fmt.Errorf("verdicts %+v", v)
					}
					return err
				})
			}
		}
		return []storetest.Case{{Name: "tx_without_check", Call: send(0)}, {Name: "tx_with_check_1_invoice", Call: send(1)},
			{Name: "tx_with_check_20_invoices", Call: send(20)}}
	})
}
