package ledger_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/cobranca/cobranca/internal/ledger"
	"github.com/cobranca/cobranca/internal/store"
	"github.com/cobranca/cobranca/internal/store/storetest"
)

// TestSuggest: the invoices offered for a payment are matching's
// candidates (its reference's, then its customer's; none settled, of
// another currency, or already paid by it), each with Match's rule for it
// alone, the reference's first, then the amount fit, then by due date,
// with what a click allocates.
func TestSuggest(t *testing.T) {
	storetest.Each(t, pg, func(t *testing.T, db store.DB) {
		ctx := context.Background()
		ref := inv("NF-R", "C-9", 9000, "2026-12-20") // another customer's, carrying the reference
		ref.PixTxID = "TXS1"
		fit := inv("NF-F", "C-1", 2500, "2026-12-10") // the amount fit
		big := inv("NF-B", "C-1", 9000, "2026-11-01") // more than the payment
		far := inv("NF-L", "C-1", 2500, "2026-01-01") // the amount, out of the window
		usd := inv("NF-U", "C-1", 2500, "2026-12-10")
		usd.Currency = "USD"
		paid := inv("NF-P", "C-1", 2500, "2026-12-11")
		other := inv("NF-O", "C-2", 2500, "2026-12-10") // another customer's, no reference
		must[ledger.UpsertCounts](t)(upsert(t, db, ref, fit, big, far, usd, paid, other))
		payer := record(t, db, payment("s0", 2500, "2026-12-01"))
		if _, err := allocate(db, payer.ID, ledger.Planned{InvoiceID: "NF-P", AmountCents: 2500}); err != nil {
			t.Fatal(err)
		}
		p := payment("s1", 2500, "2026-12-05")
		p.Reference, p.CustomerID = "TXS1", "C-1"
		sp := record(t, db, p)

		type row struct {
			ID     string
			Fit    ledger.Rule
			Amount int64
		}
		suggest := func(id string) ([]row, bool, error) {
			t.Helper()
			_, got, more, err := ledger.Suggest(ctx, db, id)
			var rows []row
			for _, s := range got {
				rows = append(rows, row{s.Invoice.InvoiceID, s.Fit, s.AmountCents})
			}
			return rows, more, err
		}
		rows, more, err := suggest(sp.ID)
		want := []row{{"NF-R", ledger.RuleReference, 2500}, {"NF-F", ledger.RuleAmount, 2500}, {"NF-L", ledger.RuleNone, 2500}, {"NF-B", ledger.RuleNone, 2500}}
		if err != nil || more || !cmp.Equal(rows, want) {
			t.Errorf("Suggest = %v, more %v, %v; want %v", rows, more, err, want)
		}

		// Part of it allocated to NF-F: the rest is offered, NF-F no more.
		if _, err := allocate(db, sp.ID, ledger.Planned{InvoiceID: "NF-F", AmountCents: 1000}); err != nil {
			t.Fatal(err)
		}
		rows, _, err = suggest(sp.ID)
		want = []row{{"NF-R", ledger.RuleReference, 1500}, {"NF-L", ledger.RuleNone, 1500}, {"NF-B", ledger.RuleNone, 1500}}
		if err != nil || !cmp.Equal(rows, want) {
			t.Errorf("after a part: Suggest = %v, %v; want %v", rows, err, want)
		}
		// Nothing left: nothing offered.
		if _, err := allocate(db, sp.ID, ledger.Planned{InvoiceID: "NF-B", AmountCents: 1500}); err != nil {
			t.Fatal(err)
		}
		if rows, _, err := suggest(sp.ID); err != nil || len(rows) != 0 {
			t.Errorf("spent: Suggest = %v, %v; want none", rows, err)
		}
		// Neither reference nor customer: no candidate.
		if rows, _, err := suggest(record(t, db, payment("s2", 700, "2026-12-05")).ID); err != nil || len(rows) != 0 {
			t.Errorf("anonymous: Suggest = %v, %v; want none", rows, err)
		}
		if _, _, _, err := ledger.Suggest(ctx, db, "pay_nope"); !is(err, ledger.CodePaymentNotFound) {
			t.Errorf("Suggest(unknown) = %v; want %s", err, ledger.CodePaymentNotFound)
		} else if _, field := code(err); field != "paymentId" {
			t.Errorf("Suggest(unknown) names %q; want paymentId", field)
		}
	})
}

