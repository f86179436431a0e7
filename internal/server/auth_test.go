package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/cobranca/cobranca/internal/auth"
	"github.com/cobranca/cobranca/internal/collections"
	"github.com/cobranca/cobranca/internal/contract"
	"github.com/cobranca/cobranca/internal/contract/contracttest"
	"github.com/cobranca/cobranca/internal/mcpapi"
	"github.com/cobranca/cobranca/internal/pipeline"
	"github.com/cobranca/cobranca/internal/pipeline/pipelinetest"
	"github.com/cobranca/cobranca/internal/server"
	"github.com/google/go-cmp/cmp"
)

// newTestAuth is a development-mode Authenticator with its key in a fresh
// directory.
func newTestAuth(tb testing.TB) *auth.Authenticator {
	tb.Helper()
	a, err := auth.New(context.Background(), auth.Config{DataDir: tb.TempDir(), BaseURL: "http://127.0.0.1:8080"})
	if err != nil {
		tb.Fatal(err)
	}
	return a
}

// mint returns a development token; by default an agent holding every
// scope a product tool needs.
func mint(tb testing.TB, a *auth.Authenticator, opts auth.MintOptions) string {
	tb.Helper()
	if opts.Subject == "" {
		opts.Subject, opts.Agent = "alice", "test-agent"
	}
	if opts.Scopes == nil {
		tools, err := collections.Tools(collections.Settings{})
		if err != nil {
			tb.Fatal(err)
		}
		for _, t := range tools {
			opts.Scopes = append(opts.Scopes, t.Contract.Permissions...)
		}
	}
	tok, err := a.Mint(opts)
	if err != nil {
		tb.Fatal(err)
	}
	return tok
}

// withToken sends requests that carry no Authorization header as the
// holder of tok, so tests about other things need not pass it around;
// the token is still verified by the real middleware.
func withToken(tok string, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") == "" {
			r.Header.Set("Authorization", "Bearer "+tok)
		}
		h.ServeHTTP(w, r)
	})
}

// authServer is the real route table, with no token added.
type authServer struct {
	*httptest.Server
	auth *auth.Authenticator
	logs *bytes.Buffer
	mu   *sync.Mutex
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func newAuthServer(t *testing.T, slow bool, extra ...pipeline.Tool) *authServer {
	t.Helper()
	s := &authServer{auth: newTestAuth(t), logs: &bytes.Buffer{}, mu: &sync.Mutex{}}
	log := slog.New(slog.NewJSONHandler(lockedWriter{s.mu, s.logs}, nil))
	h := newMCP(t, mcpapi.Options{Logger: log, MaxBodyBytes: maxBody, DisableFastPath: slow, Scopes: s.auth}, pipeline.Options{Tools: extra})
	s.Server = httptest.NewServer(server.Routes(server.Deps{Logger: log, MCP: h, MaxBodyBytes: maxBody, Auth: s.auth}))
	t.Cleanup(s.Close)
	return s
}

func (s *authServer) do(t *testing.T, method, path, token string, body []byte) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, s.URL+path, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", "2025-11-25")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, out
}

const devMetadataURL = "http://127.0.0.1:8080/.well-known/oauth-protected-resource/mcp"

// TestAuthRequired: /mcp and /contracts need a valid token; /healthz and
// the discovery documents do not.
func TestAuthRequired(t *testing.T) {
	s := newAuthServer(t, false)
	good := mint(t, s.auth, auth.MintOptions{})
	noToken := `Bearer resource_metadata="` + devMetadataURL + `"`
	badToken := `Bearer error="invalid_token", error_description="token signature cannot be verified", resource_metadata="` + devMetadataURL + `"`
	forged := mint(t, newTestAuth(t), auth.MintOptions{}) // another dev key
	tests := []struct {
		method, path, token string
		body                []byte
		wantStatus          int
		wantChallenge       string
	}{
		{"POST", "/mcp", "", callBody(samplePortfolio()), 401, noToken},
		{"POST", "/mcp", forged, callBody(samplePortfolio()), 401, badToken},
		{"POST", "/mcp?access_token=" + good, "", callBody(samplePortfolio()), 401, noToken},
		{"GET", "/mcp", "", nil, 401, noToken},
		{"GET", "/contracts", "", nil, 401, noToken},
		{"GET", "/contracts/" + collections.AnalyzeName, forged, nil, 401, badToken},
		{"POST", "/mcp", good, callBody(samplePortfolio()), 200, ""},
		{"GET", "/mcp", good, nil, 405, ""},
		{"GET", "/contracts", good, nil, 200, ""},
		{"GET", "/healthz", "", nil, 200, ""},
		{"GET", "/.well-known/oauth-protected-resource", "", nil, 200, ""},
		{"GET", "/.well-known/oauth-protected-resource/mcp", "", nil, 200, ""},
		{"GET", "/.well-known/jwks.json", "", nil, 200, ""},
	}
	for _, tt := range tests {
		name := tt.method + " " + strings.Split(tt.path, "?")[0]
		if tt.token != "" {
			name += " with token"
		}
		t.Run(name, func(t *testing.T) {
			resp, body := s.do(t, tt.method, tt.path, tt.token, tt.body)
			if resp.StatusCode != tt.wantStatus {
				t.Errorf("status = %d, want %d: %.200s", resp.StatusCode, tt.wantStatus, body)
			}
			if got := resp.Header.Get("WWW-Authenticate"); got != tt.wantChallenge {
				t.Errorf("WWW-Authenticate = %q, want %q", got, tt.wantChallenge)
			}
		})
	}
	s.mu.Lock()
	logs := s.logs.String()
	s.mu.Unlock()
	if strings.Contains(logs, good) || strings.Contains(logs, forged) {
		t.Errorf("a token reached the logs")
	}
	if !strings.Contains(logs, `"subject":"alice","client_id":"test-agent"`) {
		t.Errorf("access log does not name the caller:\n%s", logs)
	}
}

