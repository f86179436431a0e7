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

// GCRA decides one request against lim for a key whose theoretical arrival
// time is tat (the zero time for a key never seen), at now. It returns the
// decision and the key's new TAT: advanced by one interval when allowed,
// unchanged when refused, so refusals never push the key further out.
//
// Times are counted in whole microseconds, exactly as the stores keep them.
// With T = lim.Interval() and τ = lim.Burst×T: the request is admitted when
// max(tat, now) + T − now ≤ τ.
func GCRA(lim Limit, tat, now time.Time) (Decision, time.Time) {
	if lim.Off() {
		return Decision{Allowed: true}, tat
	}
	nowUS := now.UnixMicro()
	tatUS := nowUS
	if !tat.IsZero() {
		tatUS = max(tat.UnixMicro(), nowUS)
	}
	if next := tatUS + lim.intervalUS(); next-nowUS <= lim.toleranceUS() {
		return decided(lim, true, nowUS, next), time.UnixMicro(next)
	}
	return decided(lim, false, nowUS, tatUS), tat
}

// decided computes the answer from what a backend knows after its atomic
// step: whether the request was admitted, the clock it used, and the key's
// TAT afterwards (the new one when admitted, the unchanged one when refused).
// Every backend goes through here, so the arithmetic has one home.
func decided(lim Limit, allowed bool, nowUS, tatUS int64) Decision {
	t, tau := lim.intervalUS(), lim.toleranceUS()
	ahead := max(tatUS-nowUS, 0) // how far the key's TAT runs ahead of now
	d := Decision{Allowed: allowed, Reset: time.Duration(ahead) * time.Microsecond}
	if allowed {
		d.Remaining = max((tau-ahead)/t, 0)
		return d
	}
	// Admitted again once max(tat, now') + T − now' ≤ τ, i.e. at now' = tat + T − τ.
	// A backend that read a stale TAT may find that moment past: the caller
	// is still told to wait a moment rather than "now".
	d.RetryAfter = time.Duration(max(ahead+t-tau, 1)) * time.Microsecond
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
// whether it admitted the request, the clock it used, and the key's TAT
// afterwards (the new one when admitted, the unchanged one when refused; the
// zero time when a refused key's TAT could not be read). Every backend
// answers through here, so the arithmetic has one home.
func Decided(lim Limit, allowed bool, now, tat time.Time) Decision {
	nowUS := now.UnixMicro()
	tatUS := nowUS + lim.toleranceUS() // unknown: assume a full backlog
	if !tat.IsZero() {
		tatUS = tat.UnixMicro()
	}
	return decided(lim, allowed, nowUS, tatUS)
}
