package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/cobranca/cobranca/internal/auth"
	"github.com/cobranca/cobranca/internal/collections"
	"github.com/cobranca/cobranca/internal/contract"
	"github.com/cobranca/cobranca/internal/failure"
	"github.com/cobranca/cobranca/internal/limits"
	limitssqlite "github.com/cobranca/cobranca/internal/limits/sqlite"
	"github.com/cobranca/cobranca/internal/mcpapi"
	"github.com/cobranca/cobranca/internal/metrics"
	"github.com/cobranca/cobranca/internal/pipeline"
	"github.com/cobranca/cobranca/internal/pipeline/pipelinetest"
	"github.com/cobranca/cobranca/internal/portfolio"
	"github.com/cobranca/cobranca/internal/server"
	"github.com/cobranca/cobranca/internal/store/storetest"
	"github.com/cobranca/cobranca/internal/web"
	"github.com/google/go-cmp/cmp"
	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

const maxBody = 1 << 20

// protocolVersions are the MCP revisions cobranca must serve.
var protocolVersions = []string{"2026-07-28", "2025-11-25"}

type testServer struct {
	*httptest.Server
}

// paths are the two ways a tools/call is served: cobranca's fast path and
// go-sdk alone. Every end-to-end test runs against both.
var paths = []struct {
	name string
	slow bool
}{{"fast", false}, {"sdk", true}}

func newServer(t *testing.T, extra ...pipeline.Tool) *testServer {
	return newServerPath(t, false, extra...)
}

// newMCP is the MCP endpoint opts configure, over a pipeline of the
// product's tools and popts.Tools configured by popts; when a tool has side
// effects, the pipeline runs them in a SQLite store of its own.
func newMCP(t testing.TB, opts mcpapi.Options, popts pipeline.Options) *mcpapi.Handler {
	t.Helper()
	for _, tool := range popts.Tools {
		if tool.Contract.HasSideEffects() && popts.DB == nil {
			popts = pipelinetest.WithStore(t, storetest.SQLite(t), popts)
		}
	}
	opts.Pipeline = pipelinetest.Product(t, popts)
	h, err := mcpapi.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func newServerPath(t *testing.T, slow bool, extra ...pipeline.Tool) *testServer {
	t.Helper()
	log := slog.New(slog.DiscardHandler)
	a := newTestAuth(t)
	h := newMCP(t, mcpapi.Options{Logger: log, MaxBodyBytes: maxBody, DisableFastPath: slow, Scopes: a}, pipeline.Options{Tools: extra})
	ts := httptest.NewServer(withToken(mint(t, a, auth.MintOptions{}), server.Routes(server.Deps{
		Logger: log, MCP: h, MaxBodyBytes: maxBody,
		AllowedOrigins: []string{"https://ops.example.com"},
		Auth:           a,
	})))
	t.Cleanup(ts.Close)
	return &testServer{ts}
}

func (s *testServer) connect(t *testing.T, version string) *mcp.ClientSession {
	t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	sess, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: s.URL + "/mcp"}, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatalf("connect %s: %v", version, err)
	}
	t.Cleanup(func() { sess.Close() })
	if got := sess.InitializeResult().ProtocolVersion; got != version {
		t.Fatalf("negotiated protocol %s, want %s", got, version)
	}
	return sess
}

func samplePortfolio() map[string]any {
	inv := func(id, cust, name, due string, cents int, status string, dnc bool) map[string]any {
		return map[string]any{"id": id, "customerId": cust, "customerName": name, "dueDate": due,
			"amountCents": cents, "status": status, "doNotContact": dnc}
	}
	return map[string]any{
		"asOf": "2026-11-29",
		"invoices": []any{
			inv("inv-1", "c-1", "Ana Ltda", "2026-11-01", 150000, "open", false),
			inv("inv-2", "c-1", "Ana Ltda", "2026-12-10", 60000, "open", false),
			inv("inv-3", "c-2", "Bruno SA", "2026-11-20", 5000, "open", false),
			inv("inv-4", "c-3", "Carla ME", "2026-10-01", 9000, "open", true),
			inv("inv-5", "c-4", "Diego", "2026-10-01", 9000, "paid", false),
			inv("inv-6", "c-5", "Elisa", "2026-12-25", 7000, "open", false),
		},
	}
}

