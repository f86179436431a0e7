package limits

import (
	"context"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/cobranca/cobranca/internal/failure"
)

// The response fields follow draft-ietf-httpapi-ratelimit-headers-09 (March
// 2025), in its Structured Fields form:
//
//	RateLimit-Policy: "principal";q=60;w=6
//	RateLimit: "principal";r=0;t=6
//
// A GCRA budget is described as its burst: q is the burst, w the seconds it
// takes to refill entirely (burst × interval), r what is left of it now and t
// the seconds until it is full again. Retry-After on a 429 says when the next
// request would be admitted.

// Origin is middleware enforcing the per-origin budget on every request,
// before authentication (so a flood costs no token verification). It asks
// the store for every request it does not refuse early; in front of
// authentication and Principal, DeferOrigin does the same work in the
// principal's round trip.
func (l *Limiter) Origin(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if l.admit(w, r, "origin", l.opts.Policies.Origin, ClientIP(r, l.opts.TrustedProxyHeader)) {
			next.ServeHTTP(w, r)
		}
	})
}

// DeferOrigin is Origin for routes where authentication and then Principal
// follow: it takes the per-origin decision to the store together with the
// per-principal one, so that an authenticated request costs one round trip
// and one commit for both instead of two of each.
//
// What it still does before authentication is refuse early, so that a flood
// costs no token verification once its origin is known to be over budget:
// the pre-limiter refuses what this replica alone has seen exceed the
// budget, and the key's local state remembers every refusal the store made,
// until its Retry-After (the store would refuse again until then: refusals
// leave a key as it is, and admissions only push it further out). Neither
// ever admits: whatever they do not refuse goes on with the decision
// pending, carried in the request's context.
//
// Principal then decides the origin and the principal in one chain (the
// principal is charged only when the origin admits, as if asked one after
// the other), and answers 429 for whichever refused. A request that never
// reaches Principal (authentication refused it) has its origin charged
// after its answer, in a round trip of its own: failed requests spend the
// origin's budget exactly as before, so the store soon refuses the origin
// and from then on DeferOrigin does, before any verification. The price of
// deciding late is bounded: requests from an origin already over budget
// reach token verification only until this replica has seen one refusal
// from the store (at most the requests in flight at that moment, again
// after each Retry-After), and they are answered 401 rather than 429 and
// without RateLimit fields, since their answer was written before the
// origin was decided.
//
// While the store is known to be down (a call failed within the last
// second), the origin is decided here, locally, exactly as Origin does.
func (l *Limiter) DeferOrigin(next http.Handler) http.Handler {
	lim := l.opts.Policies.Origin
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		now := l.opts.Now()
		if lim.Off() || !l.storeUp(now) {
			if l.admit(w, r, "origin", lim, ClientIP(r, l.opts.TrustedProxyHeader)) {
				next.ServeHTTP(w, r)
			}
			return
		}
		s, d, ok := l.begin("origin", lim, Cost{}, ClientIP(r, l.opts.TrustedProxyHeader), now)
		if !ok {
			l.answer(w, r, "origin", lim, d)
			return
		}
		p := &pendingOrigin{s: s}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), pendingKey{}, p)))
		if !p.taken {
			p.taken = true
			_, _ = l.decide(r.Context(), l.opts.Now(), false, p.s)
		}
	})
}

// pendingOrigin is the origin decision DeferOrigin leaves to Principal.
type pendingOrigin struct {
	s     step
	taken bool // Principal took it over
}

type pendingKey struct{}

// Principal returns middleware enforcing the per-principal budget. who
// returns the principal key (PrincipalKey) of an authenticated request;
// requests it does not know pass (authentication answers them). Behind
// DeferOrigin, it also decides the pending origin, first, in the same store
// call.
func (l *Limiter) Principal(who func(*http.Request) (string, bool)) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if l.admitEdge(w, r, who) {
				next.ServeHTTP(w, r)
			}
		})
	}
}

// admitEdge decides the pending origin, if any, and the principal, if known
// and limited, in one chain; it sets the RateLimit fields of each policy
// decided and answers 429 for the first that refused.
func (l *Limiter) admitEdge(w http.ResponseWriter, r *http.Request, who func(*http.Request) (string, bool)) bool {
	var steps []step
	if p, ok := r.Context().Value(pendingKey{}).(*pendingOrigin); ok && !p.taken {
		p.taken = true
		steps = append(make([]step, 0, 2), p.s)
	}
	lim := l.opts.Policies.Principal
	id, known := who(r)
	if !known || lim.Off() {
		return l.decideEdge(w, r, steps)
	}
	if len(steps) == 0 {
		return l.admit(w, r, "principal", lim, id)
	}
	now := l.opts.Now()
	s, d, ok := l.begin("principal", lim, Cost{}, id, now)
	if !ok {
		// Refused early: the origin is still decided first, as it would
		// have been before authentication.
		if !l.decideEdge(w, r, steps) {
			return false
		}
		l.answer(w, r, "principal", lim, d)
		return false
	}
	return l.decideEdge(w, r, append(steps, s))
}

