package main

import (
	"context"
	"log/slog"

	"github.com/cobranca/cobranca/internal/config"
	"github.com/cobranca/cobranca/internal/telemetry/otlp"
	"go.opentelemetry.io/otel"
)

// tracing starts the OpenTelemetry tracer provider cfg asks for
// (OTEL_EXPORTER_OTLP_ENDPOINT; nil when unset or OTEL_SDK_DISABLED=true)
// and returns it; serve stops it (its last spans sent) last, after the server
// has drained and the workers have stopped.
func tracing(ctx context.Context, cfg config.Config, log *slog.Logger) (*otlp.Tracing, error) {
	t, err := otlp.Setup(ctx, cfg, buildInfo().Version) // what the operator deployed (cobranca version)
	if err != nil {
		return nil, err
	}
	if cfg.TracingDisabled && cfg.OTLPEndpoint != "" {
		log.Info("traces not exported", "reason", config.VarSDKDisabled+"=true")
	}
	if t != nil {
		// The SDK reports what it could not export (a collector down) to
		// its global handler, by default the standard logger's plain text:
		// it goes to the JSON log instead, once per failed batch.
		otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) { log.Warn("traces could not be exported", "err", err) }))
		log.Info("traces exported", "endpoint", otlp.TracesURL(cfg.OTLPEndpoint), "service", cfg.ServiceName, "sampler", cfg.TraceSampler)
	}
	return t, nil
}
