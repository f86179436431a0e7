package authserver_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cobranca/cobranca/internal/auth"
	"github.com/cobranca/cobranca/internal/auth/authtest"
	"github.com/cobranca/cobranca/internal/authserver"
	"github.com/cobranca/cobranca/internal/server"
	"github.com/cobranca/cobranca/internal/store"
	"github.com/cobranca/cobranca/internal/store/storetest"
)

// TestSignInForm: the form's POST is refused across origins and when its
// sealed request is altered or too old; the developer can deny; a bad
// choice shows the form again, naming the field, and issues nothing.
func TestSignInForm(t *testing.T) {
	e := newEnv(t, storetest.SQLite(t))
	clientID := e.registerClient(t, testRedirect)
	fresh := func(t *testing.T) form {
		t.Helper()
		resp, page := getPage(t, e.authURL(e.authParams(clientID, newPKCE())), nil)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET the page = %d", resp.StatusCode)
		}
		return parseForm(t, page)
	}
	before := storetest.Count(t, e.db, "oauth_code")

	// Another site's form, and another local port's (an origin the Host
	// guard lets through): http.CrossOriginProtection refuses both.
	for _, c := range []struct{ name, origin, site string }{
		{"cross-site post", "https://evil.example", "cross-site"},
		{"same-site post from another port", "http://localhost:1", "same-site"},
		{"other origin without fetch metadata", "http://localhost:1", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := fresh(t)
			req, _ := http.NewRequest(http.MethodPost, e.base+f.action, strings.NewReader(f.values.Encode()))
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			if c.site != "" {
				req.Header.Set("Sec-Fetch-Site", c.site)
			}
			req.Header.Set("Origin", c.origin)
			resp, err := noRedirect.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusForbidden || resp.Header.Get("Location") != "" {
				t.Errorf("= %d, Location %q; want 403", resp.StatusCode, resp.Header.Get("Location"))
			}
		})
	}
	for _, c := range []struct {
		name string
		edit func(v url.Values)
	}{
		{"altered request", func(v url.Values) {
			sealed := v.Get("request")
			payload, mac, _ := strings.Cut(sealed, ".")
			v.Set("request", payload[:len(payload)-2]+"AA."+mac)
		}},
		{"request from elsewhere", func(v url.Values) { v.Set("request", "eyJjIjoib2NfIn0.AAAA") }},
		{"no request", func(v url.Values) { v.Del("request") }},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := fresh(t)
			c.edit(f.values)
			resp, body := e.submit(t, f)
			if resp.StatusCode != http.StatusBadRequest || resp.Header.Get("Location") != "" || !strings.Contains(body, `<code id="error">invalid_request</code>`) {
				t.Errorf("= %d, Location %q; want a 400 page:\n%s", resp.StatusCode, resp.Header.Get("Location"), body)
			}
		})
	}
	t.Run("expired form", func(t *testing.T) {
		f := fresh(t)
		e.clock.Advance(11 * time.Minute)
		defer e.clock.Advance(-11 * time.Minute)
		if resp, body := e.submit(t, f); resp.StatusCode != http.StatusBadRequest || !strings.Contains(body, "invalid_request") {
			t.Errorf("a form 11 minutes old = %d, want a 400 page", resp.StatusCode)
		}
	})
	for _, c := range []struct {
		name, field string
		edit        func(v url.Values)
	}{
		{"blank subject", "subject", func(v url.Values) { v.Set("subject", "  ") }},
		{"subject with a bidi override", "subject", func(v url.Values) { v.Set("subject", "alice\u202e") }},
		{"acr with a newline", "acr", func(v url.Values) { v.Set("acr", "a\nb") }},
		{"unsupported scope", "scope", func(v url.Values) { v.Add("scope", "admin:all") }},
		{"no kind", "kind", func(v url.Values) { v.Del("kind") }},
		{"a role with a control", "roles", func(v url.Values) { v.Set("roles", "collections.approver a\u0007b") }},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := fresh(t)
			c.edit(f.values)
			resp, body := e.submit(t, f)
			if resp.StatusCode != http.StatusBadRequest || resp.Header.Get("Location") != "" ||
				!strings.Contains(body, `class="problem" role="alert">`+c.field+": ") || !strings.Contains(body, `name="request"`) {
				t.Errorf("= %d, Location %q; want the form again naming %s:\n%s", resp.StatusCode, resp.Header.Get("Location"), c.field, body)
			}
		})
	}
	t.Run("deny", func(t *testing.T) {
		f := fresh(t)
		f.values.Set("action", "deny")
		resp, _ := e.submit(t, f)
		loc, _ := url.Parse(resp.Header.Get("Location"))
		if q := loc.Query(); resp.StatusCode != http.StatusSeeOther || q.Get("error") != "access_denied" || q.Get("state") != "xyz" || q.Get("code") != "" {
			t.Errorf("deny = %d, Location %q; want a redirect with access_denied and the state", resp.StatusCode, loc)
		}
	})
	if n := storetest.Count(t, e.db, "oauth_code"); n != before {
		t.Errorf("%d codes issued by refused or denied forms", n-before)
	}
}

