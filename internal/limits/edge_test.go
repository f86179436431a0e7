package limits_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cobranca/cobranca/internal/limits"
	"github.com/cobranca/cobranca/internal/limits/limitstest"
)

// chaining is the in-memory backend with TakeChain, counting the store calls
// of each kind, and able to fail like a store that does not answer.
type chaining struct {
	memory
	down          atomic.Bool
	takes, chains atomic.Int64
}

func (c *chaining) Take(ctx context.Context, key string, lim limits.Limit) (limits.Decision, error) {
	c.takes.Add(1)
	if c.down.Load() {
		<-ctx.Done()
		return limits.Decision{}, ctx.Err()
	}
	return c.memory.Take(ctx, key, lim)
}

func (c *chaining) TakeChain(ctx context.Context, reqs []limits.Request) ([]limits.Decision, error) {
	c.chains.Add(1)
	if c.down.Load() {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	var ds []limits.Decision
	for _, r := range reqs {
		d, _ := c.memory.Take(ctx, r.Key, r.Limit)
		if ds = append(ds, d); !d.Allowed {
			break
		}
	}
	return ds, nil
}

func (c *chaining) calls() int64 { return c.takes.Load() + c.chains.Load() }

// edge is the HTTP edge as server.Routes builds it: DeferOrigin, a stand-in
// for authentication (X-Test-Subject names the principal; without it, 401,
// counting the verifications it did), then Principal.
type edge struct {
	h        http.Handler
	verified atomic.Int64 // requests that reached token verification
	served   atomic.Int64 // requests that reached the handler
}

func newEdge(l *limits.Limiter) *edge {
	e := &edge{}
	authenticate := func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			e.verified.Add(1)
			if r.Header.Get("X-Test-Subject") == "" {
				w.WriteHeader(http.StatusUnauthorized)
				return
			}
			next.ServeHTTP(w, r)
		})
	}
	who := func(r *http.Request) (string, bool) {
		s := r.Header.Get("X-Test-Subject")
		return limits.PrincipalKey(s, "client"), s != ""
	}
	final := http.HandlerFunc(func(http.ResponseWriter, *http.Request) { e.served.Add(1) })
	e.h = l.DeferOrigin(authenticate(l.Principal(who)(final)))
	return e
}

func (e *edge) do(origin, subject string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(http.MethodPost, "/mcp", nil)
	req.RemoteAddr = origin + ":40000"
	if subject != "" {
		req.Header.Set("X-Test-Subject", subject)
	}
	w := httptest.NewRecorder()
	e.h.ServeHTTP(w, req)
	return w
}

func newChaining(t testing.TB, p limits.Policies, opts limits.Options) (*limits.Limiter, *chaining, *limitstest.Clock) {
	t.Helper()
	c := limitstest.NewClock()
	b := &chaining{memory: memory{now: c.Now, tats: map[string]time.Time{}}}
	opts.Policies, opts.Now = p, c.Now
	if opts.StoreTimeout == 0 {
		opts.StoreTimeout = 20 * time.Millisecond
	}
	return limits.New(b, opts), b, c
}

// TestEdgeOneStoreCall: an authenticated request's origin and principal
// decisions are one store call; the answers are those of two.
func TestEdgeOneStoreCall(t *testing.T) {
	l, b, c := newChaining(t, limits.Policies{
		Origin:    spec(t, "60/1m,burst=5"),
		Principal: spec(t, "60/1m,burst=3"),
	}, limits.Options{})
	e := newEdge(l)

	for i := range 3 {
		w := e.do("192.0.2.1", "alice")
		if w.Code != http.StatusOK {
			t.Fatalf("request %d: status %d, want 200", i+1, w.Code)
		}
		wantPolicy := []string{`"origin";q=5;w=5`, `"principal";q=3;w=3`}
		if got := w.Header().Values("RateLimit-Policy"); !slices.Equal(got, wantPolicy) {
			t.Errorf("request %d: RateLimit-Policy %q, want %q", i+1, got, wantPolicy)
		}
		if got, want := w.Header().Values("RateLimit")[1], `"principal";r=`+string(rune('2'-i))+`;t=`+string(rune('1'+i)); got != want {
			t.Errorf("request %d: principal RateLimit %q, want %q", i+1, got, want)
		}
	}
	if b.chains.Load() != 3 || b.takes.Load() != 0 {
		t.Errorf("3 authenticated requests: %d chain calls and %d single calls, want 3 and 0", b.chains.Load(), b.takes.Load())
	}

	// Another replica spends carol's budget; here the pre-limiter has not
	// seen it, so the store refuses: in the same call that charges the origin.
	other := newEdge(limits.New(b, limits.Options{Policies: limits.Policies{Principal: spec(t, "60/1m,burst=3")}, Now: c.Now}))
	for range 3 {
		if w := other.do("198.51.100.9", "carol"); w.Code != http.StatusOK {
			t.Fatalf("carol on the other replica: %d", w.Code)
		}
	}
	chains, takes := b.chains.Load(), b.takes.Load()
	w := e.do("192.0.2.1", "carol")
	if w.Code != http.StatusTooManyRequests || w.Header().Get("Retry-After") != "1" {
		t.Fatalf("carol over budget: status %d, Retry-After %q; want 429 and 1", w.Code, w.Header().Get("Retry-After"))
	}
	wantRL := []string{`"origin";r=1;t=4`, `"principal";r=0;t=3`}
	if got := w.Header().Values("RateLimit"); !slices.Equal(got, wantRL) {
		t.Errorf("carol over budget: RateLimit %q, want %q (the origin charged, the principal refused)", got, wantRL)
	}
	if b.chains.Load()-chains != 1 || b.takes.Load() != takes {
		t.Errorf("the refusal took %d chain and %d single calls, want one chain", b.chains.Load()-chains, b.takes.Load()-takes)
	}
	// Now the refusal is known here: the origin alone goes to the store.
	if w := e.do("192.0.2.1", "carol"); w.Code != http.StatusTooManyRequests || w.Header().Values("RateLimit")[0] != `"origin";r=0;t=5` {
		t.Errorf("carol again: %d %q, want 429 with the origin charged", w.Code, w.Header().Values("RateLimit"))
	}
	if b.chains.Load()-chains != 1 || b.takes.Load()-takes != 1 {
		t.Errorf("the known refusal took %d chain and %d single calls, want one single (the origin)", b.chains.Load()-chains-1, b.takes.Load()-takes)
	}
	// The origin is spent: refused before authentication, without a call.
	calls, verified := b.calls(), e.verified.Load()
	w = e.do("192.0.2.1", "alice")
	if w.Code != http.StatusTooManyRequests || w.Header().Get("Retry-After") == "" || w.Header().Get("RateLimit-Policy") != `"origin";q=5;w=5` {
		t.Errorf("origin spent: %d %v, want 429 with the origin's fields", w.Code, w.Header())
	}
	if b.calls() != calls || e.verified.Load() != verified {
		t.Errorf("origin spent: %d store calls, %d verifications; want none", b.calls()-calls, e.verified.Load()-verified)
	}
}

