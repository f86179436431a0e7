package metrics

import (
	"context"
	"math"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Sample names one value of a Sampled read, exposed as a gauge.
type Sample struct {
	Name, Help string
}

// Sampled registers a gauge for each of samples, whose values read returns together (in the
// order of samples; NaN for one it could not read). read runs at most once every ttl however
// often and however concurrently /metrics is scraped — a scrape storm costs the source one
// read per ttl — within timeout, and scrapes in between see the values it last returned. For
// values that cost a query (the store's).
func (m *Metrics) Sampled(ttl, timeout time.Duration, now func() time.Time, read func(ctx context.Context) []float64, samples ...Sample) {
	s := &sampler{ttl: ttl, timeout: timeout, now: now, read: read, n: len(samples)}
	for i, sm := range samples {
		m.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: sm.Name, Help: sm.Help},
			func() float64 { return s.get()[i] }))
	}
}

// sampler caches the values of one read.
type sampler struct {
	ttl, timeout time.Duration
	now          func() time.Time
	read         func(ctx context.Context) []float64
	n            int

	mu   sync.Mutex // held while reading: concurrent scrapes wait for the one read
	at   time.Time
	vals []float64
}

func (s *sampler) get() []float64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	if s.vals != nil && now.Sub(s.at) < s.ttl {
		return s.vals
	}
	// A gauge's function is given no context (the registry's Gather has none): the read's
	// own, bounded, is the root here.
	ctx, cancel := context.WithTimeout(context.Background(), s.timeout)
	defer cancel()
	vals := s.read(ctx)
	if len(vals) != s.n { // a read that broke its contract reads as unknown, not as a panic
		vals = make([]float64, s.n)
		for i := range vals {
			vals[i] = math.NaN()
		}
	}
	s.vals, s.at = vals, now
	return vals
}