func TestToolsList(t *testing.T) {
	s := newServer(t)
	for _, v := range protocolVersions {
		t.Run(v, func(t *testing.T) {
			sess := s.connect(t, v)
			res, err := sess.ListTools(context.Background(), nil)
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Tools) != 1 || res.Tools[0].Name != collections.AnalyzeName {
				t.Fatalf("tools/list = %v, want only %s", toolNames(res.Tools), collections.AnalyzeName)
			}
			tool := res.Tools[0]
			meta, ok := tool.Meta[contract.MetaKey].(map[string]any)
			if !ok {
				t.Fatalf("tools/list entry has no _meta[%q]: %v", contract.MetaKey, tool.Meta)
			}
			if meta["riskLevel"] != "low" || meta["auditEvent"] != "collections.portfolio.analyzed" {
				t.Errorf("_meta contract = %v, want riskLevel low and the audit event", meta)
			}
			// The four hints must be on the wire explicitly: a missing
			// destructiveHint or openWorldHint reads as true.
			raw, err := json.Marshal(tool.Annotations)
			if err != nil {
				t.Fatal(err)
			}
			var hints map[string]any
			if err := json.Unmarshal(raw, &hints); err != nil {
				t.Fatal(err)
			}
			want := map[string]any{"readOnlyHint": true, "destructiveHint": false, "idempotentHint": true, "openWorldHint": false}
			for k, w := range want {
				if hints[k] != w {
					t.Errorf("annotations[%s] = %v, want %v (annotations %s)", k, hints[k], w, raw)
				}
			}
		})
	}
}

// productToolNames are the names of every product tool served over MCP (a pipeline with a
// store serves them all, but for the forbidden ones, which no caller of /mcp ever sees).
func productToolNames(t testing.TB) []string {
	t.Helper()
	tools, err := collections.Tools(collections.Settings{})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, tool := range tools {
		if tool.Contract.VisibleToAgents() {
			out = append(out, tool.Contract.Name)
		}
	}
	return out
}

func toolNames(ts []*mcp.Tool) []string {
	var out []string
	for _, t := range ts {
		out = append(out, t.Name)
	}
	return out
}

func TestAnalyzeValid(t *testing.T) {
	for _, p := range paths {
		t.Run(p.name, func(t *testing.T) { testAnalyzeValid(t, newServerPath(t, p.slow)) })
	}
}

func testAnalyzeValid(t *testing.T, s *testServer) {
	args := samplePortfolio()
	raw, _ := json.Marshal(args)
	in, err := portfolio.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	wantJSON, _ := json.Marshal(portfolio.Analyze(in))
	var want any
	_ = json.Unmarshal(wantJSON, &want)

	for _, v := range protocolVersions {
		t.Run(v, func(t *testing.T) {
			sess := s.connect(t, v)
			list, err := sess.ListTools(context.Background(), nil)
			if err != nil {
				t.Fatal(err)
			}
			outSchema := resolve(t, list.Tools[0].OutputSchema)

			res, err := sess.CallTool(context.Background(), &mcp.CallToolParams{Name: collections.AnalyzeName, Arguments: args})
			if err != nil {
				t.Fatal(err)
			}
			if res.IsError {
				t.Fatalf("isError on a valid portfolio: %s", textOf(res))
			}
			got := roundTrip(t, res.StructuredContent)
			if err := outSchema.Validate(got); err != nil {
				t.Errorf("structuredContent does not validate against the outputSchema: %v", err)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("structuredContent (-want +got):\n%s", diff)
			}
			text := textOf(res)
			if text != "Portfolio analyzed: 2 priority account(s) from 6 invoice(s); no external action taken." {
				t.Errorf("text = %q", text)
			}
			for _, name := range []string{"Ana", "Bruno", "c-1"} {
				if strings.Contains(text, name) {
					t.Errorf("text summary %q leaks %q; it must carry counts only", text, name)
				}
			}
		})
	}
}

func TestAnalyzeInvalid(t *testing.T) {
	for _, p := range paths {
		t.Run(p.name, func(t *testing.T) { testAnalyzeInvalid(t, newServerPath(t, p.slow)) })
	}
}

