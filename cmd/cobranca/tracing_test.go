package main

import (
	"bytes"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"

	"github.com/cobranca/cobranca/internal/collections"
	"github.com/cobranca/cobranca/internal/telemetry/telemetrytest"
)

// tracedClient sends the caller's W3C traceparent and bearer token with
// every request, and keeps the X-Request-Id of every answer.
type tracedClient struct {
	token, traceparent string
	mu                 sync.Mutex
	ids                []string
}

func (c *tracedClient) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+c.token)
	r.Header.Set("Traceparent", c.traceparent)
	resp, err := http.DefaultTransport.RoundTrip(r)
	if err == nil {
		c.mu.Lock()
		c.ids = append(c.ids, resp.Header.Get("X-Request-Id"))
		c.mu.Unlock()
	}
	return resp, err
}

// TestServeExportsTraces runs `cobranca serve` (SQLite, then PostgreSQL) with
// OTEL_EXPORTER_OTLP_ENDPOINT pointing at an OTLP/HTTP receiver in the test,
// makes an analyze call on the fast path (2026-07-28) and through go-sdk
// (2025-11-25) and a prepare_reminder, each continuing the caller's
// traceparent, then stops serve, whose shutdown sends the last spans. What
// arrives: a server span per request, named after its route, in the caller's
// trace, with the request id the response carried and the tool; under it a
// span per pipeline step, and under the steps the store's transactions. And
// nowhere in the exported bytes any argument value, the token, or the
// e-mail address. A health check is not traced; the access line of a traced
// request names its trace.
func TestServeExportsTraces(t *testing.T) { eachStore(t, testServeExportsTraces) }

