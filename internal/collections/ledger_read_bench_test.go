package collections_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/cobranca/cobranca/internal/collections"
	"github.com/cobranca/cobranca/internal/ledger"
	"github.com/cobranca/cobranca/internal/pipeline"
	"github.com/cobranca/cobranca/internal/store"
	"github.com/cobranca/cobranca/internal/store/storetest"
)

// The ledger analyzed by BenchmarkAnalyzeLedger: benchInvoices open invoices of
// benchCustomers customers, one in 20 disputed and one in 20 under a promise. See
// docs/benchmarks.md, "Ledger".
const (
	benchInvoices  = 100_000
	benchCustomers = 10_000
)

func seedBenchLedger(b *testing.B, db store.DB, now time.Time) {
	b.Helper()
	const batch = 10_000
	for from := 0; from < benchInvoices; from += batch {
		ledgerTx(b, db, now, func(o ledgerOps) {
			recs := make([]ledger.InvoiceRecord, 0, batch)
			for i := from; i < from+batch; i++ {
				c := fmt.Sprintf("cliente-%05d", i%benchCustomers)
				recs = append(recs, ledger.InvoiceRecord{InvoiceID: fmt.Sprintf("NF-%06d", i), CustomerID: c, CustomerName: "Mercado " + c,
					AmountCents: 1000 + int64(i%997)*100, DueDate: now.AddDate(0, 0, -(i%120)+20).Format(time.DateOnly)})
			}
			o.invoices(recs...)
			for i := from; i < from+batch; i += 20 {
				o.dispute(fmt.Sprintf("NF-%06d", i))
				o.promise(fmt.Sprintf("NF-%06d", i+1), 1000, now.AddDate(0, 0, i%30).Format(time.DateOnly))
			}
		})
	}
}

// BenchmarkAnalyzeLedger measures analyze_ledger over 100 000 open invoices on each store:
// the whole call through pipeline.Do (read, map, analyze, the result checked against its
// schema, audited), and the store's read alone (ledger.ForAnalysis).
func BenchmarkAnalyzeLedger(b *testing.B) {
	for _, f := range storetest.Fixtures(pg) {
		b.Run(string(f.Dialect), func(b *testing.B) {
			e := newEnv(b, f.Migrated(b))
			seedBenchLedger(b, e.db, e.clock())
			b.Run("tool", func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					res := e.call(reader, collections.AnalyzeLedgerName, map[string]any{})
					if res.Kind != pipeline.Complete {
						b.Fatal(res.Err)
					}
				}
			})
			b.Run("read", func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					n := 0
					if err := ledger.ForAnalysis(context.Background(), e.db, nil, func(ledger.Unsettled) error { n++; return nil }); err != nil || n != benchInvoices {
						b.Fatal(n, err)
					}
				}
			})
		})
	}
}