func testAnalyzeInvalid(t *testing.T, s *testServer) {
	mutate := func(f func(m map[string]any)) map[string]any {
		m := samplePortfolio()
		f(m)
		return m
	}
	invoice := func(m map[string]any, i int) map[string]any { return m["invoices"].([]any)[i].(map[string]any) }
	tests := []struct {
		name  string
		args  map[string]any
		code  string
		field string
	}{
		{"impossible date", mutate(func(m map[string]any) { invoice(m, 2)["dueDate"] = "2025-02-30" }), "invalid_date", "invoices[2].dueDate"},
		{"month 13", mutate(func(m map[string]any) { m["asOf"] = "2025-13-01" }), "invalid_date", "asOf"},
		{"unknown field", mutate(func(m map[string]any) { invoice(m, 1)["note"] = "x" }), "unknown_field", "invoices[1].note"},
		{"missing field", mutate(func(m map[string]any) { delete(invoice(m, 0), "status") }), "missing_field", "invoices[0].status"},
		{"negative amount", mutate(func(m map[string]any) { invoice(m, 3)["amountCents"] = -5 }), "out_of_range", "invoices[3].amountCents"},
		{"fractional amount", mutate(func(m map[string]any) { invoice(m, 3)["amountCents"] = 10.5 }), "invalid_type", "invoices[3].amountCents"},
		{"status", mutate(func(m map[string]any) { invoice(m, 4)["status"] = "overdue" }), "invalid_value", "invoices[4].status"},
		{"duplicate id", mutate(func(m map[string]any) { invoice(m, 5)["id"] = "inv-1" }), "duplicate_invoice_id", "invoices[5].id"},
		{"no invoices", mutate(func(m map[string]any) { m["invoices"] = []any{} }), "out_of_range", "invoices"},
	}
	for _, v := range protocolVersions {
		sess := s.connect(t, v)
		for _, tt := range tests {
			t.Run(v+"/"+tt.name, func(t *testing.T) {
				res, err := sess.CallTool(context.Background(), &mcp.CallToolParams{Name: collections.AnalyzeName, Arguments: tt.args})
				if err != nil {
					t.Fatal(err)
				}
				if !res.IsError {
					t.Fatalf("isError = false for %s", tt.name)
				}
				got := errorOf(t, res)
				if string(got.Code) != tt.code || got.Field != tt.field {
					t.Errorf("error = %+v, want code %s field %s", got, tt.code, tt.field)
				}
				if !strings.Contains(textOf(res), tt.field) {
					t.Errorf("text %q does not name the field %s", textOf(res), tt.field)
				}
			})
		}
	}
}

// errorOf reads the failure detail of an error result where a program
// reads it, _meta[mcpapi.ErrorMetaKey], and checks the result carries no
// structuredContent: clients validate that against the outputSchema.
func errorOf(t *testing.T, res *mcp.CallToolResult) failure.Detail {
	t.Helper()
	if res.StructuredContent != nil {
		t.Errorf("error result carries structuredContent %v; clients check it against the outputSchema", res.StructuredContent)
	}
	raw, err := json.Marshal(res.Meta[mcpapi.ErrorMetaKey])
	if err != nil {
		t.Fatal(err)
	}
	var d failure.Detail
	if err := json.Unmarshal(raw, &d); err != nil || d.Code == "" {
		t.Fatalf("_meta[%s] = %s: no failure detail (%v)", mcpapi.ErrorMetaKey, raw, err)
	}
	if want := (&failure.Error{Code: d.Code, Field: d.Field, Message: d.Message}).Text(); textOf(res) != want {
		t.Errorf("text = %q, want %q", textOf(res), want)
	}
	return d
}

func textOf(res *mcp.CallToolResult) string {
	var sb strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			sb.WriteString(tc.Text)
		}
	}
	return sb.String()
}

