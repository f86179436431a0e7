package limits

import (
	"container/list"
	"hash/maphash"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"
)

// local holds the in-process state of each key, in a bounded LRU split into
// shards so that concurrent requests rarely share a lock. A key evicted loses
// nothing that matters: the pre-limiter only ever refuses early, so a fresh
// one merely asks the store; the fallback restarts with a full (per-replica)
// burst.
type local struct {
	seed   maphash.Seed
	shards []shard
}

type shard struct {
	mu    sync.Mutex
	max   int
	order *list.List // of *entry, most recently used first
	byKey map[string]*list.Element
}

// entry is one key's local state.
type entry struct {
	key string
	// pre admits what the store would admit, at the full budget; it sees
	// only requests this process admitted (refusals are given back), so when
	// it refuses, the shared budget is certainly spent too.
	pre *rate.Limiter
	// fallback decides while the store does not answer: the budget divided
	// by the replica count. Requests admitted by the store feed it too, so
	// an outage starts from the key's recent use, not from a full burst.
	fallback *rate.Limiter
	// refused remembers the store's last refusal of the key: until its
	// until it would refuse that request again (a refusal leaves the TAT as
	// it is, and only admissions move it, forward), so requests are refused
	// here without asking. One pointer, so that a reader never mixes two
	// refusals. Being part of the entry, this memory is bounded like the
	// rest of it.
	refused atomic.Pointer[refusal]
}

// refusal is a refusal of the store, in unix ns: until is when the refused
// request would be admitted, full when the key is back to a full burst (for
// the RateLimit field); need is the refused request's span t − τ
// (Limit.Span, µs), by which requests of other costs are compared to it.
type refusal struct {
	until, full, need int64
}

// refuse remembers the store's refusal d of a request spending c under lim,
// decided after now.
func (e *entry) refuse(now time.Time, lim Limit, c Cost, d Decision) {
	t, tau := lim.Span(c)
	e.refused.Store(&refusal{until: now.Add(d.RetryAfter).UnixNano(), full: now.Add(d.Reset).UnixNano(), need: t - tau})
}

// refusedAt reports whether the store's last refusal still holds at now for
// a request spending c under lim, and the decision to answer if so. A
// request needing more of the budget than the one refused (a larger span
// t − τ) waits that much longer; one needing less, that much less.
func (e *entry) refusedAt(now time.Time, lim Limit, c Cost) (Decision, bool) {
	r := e.refused.Load()
	if r == nil {
		return Decision{}, false
	}
	t, tau := lim.Span(c)
	until := r.until + (t-tau-r.need)*int64(time.Microsecond)
	if now.UnixNano() >= until {
		return Decision{}, false
	}
	retry := time.Duration(until - now.UnixNano())
	return Decision{RetryAfter: retry, Reset: max(time.Duration(r.full-now.UnixNano()), retry)}, true
}

const localShards = 16

func newLocal(maxKeys int) *local {
	per := max(maxKeys/localShards, 1)
	l := &local{seed: maphash.MakeSeed(), shards: make([]shard, localShards)}
	for i := range l.shards {
		// The map grows with the keys seen: sized for the bound up front it held
		// 1.7 MB from the start, which a collector paced at GOGC 400 multiplies
		// into about 8 MB of heap under load (docs/benchmarks.md, issue 31).
		l.shards[i] = shard{max: per, order: list.New(), byKey: map[string]*list.Element{}}
	}
	return l
}

// get returns key's entry, creating it for lim (and evicting the least
// recently used key of its shard when full).
func (l *local) get(key string, lim Limit, replicas int) *entry {
	s := &l.shards[maphash.String(l.seed, key)%localShards]
	s.mu.Lock()
	defer s.mu.Unlock()
	if el, ok := s.byKey[key]; ok {
		s.order.MoveToFront(el)
		return el.Value.(*entry)
	}
	if s.order.Len() >= s.max {
		old := s.order.Back()
		s.order.Remove(old)
		delete(s.byKey, old.Value.(*entry).key)
	}
	e := &entry{key: key, pre: newBucket(lim, 1), fallback: newBucket(lim, replicas)}
	s.byKey[key] = s.order.PushFront(e)
	return e
}

// len is the number of keys held.
func (l *local) len() int {
	n := 0
	for i := range l.shards {
		s := &l.shards[i]
		s.mu.Lock()
		n += s.order.Len()
		s.mu.Unlock()
	}
	return n
}

// newBucket is the token bucket equivalent of lim shared by n replicas: the
// same GCRA with rate and burst divided by n (the burst never below one).
func newBucket(lim Limit, n int) *rate.Limiter {
	n = max(n, 1)
	every := rate.Every(lim.Interval() * time.Duration(n))
	burst := int(max(lim.Burst/int64(n), 1))
	return rate.NewLimiter(every, burst) // starts full
}

// take asks b for n tokens at now without waiting (none: nothing to ask),
// and says how it went in the terms of a Decision. Refused requests are given
// back.
func take(b *rate.Limiter, now time.Time, n int) (Decision, *rate.Reservation) {
	if n <= 0 {
		return Decision{Allowed: true, Remaining: int64(max(b.TokensAt(now), 0)), Reset: bucketReset(b, now)}, b.ReserveN(now, 0)
	}
	r := b.ReserveN(now, n)
	if !r.OK() {
		return Decision{RetryAfter: time.Hour}, nil
	}
	if wait := r.DelayFrom(now); wait > 0 {
		r.CancelAt(now)
		return Decision{RetryAfter: wait, Reset: bucketReset(b, now)}, nil
	}
	tokens := b.TokensAt(now)
	return Decision{Allowed: true, Remaining: int64(max(tokens, 0)), Reset: bucketReset(b, now)}, r
}

// preTokens is how many of the pre-limiter's tokens a request spending c
// under lim needs, so that the pre-limiter refuses only what the store would
// refuse. The store admits when its available units, Burst − backlog/T, are
// at least n − max(whole − Burst, 0) (Limit.Span); the pre-limiter, which
// sees only this process's admissions at the full budget, holds at least as
// many. One unit: one token.
func preTokens(lim Limit, c Cost) int {
	n, whole := c.units()
	return int(n - max(whole-lim.Burst, 0))
}

// bucketReset is how long until b is full again.
func bucketReset(b *rate.Limiter, now time.Time) time.Duration {
	missing := float64(b.Burst()) - b.TokensAt(now)
	if missing <= 0 || b.Limit() <= 0 {
		return 0
	}
	return time.Duration(missing / float64(b.Limit()) * float64(time.Second))
}
