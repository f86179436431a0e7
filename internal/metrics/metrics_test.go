package metrics

import (
	"io"
	"net/http/httptest"
	"strconv"
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

// BenchmarkScrape is one scrape of a registry with the server's kind of
// content: the Go and process collectors, a few hundred call series, and
// counters read from functions; 10 tools is about cobranca's catalogue.
func BenchmarkScrape(b *testing.B) {
	for _, tools := range []int{0, 10, 100} {
		b.Run(strconv.Itoa(tools)+"_tools", func(b *testing.B) { benchScrape(b, tools) })
	}
}

func benchScrape(b *testing.B, tools int) {
	m := New()
	for i := range tools {
		for _, outcome := range []string{"allowed", "rejected", "denied"} {
			m.ObserveCall("tool."+strconv.Itoa(i), "low", outcome, time.Millisecond)
		}
	}
	for i := range 8 {
		m.CounterFunc("cobranca_bench_counter_"+strconv.Itoa(i)+"_total", "a counter kept elsewhere", func() float64 { return 1 })
	}
	req := httptest.NewRequest("GET", "/metrics", nil)
	b.ReportAllocs()
	for b.Loop() {
		rec := httptest.NewRecorder()
		m.Handler().ServeHTTP(rec, req)
		if rec.Code != 200 {
			b.Fatal(rec.Code)
		}
	}
}