func roundTrip(t *testing.T, v any) any {
	t.Helper()
	raw, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out any
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

func resolve(t *testing.T, schema any) *jsonschema.Resolved {
	t.Helper()
	raw, err := json.Marshal(schema)
	if err != nil {
		t.Fatal(err)
	}
	var s jsonschema.Schema
	if err := json.Unmarshal(raw, &s); err != nil {
		t.Fatal(err)
	}
	r, err := s.Resolve(nil)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// post sends a raw JSON-RPC body to /mcp.
func (s *testServer) post(t *testing.T, body io.Reader, hdr map[string]string) *http.Response {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, s.URL+"/mcp", body)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", "2025-11-25")
	for k, v := range hdr {
		if k == "Host" {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

func callBody(args any) []byte {
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tools/call",
		"params": map[string]any{"name": collections.AnalyzeName, "arguments": args}})
	return b
}

func TestBodyLimit(t *testing.T) {
	s := newServer(t)
	big := samplePortfolio()
	big["pad"] = strings.Repeat("x", maxBody)
	body := callBody(big)
	t.Run("content-length", func(t *testing.T) {
		resp := s.post(t, bytes.NewReader(body), nil)
		if resp.StatusCode != http.StatusRequestEntityTooLarge {
			t.Errorf("status = %d, want 413", resp.StatusCode)
		}
	})
	t.Run("chunked", func(t *testing.T) {
		// A reader without a known length makes the client send chunked.
		resp := s.post(t, io.MultiReader(bytes.NewReader(body)), nil)
		if resp.StatusCode != http.StatusRequestEntityTooLarge {
			t.Errorf("status = %d, want 413", resp.StatusCode)
		}
	})
	t.Run("under the limit", func(t *testing.T) {
		resp := s.post(t, bytes.NewReader(callBody(samplePortfolio())), nil)
		if resp.StatusCode != http.StatusOK {
			b, _ := io.ReadAll(resp.Body)
			t.Errorf("status = %d, want 200: %s", resp.StatusCode, b)
		}
	})
}

func TestOriginAndHost(t *testing.T) {
	s := newServer(t)
	tests := []struct {
		name string
		hdr  map[string]string
		want int
	}{
		{"foreign origin", map[string]string{"Origin": "https://evil.example.com"}, http.StatusForbidden},
		{"foreign host", map[string]string{"Host": "evil.example.com"}, http.StatusForbidden},
		{"null origin", map[string]string{"Origin": "null"}, http.StatusForbidden},
		{"configured origin", map[string]string{"Origin": "https://ops.example.com"}, http.StatusOK},
		{"loopback origin", map[string]string{"Origin": "http://localhost:3000"}, http.StatusOK},
		{"no origin", nil, http.StatusOK},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp := s.post(t, bytes.NewReader(callBody(samplePortfolio())), tt.hdr)
			if resp.StatusCode != tt.want {
				t.Errorf("status = %d, want %d", resp.StatusCode, tt.want)
			}
		})
	}
}

func TestMethodNotAllowed(t *testing.T) {
	s := newServer(t)
	for _, m := range []string{http.MethodGet, http.MethodDelete} {
		req, _ := http.NewRequest(m, s.URL+"/mcp", nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusMethodNotAllowed {
			t.Errorf("%s /mcp = %d, want 405", m, resp.StatusCode)
		}
	}
}

func TestContractsEndpoint(t *testing.T) {
	s := newServer(t)
	resp, err := http.Get(s.URL + "/contracts/" + collections.AnalyzeName)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var got map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&got); err != nil {
		t.Fatal(err)
	}
	tools, err := collections.Tools(collections.Settings{})
	if err != nil {
		t.Fatal(err)
	}
	want := roundTrip(t, tools[0].Contract)
	if diff := cmp.Diff(want, any(got)); diff != "" {
		t.Errorf("GET /contracts/%s (-want +got):\n%s", collections.AnalyzeName, diff)
	}
	const unknown = "no.such_tool-Maria_Silva_NF-42"
	resp2, err := http.Get(s.URL + "/contracts/" + unknown)
	if err != nil {
		t.Fatal(err)
	}
	defer resp2.Body.Close()
	raw, err := io.ReadAll(resp2.Body)
	if err != nil {
		t.Fatal(err)
	}
	var body failure.Body
	if err := json.Unmarshal(raw, &body); err != nil || resp2.StatusCode != http.StatusNotFound || body.Error.Code != "not_found" {
		t.Errorf("unknown contract = %d %+v (%v), want 404 with code not_found", resp2.StatusCode, body, err)
	}
	if bytes.Contains(raw, []byte("Maria_Silva")) {
		t.Errorf("the 404 repeats the requested name: %s", raw)
	}
}

