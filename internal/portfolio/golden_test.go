package portfolio

import (
	"flag"
	"path/filepath"
	"testing"
	"time"

	goldenfile "github.com/cobranca/cobranca/internal/golden"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// TestGoldenAnalyses shows what Analyze makes of two small portfolios, for
// reviewers to see the output's shape: a reference-shaped one and one with
// every field of issue 15 (with 72 h of contact pacing). Each input and its
// analysis are under testdata/golden; go test -update rewrites them.
func TestGoldenAnalyses(t *testing.T) {
	asOf := time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		name string
		in   *Input
		o    Options
	}{
		{"reference", &Input{AsOf: "2026-11-29", Invoices: genInvoices(24, 3, asOf)}, Options{}},
		{"extended", goldenExtended(), Options{ContactPacing: 72 * time.Hour}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := Validate(tt.in); err != nil {
				t.Fatal(err)
			}
			golden(t, tt.name+".input.json", tt.in)
			golden(t, tt.name+".analysis.json", AnalyzeWith(tt.in, tt.o))
		})
	}
}

// goldenExtended is a small portfolio with every field of issue 15, at
// rates of the end of November 2026 (as one might have them).
func goldenExtended() *Input {
	x := func(id, cust, name, due string, cents int64, st Status) Invoice {
		return Invoice{ID: id, CustomerID: cust, CustomerName: name, DueDate: due, AmountCents: cents, Status: st}
	}
	with := func(v Invoice, edit func(*Invoice)) Invoice { edit(&v); return v }
	return &Input{
		AsOf: "2026-11-29",
		Invoices: []Invoice{
			x("NF-1001", "CLI-01", "Padaria Pão Quente Ltda", "2026-09-15", 1_250_000, StatusOpen),
			x("NF-1002", "CLI-01", "Padaria Pão Quente Ltda", "2026-11-20", 300_000, StatusOpen),
			with(x("NF-1003", "CLI-02", "Export Co. LLC", "2026-10-30", 100_000, StatusOpen), func(v *Invoice) { v.Details().Currency = "USD" }),
			with(x("NF-1004", "CLI-02", "Export Co. LLC", "2026-11-10", 50_000, StatusOpen), func(v *Invoice) { v.Details().Currency = "EUR" }),
			with(x("NF-1005", "CLI-02", "Export Co. LLC", "2026-11-25", 2_000_000, StatusOpen), func(v *Invoice) { v.Details().Currency = "JPY" }),
			with(x("NF-1006", "CLI-03", "Mercado Bom Preço", "2026-11-01", 80_000, StatusOpen), func(v *Invoice) { v.Details().PromiseToPayDate = "2026-11-20" }),
			with(x("NF-1007", "CLI-04", "Oficina do Zé", "2026-10-01", 45_000, StatusOpen), func(v *Invoice) { v.Details().PromiseToPayDate = "2026-12-05" }),
			with(x("NF-1008", "CLI-05", "Construtora Alfa S.A.", "2026-08-01", 900_000, StatusOpen), func(v *Invoice) {
				v.InvoiceDetails = &InvoiceDetails{Disputed: true, DisputeReason: "medição contestada"}
			}),
			x("NF-1009", "CLI-05", "Construtora Alfa S.A.", "2026-07-01", 400_000, StatusPaid),
			x("NF-1010", "CLI-06", "Loja Fechada ME", "2026-06-01", 10_000, StatusVoid),
			with(x("NF-1011", "CLI-07", "Cliente Sensível", "2026-10-10", 70_000, StatusOpen), func(v *Invoice) { v.DoNotContact = true }),
			x("NF-1012", "CLI-08", "Papelaria Central", "2026-11-27", 12_345, StatusOpen),
			x("NF-1013", "CLI-08", "Papelaria Central", "2026-12-15", 20_000, StatusOpen),
		},
		BaseCurrency: "BRL",
		Rates: []ExchangeRate{
			{Currency: "USD", Rate: Decimal{517, 2}, Date: "2026-11-28"},
			{Currency: "EUR", Rate: Decimal{561, 2}, Date: "2026-11-28"},
			{Currency: "JPY", Rate: Decimal{345, 4}, Date: "2026-11-28"},
			{Currency: "GBP", Rate: Decimal{655, 2}, Date: "2026-11-28"},
		},
		Customers: []Contact{
			{CustomerID: "CLI-01", LastContactedAt: "2026-11-28T14:30:00-03:00"},
			{CustomerID: "CLI-08", LastContactedAt: "2026-11-20"},
			{CustomerID: "CLI-99", LastContactedAt: "2026-11-27"},
		},
	}
}

// golden compares got with testdata/golden/name as JSON values (not
// bytes), or rewrites the file with -update.
func golden(t *testing.T, name string, got any) {
	t.Helper()
	goldenfile.JSON(t, filepath.Join("testdata", "golden", name), got, *update)
}
