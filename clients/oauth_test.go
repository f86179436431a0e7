package clients_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/cobranca/cobranca/internal/auth"
	"github.com/cobranca/cobranca/internal/authserver"
	"github.com/cobranca/cobranca/internal/collections"
	"github.com/cobranca/cobranca/internal/contract"
	"github.com/cobranca/cobranca/internal/mcpapi"
	"github.com/cobranca/cobranca/internal/pipeline"
	"github.com/cobranca/cobranca/internal/pipeline/pipelinetest"
	"github.com/cobranca/cobranca/internal/portfolio"
	"github.com/cobranca/cobranca/internal/server"
	"github.com/cobranca/cobranca/internal/store/storetest"
	"github.com/cobranca/cobranca/internal/tier"
)

// oauthReport is what oauth.mjs saw.
type oauthReport struct {
	Steps                []string          `json:"steps"`
	AuthorizationRequest map[string]string `json:"authorizationRequest"`
	Registered           map[string]any    `json:"registered"`
	Redirect             struct {
		To          string `json:"to"`
		StateEchoed bool   `json:"stateEchoed"`
		ISS         string `json:"iss"`
	} `json:"redirect"`
	Tokens struct {
		TokenType string `json:"token_type"`
		Scope     string `json:"scope"`
		ExpiresIn int    `json:"expires_in"`
		Refresh   bool   `json:"refresh"`
	} `json:"tokens"`
	Tools []string     `json:"tools"`
	Call  callResult   `json:"call"`
	Error *clientError `json:"error"`
}

// oauthServer is cobranca in development mode with its development
// authorization server, on a loopback port: the product's read-only tools,
// registered clients in a real SQLite store, and a record of who called
// /mcp, by the token each request carried.
type oauthServer struct {
	base      string
	auth      *auth.Authenticator
	mcp       *mcpapi.Handler
	mu        sync.Mutex
	callers   []*auth.Principal
	anonymous int
}

func newOAuthServer(t *testing.T) *oauthServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &oauthServer{base: "http://" + ln.Addr().String()}
	log := slog.New(slog.DiscardHandler)
	if s.auth, err = auth.New(context.Background(), auth.Config{DataDir: t.TempDir(), BaseURL: s.base, Logger: log}); err != nil {
		t.Fatal(err)
	}
	if s.mcp, err = mcpapi.New(mcpapi.Options{Logger: log, Scopes: s.auth, Pipeline: pipelinetest.Product(t, pipeline.Options{Logger: log})}); err != nil {
		t.Fatal(err)
	}
	as, err := authserver.New(authserver.Options{Auth: s.auth, DB: storetest.SQLite(t), Scopes: contract.Scopes(s.mcp.Contracts()), Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	routes := server.Routes(server.Deps{Logger: log, MCP: s.mcp, MaxBodyBytes: 1 << 20, Auth: s.auth, AuthServer: as})
	ts := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/mcp" {
			tok, ok := auth.ParseBearer(r.Header.Get("Authorization"))
			p, err := s.auth.Verify(r.Context(), tok)
			s.mu.Lock()
			if ok && err == nil {
				s.callers = append(s.callers, p)
			} else {
				s.anonymous++
			}
			s.mu.Unlock()
		}
		routes.ServeHTTP(w, r)
	}))
	ts.Listener.Close()
	ts.Listener = ln
	ts.Start()
	t.Cleanup(ts.Close)
	return s
}

// runOAuthScript runs a script beside this file with the case in its
// environment and decodes the report it prints into rep.
func (s *oauthServer) runOAuthScript(t *testing.T, node, script string, rep any, extra ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, script)
	cmd.Env = append(os.Environ(), append([]string{"HOME=" + t.TempDir(), "OAUTH_URL=" + s.base + "/mcp",
		"OAUTH_TOOL=" + collections.AnalyzeName, "OAUTH_ARGS=" + validArgs, "OAUTH_SUBJECT=dev@example.com", "OAUTH_KIND=agent"}, extra...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("node %s: %v\n%s", script, err, tail(stderr.String()))
	}
	if err := json.Unmarshal(stdout.Bytes(), rep); err != nil {
		t.Fatalf("node %s printed no report (%v):\n%s\n%s", script, err, tail(stdout.String()), tail(stderr.String()))
	}
}

