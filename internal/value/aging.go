package value

// The aging rule: how long past due an open amount is, in five buckets. The portfolio
// analysis and the ledger's charts both bucket by it, so that the console's chart and
// analyze_portfolio's summary never disagree on where an invoice falls.

// AgingBucketNames name the aging buckets, in order: not yet due, then days past due.
var AgingBucketNames = [...]string{"current", "1-30", "31-60", "61-90", "90+"}

// AgingBucketStarts are the first days past due of the buckets after current, in order: a due
// date d days before the as-of date is past due by d days.
var AgingBucketStarts = [...]int{1, 31, 61, 91}

// AgingBucket returns the index in AgingBucketNames of the bucket of an amount daysPastDue
// days past due (0 or less: current).
func AgingBucket(daysPastDue int) int {
	b := 0
	for _, start := range AgingBucketStarts {
		if daysPastDue >= start {
			b++
		}
	}
	return b
}
