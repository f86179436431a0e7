package limits

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/cobranca/cobranca/internal/contract"
	"github.com/cobranca/cobranca/internal/failure"
	"github.com/cobranca/cobranca/internal/ticker"
	"golang.org/x/time/rate"
)

// Backend keeps the GCRA state shared by every replica. Take decides one
// request for key under lim in one atomic step (a refusal leaves the key as
// it was) and reports the decision.
//
// A backend may also decide a chain of keys in one round trip and one commit
// (a backend of the tier budgets must: a call weighted by its cost spends
// its units as a chain of one):
//
//	TakeChain(ctx context.Context, reqs []Request) ([]Decision, error)
//
// deciding reqs in order, each under its own limit, and stopping at the
// first refusal: the keys after it are not charged (as if asked one by one,
// each only when the one before was admitted). It returns the decisions
// made, so the last is the refusal if there was one. The keys are distinct.
// The HTTP edge uses it for the origin and principal decisions of one
// request; without it, they cost two calls.
type Backend interface {
	Take(ctx context.Context, key string, lim Limit) (Decision, error)
}

// Request is one key of a chain, to be decided under its limit, spending
// Cost (the zero Cost: one unit; see Cost for more). A backend applies the
// cost through Limit.Span and answers through Decided.
type Request struct {
	Key   string
	Limit Limit
	Cost  Cost
}

// chainer is a backend that decides a chain of keys in one call.
type chainer interface {
	TakeChain(ctx context.Context, reqs []Request) ([]Decision, error)
}

// Policies are the budgets cobranca enforces. An Off limit disables its policy.
type Policies struct {
	Principal Limit // per principal (subject + client id), every request to /mcp
	Origin    Limit // per client IP, every request to /mcp
	Write     Limit // per principal, calls of medium-, high- and critical-tier tools
	Critical  Limit // per principal, approvals critical calls ask people for
}

// DefaultStoreTimeout is the StoreTimeout of Options that leave it zero
// (and COBRANCA_RATE_STORE_TIMEOUT's default; cmd/cobranca tests they agree).
// The default budgets are written once, in internal/config's table.
const DefaultStoreTimeout = 200 * time.Millisecond

// Options configure a Limiter.
type Options struct {
	Policies Policies
	// StoreTimeout bounds each store call; past it the store counts as down.
	StoreTimeout time.Duration
	// Replicas is how many processes share the budgets; while the store is
	// down each decides alone with its share of every budget.
	Replicas int
	// TrustedProxyHeader names the header that carries the client's address
	// (Fly-Client-IP, X-Forwarded-For: its rightmost address). Empty: the
	// connection's remote address is the origin.
	TrustedProxyHeader string
	// MaxLocalKeys bounds the keys held in memory (default 50 000).
	MaxLocalKeys int
	// OnRefused, when set, is told of every request answered 429 at the
	// HTTP level (before any MCP work), before the answer is written; the
	// server audits and counts them. It must be quick.
	OnRefused func(r *http.Request, policy string, d Decision)
	Logger    *slog.Logger
	Now       func() time.Time
}

// Limiter enforces the policies. It is safe for concurrent use.
type Limiter struct {
	backend Backend
	opts    Options
	local   *local

	downUntil atomic.Int64 // unix ns: the store is not asked again before
	lastWarn  atomic.Int64 // unix ns of the last "deciding locally" warning

	localDecisions atomic.Uint64
	storeFailures  atomic.Uint64
	earlyRefusals  atomic.Uint64
}

// storeRetry is how long the store is left alone after a failed call: in an
// outage, requests are decided locally at once instead of each waiting out
// the timeout.
const storeRetry = time.Second

// warnEvery spaces the "deciding locally" warnings.
const warnEvery = 10 * time.Second