// TestEdgeUnauthenticatedFlood: one origin floods two replicas with
// requests that fail authentication. They spend its budget in the store,
// and once each replica has seen the store refuse, the rest are refused
// before verification, without asking the store, until the Retry-After.
func TestEdgeUnauthenticatedFlood(t *testing.T) {
	lim := spec(t, "100/1m,burst=10") // T = 600ms
	l, b, c := newChaining(t, limits.Policies{Origin: lim, Principal: spec(t, "600/1m")}, limits.Options{})
	replicas := []*edge{newEdge(l), newEdge(limits.New(b, limits.Options{Policies: limits.Policies{Origin: lim}, Now: c.Now}))}
	codes := map[int]int{}
	var storeCalls []int64
	for i := range 60 {
		w := replicas[i%2].do("203.0.113.5", "")
		codes[w.Code]++
		if w.Code == http.StatusTooManyRequests && w.Header().Get("Retry-After") != "1" {
			t.Errorf("429 with Retry-After %q, want 1", w.Header().Get("Retry-After"))
		}
		storeCalls = append(storeCalls, b.calls())
	}
	// 10 admitted (401 after verification), one refused by the store on each
	// replica (401 too: answered before the origin was decided), 48 refused
	// early.
	if codes[http.StatusUnauthorized] != 12 || codes[http.StatusTooManyRequests] != 48 {
		t.Errorf("answers %v, want 12 × 401 and 48 × 429", codes)
	}
	verified := replicas[0].verified.Load() + replicas[1].verified.Load()
	if verified != 12 {
		t.Errorf("%d verifications, want 12: the budget, and one per replica to learn of the refusal", verified)
	}
	if storeCalls[11] != 12 || storeCalls[59] != 12 {
		t.Errorf("store calls after 12 and 60 requests: %d and %d, want 12 and 12", storeCalls[11], storeCalls[59])
	}
	if got := l.Stats().EarlyRefusals; got != 24 {
		t.Errorf("EarlyRefusals = %d, want 24", got)
	}

	// Another origin is not held back.
	if w := replicas[0].do("192.0.2.44", "alice"); w.Code != http.StatusOK {
		t.Errorf("another origin during the flood: %d, want 200", w.Code)
	}
	// After the Retry-After, the store is asked again (one interval refilled:
	// one more admitted, then the store refuses again).
	c.Advance(600 * time.Millisecond)
	calls := b.calls()
	for range 4 {
		replicas[0].do("203.0.113.5", "")
	}
	if got := b.calls() - calls; got != 2 {
		t.Errorf("after the Retry-After: %d store calls for 4 requests, want 2 (one admitted, one refused, then known)", got)
	}
}

// TestEdgeStoreDown: with the store down, both decisions of a request are
// made locally, and the store is not asked again within a second.
func TestEdgeStoreDown(t *testing.T) {
	l, b, _ := newChaining(t, limits.Policies{
		Origin:    spec(t, "1200/1m,burst=120"),
		Principal: spec(t, "600/1m,burst=60"),
	}, limits.Options{Replicas: 3})
	e := newEdge(l)
	b.down.Store(true)
	admitted, refused := 0, 0
	for range 30 {
		switch w := e.do("192.0.2.1", "alice"); w.Code {
		case http.StatusOK:
			admitted++
		case http.StatusTooManyRequests:
			refused++
			if w.Header().Get("Retry-After") == "" {
				t.Errorf("429 without Retry-After")
			}
		default:
			t.Fatalf("status %d", w.Code)
		}
	}
	if admitted != 20 || refused != 10 {
		t.Errorf("store down: %d admitted, %d refused; want 20 and 10 (burst 60 / 3 replicas)", admitted, refused)
	}
	if b.calls() != 1 {
		t.Errorf("%d store calls, want 1 (the one that failed)", b.calls())
	}
	if s := l.Stats(); s.StoreFailures != 1 || s.LocalDecisions != 60 {
		t.Errorf("Stats = %+v, want 1 store failure and 60 local decisions (origin and principal of 30 requests)", s)
	}
}
