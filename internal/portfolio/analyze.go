package portfolio

import (
	"cmp"
	"slices"
	"strconv"
	"strings"
)

// customer accumulates one customer's invoices during Analyze. It holds
// invoice indexes rather than strings so that slices of it have no pointers:
// cheaper to allocate, to scan and to sort.
type customer struct {
	open    int64 // sum of open invoices, overdue or not
	first   int32 // the customer's first invoice, for its id
	name    int32 // its first open invoice, for the name; -1 if none
	oldest  int32 // its open invoice due earliest before asOf; -1 if none
	days    int32
	end     int32 // end of this customer's reason in the shared buffer
	blocked bool  // some invoice, of any status, says doNotContact
}

// Analyze builds the priority queue of a validated Input (see [Validate]).
// Following the reference implementation:
//
//   - a customer with any doNotContact invoice, of any status, is left out
//     entirely, including from TotalOpenCents;
//   - only open invoices count;
//   - a customer is listed when at least one open invoice is overdue, that
//     is, due strictly before AsOf; AmountCents sums all its open invoices,
//     DaysOverdue counts calendar days from its oldest overdue due date;
//   - the priority is high from HighPriorityDays days or HighPriorityCents
//     cents, and high means human review, medium a reminder;
//   - accounts are sorted by DaysOverdue, then AmountCents, both
//     descending, then CustomerID ascending, so the order is total.
//
// On input that Validate rejects the result is unspecified, but Analyze
// does not panic.
func Analyze(in *Input) Analysis {
	invs := in.Invoices
	// Portfolios average several invoices per customer; the map grows if not.
	index := make(map[string]int32, len(invs)/4+1)
	custs := make([]customer, 0, len(invs)/4+1)
	for i := range invs {
		inv := &invs[i]
		k, ok := index[inv.CustomerID]
		if !ok {
			k = int32(len(custs))
			index[inv.CustomerID] = k
			custs = append(custs, customer{first: int32(i), name: -1, oldest: -1})
		}
		c := &custs[k]
		if inv.DoNotContact {
			c.blocked = true
		}
		if inv.Status != StatusOpen {
			continue
		}
		if c.name < 0 {
			c.name = int32(i)
		}
		c.open += inv.AmountCents
		// Valid dates of one shape compare as strings in date order.
		if inv.DueDate < in.AsOf && (c.oldest < 0 || inv.DueDate < invs[c.oldest].DueDate) {
			c.oldest = int32(i)
		}
	}

	// Compact to the listed customers, summing the total on the way.
	asOf := dayNumber(in.AsOf)
	var total int64
	listed := custs[:0]
	for _, c := range custs {
		if c.blocked {
			continue
		}
		total += c.open
		if c.oldest < 0 {
			continue
		}
		c.days = int32(asOf - dayNumber(invs[c.oldest].DueDate))
		listed = append(listed, c)
	}
	slices.SortFunc(listed, func(a, b customer) int {
		if a.days != b.days {
			return cmp.Compare(b.days, a.days)
		}
		if a.open != b.open {
			return cmp.Compare(b.open, a.open)
		}
		return strings.Compare(invs[a.first].CustomerID, invs[b.first].CustomerID)
	})

	// All reasons share one string, so they cost two allocations in all.
	// A valid reason is under 64 bytes, so the buffer never grows.
	buf := make([]byte, 0, 64*len(listed))
	for i := range listed {
		c := &listed[i]
		buf = strconv.AppendInt(buf, int64(c.days), 10)
		buf = append(buf, " days overdue with "...)
		buf = appendBRL(buf, c.open)
		buf = append(buf, " open"...)
		c.end = int32(len(buf))
	}
	reasons := string(buf)

	accounts := make([]Account, len(listed))
	start := int32(0)
	for i, c := range listed {
		prio, action := PriorityMedium, ActionPrepareReminder
		if c.days >= HighPriorityDays || c.open >= HighPriorityCents {
			prio, action = PriorityHigh, ActionHumanReview
		}
		accounts[i] = Account{
			CustomerID:        invs[c.first].CustomerID,
			CustomerName:      invs[c.name].CustomerName,
			AmountCents:       c.open,
			OldestDueDate:     invs[c.oldest].DueDate,
			DaysOverdue:       int(c.days),
			Priority:          prio,
			RecommendedAction: action,
			Reason:            reasons[start:c.end],
		}
		start = c.end
	}
	return Analysis{TotalOpenCents: total, Accounts: accounts}
}
