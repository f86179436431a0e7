package limits_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/cobranca/cobranca/internal/contract"
	"github.com/cobranca/cobranca/internal/failure"
	"github.com/cobranca/cobranca/internal/limits"
	"github.com/cobranca/cobranca/internal/limits/limitstest"
)

// switchable is a real backend that can be made to fail like a store that
// does not answer, and counts the calls that reach it.
type switchable struct {
	limits.Backend
	down  atomic.Bool
	calls atomic.Int64
}

func (s *switchable) Take(ctx context.Context, key string, lim limits.Limit) (limits.Decision, error) {
	s.calls.Add(1)
	if s.down.Load() {
		<-ctx.Done() // a store that hangs: the limiter's timeout ends the wait
		return limits.Decision{}, ctx.Err()
	}
	return s.Backend.Take(ctx, key, lim)
}

// TakeChain is the backend's, when it has one (every store does): a cost
// of more than one unit is spent through it.
func (s *switchable) TakeChain(ctx context.Context, reqs []limits.Request) ([]limits.Decision, error) {
	s.calls.Add(1)
	if s.down.Load() {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	return s.Backend.(interface {
		TakeChain(ctx context.Context, reqs []limits.Request) ([]limits.Decision, error)
	}).TakeChain(ctx, reqs)
}

func spec(t testing.TB, s string) limits.Limit {
	t.Helper()
	l, err := limits.ParseSpec(s)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// memory is a backend holding the TATs in a map: the pure GCRA behind a
// mutex, on the fake clock. (The store backends run their own suite.)
type memory struct {
	mu   sync.Mutex
	now  func() time.Time
	tats map[string]time.Time
}

func (m *memory) Take(_ context.Context, key string, lim limits.Limit) (limits.Decision, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	d, tat := limits.GCRA(lim, limits.Cost{}, m.tats[key], m.now())
	m.tats[key] = tat
	return d, nil
}

func (m *memory) TakeChain(_ context.Context, reqs []limits.Request) ([]limits.Decision, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return limits.DecideChain(reqs, func(r limits.Request) (limits.Decision, error) {
		d, tat := limits.GCRA(r.Limit, r.Cost, m.tats[r.Key], m.now())
		m.tats[r.Key] = tat
		return d, nil
	})
}

// newLimiter returns a Limiter on an in-memory backend with a fake clock.
func newLimiter(t testing.TB, p limits.Policies, opts limits.Options) (*limits.Limiter, *switchable, *limitstest.Clock) {
	t.Helper()
	c := limitstest.NewClock()
	b := &switchable{Backend: &memory{now: c.Now, tats: map[string]time.Time{}}}
	opts.Policies, opts.Now = p, c.Now
	if opts.StoreTimeout == 0 {
		opts.StoreTimeout = 20 * time.Millisecond
	}
	return limits.New(b, opts), b, c
}

func TestHTTP429Headers(t *testing.T) {
	l, _, c := newLimiter(t, limits.Policies{Origin: spec(t, "60/1m,burst=2")}, limits.Options{})
	h := l.Origin(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) }))
	do := func() *http.Response {
		req := httptest.NewRequest(http.MethodPost, "/mcp", nil)
		req.RemoteAddr = "198.51.100.7:40000"
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		return w.Result()
	}
	check := func(res *http.Response, status int, rl, retry string) {
		t.Helper()
		if res.StatusCode != status {
			t.Errorf("status %d, want %d", res.StatusCode, status)
		}
		if got := res.Header.Get("RateLimit-Policy"); got != `"origin";q=2;w=2` {
			t.Errorf("RateLimit-Policy: %q, want %q", got, `"origin";q=2;w=2`)
		}
		if got := res.Header.Get("RateLimit"); got != rl {
			t.Errorf("RateLimit: %q, want %q", got, rl)
		}
		if got := res.Header.Get("Retry-After"); got != retry {
			t.Errorf("Retry-After: %q, want %q", got, retry)
		}
	}
	check(do(), http.StatusNoContent, `"origin";r=1;t=1`, "")
	check(do(), http.StatusNoContent, `"origin";r=0;t=2`, "")
	res := do()
	check(res, http.StatusTooManyRequests, `"origin";r=0;t=2`, "1")
	var body failure.Body
	if err := json.NewDecoder(res.Body).Decode(&body); err != nil || body.Error.Code != failure.RateLimited || body.Error.RetryAfterMs != 1000 {
		t.Errorf("429 body %+v (%v), want code rate_limited and retryAfterMs 1000", body, err)
	}
	c.Advance(400 * time.Millisecond)
	res = do()
	check(res, http.StatusTooManyRequests, `"origin";r=0;t=2`, "1") // 600ms left: rounded up to a whole second
	c.Advance(600 * time.Millisecond)
	check(do(), http.StatusNoContent, `"origin";r=0;t=2`, "")
}