// decideEdge decides steps as one chain and answers for them.
func (l *Limiter) decideEdge(w http.ResponseWriter, r *http.Request, steps []step) bool {
	if len(steps) == 0 {
		return true
	}
	ds, err := l.decide(r.Context(), l.opts.Now(), false, steps...)
	if err != nil {
		// Only a request whose client has gone gets here; nobody reads this.
		http.Error(w, "request cancelled", http.StatusServiceUnavailable)
		return false
	}
	for i, d := range ds {
		if !l.answer(w, r, steps[i].policy, steps[i].lim, d) {
			return false
		}
	}
	return true
}

// admit decides the request, sets the RateLimit fields, and answers 429 when
// refused. At this level the store being down never refuses: the request is
// decided by the local fallback (the tool's tier budget, checked later, fails
// closed for what changes state).
func (l *Limiter) admit(w http.ResponseWriter, r *http.Request, policy string, lim Limit, id string) bool {
	if lim.Off() {
		return true
	}
	d, err := l.check(r.Context(), policy, lim, Cost{}, id, false)
	if err != nil {
		// Only a request whose client has gone gets here; nobody reads this.
		http.Error(w, "request cancelled", http.StatusServiceUnavailable)
		return false
	}
	return l.answer(w, r, policy, lim, d)
}

// answer sets policy's RateLimit fields from d and, when d refuses, answers
// 429 and tells Options.OnRefused. It reports whether the request may go on.
func (l *Limiter) answer(w http.ResponseWriter, r *http.Request, policy string, lim Limit, d Decision) bool {
	h := w.Header()
	h.Add("RateLimit-Policy", policyField(policy, lim))
	h.Add("RateLimit", `"`+policy+`";r=`+strconv.FormatInt(d.Remaining, 10)+";t="+strconv.FormatInt(ceilSeconds(d.Reset), 10))
	if d.Allowed {
		return true
	}
	if l.opts.OnRefused != nil {
		l.opts.OnRefused(r, policy, d)
	}
	secs := d.RetryAfterSeconds()
	h.Set("Retry-After", strconv.FormatInt(secs, 10))
	h.Set("Cache-Control", "no-store")
	failure.WriteHTTP(w, http.StatusTooManyRequests, &failure.Error{
		Code:       failure.RateLimited,
		Message:    "too many requests (" + policy + " limit); retry after " + strconv.FormatInt(secs, 10) + " s",
		RetryAfter: time.Duration(d.RetryAfterMillis()) * time.Millisecond,
	})
	return false
}

func policyField(policy string, lim Limit) string {
	window := time.Duration(lim.Burst) * lim.Interval()
	return `"` + policy + `";q=` + strconv.FormatInt(lim.Burst, 10) + ";w=" + strconv.FormatInt(max(ceilSeconds(window), 1), 10)
}

func ceilSeconds(d time.Duration) int64 {
	return int64((max(d, 0) + time.Second - 1) / time.Second)
}

// ClientIP returns the origin key of r: the client address from header when
// one is configured and carries an address (for a list such as
// X-Forwarded-For, the rightmost address: the one the trusted proxy itself
// appended; anything left of it is the client's own say), else the
// connection's remote address. IPv6 addresses are reduced to their /64, which
// one client usually holds entirely.
func ClientIP(r *http.Request, header string) string {
	if header != "" {
		if a, ok := proxiedAddr(r.Header.Values(header)); ok {
			return originKey(a)
		}
	}
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	if a, err := netip.ParseAddr(host); err == nil {
		return originKey(a)
	}
	return host
}

// proxiedAddr returns the rightmost entry of the header's list when it is an
// address. Anything left of it was written by the client and proves nothing.
func proxiedAddr(vals []string) (netip.Addr, bool) {
	for i := len(vals) - 1; i >= 0; i-- {
		parts := strings.Split(vals[i], ",")
		for j := len(parts) - 1; j >= 0; j-- {
			if p := strings.TrimSpace(parts[j]); p != "" {
				a, err := netip.ParseAddr(p)
				return a, err == nil
			}
		}
	}
	return netip.Addr{}, false
}

// OriginPrefix is the block of addresses one client is taken to hold: its
// IPv4 address, or the /64 of its IPv6 address. The per-origin rate limit
// and the per-address connection cap both count clients by it.
func OriginPrefix(a netip.Addr) netip.Prefix {
	a = a.Unmap().WithZone("")
	if a.Is6() {
		p, _ := a.Prefix(64)
		return p
	}
	return netip.PrefixFrom(a, a.BitLen())
}

func originKey(a netip.Addr) string {
	p := OriginPrefix(a)
	if p.Addr().Is4() {
		return p.Addr().String()
	}
	return p.String()
}
