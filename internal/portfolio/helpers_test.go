package portfolio

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strconv"
	"testing"
	"time"

	"github.com/cobranca/cobranca/internal/value"
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

// detailsOf is a's details, the zero ones when it has none.
func detailsOf(a *Account) AccountDetails {
	if a.AccountDetails == nil {
		return AccountDetails{}
	}
	return *a.AccountDetails
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

// extendedCurrencies are the currencies genExtended uses: the base ones
// and exponents 0, 2, 3 and 4.
var extendedCurrencies = []string{"BRL", "USD", "EUR", "JPY", "GBP", "KWD", "CLF", "CHF"}

// genExtended builds a valid portfolio of k invoices deterministically from
// seed, the sibling of genInvoices with issue 15's fields: a base currency
// (BRL most often), invoices in several currencies with a rate for each,
// disputes (some with a reason), promises to pay before, on and after
// asOf, and customers entries with last contacts as dates or RFC 3339
// times in several offsets, some naming no customer of the invoices.
func genExtended(k int, seed uint64, asOf time.Time) *Input {
	r := rand.New(rand.NewPCG(seed, seed^0x51ed270b27a5c2a9))
	day := func(d int) string { return asOf.AddDate(0, 0, d).Format(time.DateOnly) }
	in := &Input{AsOf: asOf.Format(time.DateOnly), Invoices: genInvoices(k, seed, asOf)}
	if r.IntN(3) > 0 {
		in.BaseCurrency = []string{"", "BRL", "USD", "EUR", "JPY"}[r.IntN(5)]
	}
	base := codeOrBase(in.BaseCurrency)
	// Rates, with scales from 0 to 12, for the currencies other than
	// the base one; about one in three invoices is in one of them.
	rateOf := map[string]Decimal{}
	for _, c := range extendedCurrencies {
		if c == base {
			continue
		}
		d := Decimal{Coef: uint64(1 + r.IntN(9_999_999)), Scale: uint8(r.IntN(8))}
		if r.IntN(8) == 0 {
			d = Decimal{Coef: uint64(1 + r.Int64N(999_999_999_999)), Scale: 12}
		}
		rateOf[c] = d
		in.Rates = append(in.Rates, ExchangeRate{Currency: c, Rate: d, Date: day(-r.IntN(5))})
	}
	r.Shuffle(len(in.Rates), func(i, j int) { in.Rates[i], in.Rates[j] = in.Rates[j], in.Rates[i] })
	for i := range in.Invoices {
		x := &in.Invoices[i]
		if r.IntN(3) == 0 {
			x.Details().Currency = extendedCurrencies[r.IntN(len(extendedCurrencies))]
			if x.Currency == "BRL" && r.IntN(2) == 0 {
				x.Currency = ""
			}
		}
		if c := codeOrBase(x.details().Currency); c != base {
			// Keep the converted amount from 1 to value.MaxAmountCents.
			for _, ok := convert(x.AmountCents, value.CurrencyOf(c).Exp(), rateOf[c], value.CurrencyOf(base).Exp()); !ok; _, ok = convert(x.AmountCents, value.CurrencyOf(c).Exp(), rateOf[c], value.CurrencyOf(base).Exp()) {
				if x.AmountCents < value.MaxAmountCents/1000 {
					x.AmountCents *= 1000
				} else {
					x.Details().Currency = in.BaseCurrency
					break
				}
			}
		}
		if x.Status == StatusOpen && r.IntN(8) == 0 {
			x.Details().Disputed = true
			if r.IntN(2) == 0 {
				x.DisputeReason = []string{"mercadoria avariada", "cobrança em duplicidade", "Fábio <diz> \"já pagou\""}[r.IntN(3)]
			}
		}
		if r.IntN(6) == 0 {
			x.Details().PromiseToPayDate = day([]int{-40, -3, -1, 0, 1, 7}[r.IntN(6)])
		}
	}
	ids := map[string]bool{}
	for _, x := range in.Invoices {
		if !ids[x.CustomerID] && r.IntN(2) == 0 {
			last := asOf.Add(-time.Duration(r.IntN(10*24*60)) * time.Minute)
			s := last.Format(time.DateOnly)
			switch r.IntN(3) {
			case 1:
				s = last.In(time.FixedZone("", -3*3600)).Format(time.RFC3339)
			case 2:
				s = last.In(time.FixedZone("", 5*3600+1800)).Format(time.RFC3339Nano)
			}
			in.Customers = append(in.Customers, Contact{CustomerID: x.CustomerID, LastContactedAt: s})
		}
		ids[x.CustomerID] = true
	}
	in.Customers = append(in.Customers, Contact{CustomerID: "nobody-" + fmt.Sprint(seed), LastContactedAt: in.AsOf})
	return in
}