func testServeExportsTraces(t *testing.T, db []string) {
	rcv := telemetrytest.NewReceiver(t)
	dir := t.TempDir()
	environ := append([]string{"COBRANCA_DATA_DIR=" + dir, "COBRANCA_ADDR=" + freeAddr(t), "COBRANCA_METRICS_ADDR=off",
		"OTEL_EXPORTER_OTLP_ENDPOINT=" + rcv.URL, "COBRANCA_RATE_STORE_TIMEOUT=5s"}, db...) // a loaded machine's PostgreSQL may take longer than 200 ms
	system := "sqlite"
	if len(db) > 0 {
		system = "postgresql"
	}
	mustRun(t, environ, "migrate")
	logs, stop := startServe(t, environ...)
	addr, _ := logs.logged("cobranca listening")
	token := strings.TrimSpace(mustRun(t, environ, "token", "--sub", "alice", "--scope", "reminders:write collections:read", "--agent", "ledger-copilot"))

	const traceID, parentID = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
	// Distinctive values planted in the arguments: none may be exported.
	planted := []string{"inv-PLANTEDQX1", "cust-PLANTEDQX2", "Zeferina Plantada QX3", "98765431",
		"cust-PLANTEDQX4", "Quixote Plantado QX5", "planted.qx6@cliente.example", "inv-PLANTEDQX7", "key-PLANTEDQX8", "87654329"}
	analyze := map[string]any{"asOf": "2026-11-29", "invoices": []any{
		map[string]any{"id": planted[0], "customerId": planted[1], "customerName": planted[2], "dueDate": "2026-10-01", "amountCents": 98765431, "status": "open", "doNotContact": false},
	}}
	prepare := map[string]any{
		"customer": map[string]any{"id": planted[4], "name": planted[5], "email": planted[6]},
		"invoices": []any{map[string]any{"id": planted[7], "dueDate": "2026-11-01", "amountCents": 87654329}},
		"tone":     "friendly", "idempotencyKey": planted[8],
	}
	hc := &tracedClient{token: token, traceparent: "00-" + traceID + "-" + parentID + "-01"}
	for _, version := range []string{"2026-07-28", "2025-11-25"} {
		client := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
		sess, err := client.Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: "http://" + addr + "/mcp",
			HTTPClient: &http.Client{Transport: hc}}, &mcp.ClientSessionOptions{ProtocolVersion: version})
		if err != nil {
			t.Fatal(err)
		}
		calls := map[string]map[string]any{collections.AnalyzeName: analyze}
		if version == "2026-07-28" {
			calls[collections.PrepareReminderName] = prepare
		}
		for tool, args := range calls {
			res, err := sess.CallTool(t.Context(), &mcp.CallToolParams{Name: tool, Arguments: args})
			if err != nil || res.IsError {
				t.Fatalf("%s (%s) = %+v, %v", tool, version, res, err)
			}
		}
		sess.Close()
	}
	if code, _ := get(t, "http://"+addr+"/healthz"); code != http.StatusOK {
		t.Fatalf("/healthz: %d", code)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}

	spans := rcv.Spans()
	named := func(within []telemetrytest.Span, name string) []telemetrytest.Span {
		var out []telemetrytest.Span
		for _, s := range within {
			if s.GetName() == name {
				out = append(out, s)
			}
		}
		return out
	}
	names := func(within []telemetrytest.Span) []string {
		var out []string
		for _, s := range within {
			out = append(out, s.GetName())
		}
		return out
	}
	servers := named(spans, "POST /mcp")
	if len(servers) == 0 {
		t.Fatalf("no server span POST /mcp among %q", names(spans))
	}
	for _, s := range servers {
		if s.TraceID() != traceID || s.Parent() != parentID || s.GetKind() != tracepb.Span_SPAN_KIND_SERVER {
			t.Errorf("server span %s: trace %s parent %s kind %v; want the caller's trace %s, parent %s, kind server", s.ID(), s.TraceID(), s.Parent(), s.GetKind(), traceID, parentID)
		}
		if id := s.Attr("cobranca.request_id"); id == "" || !slices.Contains(hc.ids, id) {
			t.Errorf("server span %s: request id %q, not one of the responses' X-Request-Id %q", s.ID(), id, hc.ids)
		}
		if s.Attr("http.route") != "/mcp" || s.Attr("http.request.method") != "POST" || !slices.Contains([]string{"200", "202"}, s.Attr("http.response.status_code")) {
			t.Errorf("server span %s: route %q, method %q, status %q", s.ID(), s.Attr("http.route"), s.Attr("http.request.method"), s.Attr("http.response.status_code"))
		}
		if s.Resource["service.name"] != "cobranca" || s.Resource["service.version"] != buildInfo().Version {
			t.Errorf("resource %v, want service.name cobranca, service.version %s", s.Resource, buildInfo().Version)
		}
	}
	// callSpans returns the server spans of the calls of tool, and checks
	// each one's step spans: a child each of wantSteps, carrying the request
	// id and the tool.
	callSpans := func(tool string, wantSteps ...string) []telemetrytest.Span {
		t.Helper()
		var out []telemetrytest.Span
		for _, s := range servers {
			if s.Attr("cobranca.tool") != tool {
				continue
			}
			out = append(out, s)
			if s.Attr("cobranca.outcome") != "allowed" {
				t.Errorf("%s: outcome %q, want allowed", tool, s.Attr("cobranca.outcome"))
			}
			steps := telemetrytest.Children(spans, s)
			for _, want := range wantSteps {
				if len(named(steps, want)) != 1 {
					t.Errorf("%s: the server span's children are %q, want one %s", tool, names(steps), want)
				}
			}
			for _, st := range steps {
				if !strings.HasPrefix(st.GetName(), "pipeline.") {
					continue // the HTTP edge's rate limits
				}
				if st.Attr("cobranca.request_id") != s.Attr("cobranca.request_id") || st.Attr("cobranca.tool") != tool || st.Attr("cobranca.step") != st.GetName() {
					t.Errorf("%s: step %s has request id %q, tool %q, step %q; want %q, %s", tool, st.GetName(), st.Attr("cobranca.request_id"), st.Attr("cobranca.tool"), st.Attr("cobranca.step"), s.Attr("cobranca.request_id"), tool)
				}
			}
		}
		return out
	}
	if got := callSpans(collections.AnalyzeName, "pipeline.authorize", "pipeline.validate", "pipeline.run", "pipeline.audit"); len(got) != 2 {
		t.Errorf("%d server spans of %s, want 2 (the fast path's and go-sdk's)", len(got), collections.AnalyzeName)
	}
	prepared := callSpans(collections.PrepareReminderName, "pipeline.authorize", "pipeline.budget", "pipeline.validate", "pipeline.execute")
	if len(prepared) != 1 {
		t.Fatalf("%d server spans of %s, want 1", len(prepared), collections.PrepareReminderName)
	}
	exec := named(telemetrytest.Children(spans, prepared[0]), "pipeline.execute")
	if len(exec) != 1 {
		t.Fatal("no pipeline.execute")
	}
	txs := named(telemetrytest.Children(spans, exec[0]), "store.tx")
	if len(txs) != 1 || txs[0].Attr("db.system.name") != system || txs[0].Attr("cobranca.outcome") != "committed" {
		t.Errorf("pipeline.execute's children %q, want one store.tx on %s, committed", names(telemetrytest.Children(spans, exec[0])), system)
	}

	// A probe is not traced; a traced request's access line names its trace.
	for _, s := range spans {
		if s.Attr("http.route") == "/healthz" || strings.Contains(s.GetName(), "healthz") {
			t.Errorf("a span of /healthz: %s", s.GetName())
		}
	}
	if !strings.Contains(logs.String(), `"request_id":"`+prepared[0].Attr("cobranca.request_id")+`","trace_id":"`+traceID+`"`) {
		t.Errorf("no access line of request %s with trace_id %s:\n%s", prepared[0].Attr("cobranca.request_id"), traceID, logs)
	}

	// The tier budget's decision is the store's too (the rate limiter's own
	// statements on PostgreSQL).
	for _, budget := range named(telemetrytest.Children(spans, prepared[0]), "pipeline.budget") {
		if under := telemetrytest.Children(spans, budget); len(under) != 1 || under[0].Attr("db.system.name") != system {
			t.Errorf("pipeline.budget's children %q, want one store span on %s", names(under), system)
		}
	}

	raw := rcv.Raw()
	for _, secret := range append(planted, token, token[strings.LastIndexByte(token, '.')+1:]) {
		if bytes.Contains(raw, []byte(secret)) {
			t.Errorf("the exported spans contain %q", secret)
		}
	}
}
