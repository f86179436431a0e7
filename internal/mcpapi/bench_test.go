package mcpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/cobranca/cobranca/internal/auth"
	"github.com/cobranca/cobranca/internal/collections"
	"github.com/cobranca/cobranca/internal/config"
	"github.com/cobranca/cobranca/internal/pipeline"
	"github.com/cobranca/cobranca/internal/pipeline/pipelinetest"
	"github.com/cobranca/cobranca/internal/portfolio"
	"github.com/cobranca/cobranca/internal/portfolio/portfoliotest"
	"github.com/cobranca/cobranca/internal/request"
	"github.com/cobranca/cobranca/internal/schema"
	"github.com/cobranca/cobranca/internal/telemetry"
	"github.com/cobranca/cobranca/internal/telemetry/otlp"
	"go.opentelemetry.io/otel/trace"
)

// benchArgs builds n invoices the way shared/bench/mcpload does.
var benchArgs = portfoliotest.Args

// BenchmarkPipeline is one analyze call through the pipeline, without HTTP:
// decode + validate + analyze + encode + output-schema check.
func BenchmarkPipeline(b *testing.B) {
	p := pipelinetest.Product(b, pipeline.Options{})
	args := benchArgs(500)
	ctx := request.With(context.Background(), &request.Info{ID: "bench"})
	b.SetBytes(int64(len(args)))
	b.ReportAllocs()
	for b.Loop() {
		if res := p.Do(ctx, pipeline.Call{Principal: testCaller, Tool: collections.AnalyzeName, Args: args}); res.Kind != pipeline.Complete {
			b.Fatalf("result %+v", res)
		}
	}
}

// BenchmarkCheckOutput is the output check of one 500-invoice result, as
// the pipeline makes it for the bulk tool (FastOutput): encode the result,
// then validate the bytes with internal/schema's checker.
func BenchmarkCheckOutput(b *testing.B) {
	tools, err := collections.Tools(collections.Settings{})
	if err != nil {
		b.Fatal(err)
	}
	v, err := schema.Compile(tools[0].Contract.OutputSchema)
	if err != nil {
		b.Fatal(err)
	}
	in, err := portfolio.Parse(benchArgs(500))
	if err != nil {
		b.Fatal(err)
	}
	a := portfolio.Analyze(in)
	b.ReportAllocs()
	for b.Loop() {
		if err := v.Validate(a.AppendJSON(make([]byte, 0, 32<<10))); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkServeHTTP is one tools/call through the MCP handler in process
// (no network), on the fast path and through go-sdk alone; fast-2026-traced
// is fast-2026 with tracing on, as serve runs with OTEL_EXPORTER_OTLP_ENDPOINT
// set: each call under a server span (internal/server's, here the
// benchmark's), its steps' spans, every span exported over OTLP/HTTP to a
// receiver on loopback that discards them.
func BenchmarkServeHTTP(b *testing.B) {
	args := string(benchArgs(500))
	legacy := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"` + collections.AnalyzeName + `","arguments":` + args + `}}`
	// 2026-07-28: the _meta triple and the Mcp-* headers, as go-sdk's client sends them.
	v2026 := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{` + meta2026 + `,"name":"` + collections.AnalyzeName + `","arguments":` + args + `}}`
	for _, c := range []struct {
		name, body          string
		slow, v2026, traced bool
	}{{"fast", legacy, false, false, false}, {"sdk", legacy, true, false, false}, {"fast-2026", v2026, false, true, false}, {"fast-2026-traced", v2026, false, true, true}} {
		body := c.body
		b.Run(c.name, func(b *testing.B) {
			h := newHandler(b, Options{DisableFastPath: c.slow}, pipeline.Options{})
			var tracer trace.Tracer
			if c.traced {
				tracer = benchTracer(b)
			}
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			for b.Loop() {
				req := httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader(body))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Accept", "application/json, text/event-stream")
				req = req.WithContext(auth.WithPrincipal(req.Context(), testCaller)) // as the token check leaves it
				var span trace.Span
				if tracer != nil {
					var ctx context.Context
					ctx, span = tracer.Start(req.Context(), "POST /mcp", trace.WithSpanKind(trace.SpanKindServer))
					req = req.WithContext(ctx)
				}
				if c.v2026 {
					req.Header.Set("Mcp-Protocol-Version", protocol20260728)
					req.Header.Set("Mcp-Method", "tools/call")
					req.Header.Set("Mcp-Name", collections.AnalyzeName)
				}
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, req)
				if span != nil {
					span.End()
				}
				if rec.Code != http.StatusOK {
					b.Fatalf("status %d", rec.Code)
				}
				if !c.slow && h.FastCalls() == 0 {
					b.Fatal("the fast path did not serve the call")
				}
			}
		})
	}
}