func TestHealthz(t *testing.T) {
	s := newServer(t)
	resp, err := http.Get(s.URL + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("healthz = %d", resp.StatusCode)
	}
	if resp.Header.Get("X-Request-Id") == "" {
		t.Errorf("no X-Request-Id on the response")
	}
}

// BenchmarkToolsCall measures one analyze_portfolio call of 500 invoices
// through real HTTP and the whole handler stack, on both paths.
// fast/conncap is the fast path behind the connection limiter, as serve
// runs it.
func BenchmarkToolsCall(b *testing.B) {
	for _, p := range paths {
		b.Run(p.name, func(b *testing.B) { benchToolsCall(b, p.slow, false) })
	}
	b.Run("fast/conncap", func(b *testing.B) { benchToolsCall(b, false, true) })
}

func benchToolsCall(b *testing.B, slow, conncap bool) {
	log := slog.New(slog.DiscardHandler)
	a := newTestAuth(b)
	h := newMCP(b, mcpapi.Options{Logger: log, MaxBodyBytes: maxBody, DisableFastPath: slow, Scopes: a}, pipeline.Options{})
	routes := server.Routes(server.Deps{Logger: log, MCP: h, MaxBodyBytes: maxBody, Auth: a})
	ts := httptest.NewUnstartedServer(routes)
	if conncap {
		ln := server.LimitConns(ts.Listener, server.ConnLimits{Total: 1024, PerAddr: 64})
		ts.Listener, ts.Config = ln, ln.HTTPServer(routes, server.DefaultTimeouts, nil)
	}
	ts.Start()
	token := "Bearer " + mint(b, a, auth.MintOptions{})
	defer ts.Close()
	body := callBody(benchPortfolio(500))
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		req, _ := http.NewRequest(http.MethodPost, ts.URL+"/mcp", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("MCP-Protocol-Version", "2025-11-25")
		req.Header.Set("Authorization", token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		out, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !bytes.Contains(out, []byte(`"structuredContent"`)) || bytes.Contains(out, []byte(`"isError":true`)) {
			b.Fatalf("status %d: %.300s", resp.StatusCode, out)
		}
	}
}

func benchPortfolio(n int) map[string]any {
	invs := make([]any, n)
	for i := range invs {
		c := i % (n / 4)
		status := "open"
		if i%10 == 7 {
			status = "paid"
		}
		invs[i] = map[string]any{
			"id": fmt.Sprintf("inv-%05d", i+1), "customerId": fmt.Sprintf("cust-%04d", c+1),
			"customerName": fmt.Sprintf("Cliente %d Ltda", c+1), "dueDate": fmt.Sprintf("2026-%02d-%02d", 10+i%3, 1+i%28),
			"amountCents": 100 + (i*7919)%80000, "status": status, "doNotContact": c%33 == 0,
		}
	}
	return map[string]any{"asOf": "2026-11-29", "invoices": invs}
}

// TestRequestIDIsOurs: the request id in the audit log and in error
// references is generated by the server; a client's X-Request-Id is only
// logged beside it.
func TestRequestIDIsOurs(t *testing.T) {
	s := newServer(t)
	resp := s.post(t, bytes.NewReader(callBody(samplePortfolio())), map[string]string{"X-Request-Id": "victim-req-1"})
	if got := resp.Header.Get("X-Request-Id"); got == "victim-req-1" || len(got) != 32 {
		t.Errorf("X-Request-Id = %q, want a fresh 32-hex id, not the client's", got)
	}
}

// TestMetricsEndpoint: /metrics is served by the metrics listener only —
// the public routes answer 404 — counts calls by tool, tier and outcome,
// and answers a scraper whatever Host it sends.
func TestMetricsEndpoint(t *testing.T) {
	log := slog.New(slog.DiscardHandler)
	a := newTestAuth(t)
	m := metrics.New()
	h := newMCP(t, mcpapi.Options{Logger: log, MaxBodyBytes: maxBody, Scopes: a}, pipeline.Options{Metrics: m})
	ts := httptest.NewServer(withToken(mint(t, a, auth.MintOptions{}), server.Routes(server.Deps{
		Logger: log, MCP: h, MaxBodyBytes: maxBody, Auth: a,
	})))
	defer ts.Close()
	ms := httptest.NewServer(server.MetricsRoutes(m.Handler()))
	defer ms.Close()
	s := &testServer{ts}
	s.post(t, bytes.NewReader(callBody(samplePortfolio())), nil)
	bad := samplePortfolio()
	bad["asOf"] = "2026-02-30"
	s.post(t, bytes.NewReader(callBody(bad)), nil)

	for _, path := range []string{"/metrics", "/metrics/"} {
		resp, err := http.Get(ts.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotFound {
			t.Errorf("public GET %s = %d, want 404", path, resp.StatusCode)
		}
	}
	if resp, err := http.Get(ms.URL + "/mcp"); err != nil || resp.StatusCode != http.StatusNotFound {
		t.Errorf("metrics listener GET /mcp = %v, %v; want 404", resp, err)
	} else {
		resp.Body.Close()
	}

	req, _ := http.NewRequest(http.MethodGet, ms.URL+"/metrics", nil)
	req.Host = "10.0.0.7:8080" // a scraper on the private network
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("/metrics = %d", resp.StatusCode)
	}
	for _, want := range []string{
		`cobranca_tool_calls_total{outcome="allowed",tier="low",tool="collections.analyze_portfolio"} 1`,
		`cobranca_tool_calls_total{outcome="rejected",tier="low",tool="collections.analyze_portfolio"} 1`,
	} {
		if !strings.Contains(string(body), want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	for _, leak := range []string{"Ana Ltda", "inv-1", "subject"} {
		if strings.Contains(string(body), leak) {
			t.Errorf("/metrics leaks %q", leak)
		}
	}
}

// TestDebug: the debug listener serves the runtime's profiles, bounded in
// time, and nothing registers them on the public routes or on
// http.DefaultServeMux. In parallel: it waits two seconds on the profile and the trace.
func TestDebug(t *testing.T) {
	t.Parallel()
	dbg := httptest.NewServer(server.Debug())
	defer dbg.Close()
	get := func(path string) (int, []byte) {
		t.Helper()
		resp, err := http.Get(dbg.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode, b
	}
	for path, want := range map[string]string{"/debug/pprof/": "goroutine", "/debug/pprof/heap?debug=1": "heap profile", "/debug/pprof/goroutine?debug=2": "goroutine "} {
		if code, body := get(path); code != http.StatusOK || !strings.Contains(string(body), want) {
			t.Errorf("GET %s: %d, body lacks %q", path, code, want)
		}
	}
	// A CPU profile is gzip-compressed protobuf; a trace starts "go 1.".
	if code, body := get("/debug/pprof/profile?seconds=1"); code != http.StatusOK || len(body) < 2 || body[0] != 0x1f || body[1] != 0x8b {
		t.Errorf("CPU profile: %d, %d bytes", code, len(body))
	}
	if code, body := get("/debug/pprof/trace?seconds=1"); code != http.StatusOK || !bytes.HasPrefix(body, []byte("go 1.")) {
		t.Errorf("trace: %d, %.10q", code, body)
	}
	for path, want := range map[string]int{
		"/debug/pprof/profile?seconds=61": http.StatusBadRequest, "/debug/pprof/trace?seconds=0": http.StatusBadRequest,
		"/debug/pprof/profile?seconds=x": http.StatusBadRequest, "/debug/pprof/heap?debug=9": http.StatusBadRequest,
		"/debug/pprof/nosuch": http.StatusNotFound, "/debug/pprof/cmdline": http.StatusNotFound,
	} {
		if code, _ := get(path); code != want {
			t.Errorf("GET %s: %d, want %d", path, code, want)
		}
	}

	ts := newServer(t)
	resp, err := http.Get(ts.URL + "/debug/pprof/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("public GET /debug/pprof/: %d, want 404", resp.StatusCode)
	}
	if _, pattern := http.DefaultServeMux.Handler(httptest.NewRequest(http.MethodGet, "/debug/pprof/", nil)); pattern != "" {
		t.Errorf("http.DefaultServeMux serves /debug/pprof/ (pattern %q): something imports net/http/pprof", pattern)
	}
}

// TestDownloadsRoute: the download route reaches Deps.Downloads with its
// {id}, with no token and whatever the Host (the link is the credential);
// without the handler there is no such route.
func TestDownloadsRoute(t *testing.T) {
	log := slog.New(slog.DiscardHandler)
	a := newTestAuth(t)
	h := newMCP(t, mcpapi.Options{Logger: log, MaxBodyBytes: maxBody, Scopes: a}, pipeline.Options{})
	downloads := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, r.Method+" "+r.PathValue("id"))
	})
	with := httptest.NewServer(server.Routes(server.Deps{Logger: log, MCP: h, MaxBodyBytes: maxBody, Auth: a, Downloads: downloads}))
	defer with.Close()
	without := httptest.NewServer(server.Routes(server.Deps{Logger: log, MCP: h, MaxBodyBytes: maxBody, Auth: a}))
	defer without.Close()
	for _, method := range []string{http.MethodGet, http.MethodHead, http.MethodPost} {
		req, _ := http.NewRequest(method, with.URL+"/files/f_abc/download?link=l_x&sig=y", nil)
		req.Host = "files.example.com"
		req.Header.Set("Origin", "https://elsewhere.example.com")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		want := method + " f_abc"
		if method == http.MethodHead {
			want = ""
		}
		if resp.StatusCode != http.StatusOK || string(b) != want {
			t.Errorf("%s download = %d %q, want 200 %q", method, resp.StatusCode, b, want)
		}
	}
	// Other paths under /files/ are 404 in the one error shape, without the path.
	for _, path := range []string{"/files/", "/files/f_abc", "/files/f_abc/download/", "/files/f_abc/download/x", "/files/f_abc/raw?sig=y", "/files/a/b/c"} {
		for _, method := range []string{http.MethodGet, http.MethodPost} {
			req, _ := http.NewRequest(method, with.URL+path, nil)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			var body failure.Body
			if err := json.Unmarshal(b, &body); resp.StatusCode != http.StatusNotFound || err != nil || body.Error.Code != "not_found" ||
				resp.Header.Get("Content-Type") != "application/json" || strings.Contains(string(b), "f_abc") {
				t.Errorf("%s %s = %d %s %q, want 404 not_found in JSON", method, path, resp.StatusCode, resp.Header.Get("Content-Type"), b)
			}
		}
	}
	resp, err := http.Get(without.URL + "/files/f_abc/download")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("download without a handler = %d, want 404", resp.StatusCode)
	}
}