// TestMetadataDocument checks what MCP clients discover.
func TestMetadataDocument(t *testing.T) {
	s := newAuthServer(t, false)
	_, body := s.do(t, "GET", "/.well-known/oauth-protected-resource/mcp", "", nil)
	var got map[string]any
	if err := json.Unmarshal(body, &got); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"resource":                 "http://127.0.0.1:8080/mcp",
		"authorization_servers":    []any{"http://127.0.0.1:8080"},
		"scopes_supported":         []any{"collections:read"},
		"bearer_methods_supported": []any{"header"},
		"resource_name":            "cobranca",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("metadata (-want +got):\n%s", diff)
	}
}

// TestMissingScope: a tools/call without the contract's scopes is refused
// with 403 naming them, before the tool runs, on both paths.
func TestMissingScope(t *testing.T) {
	ran := false
	two := testTool("test.two_scopes", contract.Low, []string{"test:read", "test:export"}, func() { ran = true })
	for _, p := range bothPaths {
		t.Run(p.name, func(t *testing.T) {
			ran = false
			s := newAuthServer(t, p.slow, two)
			tok := mint(t, s.auth, auth.MintOptions{Subject: "alice", Agent: "bot", Scopes: []string{"test:read"}})
			call := func(name string) []byte {
				b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 7, "method": "tools/call",
					"params": map[string]any{"name": name, "arguments": map[string]any{}}})
				return b
			}
			cases := []struct {
				name, token string
				body        []byte
				wantScope   string
			}{
				{"one missing", tok, call("test.two_scopes"), "test:export"},
				{"no scopes at all", mint(t, s.auth, auth.MintOptions{Subject: "bob", Scopes: []string{}}), call(collections.AnalyzeName), "collections:read"},
			}
			for _, c := range cases {
				resp, body := s.doVersion(t, c.token, c.body, "")
				want := `Bearer error="insufficient_scope", error_description="the token lacks scopes this call needs", scope="` + c.wantScope + `", resource_metadata="` + devMetadataURL + `"`
				if resp.StatusCode != http.StatusForbidden || resp.Header.Get("WWW-Authenticate") != want {
					t.Errorf("%s: got %d %q (%s), want 403 %q", c.name, resp.StatusCode, resp.Header.Get("WWW-Authenticate"), body, want)
				}
			}
			if ran {
				t.Error("a tool ran without its scopes")
			}
			// With every scope the call goes through.
			full := mint(t, s.auth, auth.MintOptions{Subject: "alice", Agent: "bot", Scopes: []string{"test:read", "test:export"}})
			if resp, body := s.doVersion(t, full, call("test.two_scopes"), "2025-11-25"); resp.StatusCode != 200 || !ran {
				t.Errorf("with every scope: %d %s, ran %v", resp.StatusCode, body, ran)
			}
		})
	}
}

// doVersion posts body to /mcp with the given protocol version header
// ("" sends none: the SDK then accepts batches).
func (s *authServer) doVersion(t *testing.T, token string, body []byte, version string) (*http.Response, []byte) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, s.URL+"/mcp", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if version != "" {
		req.Header.Set("MCP-Protocol-Version", version)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return resp, out
}

