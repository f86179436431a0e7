package ledger

import (
	"cmp"
	"context"
	"errors"
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

// Suggest returns the payment id with its allocations and the invoices
// matching would consider for it (the candidates AutoMatch reads: not
// settled, carrying its reference or, at most MaxSuggestions of them in id
// order, of its customer; not already paid by it; of its currency), each
// with its Fit: those carrying the reference first, then the amount fits,
// then the others, each group by due date. more says the customer has more
// candidates than were read. A payment with nothing left has none. It
// locks nothing: the click's Allocate checks again, in its transaction.
func Suggest(ctx context.Context, q store.Querier, paymentID string) (p StoredPayment, out []Suggestion, more bool, err error) {
	p, err = GetPayment(ctx, q, paymentID)
	if errors.Is(err, ErrPaymentNotFound) {
		return StoredPayment{}, nil, false, paymentNotFound(paymentID)
	}
	if err != nil || p.LeftCents <= 0 {
		return p, nil, false, err
	}
	var cands []Candidate
	byID := map[string]*StoredInvoice{}
	// The reference's invoices are few (a reference names an invoice, or a
	// reminder's few): read whole, so a large customer cannot crowd them out.
	for _, read := range []struct {
		refs, custs []string
		limit       int
	}{
		{refs: nonEmpty(p.Reference)},
		{custs: nonEmpty(p.CustomerID), limit: MaxSuggestions + 1},
	} {
		if len(read.refs) == 0 && len(read.custs) == 0 {
			continue
		}
		pool, err := readCandidates(ctx, q, read.refs, read.custs, false, read.limit)
		if err != nil {
			return StoredPayment{}, nil, false, fmt.Errorf("ledger: suggest: %w", err)
		}
		if read.limit > 0 && len(pool.byCust[p.CustomerID]) == read.limit {
			more = true
			pool.byCust[p.CustomerID] = pool.byCust[p.CustomerID][:MaxSuggestions]
		}
		cs, ids := pool.of(&p)
		for _, c := range cs {
			if byID[c.InvoiceID] == nil {
				cands = append(cands, c)
				byID[c.InvoiceID] = ids[c.InvoiceID]
			}
		}
	}
	pay := p.matching()
	rank := map[Rule]int{RuleReference: 0, RuleAmount: 1, RuleNone: 2}
	for _, c := range cands {
		inv := byID[c.InvoiceID]
		amount := min(p.LeftCents, c.OpenCents)
		if CheckAllocation(amount, p.LeftCents, p.Currency, inv.Currency, inv.Standing) != nil {
			continue // another currency: no click could allocate it
		}
		out = append(out, Suggestion{Invoice: *inv, Fit: Fit(pay, c), AmountCents: amount})
	}
	slices.SortFunc(out, func(a, b Suggestion) int {
		return cmp.Or(cmp.Compare(rank[a.Fit], rank[b.Fit]), cmp.Compare(a.Invoice.DueDate, b.Invoice.DueDate),
			cmp.Compare(a.Invoice.InvoiceID, b.Invoice.InvoiceID))
	})
	return p, out, more, nil
}

func nonEmpty(s string) []string {
	if s == "" {
		return nil
	}
	return []string{s}
}