// TestDownloadsOriginBudget: downloads spend the per-origin budget; over
// it they are answered 429 before the handler reads the store.
func TestDownloadsOriginBudget(t *testing.T) {
	log := slog.New(slog.DiscardHandler)
	a := newTestAuth(t)
	h := newMCP(t, mcpapi.Options{Logger: log, MaxBodyBytes: maxBody, Scopes: a}, pipeline.Options{})
	two, err := limits.ParseSpec("2/1h")
	if err != nil {
		t.Fatal(err)
	}
	lim := limits.New(limitssqlite.New(storetest.SQLite(t), time.Now), limits.Options{Policies: limits.Policies{Origin: two}, StoreTimeout: 10 * time.Second})
	var served int
	downloads := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { served++ })
	ts := httptest.NewServer(server.Routes(server.Deps{Logger: log, MCP: h, MaxBodyBytes: maxBody, Auth: a, Downloads: downloads, Limits: lim}))
	defer ts.Close()
	var codes []int
	for range 3 {
		resp, err := http.Get(ts.URL + "/files/f_abc/download")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		codes = append(codes, resp.StatusCode)
	}
	if fmt.Sprint(codes) != "[200 200 429]" || served != 2 {
		t.Errorf("downloads = %v, %d served; want [200 200 429], 2", codes, served)
	}
}

