package limits

import (
	"math/rand/v2"
	"testing"
	"time"
)

var t0 = time.Date(2026, 7, 1, 12, 0, 0, 0, time.UTC)

func ms(n float64) time.Duration { return time.Duration(n * float64(time.Millisecond)) }

func TestGCRA(t *testing.T) {
	ten := Limit{Rate: 10, Period: time.Second, Burst: 3} // T = 100ms, τ = 300ms
	tests := []struct {
		name    string
		lim     Limit
		tat     time.Time // zero: never seen
		now     time.Time
		want    Decision
		wantTAT time.Time
	}{
		{"fresh key", ten, time.Time{}, t0,
			Decision{Allowed: true, Remaining: 2, Reset: ms(100)}, t0.Add(ms(100))},
		{"last slot of the burst", ten, t0.Add(ms(200)), t0,
			Decision{Allowed: true, Remaining: 0, Reset: ms(300)}, t0.Add(ms(300))},
		{"burst exhausted", ten, t0.Add(ms(300)), t0,
			Decision{RetryAfter: ms(100), Reset: ms(300)}, t0.Add(ms(300))},
		{"exact boundary admits", ten, t0.Add(ms(300)), t0.Add(ms(100)),
			Decision{Allowed: true, Remaining: 0, Reset: ms(300)}, t0.Add(ms(400))},
		{"one microsecond early", ten, t0.Add(ms(300)), t0.Add(ms(100) - time.Microsecond),
			Decision{RetryAfter: time.Microsecond, Reset: ms(200) + time.Microsecond}, t0.Add(ms(300))},
		{"partial refill", ten, t0.Add(ms(300)), t0.Add(ms(150)),
			Decision{Allowed: true, Remaining: 0, Reset: ms(250)}, t0.Add(ms(400))},
		{"one interval refills one", ten, t0.Add(ms(300)), t0.Add(ms(200)),
			Decision{Allowed: true, Remaining: 1, Reset: ms(200)}, t0.Add(ms(400))},
		{"full refill at the TAT", ten, t0.Add(ms(300)), t0.Add(ms(300)),
			Decision{Allowed: true, Remaining: 2, Reset: ms(100)}, t0.Add(ms(400))},
		{"a TAT in the past counts as fresh", ten, t0.Add(-time.Hour), t0,
			Decision{Allowed: true, Remaining: 2, Reset: ms(100)}, t0.Add(ms(100))},
		{"far behind: wait for the whole backlog", ten, t0.Add(5 * time.Second), t0,
			Decision{RetryAfter: 4800 * time.Millisecond, Reset: 5 * time.Second}, t0.Add(5 * time.Second)},
		{"burst of one", Limit{Rate: 1, Period: time.Minute, Burst: 1}, t0.Add(30 * time.Second), t0,
			Decision{RetryAfter: 30 * time.Second, Reset: 30 * time.Second}, t0.Add(30 * time.Second)},
		{"critical default", Limit{Rate: 10, Period: time.Hour, Burst: 3}, t0.Add(18 * time.Minute), t0,
			Decision{RetryAfter: 6 * time.Minute, Reset: 18 * time.Minute}, t0.Add(18 * time.Minute)},
		{"interval rounds up to a microsecond", Limit{Rate: 3, Period: time.Millisecond, Burst: 1}, time.Time{}, t0,
			Decision{Allowed: true, Remaining: 0, Reset: 334 * time.Microsecond}, t0.Add(334 * time.Microsecond)},
		{"off admits", Limit{}, t0.Add(time.Hour), t0, Decision{Allowed: true}, t0.Add(time.Hour)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, gotTAT := GCRA(tt.lim, Cost{}, tt.tat, tt.now)
			if got != tt.want || !gotTAT.Equal(tt.wantTAT) {
				t.Errorf("GCRA(%v, tat %v, now %v) =\n  %+v, TAT %v\nwant\n  %+v, TAT %v",
					tt.lim, tt.tat.Sub(t0), tt.now.Sub(t0), got, gotTAT.Sub(t0), tt.want, tt.wantTAT.Sub(t0))
			}
		})
	}
}

// TestGCRASequence follows one key through a burst, the refusal after it,
// and the refill.
func TestGCRASequence(t *testing.T) {
	lim := Limit{Rate: 60, Period: time.Minute, Burst: 5} // one a second, five at once
	var tat time.Time
	step := func(at time.Duration, wantAllowed bool, wantRemaining int64, wantRetry time.Duration) {
		t.Helper()
		var d Decision
		d, tat = GCRA(lim, Cost{}, tat, t0.Add(at))
		if d.Allowed != wantAllowed || d.Remaining != wantRemaining || d.RetryAfter != wantRetry {
			t.Fatalf("at %v: got %+v, want allowed=%v remaining=%d retryAfter=%v", at, d, wantAllowed, wantRemaining, wantRetry)
		}
	}
	for i := range int64(5) {
		step(0, true, 4-i, 0)
	}
	step(0, false, 0, time.Second)
	step(999*time.Millisecond, false, 0, time.Millisecond)
	step(time.Second, true, 0, 0)
	step(time.Second, false, 0, time.Second)
	step(3500*time.Millisecond, true, 1, 0) // 2.5 intervals later: two refilled, one taken
	step(10*time.Second, true, 4, 0)        // idle long enough: a whole burst again
}

// TestGCRABound checks the defining property on random arrivals: over any
// run, admitted ≤ burst + elapsed/T.
func TestGCRABound(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 200 {
		lim := Limit{Rate: 1 + r.Int64N(100), Period: time.Duration(1+r.IntN(60)) * time.Second, Burst: 1 + r.Int64N(20)}
		var tat time.Time
		now, admitted := t0, int64(0)
		for range 2000 {
			now = now.Add(time.Duration(r.Int64N(int64(2 * lim.Interval()))))
			var d Decision
			d, tat = GCRA(lim, Cost{}, tat, now)
			if d.Allowed {
				admitted++
			}
			if !d.Allowed && d.RetryAfter <= 0 {
				t.Fatalf("%v: refusal without RetryAfter: %+v", lim, d)
			}
		}
		bound := lim.Burst + int64(now.Sub(t0)/lim.Interval())
		if admitted > bound {
			t.Fatalf("%v: admitted %d > burst + elapsed/T = %d", lim, admitted, bound)
		}
	}
}

func TestRetryAfterUnits(t *testing.T) {
	tests := []struct {
		retry        time.Duration
		secs, millis int64
	}{
		{0, 1, 1},
		{time.Microsecond, 1, 1},
		{ms(999.999), 1, 1000},
		{time.Second, 1, 1000},
		{time.Second + time.Microsecond, 2, 1001},
		{6 * time.Minute, 360, 360000},
	}
	for _, tt := range tests {
		d := Decision{RetryAfter: tt.retry}
		if got := d.RetryAfterSeconds(); got != tt.secs {
			t.Errorf("RetryAfterSeconds(%v) = %d, want %d", tt.retry, got, tt.secs)
		}
		if got := d.RetryAfterMillis(); got != tt.millis {
			t.Errorf("RetryAfterMillis(%v) = %d, want %d", tt.retry, got, tt.millis)
		}
	}
}