// New returns a Limiter over backend.
func New(backend Backend, opts Options) *Limiter {
	if opts.StoreTimeout <= 0 {
		opts.StoreTimeout = DefaultStoreTimeout
	}
	opts.Replicas = max(opts.Replicas, 1)
	if opts.MaxLocalKeys <= 0 {
		opts.MaxLocalKeys = 50_000
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Limiter{backend: backend, opts: opts, local: newLocal(opts.MaxLocalKeys)}
}

// Stats are the Limiter's counters since it started.
type Stats struct {
	LocalDecisions uint64 // decided by the local fallback because the store was down
	StoreFailures  uint64 // store calls that failed or timed out
	EarlyRefusals  uint64 // refused by the pre-limiter without asking the store
}

// Stats returns the counters (for /metrics).
func (l *Limiter) Stats() Stats {
	return Stats{l.localDecisions.Load(), l.storeFailures.Load(), l.earlyRefusals.Load()}
}

// PrincipalKey identifies a principal for the per-principal policies: the
// subject and the client it acts through.
func PrincipalKey(subject, clientID string) string {
	return strconv.Itoa(len(subject)) + ":" + subject + clientID
}

// storeKey is the key under which policy's state for id is kept. Identities
// and addresses are hashed: the table holds no personal data, and every key
// has the same small size whatever the caller sent.
func storeKey(policy, id string) string {
	sum := sha256.Sum256([]byte(id))
	return policy + ":" + base64.RawURLEncoding.EncodeToString(sum[:18])
}

// errStoreDown marks a decision the store could not make.
var errStoreDown = errors.New("rate-limit store unavailable")

// step is one decision in the making: the key, its limit, the cost and its
// local state, with the pre-limiter's tokens held (taken at the time at)
// until the store has answered.
type step struct {
	policy string
	lim    Limit
	cost   Cost
	key    string
	e      *entry
	held   *rate.Reservation
	at     time.Time
}

// begin asks the local state about one request of policy for id spending
// c: refused early (ok false, with the decision to answer) when the store's
// last refusal of the key still refuses it, or when the pre-limiter refuses;
// otherwise the step holds the pre-limiter's tokens for the store's decision.
func (l *Limiter) begin(policy string, lim Limit, c Cost, id string, now time.Time) (s step, d Decision, ok bool) {
	key := storeKey(policy, id)
	e := l.local.get(key, lim, l.opts.Replicas)
	if d, refused := e.refusedAt(now, lim, c); refused {
		l.earlyRefusals.Add(1)
		return step{}, d, false
	}
	pre, held := take(e.pre, now, preTokens(lim, c))
	if !pre.Allowed {
		l.earlyRefusals.Add(1)
		return step{}, pre, false
	}
	return step{policy: policy, lim: lim, cost: c, key: key, e: e, held: held, at: now}, Decision{}, true
}

// settle records the store's decision d, asked at now, in the local state.
// Only admitted requests count against the pre-limiter; a refusal is
// remembered until its Retry-After, counted from before the question was
// sent, so never past the moment the store would admit again. An admission
// moved the TAT, so it forgets an earlier refusal (of a larger cost, which
// would now wait longer than remembered), unless it ran the key into debt
// (a cost above the burst, Cost): that is remembered as GCRA would refuse one
// unit on the TAT the store reported, since the pre-limiter, which holds no
// more than a burst, would tell a caller to come back too soon.
func (s step) settle(d Decision, now time.Time) {
	if d.Allowed {
		s.e.fallback.AllowN(now, s.fallbackTokens())
		t, tau := s.lim.Span(Cost{})
		switch {
		case d.Reset > time.Duration(tau)*time.Microsecond:
			s.e.refuse(now, s.lim, Cost{}, Decision{RetryAfter: d.Reset + time.Duration(t-tau)*time.Microsecond, Reset: d.Reset})
		case s.e.refused.Load() != nil:
			s.e.refused.Store(nil)
		}
		return
	}
	s.abandon()
	s.e.refuse(now, s.lim, s.cost, d)
}

// abandon gives the pre-limiter its tokens back.
func (s step) abandon() { s.held.CancelAt(s.at) }

// fallbackTokens is how many of the fallback's tokens the step spends: its
// pre-limiter tokens, at most the fallback's burst (its share).
func (s step) fallbackTokens() int { return min(preTokens(s.lim, s.cost), s.e.fallback.Burst()) }

// storeUp reports whether the store is to be asked at now: it is, unless a
// call failed less than storeRetry ago.
func (l *Limiter) storeUp(now time.Time) bool {
	until := l.downUntil.Load()
	return until == 0 || now.UnixNano() >= until
}

// check decides one request of policy for id spending c. When the store
// does not answer, a failClosed check returns an error wrapping
// errStoreDown; any other is decided by the local fallback.
func (l *Limiter) check(ctx context.Context, policy string, lim Limit, c Cost, id string, failClosed bool) (Decision, error) {
	if lim.Off() {
		return Decision{Allowed: true}, nil
	}
	now := l.opts.Now()
	s, d, ok := l.begin(policy, lim, c, id, now)
	if !ok {
		return d, nil
	}
	ds, err := l.decide(ctx, now, failClosed, s)
	if err != nil {
		return Decision{}, err
	}
	return ds[0], nil
}

// decide asks the store about steps as one chain (one call; see Backend),
// at now, and settles each step with the answer. When the store does not
// answer, a failClosed decision returns an error wrapping errStoreDown; any
// other is made by the local fallback, in the same order, stopping at the
// first refusal. The decisions returned stop at the first refusal too.
func (l *Limiter) decide(ctx context.Context, now time.Time, failClosed bool, steps ...step) ([]Decision, error) {
	var err error
	if l.storeUp(now) {
		sctx, cancel := context.WithTimeout(ctx, l.opts.StoreTimeout)
		var ds []Decision
		ds, err = l.take(sctx, steps)
		cancel()
		if err == nil {
			for i, s := range steps {
				if i < len(ds) {
					s.settle(ds[i], now)
				} else {
					s.abandon() // after a refusal: not asked
				}
			}
			return ds, nil
		}
		if ctx.Err() != nil {
			abandon(steps)
			return nil, ctx.Err() // the caller left; the store is not to blame
		}
		l.storeFailures.Add(1)
		l.downUntil.Store(now.Add(storeRetry).UnixNano())
	} else {
		err = errors.New("store down since a recent failure")
	}

	if failClosed {
		abandon(steps)
		return nil, fmt.Errorf("%w: %w", errStoreDown, err)
	}
	ds := make([]Decision, 0, len(steps))
	for i, s := range steps {
		l.localDecisions.Add(1)
		if last := l.lastWarn.Load(); now.UnixNano()-last >= int64(warnEvery) && l.lastWarn.CompareAndSwap(last, now.UnixNano()) {
			l.opts.Logger.WarnContext(ctx, "rate-limit store unavailable: deciding on the local limiter (each budget divided by the replica count)",
				"replicas", l.opts.Replicas, "local_decisions", l.localDecisions.Load(), "err", err)
		}
		d, _ := take(s.e.fallback, now, s.fallbackTokens())
		ds = append(ds, d)
		if !d.Allowed {
			abandon(steps[i:])
			break
		}
	}
	return ds, nil
}

func abandon(steps []step) {
	for _, s := range steps {
		s.abandon()
	}
}

// DecideChain decides reqs in order with take, stopping after the first
// refusal: the rule of TakeChain, for a backend that decides one key at a
// time inside one transaction.
func DecideChain(reqs []Request, take func(Request) (Decision, error)) ([]Decision, error) {
	ds := make([]Decision, 0, len(reqs))
	for _, r := range reqs {
		d, err := take(r)
		if err != nil {
			return nil, err
		}
		if ds = append(ds, d); !d.Allowed {
			break
		}
	}
	return ds, nil
}

// take is the store call for a chain: one TakeChain when the backend has it
// and there is more than one key or a cost of more than one unit, else Take
// after Take.
func (l *Limiter) take(ctx context.Context, steps []step) ([]Decision, error) {
	costly := slices.ContainsFunc(steps, func(s step) bool { return s.cost != Cost{} })
	c, ok := l.backend.(chainer)
	if costly && !ok {
		return nil, errors.New("rate limit: the store spends one unit at a time, and a call costs more")
	}
	if ok && (len(steps) > 1 || costly) {
		reqs := make([]Request, len(steps))
		for i, s := range steps {
			reqs[i] = Request{Key: s.key, Limit: s.lim, Cost: s.cost}
		}
		ds, err := c.TakeChain(ctx, reqs)
		if err == nil && (len(ds) == 0 || len(ds) > len(steps) || (len(ds) < len(steps) && ds[len(ds)-1].Allowed)) {
			err = fmt.Errorf("rate limit: %d decisions for a chain of %d", len(ds), len(steps))
		}
		return ds, err
	}
	ds := make([]Decision, 0, len(steps))
	for _, s := range steps {
		d, err := l.backend.Take(ctx, s.key, s.lim)
		if err != nil {
			return nil, err
		}
		ds = append(ds, d)
		if !d.Allowed {
			break
		}
	}
	return ds, nil
}

// Budgeted reports whether calls of tools of the risk tier spend a tier
// budget in Tier: every tier but low (read-only tools spend only the
// per-principal and per-origin request budgets).
func (l *Limiter) Budgeted(risk contract.Risk) bool { return risk != contract.Low }

// Tier enforces the per-principal budget of risk's tier, before a tool's
// logic runs. It returns nil when the call may go on, a *failure.Error
// rate_limited (with RetryAfter) when the budget is spent, and a
// *failure.Error unavailable when the store cannot be asked: budgets guard
// state changes, so they fail closed. Low-tier calls have no tier budget
// (the principal and origin limits cover them). Medium, high and critical
// calls spend the write budget: a critical call's own budget is spent only
// when it asks a person for an approval (Approval), so a dry run, the
// approved retry and a repeat of a key spend only the write budget.
func (l *Limiter) Tier(ctx context.Context, principalKey string, risk contract.Risk) error {
	policy, lim, what := l.tier(risk)
	if policy == "" {
		return nil
	}
	return l.spend(ctx, policy, lim, Cost{}, principalKey, what, 0)
}

// tier is the budget calls of risk's tier spend (no policy: none), and what
// names the calls it counts, for a refusal's message.
func (l *Limiter) tier(risk contract.Risk) (policy string, lim Limit, what string) {
	switch risk {
	case contract.Low:
		return "", Limit{}, ""
	case contract.Medium, contract.High, contract.Critical:
		return "write", l.opts.Policies.Write, "medium-, high- and critical-tier calls"
	}
	// forbidden, should it ever reach here: the scarcest budget
	return "critical", l.opts.Policies.Critical, string(risk) + "-tier calls"
}

// TierRest spends the rest of a call's cost, units in all (contract.Cost),
// from the budget Tier spent its first unit from: units − 1 more, in one
// atomic step; nothing for units ≤ 1 or a tier without a budget. A call
// weighted by its size learns its units only once its arguments are read,
// after Tier. The rest is admitted exactly when the whole cost would have
// been, its first unit included (see Cost: above the burst, on a full
// bucket). A refusal is Tier's, with the Retry-After of a retry of the call,
// which spends its first unit and its rest again. The first unit stays
// spent: the call was read and sized.
func (l *Limiter) TierRest(ctx context.Context, principalKey string, risk contract.Risk, units int64) error {
	policy, lim, what := l.tier(risk)
	if policy == "" || units <= 1 {
		return nil
	}
	what = fmt.Sprintf("%s: this call costs %d units of that budget", what, units)
	return l.spend(ctx, policy, lim, Cost{N: units - 1, Whole: units}, principalKey, what, lim.Interval())
}

// Approval enforces the per-principal budget of approvals asked for (the
// critical budget): spent once for each pending approval a critical call
// creates, the thing that asks a person for something. Its answers are
// Tier's.
func (l *Limiter) Approval(ctx context.Context, principalKey string) error {
	return l.spend(ctx, "critical", l.opts.Policies.Critical, Cost{}, principalKey, "approvals asked for", 0)
}

// spend takes c from policy's budget lim for principalKey; what names the
// calls it counts, for the refusal's message, and later is added to a
// refusal's Retry-After (what a retry spends before this step).
func (l *Limiter) spend(ctx context.Context, policy string, lim Limit, c Cost, principalKey, what string, later time.Duration) error {
	d, err := l.check(ctx, policy, lim, c, principalKey, true)
	switch {
	case errors.Is(err, errStoreDown):
		return &failure.Error{Code: failure.Unavailable, Message: "rate limits cannot be checked right now; retry later", RetryAfter: storeRetry, Err: err}
	case err != nil:
		return err
	case !d.Allowed:
		d.RetryAfter += later
		return &failure.Error{
			Code:       failure.RateLimited,
			Message:    fmt.Sprintf("too many %s; retry in %d ms", what, d.RetryAfterMillis()),
			RetryAfter: time.Duration(d.RetryAfterMillis()) * time.Millisecond,
		}
	}
	return nil
}

// sweeper is a backend that can delete the keys whose TAT has passed.
type sweeper interface {
	Sweep(ctx context.Context) (int64, error)
}

// Run deletes expired keys from the store every interval until ctx ends, if
// the backend can. Expired keys mean the same as missing ones, so this only
// keeps the table to the keys in use; a failed sweep is logged and retried
// next time.
func (l *Limiter) Run(ctx context.Context, every time.Duration) {
	s, ok := l.backend.(sweeper)
	if !ok {
		return
	}
	ticker.Run(ctx, every, func(ctx context.Context) {
		if _, err := s.Sweep(ctx); err != nil && ctx.Err() == nil {
			l.opts.Logger.WarnContext(ctx, "rate-limit sweep failed", "err", err)
		}
	})
}
