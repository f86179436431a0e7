package metrics

import (
	"context"
	"io"
	"math"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func scrape(t *testing.T, m *Metrics) string {
	t.Helper()
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	b, _ := io.ReadAll(rec.Body)
	return string(b)
}

// TestSampled: the values of one read are exposed as gauges; concurrent scrapes within the
// TTL cost one read; past it the next scrape reads again; the read's context is bounded.
func TestSampled(t *testing.T) {
	m := New()
	var clock atomic.Int64
	now := func() time.Time { return time.Unix(clock.Load(), 0) }
	var reads atomic.Int64
	m.Sampled(5*time.Second, time.Second, now, func(ctx context.Context) []float64 {
		if _, ok := ctx.Deadline(); !ok {
			t.Error("the read's context has no deadline")
		}
		n := reads.Add(1)
		time.Sleep(20 * time.Millisecond) // a query: scrapes arriving meanwhile wait for it
		return []float64{float64(n * 10), float64(n * 100)}
	}, Sample{"cobranca_test_a", "a"}, Sample{"cobranca_test_b_seconds", "b"})

	var wg sync.WaitGroup
	for range 50 {
		wg.Go(func() {
			body := scrape(t, m)
			if !strings.Contains(body, "cobranca_test_a 10\n") || !strings.Contains(body, "cobranca_test_b_seconds 100\n") {
				t.Errorf("a scrape within the first TTL reads %q", body)
			}
		})
	}
	wg.Wait()
	if n := reads.Load(); n != 1 {
		t.Errorf("50 concurrent scrapes made %d reads, want 1", n)
	}
	clock.Add(4)
	scrape(t, m)
	if n := reads.Load(); n != 1 {
		t.Errorf("a scrape 4s later made %d reads in all, want 1 (TTL 5s)", n)
	}
	clock.Add(1)
	if body := scrape(t, m); !strings.Contains(body, "cobranca_test_a 20\n") || reads.Load() != 2 {
		t.Errorf("after the TTL: %d reads, scrape %q; want 2 and the new values", reads.Load(), body)
	}
}

// TestSampledUnknown: a value the read could not get is NaN, never a stale or zero one, and
// a read returning the wrong number of values makes every value NaN.
func TestSampledUnknown(t *testing.T) {
	m := New()
	m.Sampled(time.Second, time.Second, time.Now, func(context.Context) []float64 { return []float64{math.NaN(), 3} },
		Sample{"cobranca_test_x", "x"}, Sample{"cobranca_test_y", "y"})
	m.Sampled(time.Second, time.Second, time.Now, func(context.Context) []float64 { return []float64{1} },
		Sample{"cobranca_test_z", "z"}, Sample{"cobranca_test_w", "w"})
	body := scrape(t, m)
	for _, want := range []string{"cobranca_test_x NaN\n", "cobranca_test_y 3\n", "cobranca_test_z NaN\n", "cobranca_test_w NaN\n"} {
		if !strings.Contains(body, want) {
			t.Errorf("scrape lacks %q:\n%s", want, body)
		}
	}
}