// benchTracer is a tracer of serve's provider (otlp.Setup), tracing
// every call, exporting to an OTLP/HTTP receiver on loopback that reads and
// discards what it gets; the last spans are sent when b ends.
func benchTracer(b *testing.B) trace.Tracer {
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/x-protobuf")
	}))
	b.Cleanup(rcv.Close)
	tr, err := otlp.Setup(context.Background(), config.Config{OTLPEndpoint: rcv.URL, ServiceName: "bench", TraceSampler: config.SamplerAlwaysOn}, Version)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		if err := tr.Shutdown(context.Background()); err != nil {
			b.Error(err)
		}
	})
	return tr.Provider().Tracer(telemetry.ScopeName)
}

// BenchmarkScanCallDecode is the same scan with the tool's Decoder reading
// the arguments in place, as the fast path does: the envelope and the
// arguments' decoding and validation in one pass.
func BenchmarkScanCallDecode(b *testing.B) {
	h := newBenchHandler(b)
	body := []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"` + collections.AnalyzeName + `","arguments":` + string(benchArgs(500)) + `}}`)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		if env, ok := scanCall(body, fastDecoders(h)); !ok || !env.args.decoded || env.args.err != nil {
			b.Fatal("not plain")
		}
	}
}

// analyzeLogic runs the analyze tool on raw arguments, as the SDK path
// does: decode the whole of them, then run.
func analyzeLogic(ctx context.Context, raw json.RawMessage) (pipeline.Effect, error) {
	tools, err := collections.Tools(collections.Settings{})
	if err != nil {
		return pipeline.Effect{}, err
	}
	v, n, err := tools[0].Decode(raw)
	if err != nil {
		return pipeline.Effect{}, err
	}
	if len(bytes.TrimSpace(raw[n:])) > 0 {
		return pipeline.Effect{}, fmt.Errorf("the decoder read %d of %d bytes of arguments", n, len(raw))
	}
	return tools[0].Run(ctx, v)
}

func newBenchHandler(b *testing.B) *Handler {
	return newHandler(b, Options{}, pipeline.Options{})
}

// BenchmarkScanCall is the envelope scan of a 500-invoice tools/call.
func BenchmarkScanCall(b *testing.B) {
	body := []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"arguments":` + string(benchArgs(500)) + `,"name":"` + collections.AnalyzeName + `"}}`)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		if _, ok := scanCall(body, nil); !ok {
			b.Fatal("not plain")
		}
	}
}

// BenchmarkFloorStdlib is the same work done the plain Go way, as issue 6
// states its own floor figures ("encoding/json decodes the typed payload in
// ≈ 0.8 ms; decode + analyze + encode ≈ 1.0 ms"): encoding/json decode,
// Validate, Analyze, encoding/json encode. scripts/bench.sh reports CPU per
// call against both floors.
func BenchmarkFloorStdlib(b *testing.B) {
	args := benchArgs(500)
	b.SetBytes(int64(len(args)))
	b.ReportAllocs()
	for b.Loop() {
		var in portfolio.Input
		if err := json.Unmarshal(args, &in); err != nil {
			b.Fatal(err)
		}
		if err := portfolio.Validate(&in); err != nil {
			b.Fatal(err)
		}
		a := portfolio.Analyze(&in)
		if _, err := json.Marshal(&a); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkFloor is the in-process floor of issue 6: decode + validate +
// analyze + encode of the 500-invoice payload, nothing else. Server CPU per
// call (scripts/bench.sh) is compared with it.
func BenchmarkFloor(b *testing.B) {
	args := benchArgs(500)
	buf := make([]byte, 0, 64<<10)
	b.SetBytes(int64(len(args)))
	b.ReportAllocs()
	for b.Loop() {
		in, err := portfolio.Parse(args)
		if err != nil {
			b.Fatal(err)
		}
		a := portfolio.Analyze(in)
		buf = a.AppendJSON(buf[:0])
	}
}
