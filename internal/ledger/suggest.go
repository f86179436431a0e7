package ledger

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	"github.com/cobranca/cobranca/internal/store"
)

// MaxSuggestions bounds the invoices of a customer that Suggest reads: a
// page of a console, whatever the customer's size.
const MaxSuggestions = 50

// Suggestion is an invoice a person may match a payment to in one click:
// the invoice, what Match's rules say of it alone (Fit), and the amount a
// click allocates (what the payment has left, up to the invoice's open
// amount).
type Suggestion struct {
	Invoice     StoredInvoice // its own columns: no dispute or promise read
	Fit         Rule
	AmountCents int64
}

// Offer is what Suggest offers for one payment: its suggestions, and
// whether its customer has more candidates than were read (More).
type Offer struct {
	Suggestions []Suggestion
	More        bool
}

// Suggest returns, for each of the payments (with their allocations, as
// GetPayment and ListUnmatched read them), in order, the invoices matching
// would consider for it (the candidates AutoMatch reads: not settled,
// carrying its reference or, at most MaxSuggestions of them in id order,
// of its customer; not already paid by it; of its currency), each with its
// Fit: those carrying the reference first, then the amount fits, then the
// others, each group by due date. A payment with nothing left has none.
// However many the payments, it reads the store at most three times: the
// invoices carrying their references (read whole: a reference names an
// invoice, or a reminder's few, so a large customer cannot crowd them
// out), the references recorded on those, and a page of each customer's.
// It locks nothing: the click's Allocate checks again, in its transaction.
func Suggest(ctx context.Context, q store.Querier, payments []StoredPayment) ([]Offer, error) {
	var refs, custs []string
	for _, p := range payments {
		if p.LeftCents <= 0 {
			continue
		}
		if p.Reference != "" {
			refs = append(refs, p.Reference)
		}
		if p.CustomerID != "" {
			custs = append(custs, p.CustomerID)
		}
	}
	out := make([]Offer, len(payments))
	if len(refs) == 0 && len(custs) == 0 {
		return out, nil
	}
	var byRef, byCust candidatePool
	var err error
	if len(refs) > 0 {
		if byRef, err = readCandidates(ctx, q, refs, nil, false); err != nil {
			return nil, fmt.Errorf("ledger: suggest: %w", err)
		}
	}
	if len(custs) > 0 {
		if byCust, err = readCustomerPages(ctx, q, custs, MaxSuggestions+1); err != nil {
			return nil, fmt.Errorf("ledger: suggest: %w", err)
		}
	}
	for i := range payments {
		out[i] = suggest(&payments[i], byRef, byCust)
	}
	return out, nil
}

// suggest is Suggest's offer for p, from the invoices carrying the page's
// references (byRef) and a page of each of its customers' (byCust).
func suggest(p *StoredPayment, byRef, byCust candidatePool) (o Offer) {
	if p.LeftCents <= 0 {
		return o
	}
	var cands []Candidate
	invs := map[string]*StoredInvoice{}
	add := func(cs []Candidate, ids map[string]*StoredInvoice) {
		for _, c := range cs {
			if invs[c.InvoiceID] == nil {
				cands = append(cands, c)
				invs[c.InvoiceID] = ids[c.InvoiceID]
			}
		}
	}
	// The reference's own: byRef holds the other payments' references too,
	// and their invoices of p's customer are not p's unless its page has them.
	add(byRef.of(p, byRef.byRef[p.Reference]))
	page := byCust.byCust[p.CustomerID]
	if len(page) > MaxSuggestions {
		o.More, page = true, page[:MaxSuggestions]
	}
	add(byCust.of(p, byCust.byRef[p.Reference], page))
	pay := p.matching()
	rank := map[Rule]int{RuleReference: 0, RuleAmount: 1, RuleNone: 2}
	for _, c := range cands {
		inv := invs[c.InvoiceID]
		amount := min(p.LeftCents, c.OpenCents)
		if CheckAllocation(amount, p.LeftCents, p.Currency, inv.Currency, inv.Standing) != nil {
			continue // another currency: no click could allocate it
		}
		o.Suggestions = append(o.Suggestions, Suggestion{Invoice: *inv, Fit: Fit(pay, c), AmountCents: amount})
	}
	slices.SortFunc(o.Suggestions, func(a, b Suggestion) int {
		return cmp.Or(cmp.Compare(rank[a.Fit], rank[b.Fit]), cmp.Compare(a.Invoice.DueDate, b.Invoice.DueDate),
			cmp.Compare(a.Invoice.InvoiceID, b.Invoice.InvoiceID))
	})
	return o
}
