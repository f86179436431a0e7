package authserver_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/cobranca/cobranca/internal/auth"
	"github.com/cobranca/cobranca/internal/authserver"
	"github.com/cobranca/cobranca/internal/authserver/authservertest"
	"github.com/cobranca/cobranca/internal/clocktest"
	"github.com/cobranca/cobranca/internal/contract"
	"github.com/cobranca/cobranca/internal/mcpapi"
	"github.com/cobranca/cobranca/internal/pgtest"
	"github.com/cobranca/cobranca/internal/pipeline"
	"github.com/cobranca/cobranca/internal/pipeline/pipelinetest"
	"github.com/cobranca/cobranca/internal/server"
	"github.com/cobranca/cobranca/internal/store"
)

var pg = pgtest.New()

func TestMain(m *testing.M) { pg.Run(m) }

// mfa is the step-up acr (COBRANCA_STEPUP_ACR).
const mfa = "urn:cobranca:mfa"

// env is cobranca's real route table in development mode, with the
// development authorization server, on a loopback port.
type env struct {
	base   string
	auth   *auth.Authenticator
	mcp    *mcpapi.Handler
	db     store.DB
	clock  *clocktest.Clock // the authorization server's
	scopes []string         // every contract's
}

func newEnv(t *testing.T, db store.DB) *env {
	t.Helper()
	return newEnvWith(t, db, authserver.Options{})
}

// newEnvWith is newEnv with the authorization server's options o (its
// Auth, DB, Scopes, StepUpACR and Now are the env's).
func newEnvWith(t *testing.T, db store.DB, o authserver.Options) *env {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + ln.Addr().String()
	log := slog.New(slog.DiscardHandler)
	a, err := auth.New(context.Background(), auth.Config{DataDir: t.TempDir(), BaseURL: base, Logger: log, StepUpACR: []string{mfa}})
	if err != nil {
		t.Fatal(err)
	}
	pipe := pipelinetest.Product(t, pipeline.Options{Logger: log})
	h, err := mcpapi.New(mcpapi.Options{Logger: log, Scopes: a, Pipeline: pipe})
	if err != nil {
		t.Fatal(err)
	}
	e := &env{base: base, auth: a, mcp: h, db: db, clock: &clocktest.Clock{}, scopes: contract.Scopes(h.Contracts())}
	o.Auth, o.DB, o.Scopes, o.StepUpACR, o.Now = a, db, e.scopes, []string{mfa}, e.clock.Now
	if o.Logger == nil {
		o.Logger = slog.New(slog.NewTextHandler(t.Output(), nil))
	}
	as, err := authserver.New(o)
	if err != nil {
		t.Fatal(err)
	}
	routes := server.Routes(server.Deps{Logger: log, MCP: h, MaxBodyBytes: 1 << 20, Auth: a, AuthServer: as})
	ts := httptest.NewUnstartedServer(routes)
	ts.Listener.Close()
	ts.Listener = ln
	ts.Start()
	t.Cleanup(ts.Close)
	return e
}

// noRedirect is an HTTP client that stops at redirects, as a browser
// would hand one to the client's redirect URI.
var noRedirect = &http.Client{
	CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	Timeout:       30 * time.Second,
}

// register registers a client with metadata and returns its answer.
func (e *env) register(t *testing.T, metadata string) (int, map[string]any) {
	t.Helper()
	resp, err := http.Post(e.base+authserver.RegisterPath, "application/json", strings.NewReader(metadata))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		t.Fatalf("register: %d, body not JSON: %v", resp.StatusCode, err)
	}
	return resp.StatusCode, body
}

// registerClient registers a client redirected to redirect and returns
// its id.
func (e *env) registerClient(t *testing.T, redirect string) string {
	t.Helper()
	status, body := e.register(t, `{"redirect_uris":["`+redirect+`"],"client_name":"test client","token_endpoint_auth_method":"none"}`)
	id, _ := body["client_id"].(string)
	if status != http.StatusCreated || id == "" {
		t.Fatalf("register = %d %v, want 201 with a client_id", status, body)
	}
	return id
}

// form is the sign-in page's form, as a browser would submit it.
type form struct {
	action string
	values url.Values
}

// parseForm reads the page's form as a browser submits it (authservertest.ParseForm).
func parseForm(t *testing.T, page string) form {
	t.Helper()
	action, values, err := authservertest.ParseForm(page)
	if err != nil {
		t.Fatalf("%v:\n%s", err, page)
	}
	return form{action: action, values: values}
}

// getPage fetches the authorization URL and returns the status and body.
func getPage(t *testing.T, authURL string, header http.Header) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, authURL, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header[k] = v
	}
	return send(t, req)
}

// submit posts the form as the browser would (same origin) and returns the
// answer, not following a redirect.
func (e *env) submit(t *testing.T, f form) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, e.base+f.action, strings.NewReader(f.values.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", e.base)
	req.Header.Set("Sec-Fetch-Site", "same-origin")
	return send(t, req)
}

// signIn fetches the page at authURL, lets choose edit the form, submits
// it and returns the redirect's query (the code, or an error).
func (e *env) signIn(t *testing.T, authURL string, choose func(url.Values)) url.Values {
	t.Helper()
	resp, page := getPage(t, authURL, nil)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s = %d:\n%s", authURL, resp.StatusCode, page)
	}
	f := parseForm(t, page)
	if choose != nil {
		choose(f.values)
	}
	resp, body := e.submit(t, f)
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("POST the sign-in form = %d, want 303:\n%s", resp.StatusCode, body)
	}
	loc, err := url.Parse(resp.Header.Get("Location"))
	if err != nil {
		t.Fatal(err)
	}
	return loc.Query()
}

// send sends req without following a redirect and returns the answer and its body.
func send(t *testing.T, req *http.Request) (*http.Response, string) {
	t.Helper()
	resp, err := noRedirect.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, string(body)
}
