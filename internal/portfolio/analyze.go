package portfolio

import (
	"math"
	"slices"
	"strings"
	"time"

	"github.com/cobranca/cobranca/internal/value"
)

// customer accumulates one customer's invoices during Analyze. It holds
// invoice indexes rather than strings so that slices of it have no pointers:
// cheaper to allocate and to scan.
type customer struct {
	queue     int64  // sum of its queue invoices: open and not disputed, converted
	oldestKey uint64 // dateKey of the oldest overdue queue invoice; MaxUint64 if none
	broken    uint64 // dateKey of the latest broken promise to pay; 0 if none
	first     int32  // the customer's first invoice, for its id
	name      int32  // its first open invoice, for the name; -1 if none
	oldest    int32  // its queue invoice due earliest before asOf; -1 if none
	days      int32  // days overdue, once known
	end       int32  // end of this customer's reason in the shared string
	pos       int32  // its account's index, once listed
	// Invoice counts, at most MaxInvoices on valid input (on other input
	// they may wrap, which changes only counts).
	count    int16 // queue invoices
	all      int16 // invoices of any status
	paid     int16 // paid invoices
	void     int16 // void invoices
	disputed int16 // open disputed invoices
	promised int16 // open queue invoices under a pending promise to pay: the account is paused
	blocked  bool  // some invoice, of any status, says doNotContact
	variants bool  // some invoice names the customer unlike its first
	// contested: some open disputed invoice is overdue.
	contested bool
	listed    bool // it has an account
}

// Analyze is [AnalyzeWith] with no Options: no contact pacing.
func Analyze(in *Input) Analysis {
	return AnalyzeWith(in, Options{})
}

