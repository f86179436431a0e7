package limits

import "time"

// Decision is the answer to one request against one limit.
type Decision struct {
	Allowed bool
	// Remaining is how many more requests would be admitted right now.
	Remaining int64
	// RetryAfter is, for a refusal, how long until one request would be
	// admitted (at least 1µs); zero when allowed.
	RetryAfter time.Duration
	// Reset is how long until the key is back to a full burst.
	Reset time.Duration
}

// Cost is what one decision spends: N units of the budget (zero: one), as
// part of a call whose whole cost is Whole units (zero: N). A call whose size
// is known only once its arguments are read spends its first unit before, and
// the rest (N = Whole − 1) after: the rest is admitted as the whole would
// have been. A whole cost above the burst is admitted only while the bucket
// holds its full burst, and runs the key into debt: its TAT moves the whole
// cost ahead, so later calls wait until it is paid back. A call is never
// refused for good, and what it spends stays in proportion to its cost.
type Cost struct {
	N, Whole int64
}

func (c Cost) units() (n, whole int64) {
	n = max(c.N, 1)
	return n, max(c.Whole, n)
}

// Span is the GCRA parameters of a decision that spends c under l, in
// microseconds, as every backend applies them: the interval n×T the TAT
// moves by, and the tolerance max(Burst, whole)×T the TAT may run ahead of
// now afterwards. With the cost of one unit they are T and Burst×T.
func (l Limit) Span(c Cost) (intervalUS, toleranceUS int64) {
	n, whole := c.units()
	t := l.intervalUS()
	return n * t, max(l.Burst, whole) * t
}

// GCRA decides one request spending c against lim for a key whose
// theoretical arrival time is tat (the zero time for a key never seen), at
// now. It returns the decision and the key's new TAT: advanced by the cost's
// interval when allowed, unchanged when refused, so refusals never push the
// key further out.
//
// Times are counted in whole microseconds, exactly as the stores keep them.
// With (t, τ) = lim.Span(c) — T and Burst×T for one unit — the request is
// admitted when max(tat, now) + t − now ≤ τ.
func GCRA(lim Limit, c Cost, tat, now time.Time) (Decision, time.Time) {
	if lim.Off() {
		return Decision{Allowed: true}, tat
	}
	t, tau := lim.Span(c)
	nowUS := now.UnixMicro()
	tatUS := nowUS
	if !tat.IsZero() {
		tatUS = max(tat.UnixMicro(), nowUS)
	}
	if next := tatUS + t; next-nowUS <= tau {
		return decided(lim, c, true, nowUS, next), time.UnixMicro(next)
	}
	return decided(lim, c, false, nowUS, tatUS), tat
}

// decided computes the answer from what a backend knows after its atomic
// step: whether the request spending c was admitted, the clock it used, and
// the key's TAT afterwards (the new one when admitted, the unchanged one when
// refused). Every backend goes through here, so the arithmetic has one home.
// Remaining and Reset speak of plain calls (one unit each); RetryAfter of
// this cost.
func decided(lim Limit, c Cost, allowed bool, nowUS, tatUS int64) Decision {
	t, tau := lim.intervalUS(), lim.toleranceUS()
	ahead := max(tatUS-nowUS, 0) // how far the key's TAT runs ahead of now
	d := Decision{Allowed: allowed, Reset: time.Duration(ahead) * time.Microsecond}
	if allowed {
		d.Remaining = max((tau-ahead)/t, 0)
		return d
	}
	// Admitted again once max(tat, now') + t − now' ≤ τ, i.e. at now' = tat + t − τ
	// (with the cost's span). A backend that read a stale TAT may find that
	// moment past: the caller is still told to wait a moment rather than "now".
	ct, ctau := lim.Span(c)
	d.RetryAfter = time.Duration(max(ahead+ct-ctau, 1)) * time.Microsecond
	return d
}

// RetryAfterSeconds is the Retry-After header value for d: whole seconds,
// rounded up, at least 1.
func (d Decision) RetryAfterSeconds() int64 { return ceilUnit(d.RetryAfter, time.Second) }

// RetryAfterMillis is the retryAfterMs of a rate_limited tool error: whole
// milliseconds, rounded up, at least 1.
func (d Decision) RetryAfterMillis() int64 { return ceilUnit(d.RetryAfter, time.Millisecond) }

func ceilUnit(d, unit time.Duration) int64 {
	return max(int64((d+unit-1)/unit), 1)
}

// Decided is the decision a backend reports after its atomic step, given
// the cost the request spent, whether it admitted it, the clock it used, and the key's TAT
// afterwards (the new one when admitted, the unchanged one when refused; the
// zero time when a refused key's TAT could not be read). Every backend
// answers through here, so the arithmetic has one home.
func Decided(lim Limit, c Cost, allowed bool, now, tat time.Time) Decision {
	nowUS := now.UnixMicro()
	tatUS := nowUS + lim.toleranceUS() // unknown: assume a full backlog
	if !tat.IsZero() {
		tatUS = tat.UnixMicro()
	}
	return decided(lim, c, allowed, nowUS, tatUS)
}