// TestPage: the page is the DEVELOPMENT server's, in the browser's language
// (Brazilian Portuguese when it says nothing), without JavaScript, with the
// requested scopes and acr pre-selected, never cached or framed.
func TestPage(t *testing.T) {
	e := newEnv(t, storetest.SQLite(t))
	clientID := e.registerClient(t, testRedirect)
	q := e.authParams(clientID, newPKCE())
	q.Set("acr_values", "urn:other "+mfa)
	q.Set("login_hint", "carol")
	for _, c := range []struct {
		accept, lang, banner, button string
	}{
		{"", "pt-BR", "Servidor de autorização de DESENVOLVIMENTO", "Entrar"},
		{"pt-BR,pt;q=0.9", "pt-BR", "Servidor de autorização de DESENVOLVIMENTO", "Entrar"},
		{"pt", "pt-BR", "Servidor de autorização de DESENVOLVIMENTO", "Entrar"},
		{"en-US,en;q=0.9", "en", "DEVELOPMENT authorization server", "Sign in"},
		{"fr, en;q=0.5", "en", "DEVELOPMENT authorization server", "Sign in"},
	} {
		resp, page := getPage(t, e.authURL(q), http.Header{"Accept-Language": {c.accept}})
		if resp.StatusCode != http.StatusOK || !strings.Contains(page, `<html lang="`+c.lang+`">`) || !strings.Contains(page, c.banner) ||
			!strings.Contains(page, `value="allow">`+c.button+`</button>`) {
			t.Errorf("Accept-Language %q: %d, want the %s page with its banner:\n%s", c.accept, resp.StatusCode, c.lang, page)
		}
		for _, h := range []string{"Cache-Control", "X-Frame-Options", "Content-Security-Policy"} {
			if resp.Header.Get(h) == "" {
				t.Errorf("Accept-Language %q: no %s", c.accept, h)
			}
		}
		if strings.Contains(strings.ToLower(page), "<script") {
			t.Errorf("the page has a script")
		}
	}
	_, page := getPage(t, e.authURL(q), nil)
	f := parseForm(t, page)
	if got := f.values; got.Get("subject") != "carol" || got.Get("acr") != "urn:other" || got.Get("kind") != "person" ||
		!slices.Equal(got["scope"], []string{"openid", "collections:read"}) {
		t.Errorf("pre-filled %v: want subject carol (login_hint), the first acr_values, a person, the requested scopes", got)
	}
	if !strings.Contains(page, `<option value="`+mfa+`">`) || !strings.Contains(page, "test client") {
		t.Errorf("the page offers no COBRANCA_STEPUP_ACR value or does not name the client:\n%s", page)
	}
	// No scope requested: every supported one is offered checked.
	q.Del("scope")
	_, page = getPage(t, e.authURL(q), nil)
	if got := parseForm(t, page).values["scope"]; !slices.Equal(got, append([]string{"openid"}, e.scopes...)) {
		t.Errorf("no scope requested: checked %v, want openid and %v", got, e.scopes)
	}
}

