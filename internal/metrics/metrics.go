// Package metrics defines cobranca's Prometheus metrics and serves them.
// Labels carry tools, tiers and outcomes only (and cobranca_build_info the build's version):
// never a subject, a client, an address or any part of a payload.
package metrics

import (
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Metrics holds the registry and the instruments the server updates.
type Metrics struct {
	reg       *prometheus.Registry
	calls     *prometheus.CounterVec
	durations *prometheus.HistogramVec
	refusals  *prometheus.CounterVec
}

// New returns Metrics on a fresh registry with the Go runtime and process
// collectors.
func New() *Metrics {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	m := &Metrics{
		reg: reg,
		calls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "cobranca_tool_calls_total",
			Help: "Tool calls by tool, risk tier and outcome (allowed, rejected, denied, rate_limited, failed).",
		}, []string{"tool", "tier", "outcome"}),
		durations: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "cobranca_tool_call_duration_seconds",
			Help:    "Time from a call's arguments to its answer, audit included.",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1},
		}, []string{"tool"}),
	}
	m.refusals = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "cobranca_ratelimit_refusals_total",
		Help: "Requests answered 429 at the HTTP level, by policy (origin, principal).",
	}, []string{"policy"})
	reg.MustRegister(m.calls, m.durations, m.refusals)
	return m
}

// ObserveCall counts one finished or refused tool call.
func (m *Metrics) ObserveCall(tool, tier, outcome string, d time.Duration) {
	m.calls.WithLabelValues(tool, tier, outcome).Inc()
	if d > 0 {
		m.durations.WithLabelValues(tool).Observe(d.Seconds())
	}
}

// Refused counts one request answered 429 at the HTTP level.
func (m *Metrics) Refused(policy string) { m.refusals.WithLabelValues(policy).Inc() }

// CounterFunc registers a counter read from f at every scrape (for counters
// another package keeps, such as the rate limiter's).
func (m *Metrics) CounterFunc(name, help string, f func() float64) {
	m.reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: name, Help: help}, f))
}

// GaugeFunc registers a gauge read from f at every scrape.
func (m *Metrics) GaugeFunc(name, help string, f func() float64) {
	m.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help}, f))
}

// BuildInfo registers cobranca_build_info, always 1, whose labels say what this process runs
// (the convention of Prometheus's own *_build_info): a dashboard sees a rollout's replicas
// change version.
func (m *Metrics) BuildInfo(version, revision, goVersion string) {
	g := prometheus.NewGauge(prometheus.GaugeOpts{Name: "cobranca_build_info", Help: "Always 1; the labels are the version and revision this process was built from (cobranca version).",
		ConstLabels: prometheus.Labels{"version": version, "revision": revision, "goversion": goVersion}})
	g.Set(1)
	m.reg.MustRegister(g)
}

// Handler serves the Prometheus exposition format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
}
