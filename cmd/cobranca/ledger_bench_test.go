package main

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cobranca/cobranca/internal/cnab/cnabtest"
)

// invoicesFile is a CSV of n invoices whose ids and nossos números start
// with prefix, each of 1 000.00 plus its number in cents.
func invoicesFile(prefix string, n int) []byte {
	var b strings.Builder
	b.Grow(n * 80)
	b.WriteString("invoiceId,customerId,customerName,amountCents,dueDate,ourNumber\n")
	for i := range n {
		fmt.Fprintf(&b, "%s-%d,c-%d,Cliente %d,%d,2026-11-20,%sN%d\n", prefix, i, i%5000, i%5000, 100000+i, prefix, i)
	}
	return []byte(b.String())
}

// BenchmarkInvoicesImport is `cobranca invoices import` of a CSV of 100 000
// new invoices, end to end: the file read and checked, one transaction of
// upserts, the audit event (issue 26: ≤ 10 s).
func BenchmarkInvoicesImport(b *testing.B) {
	for _, dialect := range []string{"sqlite", "postgres"} {
		b.Run(dialect, func(b *testing.B) {
			c := newLedgerCLI(b, dialect)
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				b.StopTimer()
				i++
				path := c.file("invoices.csv", invoicesFile("B"+strconv.Itoa(i), 100_000))
				b.StartTimer()
				out, _, err := c.run("invoices", "import", path)
				if err != nil || !strings.HasPrefix(out, "imported 100000 invoice(s): 100000 created") {
					b.Fatalf("invoices import = %q, %v", out, err)
				}
			}
		})
	}
}

// BenchmarkPaymentsImportCNAB is `cobranca payments import` of a CNAB 240
// return file of 10 000 settled titles, each matched by its nosso número
// to one of 10 000 open invoices, end to end (issue 26: ≤ 10 s). The
// invoices are imported before the timer runs.
func BenchmarkPaymentsImportCNAB(b *testing.B) {
	for _, dialect := range []string{"sqlite", "postgres"} {
		b.Run(dialect, func(b *testing.B) {
			c := newLedgerCLI(b, dialect)
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				b.StopTimer()
				i++
				prefix := "P" + strconv.Itoa(i)
				if _, _, err := c.run("invoices", "import", c.file("invoices.csv", invoicesFile(prefix, 10_000))); err != nil {
					b.Fatal(err)
				}
				f := cnabtest.NewBuilder(341, time.Date(2026, 11, 30, 7, 0, 0, 0, time.UTC), int64(i))
				f.OpenBatch()
				for j := range 10_000 {
					cents := int64(100000 + j)
					f.Add(cnabtest.Title{Movement: "06", OurNumber: fmt.Sprintf("%sN%d", prefix, j), Due: "2026-11-20", FaceCents: cents,
						PayerKind: 2, PayerDoc: 11222333000181, PayerName: "CLIENTE", PaidCents: cents, CreditedCents: cents - 350,
						OccurredOn: "2026-11-28", CreditedOn: "2026-11-30"})
				}
				f.CloseBatch()
				path := c.file("RET.ret", f.Bytes("\r\n"))
				b.StartTimer()
				out, _, err := c.run("payments", "import", path)
				if err != nil || !strings.Contains(out, "10000 new, 0 already imported\nmatched 10000 by reference") {
					b.Fatalf("payments import = %q, %v", out, err)
				}
			}
		})
	}
}
