// Package limitstest is the behaviour every limits.Backend must show, run by
// each backend's tests against a real database.
package limitstest

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cobranca/cobranca/internal/limits"
)

// Backend is a backend under test: it decides chains (see limits.Backend)
// and Sweep deletes expired keys.
type Backend interface {
	limits.Backend
	TakeChain(ctx context.Context, reqs []limits.Request) ([]limits.Decision, error)
	Sweep(ctx context.Context) (int64, error)
}

// Run runs the suite. newBackend returns a backend on an empty table;
// advance moves its clock; slack is how far its clock may drift from the
// test's during one test (zero for a fake clock).
func Run(t *testing.T, newBackend func(t *testing.T) Backend, advance func(time.Duration), slack time.Duration) {
	ctx := context.Background()
	take := func(t *testing.T, b Backend, key string, lim limits.Limit) limits.Decision {
		t.Helper()
		d, err := b.Take(ctx, key, lim)
		if err != nil {
			t.Fatalf("Take(%q): %v", key, err)
		}
		return d
	}
	near := func(got, want time.Duration) bool { return got <= want && got >= want-slack-time.Millisecond }
	hourly := limits.Limit{Rate: 5, Period: time.Hour, Burst: 5} // T = 12 min: nothing refills during a test

	t.Run("burst then refusal", func(t *testing.T) {
		b := newBackend(t)
		for i := range int64(5) {
			d := take(t, b, "k", hourly)
			if !d.Allowed || d.Remaining != 4-i || d.RetryAfter != 0 {
				t.Fatalf("request %d: %+v, want allowed with %d remaining", i+1, d, 4-i)
			}
		}
		for i := range 20 {
			d := take(t, b, "k", hourly)
			if d.Allowed || d.Remaining != 0 || !near(d.RetryAfter, 12*time.Minute) || !near(d.Reset, time.Hour) {
				t.Fatalf("refusal %d: %+v, want refused, retry after ≈12m, reset ≈1h (refusals must not move the TAT)", i+1, d)
			}
		}
		if d := take(t, b, "other", hourly); !d.Allowed || d.Remaining != 4 {
			t.Fatalf("another key: %+v, want allowed with 4 remaining", d)
		}
	})

	t.Run("refill", func(t *testing.T) {
		b := newBackend(t)
		lim := limits.Limit{Rate: 10, Period: time.Second, Burst: 2} // T = 100ms
		take(t, b, "k", lim)
		take(t, b, "k", lim)
		if d := take(t, b, "k", lim); d.Allowed {
			t.Fatalf("third at once: %+v, want refused", d)
		}
		advance(110 * time.Millisecond)
		if d := take(t, b, "k", lim); !d.Allowed {
			t.Fatalf("one interval later: %+v, want allowed", d)
		}
		advance(300 * time.Millisecond)
		if d := take(t, b, "k", lim); !d.Allowed || d.Remaining != 1 {
			t.Fatalf("long after: %+v, want allowed with 1 remaining", d)
		}
	})

	t.Run("concurrent callers share one budget", func(t *testing.T) {
		b := newBackend(t)
		lim := limits.Limit{Rate: 20, Period: time.Hour, Burst: 20}
		var admitted, refused atomic.Int64
		var wg sync.WaitGroup
		for range 16 {
			wg.Go(func() {
				for range 5 {
					d, err := b.Take(ctx, "hot", lim)
					switch {
					case err != nil:
						t.Error(err)
						return
					case d.Allowed:
						admitted.Add(1)
					case d.RetryAfter <= 0:
						t.Errorf("refusal without RetryAfter: %+v", d)
					default:
						refused.Add(1)
					}
				}
			})
		}
		wg.Wait()
		if admitted.Load() != 20 || refused.Load() != 60 {
			t.Fatalf("admitted %d, refused %d; want 20 and 60", admitted.Load(), refused.Load())
		}
	})

	chain := func(t *testing.T, b Backend, reqs ...limits.Request) []limits.Decision {
		t.Helper()
		ds, err := b.TakeChain(ctx, reqs)
		if err != nil {
			t.Fatalf("TakeChain: %v", err)
		}
		return ds
	}
	remaining := func(t *testing.T, b Backend, key string, lim limits.Limit) int64 {
		t.Helper()
		d := take(t, b, key, lim)
		if !d.Allowed {
			return -1
		}
		return d.Remaining + 1 // what was left before this take
	}

	t.Run("chain", func(t *testing.T) {
		lim2 := limits.Limit{Rate: 2, Period: time.Hour, Burst: 2}
		for _, n := range []int{2, 3} {
			b := newBackend(t)
			var reqs []limits.Request
			for i := range n {
				lim := hourly
				if i == n-1 {
					lim = lim2 // the last key runs out first
				}
				reqs = append(reqs, limits.Request{Key: "chain:" + string(rune('a'+i)), Limit: lim})
			}
			for round := range 2 {
				ds := chain(t, b, reqs...)
				if len(ds) != n {
					t.Fatalf("chain of %d, round %d: %d decisions %+v, want %d", n, round+1, len(ds), ds, n)
				}
				for i, d := range ds {
					if want := reqs[i].Limit.Burst - 1 - int64(round); !d.Allowed || d.Remaining != want {
						t.Fatalf("chain of %d, round %d, key %d: %+v, want allowed with %d remaining", n, round+1, i, d, want)
					}
				}
			}
			// The last key is spent: every key before it is charged, it refuses.
			ds := chain(t, b, reqs...)
			if len(ds) != n || ds[n-1].Allowed || !near(ds[n-1].RetryAfter, 30*time.Minute) || !ds[0].Allowed || ds[0].Remaining != 2 {
				t.Fatalf("chain of %d, last key spent: %+v, want the others charged (2 left) and the last refused, retry after ≈30m", n, ds)
			}
		}

		// A refusal stops the chain: the keys after it are not charged.
		b := newBackend(t)
		first := limits.Request{Key: "first", Limit: limits.Limit{Rate: 1, Period: time.Hour, Burst: 1}}
		second := limits.Request{Key: "second", Limit: hourly}
		if ds := chain(t, b, first, second); len(ds) != 2 || !ds[0].Allowed || !ds[1].Allowed || ds[1].Remaining != 4 {
			t.Fatalf("first chain: %+v, want both admitted", ds)
		}
		for i := range 3 {
			ds := chain(t, b, first, second)
			if len(ds) != 1 || ds[0].Allowed || !near(ds[0].RetryAfter, time.Hour) {
				t.Fatalf("chain %d after the first key is spent: %+v, want only the first decided, refused, retry after ≈1h", i+2, ds)
			}
		}
		if got := remaining(t, b, "second", hourly); got != 4 {
			t.Fatalf("the second key after refused chains: %d left, want 4 (refused chains charge nothing after the refusal)", got)
		}
	})

	t.Run("concurrent chains share the first key's budget", func(t *testing.T) {
		b := newBackend(t)
		shared := limits.Limit{Rate: 20, Period: time.Hour, Burst: 20}
		var admitted, refused atomic.Int64
		var wg sync.WaitGroup
		for g := range 16 {
			wg.Go(func() {
				own := limits.Request{Key: "own:" + string(rune('a'+g)), Limit: hourly}
				for range 5 {
					ds, err := b.TakeChain(ctx, []limits.Request{{Key: "shared", Limit: shared}, own})
					switch {
					case err != nil:
						t.Error(err)
						return
					case len(ds) == 2 && ds[0].Allowed && ds[1].Allowed:
						admitted.Add(1)
					case len(ds) == 1 && !ds[0].Allowed && ds[0].RetryAfter > 0:
						refused.Add(1)
					default:
						t.Errorf("chain answered %+v", ds)
					}
				}
			})
		}
		wg.Wait()
		if admitted.Load() != 20 || refused.Load() != 60 {
			t.Fatalf("admitted %d, refused %d; want 20 and 60", admitted.Load(), refused.Load())
		}
	})

	t.Run("sweep", func(t *testing.T) {
		b := newBackend(t)
		lim := limits.Limit{Rate: 100, Period: time.Second, Burst: 1} // T = 10ms
		take(t, b, "gone", lim)
		take(t, b, "kept", hourly)
		advance(50 * time.Millisecond)
		n, err := b.Sweep(ctx)
		if err != nil || n != 1 {
			t.Fatalf("Sweep = %d, %v; want 1 key deleted", n, err)
		}
		if d := take(t, b, "kept", hourly); !d.Allowed || d.Remaining != 3 {
			t.Fatalf("kept key after sweep: %+v, want its state (3 remaining)", d)
		}
	})
}

