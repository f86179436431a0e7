// Package portfoliotest builds analyze_portfolio arguments for tests and
// benchmarks in other packages.
package portfoliotest

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"

	"github.com/cobranca/cobranca/internal/portfolio"
)

// Args returns the JSON arguments of n invoices built the way
// shared/bench/mcpload builds them: about n/4 customers, due dates from
// October to December 2026 around asOf 2026-11-29, ~70 % open, ~3 % of
// customers blocked. The same n gives the same bytes.
func Args(n int) []byte {
	r := rand.New(rand.NewPCG(1, 2))
	nCust := max(1, n/4)
	invs := make([]portfolio.Invoice, n)
	for i := range invs {
		c := r.IntN(nCust)
		st := portfolio.StatusOpen
		switch p := r.IntN(100); {
		case p >= 90:
			st = portfolio.StatusVoid
		case p >= 70:
			st = portfolio.StatusPaid
		}
		invs[i] = portfolio.Invoice{
			ID: fmt.Sprintf("inv-%05d", i+1), CustomerID: fmt.Sprintf("cust-%04d", c+1),
			CustomerName: fmt.Sprintf("Cliente %d Ltda", c+1),
			DueDate:      fmt.Sprintf("2026-%02d-%02d", 10+r.IntN(3), 1+r.IntN(28)),
			AmountCents:  int64(100 + r.IntN(80_000)), Status: st, DoNotContact: c%33 == 0,
		}
	}
	b, err := json.Marshal(portfolio.Input{AsOf: "2026-11-29", Invoices: invs})
	if err != nil {
		panic(err)
	}
	return b
}