// checkSignedInCalls holds the tools listed and the call answered with the
// token obtained, and every authenticated call to the developer's choice:
// the agent (the client registered as clientID) acting for dev@example.com.
func (s *oauthServer) checkSignedInCalls(t *testing.T, tools []string, call callResult, clientID string) {
	t.Helper()
	var want []string
	for _, c := range s.mcp.Contracts() {
		want = append(want, c.Name)
	}
	slices.Sort(want)
	if !slices.Equal(tools, want) {
		t.Errorf("tools/list = %v, want %v", tools, want)
	}
	in, err := portfolio.Parse([]byte(validArgs))
	if err != nil {
		t.Fatal(err)
	}
	analysis := portfolio.Analyze(in)
	if diff := cmp.Diff(jsonValue(t, analysis.AppendJSON(nil)), jsonValue(t, call.StructuredContent)); call.IsError || diff != "" {
		t.Errorf("the call: isError %v, structuredContent (-want +got):\n%s", call.IsError, diff)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.anonymous == 0 || len(s.callers) < 3 {
		t.Errorf("%d calls without a token, %d with one: want the 401 that started sign-in, then initialize, list and call", s.anonymous, len(s.callers))
	}
	for _, p := range s.callers {
		if p.Subject != "dev@example.com" || p.Kind != auth.KindAgent || p.Actor != clientID || p.ClientID != clientID {
			t.Errorf("a call as %+v; want the agent %s for dev@example.com", p, clientID)
		}
	}
}

// TestTypeScriptSDKOAuth is the acceptance test of the development
// authorization server: the TypeScript SDK's OAuth client, given nothing
// but the /mcp URL, signs in to cobranca in development mode unattended —
// discovery, dynamic registration, the sign-in page's form submitted as a
// developer would, the code redeemed with PKCE — and then lists the tools
// and calls a low-tier one with the token it obtained, as the agent the
// developer chose.
func TestTypeScriptSDKOAuth(t *testing.T) {
	tier.EndToEnd(t)
	node := nodeModules(t)
	t.Parallel()
	s := newOAuthServer(t)
	var rep oauthReport
	s.runOAuthScript(t, node, "oauth.mjs", &rep)
	if rep.Error != nil {
		t.Fatalf("the client threw %s: %s\nsteps: %v", rep.Error.Name, rep.Error.Message, rep.Steps)
	}
	// The authorization request the SDK built from discovery alone.
	req := rep.AuthorizationRequest
	clientID, _ := rep.Registered["client_id"].(string)
	if req["code_challenge_method"] != "S256" || req["resource"] != s.auth.Resource() || req["client_id"] != clientID || clientID == "" ||
		!strings.Contains(req["scope"], "collections:read") {
		t.Errorf("authorization request %v (registered %v): want S256, resource %s, the registered client, collections:read", req, rep.Registered, s.auth.Resource())
	}
	if !rep.Redirect.StateEchoed || rep.Redirect.ISS != s.base || rep.Redirect.To != "http://127.0.0.1:9/oauth/callback" {
		t.Errorf("redirect %+v: want the client's redirect URI, its state echoed, iss %s", rep.Redirect, s.base)
	}
	if rep.Tokens.TokenType != "Bearer" || rep.Tokens.Refresh || rep.Tokens.ExpiresIn != int(authserver.AccessTokenTTL.Seconds()) {
		t.Errorf("tokens %+v: want a Bearer token for an hour, no refresh token", rep.Tokens)
	}
	s.checkSignedInCalls(t, rep.Tools, rep.Call, clientID)
}

// inspectorOAuthReport is what inspector-oauth.mjs saw: the sign-in it did
// for the CLI, and the CLI's answers.
type inspectorOAuthReport struct {
	SignIn *struct {
		Request  map[string]string `json:"request"`
		Redirect string            `json:"redirect"`
		Code     bool              `json:"code"`
		ISS      string            `json:"iss"`
		Callback int               `json:"callback"`
		Error    string            `json:"error"`
	} `json:"signIn"`
	List struct {
		Result *struct{ Tools []struct{ Name string } } `json:"result"`
		Error  any                                      `json:"error"`
	} `json:"list"`
	Call struct {
		Result *callResult `json:"result"`
		Error  any         `json:"error"`
	} `json:"call"`
}

// TestInspectorCLIOAuth: the MCP Inspector CLI signs in to development mode
// unattended — its own OAuth (discovery, registration, PKCE, its loopback
// callback) with a script as the developer's browser — lists the tools,
// then calls one in a second run with the token it stored.
func TestInspectorCLIOAuth(t *testing.T) {
	tier.EndToEnd(t)
	node := nodeModules(t)
	t.Parallel()
	s := newOAuthServer(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0") // a free port for the CLI's callback
	if err != nil {
		t.Fatal(err)
	}
	callback := "http://" + ln.Addr().String() + "/oauth/callback"
	ln.Close()
	var rep inspectorOAuthReport
	s.runOAuthScript(t, node, "inspector-oauth.mjs", &rep, "OAUTH_CALLBACK_URL="+callback)
	in := rep.SignIn
	if in == nil || in.Error != "" || !in.Code || in.Redirect != callback || in.ISS != s.base || in.Callback != http.StatusOK {
		t.Fatalf("sign-in %+v: want a code redirected to the CLI's callback %s; list %+v; call %+v", in, callback, rep.List, rep.Call)
	}
	if in.Request["code_challenge_method"] != "S256" || in.Request["resource"] != s.auth.Resource() {
		t.Errorf("authorization request %v: want S256 and resource %s", in.Request, s.auth.Resource())
	}
	if rep.List.Result == nil || rep.Call.Result == nil {
		t.Fatalf("the CLI answered list %+v, call %+v", rep.List, rep.Call)
	}
	var tools []string
	for _, tool := range rep.List.Result.Tools {
		tools = append(tools, tool.Name)
	}
	s.checkSignedInCalls(t, tools, *rep.Call.Result, in.Request["client_id"])
}