func TestOriginFloodBlockedOthersPass(t *testing.T) {
	l, _, _ := newLimiter(t, limits.Policies{Origin: spec(t, "100/1m,burst=5")},
		limits.Options{TrustedProxyHeader: "X-Forwarded-For"})
	h := l.Origin(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	do := func(xff string) int {
		req := httptest.NewRequest(http.MethodPost, "/mcp", nil)
		req.RemoteAddr = "10.0.0.2:1234" // the proxy
		req.Header.Set("X-Forwarded-For", xff)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		if w.Code == http.StatusTooManyRequests && w.Header().Get("Retry-After") == "" {
			t.Errorf("429 without Retry-After")
		}
		return w.Code
	}
	refused := 0
	for i := range 50 {
		// The flooder varies what it writes itself; the proxy appends the truth.
		if do("203.0.113."+string(rune('0'+i%10))+", 192.0.2.66") == http.StatusTooManyRequests {
			refused++
		}
	}
	if refused != 45 {
		t.Errorf("flooding origin: %d of 50 refused, want 45", refused)
	}
	if code := do("192.0.2.77"); code != http.StatusOK {
		t.Errorf("another origin during the flood: status %d, want 200", code)
	}
}

func TestClientIP(t *testing.T) {
	tests := []struct {
		header, value, remote, want string
	}{
		{"", "", "192.0.2.1:5000", "192.0.2.1"},
		{"", "", "[2001:db8:1:2:3:4:5:6]:443", "2001:db8:1:2::/64"},
		{"", "", "[::ffff:192.0.2.9]:443", "192.0.2.9"},
		{"X-Forwarded-For", "1.2.3.4, 192.0.2.5", "10.0.0.1:1", "192.0.2.5"},
		{"X-Forwarded-For", "192.0.2.5 , ", "10.0.0.1:1", "192.0.2.5"},
		{"X-Forwarded-For", "1.2.3.4, garbage", "10.0.0.1:1", "10.0.0.1"},
		{"X-Forwarded-For", "", "10.0.0.1:1", "10.0.0.1"},
		{"Fly-Client-IP", "2001:db8::1", "10.0.0.1:1", "2001:db8::/64"},
		{"", "", "@", "@"},
	}
	for _, tt := range tests {
		r := httptest.NewRequest(http.MethodGet, "/", nil)
		r.RemoteAddr = tt.remote
		if tt.value != "" {
			r.Header.Set(tt.header, tt.value)
		}
		if got := limits.ClientIP(r, tt.header); got != tt.want {
			t.Errorf("ClientIP(%s: %q, remote %q) = %q, want %q", tt.header, tt.value, tt.remote, got, tt.want)
		}
	}
}

func TestPrincipalMiddleware(t *testing.T) {
	l, _, _ := newLimiter(t, limits.Policies{Principal: spec(t, "10/1m,burst=1")}, limits.Options{})
	who := func(r *http.Request) (string, bool) {
		s := r.Header.Get("X-Test-Subject")
		return limits.PrincipalKey(s, "client"), s != ""
	}
	h := l.Principal(who)(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	do := func(subject string) *httptest.ResponseRecorder {
		req := httptest.NewRequest(http.MethodPost, "/mcp", nil)
		req.Header.Set("X-Test-Subject", subject)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		return w
	}
	if w := do("alice"); w.Code != 200 || w.Header().Get("RateLimit-Policy") != `"principal";q=1;w=6` {
		t.Errorf("first: %d %v", w.Code, w.Header())
	}
	if w := do("alice"); w.Code != 429 || w.Header().Get("Retry-After") != "6" {
		t.Errorf("second: %d, Retry-After %q; want 429 and 6", w.Code, w.Header().Get("Retry-After"))
	}
	if w := do("bob"); w.Code != 200 {
		t.Errorf("another principal: %d, want 200", w.Code)
	}
	if w := do(""); w.Code != 200 || w.Header().Get("RateLimit") != "" {
		t.Errorf("unauthenticated request: %d %v; want it passed on untouched", w.Code, w.Header())
	}
}

// TestTierRest: a call weighted by its cost spends its first unit in Tier
// and the rest in TierRest, from the same budget; a small call spends one; a
// refusal's Retry-After is exactly when a retry of the whole call (its first
// unit and its rest) is admitted; a cost above the burst waits for a full
// bucket and runs the principal into debt.
func TestTierRest(t *testing.T) {
	l, _, c := newLimiter(t, limits.Policies{Write: spec(t, "60/1m,burst=10")}, limits.Options{}) // T = 1s
	ctx := context.Background()
	call := func(who string, units int64) error {
		key := limits.PrincipalKey(who, "agent-1")
		if err := l.Tier(ctx, key, contract.Critical); err != nil {
			return err
		}
		return l.TierRest(ctx, key, contract.Critical, units)
	}
	retryAfter := func(err error) time.Duration {
		t.Helper()
		fe, ok := failure.As(err)
		if !ok || fe.Code != failure.RateLimited {
			t.Fatalf("%v, want rate_limited", err)
		}
		return fe.RetryAfter
	}

	for i := range 10 {
		if err := call("small", 1); err != nil {
			t.Fatalf("small call %d of a burst of 10: %v", i+1, err)
		}
	}
	if got := retryAfter(call("small", 1)); got != time.Second {
		t.Fatalf("the 11th small call: retry after %v, want 1s (a small call spends one unit)", got)
	}

	if err := call("ana", 5); err != nil {
		t.Fatalf("a call of 5 on a full budget of 10: %v", err)
	}
	err := call("ana", 6)
	fe, _ := failure.As(err)
	if got := retryAfter(err); got != 2*time.Second || !strings.Contains(fe.Message, "costs 6 units") {
		t.Fatalf("a call of 6 with 5 left: retry after %v (%v), want 2s, saying it costs 6 units", got, err)
	}
	c.Advance(2 * time.Second)
	if err := call("ana", 6); err != nil {
		t.Fatalf("its retry at the Retry-After: %v, want admitted", err)
	}
	if err := call("ana", 1); err == nil {
		t.Fatal("a call after the budget was spent: admitted")
	}

	if err := call("bo", 25); err != nil {
		t.Fatalf("a call of 25 on a full budget of 10: %v, want admitted (into debt)", err)
	}
	if got := retryAfter(call("bo", 1)); got != 16*time.Second {
		t.Fatalf("a small call after a debt of 25: retry after %v, want 16s", got)
	}
	c.Advance(16 * time.Second)
	if err := call("bo", 1); err != nil {
		t.Fatalf("a small call once the debt is paid down: %v", err)
	}
	c.Advance(time.Second)
	if got := retryAfter(call("bo", 25)); got != 10*time.Second {
		t.Fatalf("a call of 25 with 1 of 10 left: retry after %v, want 10s (when the budget is full again)", got)
	}
	c.Advance(10 * time.Second)
	if err := call("bo", 25); err != nil {
		t.Fatalf("its retry at the Retry-After: %v, want admitted", err)
	}

	if err := l.TierRest(ctx, limits.PrincipalKey("low", "agent-1"), contract.Low, 1000); err != nil {
		t.Fatalf("the rest of a low-tier call: %v, want no budget", err)
	}
}

func TestTierBudgets(t *testing.T) {
	l, _, c := newLimiter(t, limits.Policies{Write: spec(t, "60/1m,burst=2"), Critical: spec(t, "10/1h,burst=1")}, limits.Options{})
	ctx := context.Background()
	alice := limits.PrincipalKey("alice", "agent-1")
	for range 100 {
		if err := l.Tier(ctx, alice, contract.Low); err != nil {
			t.Fatalf("low tier: %v, want no budget", err)
		}
	}
	for _, risk := range []contract.Risk{contract.Medium, contract.High} {
		if err := l.Tier(ctx, alice, risk); err != nil {
			t.Fatalf("%s within the write budget: %v", risk, err)
		}
	}
	err := l.Tier(ctx, alice, contract.Medium)
	fe, ok := failure.As(err)
	if !ok || fe.Code != failure.RateLimited || fe.RetryAfter != time.Second {
		t.Fatalf("medium over the write budget: %v, want rate_limited retry after 1s", err)
	}
	// A critical call spends the write budget too: alice's is spent.
	if fe, ok := failure.As(l.Tier(ctx, alice, contract.Critical)); !ok || fe.Code != failure.RateLimited {
		t.Fatalf("critical over the write budget: %v, want rate_limited", fe)
	}
	// The critical budget counts approvals asked for, untouched by the calls.
	if err := l.Approval(ctx, alice); err != nil {
		t.Fatalf("first approval: %v", err)
	}
	fe, ok = failure.As(l.Approval(ctx, alice))
	if !ok || fe.Code != failure.RateLimited || fe.RetryAfter != 6*time.Minute || !strings.Contains(fe.Message, "approvals") {
		t.Fatalf("second approval: %v, want rate_limited retry after 6m, about approvals", fe)
	}
	// Budgets are per principal.
	if err := l.Approval(ctx, limits.PrincipalKey("bob", "agent-1")); err != nil {
		t.Fatalf("another principal's approval: %v", err)
	}
	c.Advance(time.Second)
	if err := l.Tier(ctx, alice, contract.High); err != nil {
		t.Fatalf("a write after the refill: %v", err)
	}
}

// TestPreLimiterOnlyRefusesEarly: the store decides while it answers; the
// pre-limiter only spares it requests it would refuse anyway.
func TestPreLimiterOnlyRefusesEarly(t *testing.T) {
	lim := spec(t, "60/1m,burst=3")
	l, b, c := newLimiter(t, limits.Policies{Write: lim}, limits.Options{})
	ctx := context.Background()
	key := limits.PrincipalKey("alice", "c")
	for range 3 {
		if err := l.Tier(ctx, key, contract.Medium); err != nil {
			t.Fatal(err)
		}
	}
	calls := b.calls.Load()
	for range 10 {
		if fe, _ := failure.As(l.Tier(ctx, key, contract.Medium)); fe == nil || fe.Code != failure.RateLimited {
			t.Fatalf("over budget: %v", fe)
		}
	}
	if got := b.calls.Load() - calls; got != 0 {
		t.Errorf("refusals the pre-limiter could see coming still cost %d store calls", got)
	}
	if l.Stats().EarlyRefusals != 10 {
		t.Errorf("EarlyRefusals = %d, want 10", l.Stats().EarlyRefusals)
	}

	// Another replica spends the shared budget: this one's pre-limiter still
	// has tokens, and must not admit on its own.
	other := limits.New(b, limits.Options{Policies: limits.Policies{Write: lim}, Now: c.Now})
	c.Advance(time.Minute)
	for range 3 {
		if err := other.Tier(ctx, key, contract.Medium); err != nil {
			t.Fatal(err)
		}
	}
	calls = b.calls.Load()
	if fe, _ := failure.As(l.Tier(ctx, key, contract.Medium)); fe == nil || fe.Code != failure.RateLimited {
		t.Fatalf("budget spent on another replica: %v, want rate_limited", fe)
	}
	if b.calls.Load() == calls {
		t.Errorf("the store was not asked")
	}
	// The store's refusals are given back to the pre-limiter: once the
	// shared budget refills, this replica is not held back by them.
	for range 5 {
		_ = l.Tier(ctx, key, contract.Medium)
	}
	c.Advance(time.Second)
	if err := l.Tier(ctx, key, contract.Medium); err != nil {
		t.Errorf("after the refill: %v", err)
	}
}

func TestStoreDown(t *testing.T) {
	var logs bytes.Buffer
	logger := slog.New(slog.NewJSONHandler(&logs, nil))
	l, b, c := newLimiter(t, limits.Policies{
		Principal: spec(t, "600/1m,burst=60"),
		Write:     spec(t, "60/1m,burst=10"),
		Critical:  spec(t, "10/1h,burst=3"),
	}, limits.Options{Replicas: 3, Logger: logger})
	ctx := context.Background()
	key := limits.PrincipalKey("alice", "c")
	h := l.Principal(func(*http.Request) (string, bool) { return key, true })(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	b.down.Store(true)

	// Tier budgets fail closed, with a retryable unavailable.
	for _, risk := range []contract.Risk{contract.Medium, contract.High, contract.Critical} {
		fe, ok := failure.As(l.Tier(ctx, key, risk))
		if !ok || fe.Code != failure.Unavailable || fe.RetryAfter <= 0 {
			t.Errorf("%s with the store down: %v, want unavailable with RetryAfter", risk, fe)
		}
	}
	if err := l.Tier(ctx, key, contract.Low); err != nil {
		t.Errorf("low with the store down: %v, want nil", err)
	}

	// The HTTP limit goes on locally, with a third of the budget: burst 20.
	calls := b.calls.Load()
	start := time.Now()
	admitted := 0
	for range 30 {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest(http.MethodPost, "/mcp", nil))
		if w.Code == http.StatusOK {
			admitted++
		} else if w.Code != http.StatusTooManyRequests || w.Header().Get("Retry-After") == "" {
			t.Fatalf("status %d, Retry-After %q", w.Code, w.Header().Get("Retry-After"))
		}
	}
	if admitted != 20 {
		t.Errorf("store down: %d of 30 admitted, want 20 (burst 60 / 3 replicas)", admitted)
	}
	if b.calls.Load() != calls {
		t.Errorf("the store was asked again %d times within a second of failing", b.calls.Load()-calls)
	}
	if time.Since(start) > 10*time.Second {
		t.Errorf("deciding locally took %v: requests waited on the dead store", time.Since(start))
	}
	if s := l.Stats(); s.LocalDecisions != 30 || s.StoreFailures != 1 {
		t.Errorf("Stats = %+v, want 30 local decisions and 1 store failure", s)
	}
	if n := strings.Count(logs.String(), "deciding on the local limiter"); n != 1 {
		t.Errorf("%d warnings logged, want 1 per interval:\n%s", n, logs.String())
	}

	// The store is back: after the pause, it decides again.
	b.down.Store(false)
	c.Advance(2 * time.Second)
	if err := l.Tier(ctx, key, contract.Medium); err != nil {
		t.Errorf("store back: %v", err)
	}
	if l.Stats().StoreFailures != 1 {
		t.Errorf("store failures grew after recovery: %+v", l.Stats())
	}
}

func TestCancelledRequestIsNotAStoreFailure(t *testing.T) {
	l, b, _ := newLimiter(t, limits.Policies{Write: spec(t, "60/1m")}, limits.Options{StoreTimeout: time.Minute})
	b.down.Store(true)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	err := l.Tier(ctx, "k", contract.Medium)
	if !errors.Is(err, context.DeadlineExceeded) || l.Stats().StoreFailures != 0 {
		t.Errorf("Tier on a cancelled request = %v, stats %+v; want the context's error and no store failure", err, l.Stats())
	}
}

// sweeping is a backend that can sweep, counting the sweeps.
type sweeping struct {
	memory
	sweeps atomic.Int64
}

func (s *sweeping) Sweep(context.Context) (int64, error) { s.sweeps.Add(1); return 0, nil }

// TestRunSweepsUntilCancelled: Run sweeps once per interval and returns when its context ends,
// in a synctest bubble, whose clock makes the count exact.
func TestRunSweepsUntilCancelled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := &sweeping{memory: memory{now: time.Now, tats: map[string]time.Time{}}}
		l := limits.New(b, limits.Options{})
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan struct{})
		go func() { l.Run(ctx, time.Minute); close(done) }()
		time.Sleep(3*time.Minute + time.Second)
		synctest.Wait()
		if n := b.sweeps.Load(); n != 3 {
			t.Errorf("Run swept %d times in 3 intervals, want 3", n)
		}
		cancel()
		synctest.Wait()
		select {
		case <-done:
		default:
			t.Fatal("Run did not return after its context ended")
		}
	})
}

// TestOnRefusedHearsEvery429: the hook is told of each 429 at the HTTP
// level, with its policy and the advised wait, and of nothing admitted.
func TestOnRefusedHearsEvery429(t *testing.T) {
	var heard []string
	var waits []time.Duration
	l, _, _ := newLimiter(t, limits.Policies{Origin: spec(t, "60/1m,burst=2")}, limits.Options{
		OnRefused: func(r *http.Request, policy string, d limits.Decision) {
			heard = append(heard, policy)
			waits = append(waits, d.RetryAfter)
		},
	})
	h := l.Origin(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) }))
	refused := 0
	for range 5 {
		req := httptest.NewRequest(http.MethodPost, "/mcp", nil)
		req.RemoteAddr = "198.51.100.9:40000"
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		if w.Code == http.StatusTooManyRequests {
			refused++
		}
	}
	if refused != 3 || len(heard) != refused {
		t.Fatalf("refused %d, hook heard %v; want 3 refusals, each heard", refused, heard)
	}
	for i, p := range heard {
		if p != "origin" || waits[i] <= 0 {
			t.Errorf("hook call %d: policy %q, wait %v", i, p, waits[i])
		}
	}
}