// AnalyzeWith builds the priority queue of a validated Input (see
// [Validate]). Following the reference implementation:
//
//   - a customer with any doNotContact invoice, of any status, is left out
//     entirely, including from TotalOpenCents and the summary's aging;
//   - only open invoices count; TotalOpenCents sums those of every other
//     customer, each converted to the base currency;
//   - a customer's queue invoices are its open invoices that are not
//     disputed; a customer is listed when one of them is overdue, that is,
//     due strictly before AsOf, unless one of them has a promise to pay on
//     or after AsOf (the account is paused); AmountCents and InvoiceCount
//     are those of its queue invoices, DaysOverdue counts calendar days
//     from the oldest overdue one's due date;
//   - the priority is high from HighPriorityDays days or HighPriorityCents
//     (in the base currency's minor unit), or after a broken promise to pay
//     (a promised date before AsOf on a queue invoice), and high means
//     human review, medium a reminder; PriorityFactors say which;
//   - accounts are sorted by DaysOverdue, then AmountCents, both
//     descending, then CustomerID ascending, so the order is total;
//   - an account's CustomerName is the name on the customer's first open
//     invoice, even when other invoices name the customer differently;
//     each such customer, unless left out for doNotContact, has a Warning
//     (WarningNameVariants) with its count of distinct names, in order of
//     the customer's first invoice;
//   - the reason is the reference's ("N days overdue with R$ 1.234,56
//     open", in the base currency), then for each foreign currency of the
//     account, in code order, "; US$ 1.000,00 at 5,17 (2026-11-28)", then
//     "; broken promise to pay of YYYY-MM-DD" with the latest such date;
//   - with o.ContactPacing, an account whose customer was last contacted
//     less than that before AsOf (its start, in UTC) has NextContactAfter;
//   - Summary.LeftOut counts each invoice and customer not shown under the
//     first reason that applies: invoices doNotContact (any status, of a
//     blocked customer), paid, void, disputed (open), promisePending (open
//     queue invoices promised on or after AsOf); customers doNotContact,
//     promisePending (paused but otherwise listed), disputed (listed were
//     its disputed invoices not), paid (nothing open, something paid), void
//     (nothing open or paid, something void).
//
// On input that Validate rejects the result is unspecified, but AnalyzeWith
// does not panic.
func AnalyzeWith(in *Input, o Options) Analysis {
	invs := in.Invoices
	// What is scratch comes from the pool; what the result holds is
	// allocated below. kOf is each invoice's customer.
	m := getScratch()
	defer m.free()
	ids, kOf := m.index(len(invs), len(invs))
	custs := grow(&m.custs, len(invs))[:0]
	idOf := func(k int32) string { return invs[custs[k].first].CustomerID }
	asOfKey := dateKey(in.AsOf)
	asOf := dayNumber(in.AsOf)
	// The aging buckets begin at these due dates (value.AgingBucketStarts
	// days past due): keys[0] is asOf's, and a due date from it on is current.
	var keys [4]uint64
	for i, start := range value.AgingBucketStarts {
		keys[i] = dayKey(asOf - (start - 1))
	}
	var aging [5]AgingBucket
	x := newMoney(in)
	variants := false
	for i := range invs {
		inv := &invs[i]
		k, added := ids.number(inv.CustomerID, idOf)
		if added {
			custs = custs[:len(custs)+1] // room for every invoice's customer
			custs[k] = customer{oldestKey: math.MaxUint64, first: int32(i), name: -1, oldest: -1}
		}
		kOf[i] = k
		c := &custs[k]
		if !added && inv.CustomerName != invs[c.first].CustomerName {
			c.variants, variants = true, true
		}
		if inv.DoNotContact {
			c.blocked = true
		}
		c.all++
		if inv.Status != StatusOpen {
			c.paid += int16(b2i(inv.Status == StatusPaid))
			c.void += int16(b2i(inv.Status == StatusVoid))
			continue
		}
		if c.name < 0 {
			c.name = int32(i)
		}
		cents := inv.AmountCents
		if x.converts {
			cents = x.cents[i]
		}
		due := dateKey(inv.DueDate)
		b := &aging[bucketOfKey(due, &keys)]
		b.AmountCents += cents
		b.InvoiceCount++
		if x := inv.InvoiceDetails; x != nil {
			if x.Disputed {
				c.disputed++
				c.contested = c.contested || due < asOfKey
				continue
			}
			if x.PromiseToPayDate != "" {
				if p := dateKey(x.PromiseToPayDate); p >= asOfKey {
					c.promised++
				} else {
					c.broken = max(c.broken, p)
				}
			}
		}
		c.queue += cents
		c.count++
		if due < asOfKey && due < c.oldestKey {
			c.oldest, c.oldestKey = int32(i), due
		}
	}

	// Count the customers with accounts, summing the total and counting
	// what is left out on the way, and size their reasons.
	var left LeftOut
	n, size, broken, blocked := 0, 0, 0, false
	minDays, maxDays := int32(math.MaxInt32), int32(math.MinInt32)
	for k := range custs {
		c := &custs[k]
		if c.blocked {
			left.DoNotContact.Customers++
			left.DoNotContact.Invoices += int(c.all)
			blocked = true
			continue
		}
		left.Paid.Invoices += int(c.paid)
		left.Void.Invoices += int(c.void)
		left.Disputed.Invoices += int(c.disputed)
		left.PromisePending.Invoices += int(c.promised)
		switch open := c.all - c.paid - c.void; {
		case c.oldest >= 0 && c.promised > 0:
			left.PromisePending.Customers++
		case c.oldest >= 0:
			c.listed = true
		case c.contested && c.promised == 0:
			left.Disputed.Customers++
		case open > 0:
		case c.paid > 0:
			left.Paid.Customers++
		case c.void > 0:
			left.Void.Customers++
		}
		if !c.listed {
			continue
		}
		c.days = int32(asOf - dayNumberOfKey(c.oldestKey)) // the key spares reading the string again
		minDays, maxDays = min(minDays, c.days), max(maxDays, c.days)
		size += reasonLen(c.days, c.queue, x.base)
		if c.broken != 0 {
			size += len(brokenSuffix) + len("2006-01-02")
			broken++
		}
		n++
	}
	if blocked {
		// Their open invoices were counted in the aging: take them out.
		for i := range invs {
			if inv := &invs[i]; custs[kOf[i]].blocked && inv.Status == StatusOpen {
				b := &aging[bucketOfKey(dateKey(inv.DueDate), &keys)]
				b.AmountCents -= x.amount(invs, i)
				b.InvoiceCount--
			}
		}
	}
	q := queue{invs: invs, custs: custs}
	listed := q.order(n, minDays, maxDays, &m.buf)
	for i, k := range listed {
		custs[k].pos = int32(i)
	}
	accounts := make([]Account, len(listed))
	var details accountDetails
	if x.converts {
		n := x.conversions(invs, custs, kOf, accounts, &details)
		size += n * conversionLen
	}

	// All reasons share one string, so they cost one allocation in all.
	var sb strings.Builder
	sb.Grow(size)
	for i, k := range listed {
		c := &custs[k]
		var tmp [128]byte // room for any one part of a reason
		b := appendInt(tmp[:0], int64(c.days))
		b = append(b, " days overdue with "...)
		b = x.base.AppendAmount(b, c.queue)
		b = append(b, " open"...)
		sb.Write(b)
		if x.converts { // else the accounts are not touched before they are filled
			if d := accounts[i].AccountDetails; d != nil {
				for j := range d.Conversions {
					sb.Write(appendConversion(tmp[:0], &d.Conversions[j]))
				}
			}
		}
		if c.broken != 0 {
			b = append(tmp[:0], brokenSuffix...)
			sb.Write(appendDateKey(b, c.broken))
		}
		c.end = int32(sb.Len())
	}
	reasons := sb.String()

	// The factors of all accounts share one array too, of the factors met.
	met := broken
	for _, k := range listed {
		met += b2i(custs[k].days >= HighPriorityDays) + b2i(custs[k].queue >= HighPriorityCents)
	}
	factors := make([]Factor, met)
	var by ByPriority
	start := int32(0)
	for i, k := range listed {
		c := &custs[k]
		a := &accounts[i]
		// Field by field: the compiler stores each directly, where a
		// composite literal is built aside and copied with write barriers.
		a.CustomerID = invs[c.first].CustomerID
		a.CustomerName = invs[c.name].CustomerName
		a.AmountCents = c.queue
		a.OldestDueDate = invs[c.oldest].DueDate
		a.DaysOverdue = int(c.days)
		days, amount := c.days >= HighPriorityDays, c.queue >= HighPriorityCents
		// The factors that are met, field by field into the array make
		// zeroed.
		n := b2i(days) + b2i(amount) + b2i(c.broken != 0)
		fs := factors[:n:n]
		factors = factors[n:]
		j := 0
		if days {
			fs[j].Factor, fs[j].Value = FactorDaysOverdue, int64(c.days)
			j++
		}
		if amount {
			fs[j].Factor, fs[j].Value = FactorOpenAmount, c.queue
			j++
		}
		if c.broken != 0 {
			fs[j].Factor, fs[j].Value = FactorBrokenPromise, int64(asOf-dayNumberOfKey(c.broken))
		}
		a.PriorityFactors = fs
		if days || amount || c.broken != 0 {
			a.Priority, a.RecommendedAction = PriorityHigh, ActionHumanReview
			by.High++
		} else {
			a.Priority, a.RecommendedAction = PriorityMedium, ActionPrepareReminder
			by.Medium++
		}
		a.Reason = reasons[start:c.end]
		start = c.end
		a.AgingBucket = bucketOfDays(int(c.days))
		a.InvoiceCount = int32(c.count)
	}
	if o.ContactPacing > 0 && len(in.Customers) > 0 {
		pace(in, o.ContactPacing, custs, &ids, idOf, accounts, &details)
	}
	warnings := []Warning{} // no allocation when empty
	if variants {
		warnings = nameVariants(invs, custs, kOf)
	}
	// The aging holds every open invoice of the customers not blocked,
	// once: its sum is the total.
	var total int64
	for _, b := range aging {
		total += b.AmountCents
	}
	summary := Summary{BaseCurrency: x.base.Code(), AccountsByPriority: by, PriorityThresholds: Thresholds{HighPriorityDays, HighPriorityCents},
		Aging: make([]AgingBucket, len(aging)), LeftOut: left, Rates: x.used(custs, kOf)}
	for i := range aging {
		summary.Aging[i] = AgingBucket{Bucket: BucketCurrent + Bucket(i), AmountCents: aging[i].AmountCents, InvoiceCount: aging[i].InvoiceCount}
	}
	return Analysis{TotalOpenCents: total, Accounts: accounts, Warnings: warnings, Summary: summary}
}