// TestMetadata: RFC 8414 and OpenID Connect discovery documents, and the
// RFC 9728 resource metadata pointing at this issuer.
func TestMetadata(t *testing.T) {
	e := newEnv(t, storetest.SQLite(t))
	get := func(path string) map[string]any {
		resp, err := http.Get(e.base + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var m map[string]any
		if err := json.NewDecoder(resp.Body).Decode(&m); err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s = %d (%v)", path, resp.StatusCode, err)
		}
		return m
	}
	as := get(authserver.MetadataPath)
	want := map[string]any{
		"issuer":                                e.base,
		"authorization_endpoint":                e.base + authserver.AuthorizePath,
		"token_endpoint":                        e.base + authserver.TokenPath,
		"registration_endpoint":                 e.base + authserver.RegisterPath,
		"jwks_uri":                              e.base + auth.JWKSPath,
		"response_types_supported":              []any{"code"},
		"grant_types_supported":                 []any{"authorization_code"},
		"code_challenge_methods_supported":      []any{"S256"},
		"token_endpoint_auth_methods_supported": []any{"none"},
		"scopes_supported":                      toAny(append([]string{"openid"}, e.scopes...)),
	}
	for k, v := range want {
		if mustJSON(t, as[k]) != mustJSON(t, v) {
			t.Errorf("%s: %s = %s, want %s", authserver.MetadataPath, k, mustJSON(t, as[k]), mustJSON(t, v))
		}
	}
	if _, ok := as["id_token_signing_alg_values_supported"]; ok {
		t.Errorf("%s carries OpenID Connect fields", authserver.MetadataPath)
	}
	oidc := get(authserver.OpenIDConfigPath)
	want["id_token_signing_alg_values_supported"] = []any{"EdDSA"}
	want["acr_values_supported"] = []any{mfa}
	want["subject_types_supported"] = []any{"public"}
	for k, v := range want {
		if mustJSON(t, oidc[k]) != mustJSON(t, v) {
			t.Errorf("%s: %s = %s, want %s", authserver.OpenIDConfigPath, k, mustJSON(t, oidc[k]), mustJSON(t, v))
		}
	}
	if len(e.scopes) == 0 {
		t.Fatal("the served contracts need no scope")
	}
	// RFC 9728: the resource names this issuer as its authorization server.
	rs := get("/.well-known/oauth-protected-resource/mcp")
	if mustJSON(t, rs["authorization_servers"]) != mustJSON(t, []string{e.base}) {
		t.Errorf("resource metadata authorization_servers = %v, want [%s]", rs["authorization_servers"], e.base)
	}
	// DNS rebinding: a Host the server does not answer to is refused.
	for _, path := range authserver.Paths {
		req, _ := http.NewRequest(http.MethodGet, e.base+path, nil)
		req.Host = "evil.example"
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden {
			t.Errorf("GET %s with Host evil.example = %d, want 403", path, resp.StatusCode)
		}
	}
	// A browser client may call registration and the token endpoint.
	req, _ := http.NewRequest(http.MethodOptions, e.base+authserver.TokenPath, nil)
	req.Header.Set("Origin", "http://localhost:6274")
	req.Header.Set("Access-Control-Request-Method", "POST")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent || resp.Header.Get("Access-Control-Allow-Origin") != "*" {
		t.Errorf("CORS preflight of the token endpoint = %d, Allow-Origin %q", resp.StatusCode, resp.Header.Get("Access-Control-Allow-Origin"))
	}
}

func toAny(s []string) []any {
	out := make([]any, len(s))
	for i, v := range s {
		out[i] = v
	}
	return out
}