// TestSuggestBounded: a customer with more open invoices than a page
// offers MaxSuggestions of them and says there are more; the invoice
// carrying the payment's reference is offered whatever the customer's
// size.
func TestSuggestBounded(t *testing.T) {
	storetest.Each(t, pg, func(t *testing.T, db store.DB) {
		var recs []ledger.InvoiceRecord
		for i := range ledger.MaxSuggestions + 5 {
			recs = append(recs, inv(fmt.Sprintf("NF-%03d", i), "C-1", 100+int64(i), "2026-12-10"))
		}
		recs[len(recs)-1].Reference = "REF-LAST" // last in id order: past the customer's page
		must[ledger.UpsertCounts](t)(upsert(t, db, recs...))
		p := payment("b1", 50, "2026-12-05")
		p.Reference, p.CustomerID = "REF-LAST", "C-1"
		_, got, more, err := ledger.Suggest(context.Background(), db, record(t, db, p).ID)
		if err != nil || !more || len(got) != ledger.MaxSuggestions+1 || got[0].Invoice.InvoiceID != recs[len(recs)-1].InvoiceID || got[0].Fit != ledger.RuleReference {
			t.Fatalf("Suggest = %d suggestions, first %+v, more %v, %v; want %d, the reference's first, more", len(got), got[0].Invoice.InvoiceID, more, err, ledger.MaxSuggestions+1)
		}
	})
}

// TestFitAgreesWithMatch: over random payments and candidates, what Match
// decides is what each candidate's Fit says: the reference's invoices
// when any carries it, else the one amount fit, else nothing.
func TestFitAgreesWithMatch(t *testing.T) {
	r := rand.New(rand.NewPCG(29, 1))
	n := 20_000
	if testing.Short() {
		n = 2_000
	}
	pick := func(ss ...string) string { return ss[r.IntN(len(ss))] }
	for range n {
		p := ledger.Payment{AmountCents: 1000, Currency: pick("BRL", "BRL", "USD"), PaidOn: pick("2026-06-01", "", "2026-13-01"),
			Reference: pick("", "TX1", "TX2"), CustomerID: pick("", "C1", "C2"), LeftCents: int64(r.IntN(3)) * 500}
		var cands []ledger.Candidate
		for i := range r.IntN(5) {
			cands = append(cands, ledger.Candidate{InvoiceID: fmt.Sprint("I", i), CustomerID: pick("C1", "C2"), Currency: pick("BRL", "USD"),
				DueDate: pick("2026-06-10", "2026-01-01", "2026-09-28", "2026-09-29", "x"), OpenCents: int64(r.IntN(3)) * 500,
				References: []string{pick("TX1", "TX2", "")}})
		}
		rule, plan := ledger.Match(p, cands)
		fits := map[ledger.Rule][]string{}
		for _, c := range cands {
			fits[ledger.Fit(p, c)] = append(fits[ledger.Fit(p, c)], c.InvoiceID)
		}
		var planned []string
		for _, pl := range plan {
			planned = append(planned, pl.InvoiceID)
		}
		var want ledger.Rule
		switch {
		case len(fits[ledger.RuleReference]) > 0:
			want = ledger.RuleReference
			for _, id := range planned {
				if !contains(fits[ledger.RuleReference], id) {
					t.Fatalf("Match(%+v, %+v) plans %s, whose Fit is not the reference's", p, cands, id)
				}
			}
		case len(fits[ledger.RuleAmount]) == 1:
			want = ledger.RuleAmount
			if !cmp.Equal(planned, fits[ledger.RuleAmount]) {
				t.Fatalf("Match(%+v, %+v) plans %v; the amount fit is %v", p, cands, planned, fits[ledger.RuleAmount])
			}
		default:
			want = ledger.RuleNone
		}
		if rule != want {
			t.Fatalf("Match(%+v, %+v) = %s; the candidates' fits %v say %s", p, cands, rule, fits, want)
		}
	}
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}