// brokenSuffix comes before the date of the latest broken promise in a
// reason.
const brokenSuffix = "; broken promise to pay of "

// conversionLen is at least the length of a conversion in a reason (see
// appendConversion): "; ", an amount, " at ", a rate, " (", a date, ")".
const conversionLen = len("; ") + 8 + 27 + len(" at ") + 27 + len(" (2006-01-02)")

// bucketOfKey returns the aging bucket, as an index, of a due date's key:
// keys holds, in decreasing order, the keys of the first days past due of
// the buckets after current, and the bucket is how many of them come after
// due (value.AgingBucket's rule, on keys; TestBucketOfKeyIsTheRule holds
// them together).
// Without branches: due dates are in no order, so branches would be
// mispredicted about as often as not.
func bucketOfKey(due uint64, keys *[4]uint64) int {
	return b2i(due < keys[0]) + b2i(due < keys[1]) + b2i(due < keys[2]) + b2i(due < keys[3])
}

// bucketOfDays returns the aging bucket of a number of days past due: the
// one rule, value.AgingBucket.
func bucketOfDays(days int) Bucket {
	return BucketCurrent + Bucket(value.AgingBucket(days))
}

// appendDateKey appends the date of a dateKey in YYYY-MM-DD form.
func appendDateKey(b []byte, k uint64) []byte {
	return append(b, byte(k>>56), byte(k>>48), byte(k>>40), byte(k>>32), '-', byte(k>>24), byte(k>>16), '-', byte(k>>8), byte(k))
}