// TestProductionRefuses: outside development mode there is no
// authorization server — New refuses, and the routes without one answer
// 404 on every path — and a token it issued in development is refused by
// a production Authenticator for the same issuer and resource.
func TestProductionRefuses(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, storetest.SQLite(t))
	clientID := e.registerClient(t, testRedirect)
	p := newPKCE()
	_, body, _ := e.tokenRequest(t, redeem(clientID, e.code(t, clientID, p), p), nil)
	devToken, _ := body["access_token"].(string)
	if _, err := e.auth.Verify(ctx, devToken); err != nil {
		t.Fatalf("development mode refuses its own token: %v", err)
	}

	// Production's issuer publishes its own key.
	keyFile := authtest.IssuerKeyFile(t)
	prod, err := auth.New(ctx, auth.Config{Production: true, Issuer: "https://idp.example.com", Resource: "https://mcp.example.com/mcp", PublicKeyFile: keyFile})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := authserver.New(authserver.Options{Auth: prod, DB: e.db}); err == nil {
		t.Errorf("authserver.New accepted a production Authenticator")
	}
	// The same issuer and resource names, in production: the development
	// key is not trusted.
	sameNames, err := auth.New(ctx, auth.Config{Production: false, Issuer: e.base, Resource: e.auth.Resource(), PublicKeyFile: keyFile})
	if err != nil {
		t.Fatal(err)
	}
	for name, a := range map[string]*auth.Authenticator{"production": prod, "issuer mode, same names": sameNames} {
		if _, err := a.Verify(ctx, devToken); err == nil {
			t.Errorf("%s: a token of the development authorization server was accepted", name)
		}
	}

	routes := server.Routes(server.Deps{Logger: slog.New(slog.DiscardHandler), MCP: e.mcp, MaxBodyBytes: 1 << 20, Auth: prod})
	ts := httptest.NewServer(routes)
	defer ts.Close()
	for _, path := range append(slices.Clone(authserver.Paths), auth.JWKSPath) {
		for _, method := range []string{http.MethodGet, http.MethodPost} {
			req, _ := http.NewRequest(method, ts.URL+path, strings.NewReader("{}"))
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusNotFound {
				t.Errorf("production %s %s = %d, want 404", method, path, resp.StatusCode)
			}
		}
	}
}

// TestPageNamesWhereTheCodeGoes: a client's name is its own claim (any
// registrant may call itself "cobranca" or "MCP Inspector"), so the page
// also shows its id and the redirect URI the code will be sent to.
func TestPageNamesWhereTheCodeGoes(t *testing.T) {
	e := newEnv(t, storetest.SQLite(t))
	const redirect = "https://evil.example/cb?a=1&b='2'"
	status, body := e.register(t, `{"redirect_uris":["`+redirect+`"],"client_name":"cobranca"}`)
	clientID, _ := body["client_id"].(string)
	if status != http.StatusCreated || clientID == "" {
		t.Fatalf("register = %d %v", status, body)
	}
	q := e.authParams(clientID, newPKCE())
	q.Set("redirect_uri", redirect)
	resp, page := getPage(t, e.authURL(q), nil)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET the page = %d:\n%s", resp.StatusCode, page)
	}
	for _, want := range []string{`<strong id="client">cobranca</strong>`, `<code id="client-id">` + clientID + `</code>`,
		`<code id="redirect">https://evil.example/cb?a=1&amp;b=&#39;2&#39;</code>`} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %s:\n%s", want, page)
		}
	}
}

