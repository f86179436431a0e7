package telemetry_test

import (
	"context"
	"testing"

	"go.opentelemetry.io/otel/trace"

	"github.com/cobranca/cobranca/internal/config"
	"github.com/cobranca/cobranca/internal/telemetry"
	"github.com/cobranca/cobranca/internal/telemetry/telemetrytest"
)

// TestOffCostsNothing: without an endpoint there is no provider, and a span
// started outside a recording one is the context's own, doing nothing,
// allocating nothing: what the hot path pays with tracing off.
func TestOffCostsNothing(t *testing.T) {
	tr, err := telemetry.Setup(t.Context(), config.Config{ServiceName: "cobranca"}, "1")
	if err != nil || tr != nil || tr.Provider() != nil || tr.Shutdown(t.Context()) != nil {
		t.Fatalf("Setup(no endpoint) = %v, %v; want no provider", tr, err)
	}
	type key struct{}
	ctx := context.WithValue(t.Context(), key{}, 1)
	allocs := testing.AllocsPerRun(100, func() {
		got, sp := telemetry.Start(ctx, "pipeline.run")
		if got != ctx || sp.IsRecording() {
			t.Fatal("Start outside a recording span started one")
		}
		telemetry.Fail(sp, "internal")
		sp.End()
	})
	if allocs != 0 {
		t.Errorf("Start, Fail and End outside a recording span: %v allocations, want 0", allocs)
	}
}

func TestTracesURL(t *testing.T) {
	for in, want := range map[string]string{
		"http://otel:4318":          "http://otel:4318/v1/traces",
		"http://otel:4318/":         "http://otel:4318/v1/traces",
		"https://otel.example/otlp": "https://otel.example/otlp/v1/traces",
	} {
		if got := telemetry.TracesURL(in); got != want {
			t.Errorf("TracesURL(%s) = %s, want %s", in, got, want)
		}
	}
}

// TestSampler: each OTEL_TRACES_SAMPLER value decides as the specification
// says, for a request whose caller sampled its trace: the parent-based ones
// follow the caller, the others decide alone (here ratio 0: never).
func TestSampler(t *testing.T) {
	parent := trace.NewSpanContext(trace.SpanContextConfig{TraceID: trace.TraceID{1}, SpanID: trace.SpanID{2}, TraceFlags: trace.FlagsSampled, Remote: true})
	for _, tc := range []struct {
		sampler string
		want    int
	}{
		{config.SamplerParentOn, 1}, {config.SamplerParentRatio, 1}, {config.SamplerAlwaysOn, 1}, {config.SamplerRatio, 0},
	} {
		rcv := telemetrytest.NewReceiver(t)
		tr, err := telemetry.Setup(t.Context(), config.Config{OTLPEndpoint: rcv.URL, ServiceName: "s", TraceSampler: tc.sampler, TraceSamplerArg: 0}, "1")
		if err != nil {
			t.Fatal(err)
		}
		_, sp := tr.Provider().Tracer("test").Start(trace.ContextWithRemoteSpanContext(t.Context(), parent), "GET /x")
		sp.End()
		if err := tr.Shutdown(t.Context()); err != nil {
			t.Fatal(err)
		}
		if got := len(rcv.Spans()); got != tc.want {
			t.Errorf("%s with ratio 0 under a sampled caller: %d spans exported, want %d", tc.sampler, got, tc.want)
		}
	}
}

// TestHeaders: OTEL_EXPORTER_OTLP_HEADERS go with every export (a hosted
// collector's key), and the resource names the service and its version.
func TestHeaders(t *testing.T) {
	rcv := telemetrytest.NewReceiver(t)
	tr, err := telemetry.Setup(t.Context(), config.Config{OTLPEndpoint: rcv.URL, OTLPHeaders: map[string]string{"x-api-key": "k,1"},
		ServiceName: "cobranca-staging", TraceSampler: config.SamplerParentOn}, "9.9.9")
	if err != nil {
		t.Fatal(err)
	}
	_, sp := tr.Provider().Tracer("test").Start(t.Context(), "GET /x")
	sp.End()
	if err := tr.Shutdown(t.Context()); err != nil {
		t.Fatal(err)
	}
	spans := rcv.Spans()
	if got := rcv.Header().Get("X-Api-Key"); got != "k,1" || len(spans) != 1 {
		t.Fatalf("export header x-api-key %q, %d spans; want k,1 and 1", got, len(spans))
	}
	if res := spans[0].Resource; res["service.name"] != "cobranca-staging" || res["service.version"] != "9.9.9" {
		t.Errorf("resource %v", res)
	}
}
