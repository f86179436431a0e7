// Package otlp sets up the process's tracer provider: the OpenTelemetry SDK
// exporting spans over OTLP/HTTP when OTEL_EXPORTER_OTLP_ENDPOINT is set. Only
// cmd/cobranca imports it (and tests), so that the packages that start spans
// (internal/telemetry's helpers, the OTel API only) do not link the SDK, the
// exporter, gRPC and protobuf.
package otlp

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/cobranca/cobranca/internal/config"
)

// Tracing is the process's tracer provider, exporting over OTLP/HTTP. A nil
// *Tracing is tracing off: Provider is nil and Shutdown does nothing.
type Tracing struct {
	tp *sdktrace.TracerProvider
}

// Setup builds the tracer provider cfg asks for: nil when
// OTEL_EXPORTER_OTLP_ENDPOINT is unset or OTEL_SDK_DISABLED is true. Spans go
// in batches to the endpoint's /v1/traces (protobuf over HTTP), with the
// resource attributes service.name (OTEL_SERVICE_NAME) and service.version
// (version), sampled as OTEL_TRACES_SAMPLER says. Setup does not reach the
// endpoint: an unreachable collector costs dropped spans, never a refused
// start.
func Setup(ctx context.Context, cfg config.Config, version string) (*Tracing, error) {
	if cfg.OTLPEndpoint == "" || cfg.TracingDisabled {
		return nil, nil
	}
	// Every setting the exporter would read from the environment on its own
	// (otlptracehttp's internal/otlpconfig: OTEL_EXPORTER_OTLP_[TRACES_]
	// ENDPOINT, HEADERS, TIMEOUT, COMPRESSION, PROTOCOL, INSECURE,
	// CERTIFICATE, CLIENT_CERTIFICATE, CLIENT_KEY) is given here explicitly,
	// and explicit options override the environment there: the values are
	// config's, checked at start, or the OTLP defaults config stands for
	// (no headers, protobuf, the system's roots, no client certificate: the
	// TLS configuration is replaced whole, by none for an http:// endpoint,
	// where the exporter refuses one). config refuses the variables it
	// does not own, so nothing is ignored silently either. The SDK reads
	// OTEL_TRACES_SAMPLER[_ARG] and OTEL_SERVICE_NAME too, config's, and given
	// here (the sampler; the resource's service.name overrides the
	// environment's). What the exporter and the SDK still read themselves is
	// refused by config when set: OTEL_BSP_* (the batch span processor's
	// queue, batch size and delays), the OTEL_*_LIMIT span limits,
	// OTEL_RESOURCE_ATTRIBUTES (WithResource merges the environment's
	// resource) and the OTEL_GO_X_* experiments. Besides, only the standard
	// HTTP_PROXY, HTTPS_PROXY and NO_PROXY apply, as to every Go HTTP client.
	var tlsConfig *tls.Config
	if u, err := url.Parse(cfg.OTLPEndpoint); err == nil && u.Scheme == "https" {
		tlsConfig = &tls.Config{MinVersion: tls.VersionTLS12}
	}
	if len(cfg.OTLPRootCAs) > 0 && tlsConfig != nil {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(cfg.OTLPRootCAs) {
			return nil, fmt.Errorf("%s: %s holds no PEM certificate", config.VarOTLPCert, cfg.OTLPCertificate)
		}
		tlsConfig.RootCAs = pool
	}
	compression := otlptracehttp.NoCompression
	if cfg.OTLPCompression == config.CompressionGzip {
		compression = otlptracehttp.GzipCompression
	}
	timeout := cfg.OTLPTimeout
	if timeout <= 0 { // a Config not from Load: 0 would be no timeout at all
		timeout = config.DefaultOTLPTimeout
	}
	opts := []otlptracehttp.Option{
		otlptracehttp.WithEndpointURL(TracesURL(cfg.OTLPEndpoint)),
		otlptracehttp.WithHeaders(cfg.OTLPHeaders),
		otlptracehttp.WithTimeout(timeout),
		otlptracehttp.WithCompression(compression),
		otlptracehttp.WithEncoding(otlptracehttp.EncodingProtobuf),
		otlptracehttp.WithTLSClientConfig(tlsConfig),
	}
	exp, err := otlptracehttp.New(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", config.VarOTLPEndpoint, err)
	}
	res, err := resource.New(ctx, resource.WithSchemaURL(semconv.SchemaURL), resource.WithAttributes(
		semconv.ServiceName(cfg.ServiceName), semconv.ServiceVersion(version)))
	if err != nil {
		return nil, errors.Join(fmt.Errorf("telemetry: resource: %w", err), exp.Shutdown(ctx))
	}
	tp := sdktrace.NewTracerProvider(
		sdktrace.WithBatcher(exp),
		sdktrace.WithResource(res),
		sdktrace.WithSampler(sampler(cfg.TraceSampler, cfg.TraceSamplerArg)),
	)
	return &Tracing{tp: tp}, nil
}

// TracesURL is where spans are sent for the base URL endpoint, as the OTLP
// specification derives it from OTEL_EXPORTER_OTLP_ENDPOINT: its path with
// v1/traces appended.
func TracesURL(endpoint string) string {
	return strings.TrimRight(endpoint, "/") + "/v1/traces"
}

// sampler is the sampler named (config's Sampler* values), ratio its
// argument for the ratio samplers.
func sampler(name string, ratio float64) sdktrace.Sampler {
	switch name {
	case config.SamplerAlwaysOn:
		return sdktrace.AlwaysSample()
	case config.SamplerRatio:
		return sdktrace.TraceIDRatioBased(ratio)
	case config.SamplerParentRatio:
		return sdktrace.ParentBased(sdktrace.TraceIDRatioBased(ratio))
	}
	return sdktrace.ParentBased(sdktrace.AlwaysSample())
}

// Provider returns the tracer provider, or nil when tracing is off.
func (t *Tracing) Provider() trace.TracerProvider {
	if t == nil {
		return nil
	}
	return t.tp
}

// shutdownTimeout bounds the last export at exit.
const shutdownTimeout = 5 * time.Second

// Shutdown exports the spans still waiting, within a few seconds, and stops
// the provider. Called once, after everything that starts spans has stopped.
func (t *Tracing) Shutdown(ctx context.Context) error {
	if t == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownTimeout)
	defer cancel()
	if err := t.tp.Shutdown(ctx); err != nil {
		return fmt.Errorf("telemetry: the last spans could not be exported: %w", err)
	}
	return nil
}