// localServer is a development authorization server whose issuer is
// http://localhost:8080 (a wildcard listener's), on SQLite, served in
// process (serve sets each request's peer and headers).
func localServer(t *testing.T, o authserver.Options) (*authserver.Server, store.DB) {
	t.Helper()
	a, err := auth.New(context.Background(), auth.Config{DataDir: t.TempDir(), BaseURL: "http://localhost:8080", Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	db := storetest.SQLite(t)
	o.Auth, o.DB, o.Scopes = a, db, []string{"collections:read"}
	as, err := authserver.New(o)
	if err != nil {
		t.Fatal(err)
	}
	return as, db
}

// local is a request as this machine's browser or client sends it to
// localServer: from a loopback peer, with the issuer's Host.
func local(method, target, contentType, body string) *http.Request {
	r := httptest.NewRequest(method, target, strings.NewReader(body))
	if contentType != "" {
		r.Header.Set("Content-Type", contentType)
	}
	r.Host, r.RemoteAddr = "localhost:8080", "127.0.0.1:40000"
	return r
}

func serveLocal(as http.Handler, r *http.Request) *httptest.ResponseRecorder {
	w := httptest.NewRecorder()
	as.ServeHTTP(w, r)
	return w
}

// localClient registers a client from this machine and returns its id
// and a valid authorization request's target for it.
func localClient(t *testing.T, as http.Handler) (clientID, target string) {
	t.Helper()
	w := serveLocal(as, local(http.MethodPost, authserver.RegisterPath, "application/json", `{"redirect_uris":["`+testRedirect+`"]}`))
	var registered struct {
		ClientID string `json:"client_id"`
	}
	if err := json.Unmarshal(w.Body.Bytes(), &registered); err != nil || w.Code != http.StatusCreated {
		t.Fatalf("registration from this machine = %d %s", w.Code, w.Body)
	}
	p := newPKCE()
	q := url.Values{"response_type": {"code"}, "client_id": {registered.ClientID}, "redirect_uri": {testRedirect},
		"code_challenge": {p.challenge}, "code_challenge_method": {"S256"}, "scope": {"collections:read"}}
	return registered.ClientID, authserver.AuthorizePath + "?" + q.Encode()
}

// TestSignInOnlyFromThisMachine: the page lets whoever submits it sign in
// as anyone, so it answers loopback peers only: a development server
// listening on a network address (COBRANCA_ADDR=0.0.0.0:8080) mints no code
// for a peer on the network, whatever Host it sends; nor does it register
// its clients or answer its token requests. Discovery still answers it.
func TestSignInOnlyFromThisMachine(t *testing.T) {
	as, db := localServer(t, authserver.Options{})
	clientID, target := localClient(t, as)
	page := serveLocal(as, local(http.MethodGet, target, "", ""))
	if page.Code != http.StatusOK {
		t.Fatalf("the page from loopback = %d:\n%s", page.Code, page.Body)
	}
	f := parseForm(t, page.Body.String())
	before := storetest.Count(t, db, "oauth_code")
	for _, peer := range []string{"192.0.2.7:40000", "[2001:db8::7]:40000", "10.0.0.1:1"} {
		for _, c := range []struct {
			method string
			body   url.Values
		}{{http.MethodGet, nil}, {http.MethodPost, f.values}} {
			r := local(c.method, target, "application/x-www-form-urlencoded", c.body.Encode())
			r.RemoteAddr = peer
			w := serveLocal(as, r)
			if w.Code != http.StatusForbidden || w.Header().Get("Location") != "" || !strings.Contains(w.Body.String(), `<code id="error">access_denied</code>`) {
				t.Errorf("%s the sign-in page from %s = %d, Location %q; want a 403 page:\n%s", c.method, peer, w.Code, w.Header().Get("Location"), w.Body)
			}
		}
		reg := local(http.MethodPost, authserver.RegisterPath, "application/json", `{"redirect_uris":["`+testRedirect+`"]}`)
		reg.RemoteAddr = peer
		if w := serveLocal(as, reg); w.Code != http.StatusForbidden || !strings.Contains(w.Body.String(), `"error":"access_denied"`) {
			t.Errorf("registration from %s = %d %s, want 403 access_denied", peer, w.Code, w.Body)
		}
		tok := local(http.MethodPost, authserver.TokenPath, "application/x-www-form-urlencoded", redeem(clientID, "x", newPKCE()).Encode())
		tok.RemoteAddr = peer
		if w := serveLocal(as, tok); w.Code != http.StatusForbidden || !strings.Contains(w.Body.String(), `"error":"access_denied"`) {
			t.Errorf("a token request from %s = %d %s, want 403 access_denied", peer, w.Code, w.Body)
		}
		disc := local(http.MethodGet, authserver.MetadataPath, "", "")
		disc.RemoteAddr = peer
		if w := serveLocal(as, disc); w.Code != http.StatusOK {
			t.Errorf("discovery from %s = %d, want 200", peer, w.Code)
		}
	}
	if n := storetest.Count(t, db, "oauth_code"); n != before {
		t.Errorf("%d codes issued to a peer on the network", n-before)
	}
	if n := storetest.Count(t, db, "oauth_client"); n != 1 {
		t.Errorf("%d clients registered, want the one from this machine", n)
	}
	for _, peer := range []string{"127.0.0.1:40000", "[::1]:40000", "[::ffff:127.0.0.1]:40000"} {
		f := parseForm(t, serveLocal(as, local(http.MethodGet, target, "", "")).Body.String()) // a form signs in once
		r := local(http.MethodPost, target, "application/x-www-form-urlencoded", f.values.Encode())
		r.RemoteAddr = peer
		if w := serveLocal(as, r); w.Code != http.StatusSeeOther {
			t.Errorf("POST the sign-in form from %s = %d, want 303:\n%s", peer, w.Code, w.Body)
		}
	}
}

// TestForwardedRequestsRefused: behind a forwarder on the same host (nginx,
// Caddy, a tunnel) every peer is the loopback, so a request that carries any
// header a forwarder adds, or a Host that is not a loopback name, is refused
// at every endpoint that registers, signs in or hands out tokens — and
// nothing is stored — while the same request without it is served.
func TestForwardedRequestsRefused(t *testing.T) {
	const proxyHeader = "Fly-Client-IP" // COBRANCA_TRUSTED_PROXY_HEADER
	as, db := localServer(t, authserver.Options{TrustedProxyHeader: proxyHeader})
	clientID, target := localClient(t, as)
	page := serveLocal(as, local(http.MethodGet, target, "", ""))
	if page.Code != http.StatusOK {
		t.Fatalf("the page from this machine = %d:\n%s", page.Code, page.Body)
	}
	f := parseForm(t, page.Body.String())
	endpoints := []struct {
		name                   string
		method, target, ct, in string
		page                   bool // refused with a page, not JSON
	}{
		{"the sign-in page", http.MethodGet, target, "", "", true},
		{"the sign-in form", http.MethodPost, target, "application/x-www-form-urlencoded", f.values.Encode(), true},
		{"registration", http.MethodPost, authserver.RegisterPath, "application/json", `{"redirect_uris":["` + testRedirect + `"]}`, false},
		{"registration's preflight", http.MethodOptions, authserver.RegisterPath, "", "", false},
		{"the token endpoint", http.MethodPost, authserver.TokenPath, "application/x-www-form-urlencoded", redeem(clientID, "x", newPKCE()).Encode(), false},
	}
	forwarded := []struct {
		name string
		edit func(*http.Request)
	}{
		{"Forwarded", func(r *http.Request) { r.Header.Set("Forwarded", "for=192.0.2.7;proto=https") }},
		{"X-Forwarded-For", func(r *http.Request) { r.Header.Set("X-Forwarded-For", "192.0.2.7") }},
		{"X-Forwarded-For naming the loopback", func(r *http.Request) { r.Header.Set("X-Forwarded-For", "127.0.0.1") }},
		{"X-Forwarded-Host", func(r *http.Request) { r.Header.Set("X-Forwarded-Host", "localhost:8080") }},
		{"X-Forwarded-Proto", func(r *http.Request) { r.Header.Set("X-Forwarded-Proto", "https") }},
		{"X-Forwarded-Port", func(r *http.Request) { r.Header.Set("X-Forwarded-Port", "443") }},
		{"x-forwarded-for as sent", func(r *http.Request) { r.Header["x-forwarded-for"] = []string{"192.0.2.7"} }},
		{"empty X-Forwarded-For", func(r *http.Request) { r.Header["X-Forwarded-For"] = []string{""} }},
		{"X-Real-IP", func(r *http.Request) { r.Header.Set("X-Real-IP", "192.0.2.7") }},
		{"Via", func(r *http.Request) { r.Header.Set("Via", "1.1 caddy") }},
		{"the trusted proxy header", func(r *http.Request) { r.Header.Set(proxyHeader, "192.0.2.7") }},
		{"a public Host", func(r *http.Request) { r.Host = "cobranca.example.com" }},
		{"a public Host with a port", func(r *http.Request) { r.Host = "dev.example.com:8080" }},
		{"a private address as Host", func(r *http.Request) { r.Host = "192.168.1.5:8080" }},
		{"a loopback-looking name", func(r *http.Request) { r.Host = "localhost.example.com" }},
		{"no Host", func(r *http.Request) { r.Host = "" }},
	}
	clients, codes := storetest.Count(t, db, "oauth_client"), storetest.Count(t, db, "oauth_code")
	for _, e := range endpoints {
		for _, fw := range forwarded {
			t.Run(e.name+"/"+fw.name, func(t *testing.T) {
				r := local(e.method, e.target, e.ct, e.in)
				fw.edit(r)
				w := serveLocal(as, r)
				want := `"error":"access_denied"`
				if e.page {
					want = `<code id="error">access_denied</code>`
				}
				if w.Code != http.StatusForbidden || w.Header().Get("Location") != "" || !strings.Contains(w.Body.String(), want) {
					t.Errorf("= %d, Location %q; want 403 access_denied:\n%s", w.Code, w.Header().Get("Location"), w.Body)
				}
			})
		}
	}
	if n := storetest.Count(t, db, "oauth_client"); n != clients {
		t.Errorf("%d clients registered through a forwarder", n-clients)
	}
	if n := storetest.Count(t, db, "oauth_code"); n != codes {
		t.Errorf("%d codes issued through a forwarder", n-codes)
	}
	// Served without the forwarder's marks: what the refusals are held to.
	for _, e := range endpoints {
		w := serveLocal(as, local(e.method, e.target, e.ct, e.in))
		if w.Code == http.StatusForbidden {
			t.Errorf("%s from this machine = 403:\n%s", e.name, w.Body)
		}
	}
	for _, host := range []string{"127.0.0.1:8080", "[::1]:8080", "LOCALHOST:8080", "localhost"} {
		r := local(http.MethodGet, target, "", "")
		r.Host = host
		if w := serveLocal(as, r); w.Code != http.StatusOK {
			t.Errorf("the page with Host %s = %d, want 200", host, w.Code)
		}
	}
	for _, path := range []string{authserver.MetadataPath, authserver.OpenIDConfigPath} {
		r := local(http.MethodGet, path, "", "")
		r.Header.Set("X-Forwarded-For", "192.0.2.7")
		r.Host = "cobranca.example.com"
		if w := serveLocal(as, r); w.Code != http.StatusOK {
			t.Errorf("GET %s forwarded = %d, want 200 (discovery is public)", path, w.Code)
		}
	}
}

// TestLargestRequestSignsIn: a request at every bound the authorization
// endpoint sets (state, nonce, login_hint, acr_values, the client's name
// and redirect URI), made of the characters JSON escapes most, still
// fits the sealed form and signs in.
func TestLargestRequestSignsIn(t *testing.T) {
	e := newEnv(t, storetest.SQLite(t))
	redirect := "http://127.0.0.1:9/cb?a=" + strings.Repeat("&", 2048-len("http://127.0.0.1:9/cb?a=")) // & is JSON's \u0026
	name := strings.Repeat("&", 200)
	status, body := e.register(t, `{"redirect_uris":["`+redirect+`"],"client_name":"`+name+`"}`)
	clientID, _ := body["client_id"].(string)
	if status != http.StatusCreated {
		t.Fatalf("register = %d %v", status, body)
	}
	q := e.authParams(clientID, newPKCE())
	state := strings.Repeat("<", 1024)
	acrs := make([]string, 8)
	for i := range acrs {
		acrs[i] = strings.Repeat(">", 254) + string(rune('a'+i))
	}
	q.Set("redirect_uri", redirect)
	q.Set("state", state)
	q.Set("nonce", strings.Repeat("<", 255))
	q.Set("login_hint", strings.Repeat("<", 255))
	q.Set("acr_values", strings.Join(acrs, " "))
	got := e.signIn(t, e.authURL(q), nil)
	if got.Get("code") == "" || got.Get("state") != state {
		t.Errorf("redirect query %v: want a code and the state", got)
	}
}

// TestFormSingleUse: a sign-in form gives at most one decision — posted
// again (to sign in, or to deny, in any order) it is refused on a page and
// issues nothing — while a submission refused for a bad field does not
// spend it. A spent form is remembered only while it could be posted.
func TestFormSingleUse(t *testing.T) {
	storetest.Each(t, pg, func(t *testing.T, db store.DB) {
		e := newEnv(t, db)
		clientID := e.registerClient(t, testRedirect)
		fresh := func(t *testing.T) form {
			t.Helper()
			resp, page := getPage(t, e.authURL(e.authParams(clientID, newPKCE())), nil)
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("GET the page = %d", resp.StatusCode)
			}
			return parseForm(t, page)
		}
		post := func(f form, action string) (*http.Response, string) {
			v := maps.Clone(f.values)
			v.Set("action", action)
			return e.submit(t, form{action: f.action, values: v})
		}
		spentPage := func(t *testing.T, what string, resp *http.Response, body string) {
			t.Helper()
			if resp.StatusCode != http.StatusBadRequest || resp.Header.Get("Location") != "" || !strings.Contains(body, `<code id="error">invalid_request</code>`) ||
				!strings.Contains(body, "already used") {
				t.Errorf("%s = %d, Location %q; want a 400 page saying the form was used:\n%s", what, resp.StatusCode, resp.Header.Get("Location"), body)
			}
		}
		for _, c := range []struct{ first, second string }{{"allow", "allow"}, {"allow", "deny"}, {"deny", "allow"}, {"deny", "deny"}} {
			t.Run(c.first+" then "+c.second, func(t *testing.T) {
				f := fresh(t)
				if resp, body := post(f, c.first); resp.StatusCode != http.StatusSeeOther {
					t.Fatalf("the first %s = %d:\n%s", c.first, resp.StatusCode, body)
				}
				codes := storetest.Count(t, db, "oauth_code")
				resp, body := post(f, c.second)
				spentPage(t, "the same form's "+c.second, resp, body)
				if n := storetest.Count(t, db, "oauth_code"); n != codes {
					t.Errorf("%d codes issued by a form posted again", n-codes)
				}
			})
		}
		t.Run("a refused field does not spend it", func(t *testing.T) {
			f := fresh(t)
			bad := maps.Clone(f.values)
			bad.Set("subject", "")
			resp, page := post(form{action: f.action, values: bad}, "allow")
			if resp.StatusCode != http.StatusBadRequest || !strings.Contains(page, `class="problem"`) {
				t.Fatalf("an empty subject = %d, want the form again:\n%s", resp.StatusCode, page)
			}
			again := parseForm(t, page)
			again.values.Set("subject", "ana")
			if resp, body := post(again, "allow"); resp.StatusCode != http.StatusSeeOther {
				t.Fatalf("the corrected form = %d:\n%s", resp.StatusCode, body)
			}
			resp, body := post(f, "allow")
			spentPage(t, "the first page's form after the corrected one signed in", resp, body)
		})
		t.Run("remembered while it could be posted", func(t *testing.T) {
			if n := storetest.Count(t, db, "oauth_form_spent"); n == 0 {
				t.Fatal("no spent form recorded")
			}
			e.clock.Advance(11 * time.Minute) // past every form's deadline
			f := fresh(t)
			if resp, body := post(f, "allow"); resp.StatusCode != http.StatusSeeOther {
				t.Fatalf("a new form = %d:\n%s", resp.StatusCode, body)
			}
			if n := storetest.Count(t, db, "oauth_form_spent"); n != 1 {
				t.Errorf("%d spent forms stored after the others' deadline, want the newest only", n)
			}
		})
	})
}
