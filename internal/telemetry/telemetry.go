// Package telemetry is the few helpers every traced package starts its spans
// with, on the OpenTelemetry API only; the provider that exports them over
// OTLP/HTTP (the SDK, the exporter, gRPC and protobuf) is set up by
// internal/telemetry/otlp, which only cmd/cobranca imports.
//
// A span is started only as the child of a span that records — the request's
// server span, an outbox job's — so that code run outside a traced request
// (the audit sealer, the reapers, the CLI) starts none, and with tracing off
// (no endpoint: no provider, no server span) a step costs one context lookup
// and allocates nothing. That is what keeps the analyze hot path as fast as
// it was (docs/benchmarks.md).
//
// What a span may carry is fixed here, as attribute keys: the request id,
// the tool, its tier, the outcome and failure code, the step, the store's
// kind, counts. Never arguments, tokens, e-mail addresses, names or ids of
// customers and invoices, SQL text or parameters, nor an error's text (a
// driver's error may quote a value): a failed span says only its code.
package telemetry

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// ScopeName is the instrumentation scope of every span cobranca starts.
const ScopeName = "github.com/cobranca/cobranca"

// The attribute keys cobranca's spans carry (besides the semantic
// conventions' HTTP and database keys): nothing else about a call is ever
// recorded.
const (
	RequestID = attribute.Key("cobranca.request_id")
	Tool      = attribute.Key("cobranca.tool")
	Tier      = attribute.Key("cobranca.tier")
	Outcome   = attribute.Key("cobranca.outcome")
	Code      = attribute.Key("cobranca.code")
	Step      = attribute.Key("cobranca.step")
	Attempt   = attribute.Key("cobranca.attempt")
	SMTPReply = attribute.Key("cobranca.smtp_reply") // the code of a mail server's refusal
)

// Start starts the span name as a child of ctx's span when that one
// records, with its provider; otherwise it returns ctx and ctx's own span,
// which does nothing, and allocates nothing. Callers set attributes only on
// a span that records (span.IsRecording), so that building them costs
// nothing either when tracing is off.
func Start(ctx context.Context, name string, opts ...trace.SpanStartOption) (context.Context, trace.Span) {
	parent := trace.SpanFromContext(ctx)
	if !parent.IsRecording() {
		return ctx, parent
	}
	return parent.TracerProvider().Tracer(ScopeName).Start(ctx, name, opts...)
}

// Fail marks span failed with code — a failure code, an SMTP reply class, a
// fixed word — and never with an error's text.
func Fail(span trace.Span, code string) {
	if !span.IsRecording() {
		return
	}
	span.SetAttributes(Code.String(code))
	span.SetStatus(codes.Error, code)
}

// EndErr ends span, marked failed with code when err is not nil.
func EndErr(span trace.Span, err error, code string) {
	if err != nil {
		Fail(span, code)
	}
	span.End()
}
