package metrics

import (
	"io"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func TestExposition(t *testing.T) {
	m := New()
	m.ObserveCall("collections.analyze_portfolio", "low", "allowed", 3*time.Millisecond)
	m.ObserveCall("collections.analyze_portfolio", "low", "allowed", time.Millisecond)
	m.ObserveCall("collections.analyze_portfolio", "low", "denied", 0)
	m.Refused("origin")
	n := 41.0
	m.CounterFunc("cobranca_test_external_total", "a counter kept elsewhere", func() float64 { return n })
	m.GaugeFunc("cobranca_test_gauge", "a gauge kept elsewhere", func() float64 { return n * 2 })
	n++
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	body, _ := io.ReadAll(rec.Body)
	for _, want := range []string{
		`cobranca_tool_calls_total{outcome="allowed",tier="low",tool="collections.analyze_portfolio"} 2`,
		`cobranca_tool_calls_total{outcome="denied",tier="low",tool="collections.analyze_portfolio"} 1`,
		`cobranca_tool_call_duration_seconds_count{tool="collections.analyze_portfolio"} 2`,
		`cobranca_test_external_total 42`,
		`cobranca_test_gauge 84`,
		`cobranca_ratelimit_refusals_total{policy="origin"} 1`,
		`go_goroutines `,
	} {
		if !strings.Contains(string(body), want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
}