// TestPagesRoutes: the pages' routes reach Deps.Web, with {id}, for their methods only, under
// the per-origin budget; without the handler there are no such routes.
func TestPagesRoutes(t *testing.T) {
	log := slog.New(slog.DiscardHandler)
	a := newTestAuth(t)
	h := newMCP(t, mcpapi.Options{Logger: log, MaxBodyBytes: maxBody, Scopes: a}, pipeline.Options{})
	pages := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, r.Method+" "+r.URL.Path)
	})
	with := httptest.NewServer(server.Routes(server.Deps{Logger: log, MCP: h, MaxBodyBytes: maxBody, Auth: a, Web: pages}))
	defer with.Close()
	without := httptest.NewServer(server.Routes(server.Deps{Logger: log, MCP: h, MaxBodyBytes: maxBody, Auth: a}))
	defer without.Close()
	do := func(base, method, path string) (int, string) {
		req, _ := http.NewRequest(method, base+path, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	for _, tc := range []struct{ method, path string }{
		{http.MethodGet, "/signin"}, {http.MethodGet, "/signin/callback"}, {http.MethodPost, "/signout"},
		{http.MethodGet, "/approvals/a_x"}, {http.MethodPost, "/approvals/a_x"},
		{http.MethodGet, "/console"}, {http.MethodGet, "/console/tools"}, {http.MethodPost, "/console/ledger/match"},
		{http.MethodGet, web.AuditExportPath}, {http.MethodPost, web.AuditPath}, {http.MethodPost, web.ImportPath},
	} {
		if status, body := do(with.URL, tc.method, tc.path); status != http.StatusOK || body != tc.method+" "+tc.path {
			t.Errorf("%s %s = %d %q, want the pages' handler", tc.method, tc.path, status, body)
		}
		if status, _ := do(without.URL, tc.method, tc.path); status != http.StatusNotFound {
			t.Errorf("%s %s without pages = %d, want 404", tc.method, tc.path, status)
		}
	}
	for _, tc := range []struct{ method, path string }{
		{http.MethodPost, "/signin"}, {http.MethodGet, "/signout"}, {http.MethodDelete, "/approvals/a_x"}, {http.MethodGet, "/approvals/a_x/y"},
		{http.MethodPost, "/console"}, {http.MethodGet, "/consoles"},
	} {
		if status, body := do(with.URL, tc.method, tc.path); status == http.StatusOK {
			t.Errorf("%s %s = %d %q, want no route", tc.method, tc.path, status, body)
		}
	}

	two, err := limits.ParseSpec("2/1h")
	if err != nil {
		t.Fatal(err)
	}
	lim := limits.New(limitssqlite.New(storetest.SQLite(t), time.Now), limits.Options{Policies: limits.Policies{Origin: two}, StoreTimeout: 10 * time.Second})
	limited := httptest.NewServer(server.Routes(server.Deps{Logger: log, MCP: h, MaxBodyBytes: maxBody, Auth: a, Web: pages, Limits: lim}))
	defer limited.Close()
	var codes []int
	for _, path := range []string{"/approvals/a_x", "/signin", "/approvals/a_x"} {
		status, _ := do(limited.URL, http.MethodGet, path)
		codes = append(codes, status)
	}
	if fmt.Sprint(codes) != "[200 200 429]" {
		t.Errorf("page reads = %v, want [200 200 429]: the per-origin budget", codes)
	}
	// The audit trail's export and verify spend it too (each reads much of the log), and the
	// import form.
	lim2 := limits.New(limitssqlite.New(storetest.SQLite(t), time.Now), limits.Options{Policies: limits.Policies{Origin: two}, StoreTimeout: 10 * time.Second})
	limited2 := httptest.NewServer(server.Routes(server.Deps{Logger: log, MCP: h, MaxBodyBytes: maxBody, Auth: a, Web: pages, Limits: lim2}))
	defer limited2.Close()
	codes = nil
	for _, tc := range []struct{ method, path string }{{http.MethodGet, web.AuditExportPath}, {http.MethodPost, web.ImportPath}, {http.MethodPost, web.AuditPath}} {
		status, _ := do(limited2.URL, tc.method, tc.path)
		codes = append(codes, status)
	}
	if fmt.Sprint(codes) != "[200 200 429]" {
		t.Errorf("audit export, import, verify = %v, want [200 200 429]: the per-origin budget", codes)
	}
}
