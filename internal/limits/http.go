package limits

import (
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"time"
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
// before authentication (so a flood costs no token verification).
func (l *Limiter) Origin(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if l.admit(w, r, "origin", l.opts.Policies.Origin, ClientIP(r, l.opts.TrustedProxyHeader)) {
			next.ServeHTTP(w, r)
		}
	})
}

// Principal returns middleware enforcing the per-principal budget. who
// returns the principal key (PrincipalKey) of an authenticated request;
// requests it does not know pass (authentication answers them).
func (l *Limiter) Principal(who func(*http.Request) (string, bool)) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if id, ok := who(r); !ok || l.admit(w, r, "principal", l.opts.Policies.Principal, id) {
				next.ServeHTTP(w, r)
			}
		})
	}
}

// admit decides the request, sets the RateLimit fields, and answers 429 when
// refused. At this level the store being down never refuses: the request is
// decided by the local fallback (the tool's tier budget, checked later, fails
// closed for what changes state).
func (l *Limiter) admit(w http.ResponseWriter, r *http.Request, policy string, lim Limit, id string) bool {
	if lim.Off() {
		return true
	}
	d, err := l.check(r.Context(), policy, lim, id, false)
	if err != nil {
		// Only a request whose client has gone gets here; nobody reads this.
		http.Error(w, "request cancelled", http.StatusServiceUnavailable)
		return false
	}
	h := w.Header()
	h.Add("RateLimit-Policy", policyField(policy, lim))
	h.Add("RateLimit", `"`+policy+`";r=`+strconv.FormatInt(d.Remaining, 10)+";t="+strconv.FormatInt(ceilSeconds(d.Reset), 10))
	if d.Allowed {
		return true
	}
	secs := d.RetryAfterSeconds()
	h.Set("Retry-After", strconv.FormatInt(secs, 10))
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusTooManyRequests)
	_, _ = w.Write([]byte(`{"error":{"code":"rate_limited","message":"too many requests (` + policy + ` limit); retry after ` +
		strconv.FormatInt(secs, 10) + ` s","retryAfterMs":` + strconv.FormatInt(d.RetryAfterMillis(), 10) + "}}\n"))
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

func originKey(a netip.Addr) string {
	a = a.Unmap().WithZone("")
	if a.Is6() {
		p, _ := a.Prefix(64)
		return p.String()
	}
	return a.String()
}