// pace sets NextContactAfter on the accounts of the customers entries
// whose last contact plus pacing is after the start of AsOf, in UTC.
func pace(in *Input, pacing time.Duration, custs []customer, ids *stringIndex, idOf func(int32) string, accounts []Account, details *accountDetails) {
	y, m, d := civil(in.AsOf)
	start := time.Date(y, time.Month(m), d, 0, 0, 0, 0, time.UTC)
	for i := range in.Customers {
		ct := &in.Customers[i]
		k := ids.find(ct.CustomerID, idOf)
		if k < 0 || !custs[k].listed {
			continue // no such customer, or no account
		}
		last, code, _ := contactTime(ct.LastContactedAt)
		if code != "" {
			continue // only on input Validate refuses
		}
		if next := last.Add(pacing); next.After(start) {
			details.of(accounts, int(custs[k].pos)).NextContactAfter = next.UTC().Format(time.RFC3339)
		}
	}
}

// money knows the base currency and, when some invoice is in another one,
// every invoice's amount converted to it.
type money struct {
	base     *value.Currency
	converts bool           // some invoice is in a currency other than the base one
	cents    []int64        // when converts: each invoice's amount in the base currency
	rate     []int32        // when converts: each invoice's rate, or -1 for the base currency
	rates    []ExchangeRate // the input's
}

func newMoney(in *Input) money {
	x := money{base: brl, rates: in.Rates}
	if in.BaseCurrency != "" {
		if x.base = value.CurrencyOf(in.BaseCurrency); x.base == nil {
			x.base = brl // only on input Validate refuses
		}
	}
	if len(in.Rates) == 0 {
		return x // valid input has no invoice to convert then
	}
	for i := range in.Invoices {
		if codeOrBase(in.Invoices[i].details().Currency) != x.base.Code() {
			x.converts = true
			break
		}
	}
	if !x.converts {
		return x
	}
	x.cents = make([]int64, len(in.Invoices))
	x.rate = make([]int32, len(in.Invoices))
	idx := newRateIndex(in.Rates)
	for i := range in.Invoices {
		inv := &in.Invoices[i]
		x.cents[i], x.rate[i] = inv.AmountCents, -1
		code := codeOrBase(inv.details().Currency)
		if code == x.base.Code() {
			continue
		}
		r, c := idx.find(code), value.CurrencyOf(code)
		if r < 0 || c == nil {
			continue // only on input Validate refuses
		}
		x.rate[i] = int32(r)
		x.cents[i], _ = convert(inv.AmountCents, c.Exp(), in.Rates[r].Rate, x.base.Exp())
	}
	return x
}

// amount is invoice i's amount in the base currency.
func (x *money) amount(invs []Invoice, i int) int64 {
	if x.converts {
		return x.cents[i]
	}
	return invs[i].AmountCents
}

// conversions sets each account's Conversions, from one array for all:
// what its queue invoices in each foreign currency sum to, in code order.
// It returns how many there are in all.
func (x *money) conversions(invs []Invoice, custs []customer, kOf []int32, accounts []Account, details *accountDetails) int {
	type part struct {
		pos, rate int32
		i         int32
	}
	var parts []part
	for i := range invs {
		inv := &invs[i]
		if c := &custs[kOf[i]]; c.listed && x.rate[i] >= 0 && inv.Status == StatusOpen && !inv.details().Disputed {
			parts = append(parts, part{pos: c.pos, rate: x.rate[i], i: int32(i)})
		}
	}
	slices.SortFunc(parts, func(a, b part) int {
		if a.pos != b.pos {
			return int(a.pos - b.pos)
		}
		return strings.Compare(x.rates[a.rate].Currency, x.rates[b.rate].Currency)
	})
	// One Conversion per run of equal pos and rate; size the array first,
	// so that the accounts' slices of it stay valid.
	n := 0
	for j := range parts {
		if j == 0 || parts[j].pos != parts[j-1].pos || parts[j].rate != parts[j-1].rate {
			n++
		}
	}
	all := make([]Conversion, 0, n)
	from := 0 // the first conversion of the account being filled
	for j := 0; j < len(parts); {
		p := parts[j]
		r := &x.rates[p.rate]
		cv := Conversion{Currency: r.Currency, Rate: r.Rate, RateDate: r.Date}
		for ; j < len(parts) && parts[j].pos == p.pos && parts[j].rate == p.rate; j++ {
			cv.AmountCents += invs[parts[j].i].AmountCents
			cv.ConvertedCents += x.cents[parts[j].i]
		}
		all = append(all, cv)
		if j == len(parts) || parts[j].pos != p.pos {
			details.of(accounts, int(p.pos)).Conversions = all[from:len(all):len(all)]
			from = len(all)
		}
	}
	return len(all)
}

