package otlp_test

import (
	"context"
	"encoding/pem"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/cobranca/cobranca/internal/config"
	"github.com/cobranca/cobranca/internal/telemetry"
	"github.com/cobranca/cobranca/internal/telemetry/otlp"
	"github.com/cobranca/cobranca/internal/telemetry/telemetrytest"
)

// TestOffCostsNothing: without an endpoint there is no provider, and a span
// started outside a recording one is the context's own, doing nothing,
// allocating nothing: what the hot path pays with tracing off.
func TestOffCostsNothing(t *testing.T) {
	tr, err := otlp.Setup(t.Context(), config.Config{ServiceName: "cobranca"}, "1")
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
		if got := otlp.TracesURL(in); got != want {
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
		tr, err := otlp.Setup(t.Context(), config.Config{OTLPEndpoint: rcv.URL, ServiceName: "s", TraceSampler: tc.sampler, TraceSamplerArg: 0}, "1")
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
	if err := exportConfig(t, config.Config{OTLPEndpoint: rcv.URL, OTLPHeaders: map[string]string{"x-api-key": "k,1"},
		ServiceName: "cobranca-staging", TraceSampler: config.SamplerParentOn}, "9.9.9"); err != nil {
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

// export starts tracing from environ as config.Load reads it, ends one span
// and stops, returning Shutdown's error (what the last export met).
func export(t *testing.T, environ ...string) error {
	t.Helper()
	cfg, err := config.Load(environ)
	if err != nil {
		t.Fatal(err)
	}
	return exportConfig(t, cfg, "1")
}

// exportConfig starts tracing as cfg says, for version, ends one span and
// stops, returning Shutdown's error (what the last export met).
func exportConfig(t *testing.T, cfg config.Config, version string) error {
	t.Helper()
	tr, err := otlp.Setup(t.Context(), cfg, version)
	if err != nil || tr == nil {
		t.Fatalf("Setup = %v, %v", tr, err)
	}
	_, sp := tr.Provider().Tracer("test").Start(t.Context(), "GET /x")
	sp.End()
	return tr.Shutdown(t.Context())
}

// TestCompression: OTEL_EXPORTER_OTLP_COMPRESSION=gzip sends the export
// gzipped (the receiver decodes it); none, the default, does not.
func TestCompression(t *testing.T) {
	for _, tc := range []struct{ value, want string }{{"gzip", "gzip"}, {"none", ""}, {"", ""}} {
		rcv := telemetrytest.NewReceiver(t)
		if err := export(t, config.VarOTLPEndpoint+"="+rcv.URL, config.VarOTLPCompress+"="+tc.value); err != nil {
			t.Fatal(err)
		}
		if got := rcv.Header().Get("Content-Encoding"); got != tc.want || len(rcv.Spans()) != 1 {
			t.Errorf("%s=%q: Content-Encoding %q, %d spans; want %q and 1", config.VarOTLPCompress, tc.value, got, len(rcv.Spans()), tc.want)
		}
	}
}

// TestCertificate: a collector whose certificate no system trusts receives
// the export when OTEL_EXPORTER_OTLP_CERTIFICATE names a PEM file of it, and
// nothing without.
func TestCertificate(t *testing.T) {
	rcv := telemetrytest.NewTLSReceiver(t)
	ca := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: rcv.Certificate.Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	_ = export(t, config.VarOTLPEndpoint+"="+rcv.URL) // the failure goes to the SDK's error handler
	if n := len(rcv.Spans()); n != 0 {
		t.Fatalf("the untrusted collector received %d spans", n)
	}
	if err := export(t, config.VarOTLPEndpoint+"="+rcv.URL, config.VarOTLPCert+"="+ca); err != nil {
		t.Fatalf("export trusting the collector's certificate: %v", err)
	}
	if n := len(rcv.Spans()); n != 1 {
		t.Errorf("the collector received %d spans, want 1", n)
	}
}

// TestTimeout: OTEL_EXPORTER_OTLP_TIMEOUT bounds one export request: a
// collector that never answers sees the request given up after it, not
// after the caller's own deadline.
func TestTimeout(t *testing.T) {
	gaveUp := make(chan time.Duration, 10)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		_, _ = io.Copy(io.Discard, r.Body) // then the server watches the connection: its context ends when the client gives up
		select {
		case <-r.Context().Done():
			gaveUp <- time.Since(start)
		case <-time.After(10 * time.Second):
		}
	}))
	defer srv.Close()
	cfg, err := config.Load([]string{config.VarOTLPEndpoint + "=" + srv.URL, config.VarOTLPTimeout + "=100"})
	if err != nil {
		t.Fatal(err)
	}
	tr, err := otlp.Setup(t.Context(), cfg, "1")
	if err != nil {
		t.Fatal(err)
	}
	_, sp := tr.Provider().Tracer("test").Start(t.Context(), "GET /x")
	sp.End()
	// The flush's own deadline is far past the timeout, the bound between
	// them: a loaded machine's late timer is not taken for the flush's.
	// The flush would wait its deadline out (the exporter retries), so it
	// runs meanwhile and is cancelled once the request was given up.
	ctx, cancel := context.WithTimeout(t.Context(), 6*time.Second)
	defer cancel()
	flushed := make(chan struct{})
	go func() {
		_ = tr.Provider().(*sdktrace.TracerProvider).ForceFlush(ctx) // the failure goes to the SDK's error handler
		close(flushed)
	}()
	select {
	case d := <-gaveUp:
		if d > 4*time.Second {
			t.Errorf("the export request was given up after %v, want about 100ms, well before the flush's deadline", d)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the export request was never given up")
	}
	cancel()
	<-flushed
	_ = tr.Shutdown(t.Context())
}

// TestSDKDisabled: OTEL_SDK_DISABLED=true is tracing off, endpoint or not.
func TestSDKDisabled(t *testing.T) {
	tr, err := otlp.Setup(t.Context(), config.Config{OTLPEndpoint: "http://127.0.0.1:1", TracingDisabled: true, ServiceName: "s"}, "1")
	if err != nil || tr != nil {
		t.Errorf("Setup(endpoint, disabled) = %v, %v; want no provider", tr, err)
	}
}

// TestEnvironmentIgnored: what the exporter would read from the environment
// on its own — the per-signal variables, the protocol, a timeout of 1 ms,
// gzip, CA certificates (which the exporter refuses with an http://
// endpoint), a client certificate — changes nothing: Setup gives every
// setting explicitly (config refuses those variables at start; this holds
// even for a Config that did not come from the process's environment).
func TestEnvironmentIgnored(t *testing.T) {
	elsewhere := telemetrytest.NewReceiver(t)
	ca := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: telemetrytest.NewTLSReceiver(t).Certificate.Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	for k, v := range map[string]string{
		"OTEL_EXPORTER_OTLP_PROTOCOL": "http/json", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "http/json",
		"OTEL_EXPORTER_OTLP_TIMEOUT": "1", "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT": "1",
		"OTEL_EXPORTER_OTLP_COMPRESSION": "gzip", "OTEL_EXPORTER_OTLP_TRACES_COMPRESSION": "gzip",
		"OTEL_EXPORTER_OTLP_HEADERS": "x-env=1", "OTEL_EXPORTER_OTLP_TRACES_HEADERS": "x-env=1",
		"OTEL_EXPORTER_OTLP_ENDPOINT": elsewhere.URL, "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": elsewhere.URL + "/v1/traces",
		"OTEL_EXPORTER_OTLP_CERTIFICATE": ca, "OTEL_EXPORTER_OTLP_TRACES_CERTIFICATE": ca,
		"OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE": "/nonexistent.pem", "OTEL_EXPORTER_OTLP_CLIENT_KEY": "/nonexistent.pem",
		"OTEL_EXPORTER_OTLP_INSECURE": "false", "OTEL_EXPORTER_OTLP_TRACES_INSECURE": "false",
	} {
		t.Setenv(k, v)
	}
	rcv := telemetrytest.NewReceiver(t)
	if err := exportConfig(t, config.Config{OTLPEndpoint: rcv.URL, ServiceName: "s", TraceSampler: config.SamplerParentOn,
		OTLPTimeout: 5 * time.Second, OTLPCompression: config.CompressionNone}, "1"); err != nil {
		t.Fatal(err)
	}
	h := rcv.Header()
	if len(rcv.Spans()) != 1 || h.Get("Content-Type") != "application/x-protobuf" || h.Get("Content-Encoding") != "" || h.Get("X-Env") != "" {
		t.Errorf("export: %d spans, Content-Type %q, Content-Encoding %q, X-Env %q; want 1, protobuf, none, none",
			len(rcv.Spans()), h.Get("Content-Type"), h.Get("Content-Encoding"), h.Get("X-Env"))
	}
	if n := len(elsewhere.Spans()); n != 0 {
		t.Errorf("the environment's endpoint received %d spans", n)
	}
}
