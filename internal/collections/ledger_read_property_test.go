package collections_test

import (
	"cmp"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	gocmp "github.com/google/go-cmp/cmp"

	"github.com/cobranca/cobranca/internal/collections"
	"github.com/cobranca/cobranca/internal/ledger"
	"github.com/cobranca/cobranca/internal/pipeline"
	"github.com/cobranca/cobranca/internal/portfolio"
	"github.com/cobranca/cobranca/internal/store"
	"github.com/cobranca/cobranca/internal/store/storetest"
)

// modelInvoice is what the property test knows of an invoice, kept by hand beside the
// ledger: its record and the sums of what was done to it.
type modelInvoice struct {
	rec        ledger.InvoiceRecord
	allocated  int64
	writtenOff int64
	dispute    string // the open dispute's reason, "" when none
	promise    string // the latest promise's date, "" when none
}

// open is the invoice's open amount, restated from the words: a void invoice is
// closed; payments that cover the amount close it; a write-off closes what payments left.
// unsettled says whether anything is left to collect.
func (m *modelInvoice) open() (cents int64, unsettled bool) {
	if m.rec.Void || m.allocated >= m.rec.AmountCents {
		return 0, false
	}
	left := m.rec.AmountCents - m.allocated - m.writtenOff
	return max(left, 0), left > 0
}

// randomLedger writes a random ledger under the id prefix px, as of now, through the ledger's
// own writes: invoices (some re-imported with a new due date, name or void flag), payments
// allocated in part, in whole, over two invoices or with a credit left, write-offs, promises,
// disputes opened, resolved and reopened, customers who asked not to be contacted. It returns
// the model of its invoices and its customers, and which of them are do_not_contact.
func randomLedger(t testing.TB, e *env, r *rand.Rand, px string, now time.Time) (invs []*modelInvoice, custs []string, dnc map[string]bool) {
	t.Helper()
	// Customer ids from a pool whose byte order is not a collation's (upper case, accents).
	pool := []string{"c1", "C2", "ção", "cao", "Zeta", "árvore", "b 7", "c10"}
	r.Shuffle(len(pool), func(i, j int) { pool[i], pool[j] = pool[j], pool[i] })
	for _, c := range pool[:1+r.IntN(5)] {
		custs = append(custs, px+c)
	}
	dnc = map[string]bool{}
	day := func(d int) string { return now.AddDate(0, 0, d).Format(time.DateOnly) }
	ledgerTx(t, e.db, now, func(o ledgerOps) {
		for _, c := range custs {
			o.customer(c, "Cliente "+c)
			if r.IntN(7) == 0 {
				o.doNotContact(c)
				dnc[c] = true
			}
		}
		var recs []ledger.InvoiceRecord
		for i := range 1 + r.IntN(25) {
			c := custs[r.IntN(len(custs))]
			rec := ledger.InvoiceRecord{InvoiceID: fmt.Sprintf("%si%02d", px, i), CustomerID: c,
				CustomerName: []string{"", "Cliente " + c, "CLIENTE " + c}[r.IntN(3)],
				AmountCents:  1 + r.Int64N(300_000), DueDate: day(r.IntN(240) - 180)}
			if r.IntN(8) == 0 {
				rec.AmountCents = 1 + r.Int64N(5_000_000)
			}
			if r.IntN(8) == 0 {
				rec.Currency = "USD"
			}
			rec.Void = r.IntN(20) == 0
			recs = append(recs, rec)
		}
		o.invoices(recs...)
		for i := range recs {
			if err := recs[i].Validate(); err != nil { // the defaults Validate gives, as stored
				t.Fatal(err)
			}
			invs = append(invs, &modelInvoice{rec: recs[i]})
		}
		// allocate pays up to cents of a payment of pay cents over the invoices, each as far as
		// it is open, as CheckAllocation allows.
		allocate := func(pay int64, targets ...*modelInvoice) {
			var plan []ledger.Planned
			left := pay
			for i, m := range targets {
				open, unsettled := m.open()
				if !unsettled || left == 0 || m.rec.Currency != targets[0].rec.Currency || slices.Contains(targets[:i], m) {
					continue
				}
				n := min(open, left, 1+r.Int64N(open))
				if r.IntN(2) == 0 {
					n = min(open, left)
				}
				plan = append(plan, ledger.Planned{InvoiceID: m.rec.InvoiceID, AmountCents: n})
				m.allocated += n
				left -= n
			}
			o.pay(pay, targets[0].rec.Currency, plan...)
		}
		for _, m := range invs {
			open, unsettled := m.open()
			if !unsettled {
				continue
			}
			switch r.IntN(6) {
			case 0: // one payment, part or all of it, maybe with a credit left
				allocate(open+r.Int64N(2)*r.Int64N(10_000), m)
			case 1: // two payments
				allocate(1+r.Int64N(open), m)
				if _, still := m.open(); still {
					allocate(1+r.Int64N(open), m)
				}
			case 2: // one payment over this invoice and another
				allocate(1+r.Int64N(2*open), m, invs[r.IntN(len(invs))])
			}
		}
		for _, m := range invs {
			if r.IntN(8) == 0 {
				m.writtenOff = 1 + r.Int64N(m.rec.AmountCents)
				o.writeOff(m.rec.InvoiceID, m.rec.CustomerID, m.writtenOff)
			}
		}
		for _, m := range invs {
			if _, unsettled := m.open(); !unsettled {
				continue
			}
			for range r.IntN(3) * r.IntN(2) { // mostly none, up to two: the latest counts
				m.promise = day(r.IntN(120))
				o.promise(m.rec.InvoiceID, 1+r.Int64N(m.rec.AmountCents), m.promise)
			}
			if r.IntN(4) == 0 {
				reason := ledger.DisputeReasons[r.IntN(len(ledger.DisputeReasons))]
				_, err := ledger.OpenDispute(o.ctx, o.tx, m.rec.InvoiceID, reason, "", ledgerClerk, now)
				o.must(err)
				m.dispute = string(reason)
				if r.IntN(3) == 0 {
					o.resolve(m.rec.InvoiceID)
					m.dispute = ""
					if r.IntN(2) == 0 {
						o.dispute(m.rec.InvoiceID)
						m.dispute = string(ledger.DisputeWrongAmount)
					}
				}
			}
		}
		// Re-imports: a new due date or name, or voided, with payments kept.
		var again []ledger.InvoiceRecord
		for _, m := range invs {
			if r.IntN(10) == 0 {
				m.rec.DueDate = day(r.IntN(240) - 180)
				m.rec.CustomerName = "Cliente novo"
				m.rec.Void = m.rec.Void || r.IntN(4) == 0
				again = append(again, m.rec)
			}
		}
		if len(again) > 0 {
			o.invoices(again...)
		}
	})
	return invs, custs, dnc
}