// RunCost runs the suite of decisions that spend more than one unit
// (limits.Cost). newPair returns two backends on one empty table, each
// through its own handle on the database (two processes, as replicas are);
// slack is as for Run.
func RunCost(t *testing.T, newPair func(t *testing.T) (Backend, Backend), slack time.Duration) {
	ctx := context.Background()
	ten := limits.Limit{Rate: 10, Period: time.Hour, Burst: 10} // T = 6 min: nothing refills during a test
	const T = 6 * time.Minute
	spend := func(t *testing.T, b Backend, key string, c limits.Cost) limits.Decision {
		t.Helper()
		ds, err := b.TakeChain(ctx, []limits.Request{{Key: key, Limit: ten, Cost: c}})
		if err != nil || len(ds) != 1 {
			t.Fatalf("TakeChain(%q, %+v) = %+v, %v; want one decision", key, c, ds, err)
		}
		return ds[0]
	}
	near := func(got, want time.Duration) bool { return got <= want && got >= want-slack-time.Millisecond }

	t.Run("spend n", func(t *testing.T) {
		b, _ := newPair(t)
		if d := spend(t, b, "k", limits.Cost{N: 4}); !d.Allowed || d.Remaining != 6 || !near(d.Reset, 4*T) {
			t.Fatalf("4 of a full 10: %+v, want allowed with 6 remaining, reset ≈4T", d)
		}
		// 7 more would leave the key 11 units ahead: refused until one unit refills.
		if d := spend(t, b, "k", limits.Cost{N: 7}); d.Allowed || !near(d.RetryAfter, T) {
			t.Fatalf("7 of 6 left: %+v, want refused, retry after ≈T", d)
		}
		if d := spend(t, b, "k", limits.Cost{}); !d.Allowed || d.Remaining != 5 {
			t.Fatalf("one unit after the refusal: %+v, want allowed with 5 remaining (a refusal spends nothing)", d)
		}
		if d := spend(t, b, "k", limits.Cost{N: 5}); !d.Allowed || d.Remaining != 0 {
			t.Fatalf("the last 5: %+v, want allowed with none remaining", d)
		}
	})

	t.Run("a cost above the burst waits for a full bucket, then runs into debt", func(t *testing.T) {
		b, _ := newPair(t)
		if d := spend(t, b, "k", limits.Cost{N: 25}); !d.Allowed || d.Remaining != 0 || !near(d.Reset, 25*T) {
			t.Fatalf("25 on a full bucket of 10: %+v, want allowed, none remaining, reset ≈25T", d)
		}
		if d := spend(t, b, "k", limits.Cost{}); d.Allowed || !near(d.RetryAfter, 16*T) {
			t.Fatalf("one unit after the debt: %+v, want refused, retry after ≈16T (25T ahead, burst 10)", d)
		}
		spend(t, b, "other", limits.Cost{})
		if d := spend(t, b, "other", limits.Cost{N: 25}); d.Allowed || !near(d.RetryAfter, T) {
			t.Fatalf("25 on a bucket one short of full: %+v, want refused until it is full again, ≈T", d)
		}
	})

	t.Run("the rest of a call is admitted as its whole would have been", func(t *testing.T) {
		b, _ := newPair(t)
		spend(t, b, "k", limits.Cost{}) // the call's first unit, before its size is known
		if d := spend(t, b, "k", limits.Cost{N: 24, Whole: 25}); !d.Allowed || !near(d.Reset, 25*T) {
			t.Fatalf("the rest of 25 after its first unit, on a full bucket: %+v, want allowed, reset ≈25T", d)
		}
		spend(t, b, "other", limits.Cost{}) // another call
		spend(t, b, "other", limits.Cost{}) // this call's first unit
		if d := spend(t, b, "other", limits.Cost{N: 24, Whole: 25}); d.Allowed || !near(d.RetryAfter, T) {
			t.Fatalf("the rest of 25 when the bucket was not full: %+v, want refused, retry after ≈T", d)
		}
		if d := spend(t, b, "third", limits.Cost{N: 3, Whole: 4}); !d.Allowed || d.Remaining != 7 {
			t.Fatalf("the rest of 4 within the burst: %+v, want allowed with 7 remaining", d)
		}
	})

	t.Run("concurrent costs through two handles share one budget", func(t *testing.T) {
		one, two := newPair(t)
		var admitted, refused atomic.Int64
		var wg sync.WaitGroup
		for g := range 16 {
			b := one
			if g%2 == 1 {
				b = two
			}
			wg.Go(func() {
				for range 3 {
					ds, err := b.TakeChain(ctx, []limits.Request{{Key: "hot", Limit: ten, Cost: limits.Cost{N: 4}}})
					switch {
					case err != nil:
						t.Error(err)
						return
					case len(ds) != 1:
						t.Errorf("decisions %+v, want one", ds)
					case ds[0].Allowed:
						admitted.Add(1)
					case ds[0].RetryAfter <= 0:
						t.Errorf("refusal without RetryAfter: %+v", ds[0])
					default:
						refused.Add(1)
					}
				}
			})
		}
		wg.Wait()
		if admitted.Load() != 2 || refused.Load() != 46 {
			t.Fatalf("admitted %d, refused %d calls of 4 units on a burst of 10; want 2 and 46", admitted.Load(), refused.Load())
		}
		if d := spend(t, one, "hot", limits.Cost{N: 2}); !d.Allowed || d.Remaining != 0 {
			t.Fatalf("the 2 units left: %+v, want allowed with none remaining", d)
		}
		if d := spend(t, two, "hot", limits.Cost{}); d.Allowed || !near(d.RetryAfter, T) {
			t.Fatalf("the other handle, one unit: %+v, want refused, retry after ≈T", d)
		}
	})
}

// Clock is a fake clock the tests move by hand, safe for concurrent use.
type Clock struct {
	mu  sync.Mutex
	now time.Time
}

// NewClock returns a Clock at 2026-07-01 12:00 UTC.
func NewClock() *Clock { return &Clock{now: time.Date(2026, 7, 1, 12, 0, 0, 0, time.UTC)} }

// Now is the clock's time.
func (c *Clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }

// Advance moves the clock forward by d.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}
