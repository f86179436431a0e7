package ledger_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/cobranca/cobranca/internal/ledger"
	"github.com/cobranca/cobranca/internal/store"
	"github.com/cobranca/cobranca/internal/store/storetest"
)

// suggestOne is Suggest's offer for the payment id alone, as GetPayment
// reads it.
func suggestOne(t testing.TB, db store.Querier, id string) ledger.Offer {
	t.Helper()
	p, err := ledger.GetPayment(context.Background(), db, id)
	if err != nil {
		t.Fatal(err)
	}
	offers, err := ledger.Suggest(context.Background(), db, []ledger.StoredPayment{p})
	if err != nil || len(offers) != 1 {
		t.Fatalf("Suggest(%s) = %d offers, %v; want one", id, len(offers), err)
	}
	return offers[0]
}

// TestSuggest: the invoices offered for a payment are matching's
// candidates (its reference's, then its customer's; none settled, of
// another currency, or already paid by it), each with Match's rule for it
// alone, the reference's first, then the amount fit, then by due date,
// with what a click allocates.
func TestSuggest(t *testing.T) {
	storetest.Each(t, pg, func(t *testing.T, db store.DB) {
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
		suggest := func(id string) ([]row, bool) {
			t.Helper()
			o := suggestOne(t, db, id)
			var rows []row
			for _, s := range o.Suggestions {
				rows = append(rows, row{s.Invoice.InvoiceID, s.Fit, s.AmountCents})
			}
			return rows, o.More
		}
		rows, more := suggest(sp.ID)
		want := []row{{"NF-R", ledger.RuleReference, 2500}, {"NF-F", ledger.RuleAmount, 2500}, {"NF-L", ledger.RuleNone, 2500}, {"NF-B", ledger.RuleNone, 2500}}
		if more || !cmp.Equal(rows, want) {
			t.Errorf("Suggest = %v, more %v; want %v", rows, more, want)
		}

		// Part of it allocated to NF-F: the rest is offered, NF-F no more.
		if _, err := allocate(db, sp.ID, ledger.Planned{InvoiceID: "NF-F", AmountCents: 1000}); err != nil {
			t.Fatal(err)
		}
		rows, _ = suggest(sp.ID)
		want = []row{{"NF-R", ledger.RuleReference, 1500}, {"NF-L", ledger.RuleNone, 1500}, {"NF-B", ledger.RuleNone, 1500}}
		if !cmp.Equal(rows, want) {
			t.Errorf("after a part: Suggest = %v; want %v", rows, want)
		}
		// Nothing left: nothing offered.
		if _, err := allocate(db, sp.ID, ledger.Planned{InvoiceID: "NF-B", AmountCents: 1500}); err != nil {
			t.Fatal(err)
		}
		if rows, _ := suggest(sp.ID); len(rows) != 0 {
			t.Errorf("spent: Suggest = %v; want none", rows)
		}
		// Neither reference nor customer: no candidate.
		if rows, _ := suggest(record(t, db, payment("s2", 700, "2026-12-05")).ID); len(rows) != 0 {
			t.Errorf("anonymous: Suggest = %v; want none", rows)
		}
		if offers, err := ledger.Suggest(context.Background(), db, nil); err != nil || len(offers) != 0 {
			t.Errorf("Suggest(no payment) = %v, %v; want nothing", offers, err)
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
		o := suggestOne(t, db, record(t, db, p).ID)
		if got := o.Suggestions; !o.More || len(got) != ledger.MaxSuggestions+1 || got[0].Invoice.InvoiceID != recs[len(recs)-1].InvoiceID || got[0].Fit != ledger.RuleReference {
			t.Fatalf("Suggest = %d suggestions, first %+v, more %v; want %d, the reference's first, more", len(got), got[0].Invoice.InvoiceID, o.More, ledger.MaxSuggestions+1)
		}
	})
}

// TestSuggestPage: the offers for a page of payments, read together, are
// each payment's offer read alone: two payments of a customer with more
// invoices than a page each get the page and more; a payment's customer's
// invoice carrying another payment's reference is not its own past its
// customer's page; a spent payment gets nothing; a reference two payments
// quote is offered to both.
func TestSuggestPage(t *testing.T) {
	storetest.Each(t, pg, func(t *testing.T, db store.DB) {
		var recs []ledger.InvoiceRecord
		for i := range ledger.MaxSuggestions + 5 {
			recs = append(recs, inv(fmt.Sprintf("NF-%03d", i), "C-1", 100+int64(i), "2026-12-10"))
		}
		recs[len(recs)-1].Reference = "REF-C1" // C-1's, past its page
		shared := inv("NF-S", "C-2", 700, "2026-12-01")
		shared.OurNumber = "NN9"
		small := inv("NF-T", "C-3", 300, "2026-12-02")
		must[ledger.UpsertCounts](t)(upsert(t, db, append(recs, shared, small)...))
		var ids []string
		for i, f := range []func(*ledger.PaymentRecord){
			func(p *ledger.PaymentRecord) { p.CustomerID = "C-1" },
			func(p *ledger.PaymentRecord) { p.CustomerID, p.Reference = "C-1", "NN9" },
			func(p *ledger.PaymentRecord) { p.CustomerID, p.Reference = "C-3", "REF-C1" },
			func(p *ledger.PaymentRecord) { p.Reference = "NN9" },
			func(p *ledger.PaymentRecord) { p.CustomerID = "C-3" }, // spent below
			func(p *ledger.PaymentRecord) {},
		} {
			p := payment(fmt.Sprint("pg", i), 300, "2026-12-05")
			f(&p)
			ids = append(ids, record(t, db, p).ID)
		}
		if _, err := allocate(db, ids[4], ledger.Planned{InvoiceID: "NF-T", AmountCents: 300}); err != nil {
			t.Fatal(err)
		}
		page, _, err := ledger.ListUnmatched(context.Background(), db, "", 50)
		if err != nil || len(page) != 5 {
			t.Fatalf("ListUnmatched = %d payments, %v; want the 5 with something left", len(page), err)
		}
		spent, err := ledger.GetPayment(context.Background(), db, ids[4])
		if err != nil {
			t.Fatal(err)
		}
		page = append(page, spent)
		offers, err := ledger.Suggest(context.Background(), db, page)
		if err != nil || len(offers) != len(page) {
			t.Fatalf("Suggest(page) = %d offers, %v; want %d", len(offers), err, len(page))
		}
		of := map[string]ledger.Offer{}
		for i, p := range page {
			of[p.ID] = offers[i]
			if diff := cmp.Diff(suggestOne(t, db, p.ID), offers[i]); diff != "" {
				t.Errorf("payment %s (%s, %q): Suggest(page) differs from Suggest alone (-alone +page):\n%s", p.ID, p.CustomerID, p.Reference, diff)
			}
		}
		first, second := of[ids[0]], of[ids[1]]
		if !first.More || !second.More || len(first.Suggestions) != ledger.MaxSuggestions || second.Suggestions[0].Invoice.InvoiceID != "NF-S" {
			t.Errorf("C-1's payments: more %v, %v, %d suggestions; want more for both, %d, NF-S first for the second", first.More, second.More,
				len(first.Suggestions), ledger.MaxSuggestions)
		}
		if got := of[ids[2]].Suggestions; len(got) != 1 || got[0].Invoice.InvoiceID != recs[len(recs)-1].InvoiceID {
			t.Errorf("C-3's payment quoting C-1's reference: %+v, want that invoice alone (C-3's NF-T is paid)", got)
		}
		if got := of[ids[4]].Suggestions; len(got) != 0 {
			t.Errorf("the spent payment: %d suggestions, want none", len(got))
		}
		// SQLite reads a page of each customer's from its index too (PostgreSQL's plan is
		// TestConsolePlans', at scale).
		if d, _ := store.DialectOf(db); d == store.SQLite {
			lines, _, _ := sqlitePlan(t, db, ledger.CustomerPagesSQL(d), []any{`["C-1","C-3"]`, ledger.MaxSuggestions + 1})
			plan := strings.Join(lines, "\n")
			if !strings.Contains(plan, "ledger_invoice_unsettled") || regexp.MustCompile(`SCAN (i|ledger_invoice)\b`).MatchString(plan) {
				t.Errorf("the customers' pages on SQLite: the plan reads no ledger_invoice_unsettled, or the table whole:\n%s", plan)
			}
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
