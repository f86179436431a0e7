package server

import (
	"context"
	"net/http"

	"github.com/go-chi/chi/v5"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/cobranca/cobranca/internal/request"
	"github.com/cobranca/cobranca/internal/telemetry"
)

// traceContext reads the caller's W3C traceparent (and tracestate): the
// request's span continues the caller's trace. Baggage is not read: what a
// client puts there is not the server's to record.
var traceContext propagation.TraceContext

// startServerSpan starts the server span of r, whose request id is id.
func startServerSpan(ctx context.Context, tracer trace.Tracer, r *http.Request, id string) (context.Context, trace.Span) {
	ctx = traceContext.Extract(ctx, propagation.HeaderCarrier(r.Header))
	return tracer.Start(ctx, r.Method, trace.WithSpanKind(trace.SpanKindServer), trace.WithAttributes(
		semconv.HTTPRequestMethodKey.String(r.Method),
		telemetry.RequestID.String(id),
	))
}

// endServerSpan names the span after the route that served r (never its
// path, which may hold a file's id, nor its query, which may hold a link's
// signature), records the status and what the request's layers learnt —
// the tool, its outcome and code — and ends it.
func endServerSpan(span trace.Span, r *http.Request, status int, info *request.Info) {
	route := ""
	if rc := chi.RouteContext(r.Context()); rc != nil {
		route = rc.RoutePattern()
	}
	attrs := []attribute.KeyValue{semconv.HTTPResponseStatusCode(status)}
	if route != "" {
		span.SetName(r.Method + " " + route)
		attrs = append(attrs, semconv.HTTPRoute(route))
	}
	if info.Tool != "" {
		attrs = append(attrs, telemetry.Tool.String(info.Tool), telemetry.Outcome.String(info.Outcome))
		if info.Code != "" {
			attrs = append(attrs, telemetry.Code.String(info.Code))
		}
	}
	span.SetAttributes(attrs...)
	if status >= 500 {
		span.SetStatus(codes.Error, http.StatusText(status))
	}
	span.End()
}
