package collections

import (
	"errors"
	"fmt"
	"testing"

	"github.com/cobranca/cobranca/internal/ledger"
	"github.com/cobranca/cobranca/internal/portfolio"
)

func openInvoice(id, customer string, cents int64) ledger.Unsettled {
	return ledger.Unsettled{InvoiceID: id, CustomerID: customer, Currency: "BRL", DueDate: "2026-06-01", OpenCents: cents}
}

// TestLedgerSelectionBounds: a selection takes maxLedgerInvoices invoices and refuses the
// next; one customer maxCustomerInvoices and refuses its next (another customer's is
// taken); open amounts up to 2^53 − 1 in all; invoices in other currencies are counted,
// never taken nor bounded.
func TestLedgerSelectionBounds(t *testing.T) {
	t.Run("invoices", func(t *testing.T) {
		var sel ledgerSelection
		var cents int64
		for i := range maxLedgerInvoices {
			if err := sel.add(openInvoice(fmt.Sprint(i), fmt.Sprint(i/1000), 1), "BRL", nil, &cents); err != nil {
				t.Fatalf("invoice %d: %v", i, err)
			}
		}
		usd := openInvoice("usd", "zz", 1)
		usd.Currency = "USD"
		if err := sel.add(usd, "BRL", nil, &cents); err != nil || sel.other != 1 {
			t.Errorf("an invoice in USD past the bound: %v, other %d; want counted", err, sel.other)
		}
		if err := sel.add(openInvoice("last", "zz", 1), "BRL", nil, &cents); !errors.Is(err, errTooLarge) {
			t.Errorf("invoice %d: %v, want errTooLarge", maxLedgerInvoices+1, err)
		}
	})
	t.Run("customer", func(t *testing.T) {
		var sel ledgerSelection
		var cents int64
		for i := range maxCustomerInvoices {
			if err := sel.add(openInvoice(fmt.Sprint(i), "a", 1), "BRL", nil, &cents); err != nil {
				t.Fatalf("invoice %d: %v", i, err)
			}
		}
		if err := sel.add(openInvoice("b1", "b", 1), "BRL", nil, &cents); err != nil {
			t.Errorf("another customer's invoice: %v", err)
		}
		var sel2 ledgerSelection
		sel2.invoices = sel.invoices[:maxCustomerInvoices]
		if err := sel2.add(openInvoice("a-next", "a", 1), "BRL", nil, &cents); !errors.Is(err, errTooLarge) {
			t.Errorf("customer a's invoice %d: %v, want errTooLarge", maxCustomerInvoices+1, err)
		}
	})
	t.Run("cents", func(t *testing.T) {
		var sel ledgerSelection
		var cents int64
		if err := sel.add(openInvoice("1", "a", maxLedgerCents-1), "BRL", nil, &cents); err != nil {
			t.Fatal(err)
		}
		if err := sel.add(openInvoice("2", "a", 1), "BRL", nil, &cents); err != nil {
			t.Fatalf("up to 2^53 − 1: %v", err)
		}
		if err := sel.add(openInvoice("3", "a", 1), "BRL", nil, &cents); !errors.Is(err, errTooLarge) {
			t.Errorf("past 2^53 − 1: %v, want errTooLarge", err)
		}
	})
}

// TestLedgerSelectionOrder: a selection streamed in a collation's order (accents and case
// folded) is analyzed in byte order, as analyze_portfolio is given it: the account's name
// is that of the customer's first invoice by id in byte order.
func TestLedgerSelectionOrder(t *testing.T) {
	named := func(id, customer, name string) ledger.Unsettled {
		inv := openInvoice(id, customer, 1000)
		inv.CustomerName = name
		return inv
	}
	// en_US order: "a", "B", "ç" — byte order: "B", "a", "ç".
	stream := []ledger.Unsettled{named("a", "c", "Second"), named("B", "c", "First"), named("ç", "c", "Third")}
	var sel ledgerSelection
	var cents int64
	for _, inv := range stream {
		if err := sel.add(inv, "BRL", nil, &cents); err != nil {
			t.Fatal(err)
		}
	}
	a := sel.analyze("2026-07-01", "BRL", portfolio.Options{})
	if len(a.Accounts) != 1 || a.Accounts[0].CustomerName != "First" {
		t.Errorf("accounts = %+v, want one, named First (invoice B comes first in byte order)", a.Accounts)
	}
}

// FuzzLedgerCursor: opening never panics, and a cursor that opens for some filters is exactly
// the one sealing its position for them gives: one position, one text.
func FuzzLedgerCursor(f *testing.F) {
	f.Add(sealLedgerCursor("eyJhIjoxfQ", "f"), "f")
	f.Add("AQ", "")
	f.Add("not a cursor", "x")
	f.Fuzz(func(t *testing.T, s, filters string) {
		pos, ok := openLedgerCursor(s, filters)
		if !ok {
			return
		}
		if back := sealLedgerCursor(pos, filters); back != s {
			t.Errorf("open(%q) = %q, sealed again %q", s, pos, back)
		}
		if _, ok := openLedgerCursor(s, filters+"x"); ok {
			t.Errorf("%q opens for other filters", s)
		}
	})
}
