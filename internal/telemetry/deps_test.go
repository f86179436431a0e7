package telemetry_test

import (
	"strings"
	"testing"

	"github.com/cobranca/cobranca/internal/deptest"
)

// exporterLinks are what setting up the exporter links (internal/telemetry/otlp): the
// OpenTelemetry SDK, the OTLP exporter, gRPC and protobuf.
var exporterLinks = []string{
	"go.opentelemetry.io/otel/sdk",
	"go.opentelemetry.io/otel/exporters/",
	"go.opentelemetry.io/proto/",
	"google.golang.org/grpc",
	"google.golang.org/protobuf",
}

// TestSpanHelpersLinkTheAPIOnly: the span helpers, and the packages that start spans, link
// the OpenTelemetry API only; the exporter is set up in cmd/cobranca (telemetry/otlp), so
// that the store and the domain packages do not carry it.
func TestSpanHelpersLinkTheAPIOnly(t *testing.T) {
	const mod = "github.com/cobranca/cobranca/internal/"
	for _, pkg := range []string{"telemetry", "store", "store/postgres", "store/sqlite", "outbox", "pipeline", "server",
		"mcpapi", "collections", "reminders", "customers", "writeoffs", "files", "auditlog"} {
		for _, d := range deptest.NonStd(t, mod+pkg) {
			for _, banned := range exporterLinks {
				if strings.HasPrefix(d, banned) {
					t.Errorf("%s links %s", pkg, d)
				}
			}
		}
	}
}