// suppliedPortfolio is what an operator supplies to analyze_portfolio of the model's ledger
// as of asOf, in currency: its unsettled invoices in that currency, each with its open amount,
// by customer id and then invoice id; nil when there is none (analyze_portfolio takes 1 to 500).
func suppliedPortfolio(invs []*modelInvoice, dnc map[string]bool, asOf, currency string) map[string]any {
	var list []map[string]any
	slices.SortFunc(invs, func(a, b *modelInvoice) int {
		return cmp.Or(strings.Compare(a.rec.CustomerID, b.rec.CustomerID), strings.Compare(a.rec.InvoiceID, b.rec.InvoiceID))
	})
	for _, m := range invs {
		open, unsettled := m.open()
		if !unsettled || m.rec.Currency != currency {
			continue
		}
		name := m.rec.CustomerName
		if name == "" {
			name = m.rec.CustomerID
		}
		inv := map[string]any{"id": m.rec.InvoiceID, "customerId": m.rec.CustomerID, "customerName": name, "dueDate": m.rec.DueDate,
			"amountCents": open, "status": "open", "doNotContact": dnc[m.rec.CustomerID]}
		if currency != "BRL" {
			inv["currency"] = currency
		}
		if m.dispute != "" {
			inv["disputed"], inv["disputeReason"] = true, m.dispute
		}
		if m.promise != "" {
			inv["promiseToPayDate"] = m.promise
		}
		list = append(list, inv)
	}
	if list == nil {
		return nil
	}
	args := map[string]any{"asOf": asOf, "invoices": list}
	if currency != "BRL" {
		args["baseCurrency"] = currency
	}
	return args
}

// TestAnalyzeLedgerIsAnalyzePortfolio: over random ledgers stored in SQLite (1 000) and
// PostgreSQL (200), analyze_ledger answers exactly what analyze_portfolio answers for the
// invoices an operator would supply from the same ledger, kept by hand beside it.
func TestAnalyzeLedgerIsAnalyzePortfolio(t *testing.T) {
	for _, f := range storetest.Fixtures(pg) {
		t.Run(string(f.Dialect), func(t *testing.T) {
			t.Parallel()
			n := map[bool]int{false: 1000, true: 100}[testing.Short()]
			if f.Dialect == store.Postgres {
				n /= 5
			}
			e := newEnv(t, f.Serving(t))
			now := e.clock()
			for g := range n {
				r := rand.New(rand.NewPCG(uint64(g), 26))
				invs, custs, dnc := randomLedger(t, e, r, fmt.Sprintf("g%d-", g), now)
				asOf := now.AddDate(0, 0, r.IntN(90)).Format(time.DateOnly)
				currency := []string{"BRL", "BRL", "BRL", "USD"}[r.IntN(4)]
				got := decode[ledgerAnalysis](t, e.call(reader, collections.AnalyzeLedgerName,
					map[string]any{"asOf": asOf, "customerIds": custs, "currency": currency, "maxAccounts": 500}))

				args := suppliedPortfolio(invs, dnc, asOf, currency)
				var want []byte
				if args == nil {
					in := &portfolio.Input{AsOf: asOf}
					if currency != "BRL" {
						in.BaseCurrency = currency
					}
					a := portfolio.Analyze(in)
					want = a.AppendJSON(nil)
				} else {
					res := e.call(reader, collections.AnalyzeName, args)
					if res.Kind != pipeline.Complete {
						t.Fatalf("ledger %d: analyze_portfolio: %v", g, res.Err)
					}
					want = res.Structured
				}
				count := 0
				if args != nil {
					count = len(args["invoices"].([]map[string]any))
				}
				others := 0
				for _, m := range invs {
					if _, unsettled := m.open(); unsettled && m.rec.Currency != currency {
						others++
					}
				}
				if diff := gocmp.Diff(jsonOf(t, want), jsonOf(t, got.Analysis)); diff != "" || got.InvoiceCount != count || got.OtherCurrencyInvoices != others || got.AccountsOmitted != 0 {
					b, _ := json.Marshal(args)
					t.Fatalf("ledger %d (%s, as of %s): invoiceCount %d, otherCurrencyInvoices %d, want %d, %d; analysis (-analyze_portfolio +analyze_ledger):\n%s\nsupplied: %s",
						g, currency, asOf, got.InvoiceCount, got.OtherCurrencyInvoices, count, others, diff, b)
				}
			}
		})
	}
}
