package limits

import (
	"runtime"
	"strconv"
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
		take(e.pre, now)
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
		want, tat = GCRA(lim, tat, now)
		got, _ := take(b, now)
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
