package portfolio

import (
	"math"
	"strings"
)

// customer accumulates one customer's invoices during Analyze. It holds
// invoice indexes rather than strings so that slices of it have no pointers:
// cheaper to allocate and to scan.
type customer struct {
	open      int64  // sum of open invoices, overdue or not
	oldestKey uint64 // dateKey of the oldest overdue due date; MaxUint64 if none
	first     int32  // the customer's first invoice, for its id
	name      int32  // its first open invoice, for the name; -1 if none
	oldest    int32  // its open invoice due earliest before asOf; -1 if none
	days      int32  // days overdue, once known
	end       int32  // end of this customer's reason in the shared string
	blocked   bool   // some invoice, of any status, says doNotContact
	variants  bool   // some invoice names the customer unlike its first
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
//     descending, then CustomerID ascending, so the order is total;
//   - an account's CustomerName is the name on the customer's first open
//     invoice, even when other invoices name the customer differently;
//     each such customer, unless left out for doNotContact, has a Warning
//     (WarningNameVariants) with its count of distinct names, in order of
//     the customer's first invoice.
//
// On input that Validate rejects the result is unspecified, but Analyze
// does not panic.
func Analyze(in *Input) Analysis {
	invs := in.Invoices
	// Portfolios average several invoices per customer; custs grows if not.
	ids := newStringIndex(len(invs), len(invs)/4+1)
	custs := make([]customer, 0, len(invs)/4+1)
	idOf := func(k int32) string { return invs[custs[k].first].CustomerID }
	asOfKey := dateKey(in.AsOf)
	variants := false
	for i := range invs {
		inv := &invs[i]
		k, added := ids.number(inv.CustomerID, idOf)
		if added {
			custs = append(custs, customer{oldestKey: math.MaxUint64, first: int32(i), name: -1, oldest: -1})
		}
		c := &custs[k]
		if !added && inv.CustomerName != invs[c.first].CustomerName {
			c.variants, variants = true, true
		}
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
		if due := dateKey(inv.DueDate); due < asOfKey && due < c.oldestKey {
			c.oldest, c.oldestKey = int32(i), due
		}
	}

	// Count the customers with overdue invoices, summing the total on the
	// way, and size their reasons.
	asOf := dayNumber(in.AsOf)
	var total int64
	n, size := 0, 0
	minDays, maxDays := int32(math.MaxInt32), int32(math.MinInt32)
	for k := range custs {
		c := &custs[k]
		if c.blocked {
			continue
		}
		total += c.open
		if c.oldest < 0 {
			continue
		}
		c.days = int32(asOf - dayNumber(invs[c.oldest].DueDate))
		minDays, maxDays = min(minDays, c.days), max(maxDays, c.days)
		size += reasonLen(c.days, c.open)
		n++
	}
	q := queue{invs: invs, custs: custs}
	listed := q.order(n, minDays, maxDays)

	// All reasons share one string, so they cost one allocation in all.
	var sb strings.Builder
	sb.Grow(size)
	for _, k := range listed {
		c := &custs[k]
		var tmp [64]byte
		b := appendInt(tmp[:0], int64(c.days))
		b = append(b, " days overdue with "...)
		b = appendBRL(b, c.open)
		b = append(b, " open"...)
		sb.Write(b)
		c.end = int32(sb.Len())
	}
	reasons := sb.String()

	accounts := make([]Account, len(listed))
	start := int32(0)
	for i, k := range listed {
		c := &custs[k]
		a := &accounts[i]
		// Field by field: the compiler stores each directly, where a
		// composite literal is built aside and copied with write barriers.
		a.CustomerID = invs[c.first].CustomerID
		a.CustomerName = invs[c.name].CustomerName
		a.AmountCents = c.open
		a.OldestDueDate = invs[c.oldest].DueDate
		a.DaysOverdue = int(c.days)
		if c.days >= HighPriorityDays || c.open >= HighPriorityCents {
			a.Priority, a.RecommendedAction = PriorityHigh, ActionHumanReview
		} else {
			a.Priority, a.RecommendedAction = PriorityMedium, ActionPrepareReminder
		}
		a.Reason = reasons[start:c.end]
		start = c.end
	}
	warnings := []Warning{} // no allocation when empty
	if variants {
		warnings = nameVariants(invs, custs, &ids, idOf)
	}
	return Analysis{TotalOpenCents: total, Accounts: accounts, Warnings: warnings}
}

// nameVariants counts the distinct names of each customer that has more
// than one and is not blocked, and returns their warnings in customer
// order. Rare, so a map will do.
func nameVariants(invs []Invoice, custs []customer, ids *stringIndex, idOf func(int32) string) []Warning {
	type key struct {
		k    int32
		name string
	}
	seen := map[key]bool{}
	counts := make([]int, len(custs))
	for i := range invs {
		k, _ := ids.number(invs[i].CustomerID, idOf)
		if c := &custs[k]; c.variants && !c.blocked && !seen[key{k, invs[i].CustomerName}] {
			seen[key{k, invs[i].CustomerName}] = true
			counts[k]++
		}
	}
	var warnings []Warning
	for k, n := range counts {
		if n > 1 {
			warnings = append(warnings, Warning{Code: WarningNameVariants, CustomerID: invs[custs[k].first].CustomerID, NameCount: n})
		}
	}
	if warnings == nil {
		warnings = []Warning{} // every customer with variants was blocked
	}
	return warnings
}

// reasonLen is the length of the reason of an account.
func reasonLen(days int32, cents int64) int {
	d := int64(days)
	return b2i(d < 0) + decimalLen(uint64(max(d, -d))) + len(" days overdue with ") + brlLen(cents) + len(" open")
}

// queue knows the order of the accounts.
type queue struct {
	invs  []Invoice
	custs []customer
}

// listed reports whether customer k has an account.
func (q *queue) listed(k int) bool {
	c := &q.custs[k]
	return !c.blocked && c.oldest >= 0
}

// order returns the n listed customers, whose days are from lo to hi, in
// the queue's order. Days overdue span few values, as a rule: then it
// places customers by days with a counting sort and sorts only the runs of
// equal days; else it sorts them all.
func (q *queue) order(n int, lo, hi int32) []int32 {
	span := 0
	if n > 0 {
		span = int(int64(hi) - int64(lo) + 1)
	}
	if span > 2*n+16 {
		listed := make([]int32, 0, 2*n) // and scratch space for sort
		for k := range q.custs {
			if q.listed(k) {
				listed = append(listed, int32(k))
			}
		}
		q.sort(listed, listed[n:2*n])
		return listed
	}
	buf := make([]int32, 2*n+span)
	listed, tmp, counts := buf[:n], buf[n:2*n], buf[2*n:]
	for k := range q.custs {
		if q.listed(k) {
			counts[hi-q.custs[k].days]++
		}
	}
	at := int32(0)
	for i, c := range counts {
		counts[i] = at
		at += c
	}
	for k := range q.custs {
		if q.listed(k) {
			i := hi - q.custs[k].days
			listed[counts[i]] = int32(k)
			counts[i]++
		}
	}
	for i := 0; i < n; {
		j := i + 1
		for j < n && q.custs[listed[j]].days == q.custs[listed[i]].days {
			j++
		}
		if j-i > 1 {
			q.sort(listed[i:j], tmp[:j-i])
		}
		i = j
	}
	return listed
}

// before reports whether customer a comes before customer b in the queue:
// more days overdue first, then the larger amount, then the customer id in
// byte order.
func (q *queue) before(a, b int32) bool {
	ca, cb := &q.custs[a], &q.custs[b]
	if ca.days != cb.days {
		return ca.days > cb.days
	}
	if ca.open != cb.open {
		return ca.open > cb.open
	}
	return q.invs[ca.first].CustomerID < q.invs[cb.first].CustomerID
}

// sort sorts the customers r into the queue's order, using tmp, as long,
// for scratch: a merge sort, which makes about as few comparisons as a sort
// can and calls before directly, where slices.SortFunc calls a func value.
func (q *queue) sort(r, tmp []int32) {
	if len(r) <= 12 {
		for i := 1; i < len(r); i++ {
			for j := i; j > 0 && q.before(r[j], r[j-1]); j-- {
				r[j], r[j-1] = r[j-1], r[j]
			}
		}
		return
	}
	m := len(r) / 2
	q.sort(r[:m], tmp[:m])
	q.sort(r[m:], tmp[m:])
	if !q.before(r[m], r[m-1]) {
		return // already in order
	}
	copy(tmp, r)
	i, j, k := 0, m, 0
	for ; i < m && j < len(r); k++ {
		if q.before(tmp[j], tmp[i]) {
			r[k] = tmp[j]
			j++
		} else {
			r[k] = tmp[i]
			i++
		}
	}
	k += copy(r[k:], tmp[i:m])
	copy(r[k:], tmp[j:])
}
