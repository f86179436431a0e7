package limits

import (
	"context"
	"runtime"
	"strconv"
	"sync"
	"testing"
	"time"
)

// TestLocalBounded: 100 000 distinct keys leave the pre-limiter at its bound,
// in keys and in memory.
func TestLocalBounded(t *testing.T) {
	const bound = 10_000
	lim := Limit{Rate: 600, Period: time.Minute, Burst: 60}
	l := newLocal(bound)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	now := t0
	for i := range 100_000 {
		e := l.get(storeKey("origin", strconv.Itoa(i)), lim, 3)
		take(e.pre, now, 1)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	if n := l.len(); n > bound || n < bound-localShards*64 {
		t.Errorf("after 100 000 keys the pre-limiter holds %d, want at most %d (and close to it)", n, bound)
	}
	// An entry (key, two buckets, list element, map slot) is well under 1 KiB.
	if grew := int64(after.HeapAlloc) - int64(before.HeapAlloc); grew > bound*1024 {
		t.Errorf("heap grew by %d bytes for %d keys held, want under %d", grew, bound, bound*1024)
	}
}

// TestLocalEvictsLeastRecentlyUsed: a key in use survives a stream of new ones.
func TestLocalEvictsLeastRecentlyUsed(t *testing.T) {
	lim := Limit{Rate: 1, Period: time.Hour, Burst: 1}
	l := newLocal(localShards * 4)
	hot := l.get("hot", lim, 1)
	for i := range 1000 {
		l.get(strconv.Itoa(i), lim, 1)
		if l.get("hot", lim, 1) != hot {
			t.Fatalf("the hot key was evicted after %d new keys", i+1)
		}
	}
}

// TestBucketMatchesGCRA: the pre-limiter's token bucket refuses exactly when
// GCRA refuses, so "refused locally" implies "refused by the store".
func TestBucketMatchesGCRA(t *testing.T) {
	lim := Limit{Rate: 10, Period: time.Second, Burst: 3}
	b := newBucket(lim, 1)
	var tat time.Time
	now := t0
	for i, step := range []time.Duration{0, 0, 0, 0, 50, 50, 0, 100, 300, 0, 0, 0, 0, 1000} {
		now = now.Add(step * time.Millisecond)
		var want Decision
		want, tat = GCRA(lim, Cost{}, tat, now)
		got, _ := take(b, now, 1)
		if got.Allowed != want.Allowed || got.Remaining != want.Remaining || got.RetryAfter.Round(time.Millisecond) != want.RetryAfter {
			t.Fatalf("step %d: bucket %+v, GCRA %+v", i, got, want)
		}
	}
}

func TestNewBucketShare(t *testing.T) {
	b := newBucket(Limit{Rate: 600, Period: time.Minute, Burst: 60}, 3)
	if b.Burst() != 20 || b.Limit() < 3.33 || b.Limit() > 3.34 {
		t.Errorf("a third of 600/1m,burst=60 = %v/s burst %d, want 3.33/s burst 20", b.Limit(), b.Burst())
	}
	if b := newBucket(Limit{Rate: 10, Period: time.Hour, Burst: 3}, 5); b.Burst() != 1 {
		t.Errorf("a fifth of burst 3 = %d, want at least 1", b.Burst())
	}
}

// refusing is a store that refuses every key, retry after 1.5 s, counting
// the calls for the keys in calls.
type refusing struct {
	mu    sync.Mutex
	calls map[string]int
}

func (r *refusing) Take(_ context.Context, key string, _ Limit) (Decision, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.calls[key]; ok {
		r.calls[key]++
	}
	return Decision{RetryAfter: 1500 * time.Millisecond, Reset: 3 * time.Second}, nil
}

// TestRefusalRemembered: a refusal from the store is remembered until its
// Retry-After, no longer, and the memory of refusals stays within the
// local bound however many keys are refused.
func TestRefusalRemembered(t *testing.T) {
	const bound = 1024
	now := t0
	store := &refusing{calls: map[string]int{}}
	for _, id := range []string{"a", "0", "99999"} {
		store.calls[storeKey("origin", id)] = 0
	}
	l := New(store, Options{MaxLocalKeys: bound, Now: func() time.Time { return now }})
	lim := Limit{Rate: 600, Period: time.Minute, Burst: 60}
	ctx := context.Background()
	calls := func(id string) int {
		store.mu.Lock()
		defer store.mu.Unlock()
		return store.calls[storeKey("origin", id)]
	}
	decide := func(id string) Decision {
		t.Helper()
		d, err := l.check(ctx, "origin", lim, Cost{}, id, false)
		if err != nil || d.Allowed {
			t.Fatalf("check(%s) = %+v, %v; want a refusal", id, d, err)
		}
		return d
	}

	decide("a")
	now = now.Add(time.Second)
	if d := decide("a"); calls("a") != 1 || d.RetryAfter != 500*time.Millisecond || d.Reset != 2*time.Second {
		t.Errorf("1 s after the refusal: %d store calls, %+v; want 1 call, retry after 500ms, reset 2s", calls("a"), d)
	}
	now = now.Add(500 * time.Millisecond)
	if decide("a"); calls("a") != 2 {
		t.Errorf("at the Retry-After: %d store calls, want the store asked again", calls("a"))
	}

	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for i := range 100_000 {
		decide(strconv.Itoa(i))
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	if n := l.local.len(); n > bound {
		t.Errorf("after 100 000 refused keys %d are held, want at most %d", n, bound)
	}
	if grew := int64(after.HeapAlloc) - int64(before.HeapAlloc); grew > bound*1024 {
		t.Errorf("heap grew by %d bytes for %d keys held, want under %d", grew, bound, bound*1024)
	}
	// The latest refusals are remembered; the oldest were evicted with their
	// keys and cost a store call again (never an admission).
	if decide("99999"); calls("99999") != 1 {
		t.Errorf("a recent refusal was asked again: %d calls", calls("99999"))
	}
	if decide("0"); calls("0") != 2 {
		t.Errorf("an evicted refusal: %d calls, want the store asked again", calls("0"))
	}
}