// accountDetails gives accounts their AccountDetails, all from one array
// made when the first is needed.
type accountDetails []AccountDetails

// of returns the details of accounts[i], giving it some first if it has
// none.
func (d *accountDetails) of(accounts []Account, i int) *AccountDetails {
	if accounts[i].AccountDetails == nil {
		if *d == nil {
			*d = make([]AccountDetails, 0, len(accounts))
		}
		*d = append(*d, AccountDetails{})
		accounts[i].AccountDetails = &(*d)[len(*d)-1]
	}
	return accounts[i].AccountDetails
}

// appendConversion appends what a reason says of a conversion.
func appendConversion(b []byte, cv *Conversion) []byte {
	b = append(b, "; "...)
	b = value.CurrencyOf(cv.Currency).AppendAmount(b, cv.AmountCents)
	b = append(b, " at "...)
	b = appendDecimal(b, cv.Rate, ',', true)
	b = append(b, " ("...)
	b = append(b, cv.RateDate...)
	return append(b, ')')
}

// used returns the rates some invoice of a customer not left out for
// doNotContact is converted at, in order of currency code; never nil.
func (x *money) used(custs []customer, kOf []int32) []ExchangeRate {
	if !x.converts {
		return []ExchangeRate{}
	}
	seen := make([]bool, len(x.rates))
	out := []ExchangeRate{}
	for i, r := range x.rate {
		if r >= 0 && !seen[r] && !custs[kOf[i]].blocked {
			seen[r] = true
			out = append(out, x.rates[r])
		}
	}
	slices.SortFunc(out, func(a, b ExchangeRate) int { return strings.Compare(a.Currency, b.Currency) })
	return out
}

// nameVariants counts the distinct names of each customer that has more
// than one and is not blocked, and returns their warnings in customer
// order. Rare, so a map will do.
func nameVariants(invs []Invoice, custs []customer, kOf []int32) []Warning {
	type key struct {
		k    int32
		name string
	}
	seen := map[key]bool{}
	counts := make([]int, len(custs))
	for i := range invs {
		k := kOf[i]
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

// reasonLen is the length of the reason of an account, suffixes aside.
func reasonLen(days int32, cents int64, c *value.Currency) int {
	d := int64(days)
	return b2i(d < 0) + value.DigitsLen(uint64(max(d, -d))) + len(" days overdue with ") + c.AmountLen(cents) + len(" open")
}

// queue knows the order of the accounts.
type queue struct {
	invs  []Invoice
	custs []customer
}

// listed reports whether customer k has an account.
func (q *queue) listed(k int) bool {
	return q.custs[k].listed
}

// order returns the n listed customers, whose days are from lo to hi, in
// the queue's order, in *buf, which it grows as needed. Days overdue span
// few values, as a rule: then it places customers by days with a counting
// sort and sorts only the runs of equal days; else it sorts them all.
func (q *queue) order(n int, lo, hi int32, buf *[]int32) []int32 {
	span := 0
	if n > 0 {
		span = int(int64(hi) - int64(lo) + 1)
	}
	if span > 2*n+16 {
		listed := grow(buf, 2*n)[:0] // and scratch space for sort
		for k := range q.custs {
			if q.listed(k) {
				listed = append(listed, int32(k))
			}
		}
		q.sort(listed, listed[n:2*n])
		return listed
	}
	b := grow(buf, 2*n+span)
	listed, tmp, counts := b[:n], b[n:2*n], b[2*n:]
	clear(counts)
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
	if ca.queue != cb.queue {
		return ca.queue > cb.queue
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
