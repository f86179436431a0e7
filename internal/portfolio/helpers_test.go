package portfolio

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strconv"
	"testing"
	"time"
)

// genInvoices builds k invoices deterministically from seed, exactly like
// genInvoices in bench/mcpload: about k/4 customers; due dates from asOf-30d
// to asOf+30d; amounts 1..800 BRL; status ~70% open, 20% paid, 10% void;
// ~3% of customers have a doNotContact invoice.
func genInvoices(k int, seed uint64, asOf time.Time) []Invoice {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	nCust := max(1, k/4)
	names := []string{"Ana", "Bruno", "Carla", "Diego", "Elisa", "Fábio", "Gabi", "Heitor", "Iara", "João"}
	dnc := make([]bool, nCust)
	for i := range dnc {
		dnc[i] = r.IntN(100) < 3
	}
	out := make([]Invoice, k)
	for i := range out {
		c := r.IntN(nCust)
		st := StatusOpen
		switch p := r.IntN(100); {
		case p >= 90:
			st = StatusVoid
		case p >= 70:
			st = StatusPaid
		}
		out[i] = Invoice{
			ID:           fmt.Sprintf("inv-%05d", i+1),
			CustomerID:   fmt.Sprintf("cust-%04d", c+1),
			CustomerName: fmt.Sprintf("%s %s Ltda", names[c%len(names)], strconv.Itoa(c+1)),
			DueDate:      asOf.AddDate(0, 0, r.IntN(61)-30).Format("2006-01-02"),
			AmountCents:  int64(100 + r.IntN(80_000)),
			Status:       st,
			DoNotContact: dnc[c] && r.IntN(2) == 0,
		}
	}
	return out
}

// benchInput is the 500-invoice portfolio of the benchmarks.
func benchInput(tb testing.TB) (*Input, []byte) {
	tb.Helper()
	asOf := time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC)
	in := &Input{AsOf: "2026-11-29", Invoices: genInvoices(MaxInvoices, 1, asOf)}
	data, err := json.Marshal(in)
	if err != nil {
		tb.Fatal(err)
	}
	return in, data
}

// referenceView is a with only what the reference's result has (and the
// warnings): the fields issue 15 added are zero.
func referenceView(a Analysis) Analysis {
	v := Analysis{TotalOpenCents: a.TotalOpenCents, Accounts: make([]Account, len(a.Accounts)), Warnings: a.Warnings}
	for i, x := range a.Accounts {
		v.Accounts[i] = Account{CustomerID: x.CustomerID, CustomerName: x.CustomerName, AmountCents: x.AmountCents,
			OldestDueDate: x.OldestDueDate, DaysOverdue: x.DaysOverdue, Priority: x.Priority,
			RecommendedAction: x.RecommendedAction, Reason: x.Reason}
	}
	return v
}