// TestForbiddenIndistinguishable: over /mcp every caller is an agent for
// the forbidden tier. A forbidden tool is absent from tools/list and
// /contracts, and calling it is answered byte for byte like calling a tool
// that does not exist, for an agent token and a human token alike, on
// both protocol revisions and both paths.
func TestForbiddenIndistinguishable(t *testing.T) {
	forbidden := testTool("test.forbidden_action", contract.Forbidden, []string{"test:admin"}, func() {
		t.Error("a forbidden tool ran over MCP")
	})
	for _, p := range bothPaths {
		s := newAuthServer(t, p.slow, forbidden)
		tokens := map[string]string{
			"agent": mint(t, s.auth, auth.MintOptions{Subject: "alice", Agent: "ledger-copilot", Scopes: []string{"collections:read", "test:admin"}}),
			"human": mint(t, s.auth, auth.MintOptions{Subject: "carol", Scopes: []string{"collections:read", "test:admin"}, ACR: "urn:cobranca:mfa"}),
		}
		for who, tok := range tokens {
			for _, version := range protocolVersions {
				t.Run(p.name+"/"+who+"/"+version, func(t *testing.T) {
					answer := func(name string, id any) string {
						resp, out := rawCall(t, s.URL, tok, version, id, name, map[string]any{}, nil, nil)
						var hdr []string
						for _, k := range []string{"Content-Type", "WWW-Authenticate", "Mcp-Session-Id"} {
							hdr = append(hdr, k+": "+resp.Header.Get(k))
						}
						got := resp.Status + "\n" + strings.Join(hdr, "\n") + "\n" + string(out)
						got = strings.ReplaceAll(got, name, "NAME")
						return regexp.MustCompile(`"id":\s*("[^"]*"|\d+)`).ReplaceAllString(got, `"id":ID`)
					}
					forbiddenAnswer := answer("test.forbidden_action", 11)
					unknownAnswer := answer("test.no_such_action", "req-12")
					if forbiddenAnswer != unknownAnswer {
						t.Errorf("forbidden call answered\n%s\nunknown call answered\n%s", forbiddenAnswer, unknownAnswer)
					}
					// The answer is the endpoint's fixed unknown-tool error,
					// which repeats nothing of the request (the name included).
					if !strings.Contains(unknownAnswer, `"error":{"code":-32602,"message":"unknown tool"}`) || strings.Contains(unknownAnswer, "NAME") {
						t.Errorf("the unknown-tool answer is not the fixed unknown-tool error; the comparison proves little:\n%s", unknownAnswer)
					}

					// Nor is it listed, in tools/list or /contracts.
					sess := connectAs(t, s.URL, tok, version, nil)
					list, err := sess.ListTools(context.Background(), nil)
					if err != nil {
						t.Fatal(err)
					}
					for _, tool := range list.Tools {
						if tool.Name == "test.forbidden_action" {
							t.Error("forbidden tool in tools/list")
						}
					}
					_, contracts := s.do(t, "GET", "/contracts", tok, nil)
					if bytes.Contains(contracts, []byte("test.forbidden_action")) {
						t.Error("forbidden tool in /contracts")
					}
					resp, _ := s.do(t, "GET", "/contracts/test.forbidden_action", tok, nil)
					if resp.StatusCode != http.StatusNotFound {
						t.Errorf("GET /contracts/test.forbidden_action = %d, want 404", resp.StatusCode)
					}
				})
			}
		}
	}
}

// bothPaths are the fast path and go-sdk alone; authorization must hold on
// each.
var bothPaths = []struct {
	name string
	slow bool
}{{"fast", false}, {"sdk", true}}

type bearerTransport string

func (b bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+string(b))
	return http.DefaultTransport.RoundTrip(r)
}

// testTool is a tool registered only in tests; run is called if it runs.
// Above the low tier it has side effects (pipelinetest.Effectful).
func testTool(name string, risk contract.Risk, scopes []string, run func()) pipeline.Tool {
	fc := contracttest.New(name, risk, scopes...)
	if fc.HasSideEffects() {
		return pipelinetest.Effectful(fc, run)
	}
	return pipeline.Tool{Contract: fc, Logic: func(context.Context, json.RawMessage) (pipeline.Effect, error) {
		run()
		return pipeline.Effect{Structured: map[string]any{"ok": true}, Summary: "ok"}, nil
	}}
}

// TestBatchRefused: one POST carries one request. A batch — which older
// revisions allowed, and which would carry thousands of calls past the
// per-request limits — is refused whole, and nothing in it runs.
func TestBatchRefused(t *testing.T) {
	ran := 0
	one := testTool("test.counted", contract.Low, []string{"test:read"}, func() { ran++ })
	for _, p := range bothPaths {
		t.Run(p.name, func(t *testing.T) {
			ran = 0
			s := newAuthServer(t, p.slow, one)
			tok := mint(t, s.auth, auth.MintOptions{Subject: "alice", Scopes: []string{"test:read", "collections:read"}})
			call := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"test.counted","arguments":{}}}`
			for _, version := range []string{"", "2025-03-26", "2025-11-25"} {
				resp, body := s.doVersion(t, tok, []byte(" ["+call+","+call+"]"), version)
				if resp.StatusCode != http.StatusBadRequest {
					t.Errorf("batch with version %q: %d %s, want 400", version, resp.StatusCode, body)
				}
			}
			if ran != 0 {
				t.Errorf("%d calls of a refused batch ran", ran)
			}
			if resp, body := s.doVersion(t, tok, []byte(call), "2025-11-25"); resp.StatusCode != http.StatusOK || ran != 1 {
				t.Errorf("single call: %d %s, ran %d times", resp.StatusCode, body, ran)
			}
		})
	}
}
