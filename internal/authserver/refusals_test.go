package authserver_test

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"golang.org/x/oauth2"

	"github.com/cobranca/cobranca/internal/authserver"
	"github.com/cobranca/cobranca/internal/store"
	"github.com/cobranca/cobranca/internal/store/storetest"
)

const testRedirect = "http://127.0.0.1:9/callback"

// pkce is a verifier and its S256 challenge.
type pkce struct{ verifier, challenge string }

func newPKCE() pkce {
	v := oauth2.GenerateVerifier()
	sum := sha256.Sum256([]byte(v))
	return pkce{v, base64.RawURLEncoding.EncodeToString(sum[:])}
}

// authParams is a valid authorization request for clientID.
func (e *env) authParams(clientID string, p pkce) url.Values {
	return url.Values{
		"response_type":         {"code"},
		"client_id":             {clientID},
		"redirect_uri":          {testRedirect},
		"state":                 {"xyz"},
		"code_challenge":        {p.challenge},
		"code_challenge_method": {"S256"},
		"scope":                 {"openid collections:read"},
		"resource":              {e.auth.Resource()},
	}
}

func (e *env) authURL(q url.Values) string {
	return e.base + authserver.AuthorizePath + "?" + q.Encode()
}

// code signs in with a valid request of clientID and returns the code.
func (e *env) code(t *testing.T, clientID string, p pkce) string {
	t.Helper()
	q := e.signIn(t, e.authURL(e.authParams(clientID, p)), nil)
	if q.Get("code") == "" {
		t.Fatalf("sign-in redirected with %v, no code", q)
	}
	return q.Get("code")
}

// tokenRequest posts form to the token endpoint and returns the status,
// the JSON answer and the headers.
func (e *env) tokenRequest(t *testing.T, form url.Values, edit func(*http.Request)) (int, map[string]any, http.Header) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, e.base+authserver.TokenPath, strings.NewReader(form.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if edit != nil {
		edit(req)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body map[string]any
	raw, _ := io.ReadAll(resp.Body)
	if err := json.Unmarshal(raw, &body); err != nil {
		t.Fatalf("token endpoint answered %d, not JSON: %s", resp.StatusCode, raw)
	}
	return resp.StatusCode, body, resp.Header
}

func redeem(clientID, code string, p pkce) url.Values {
	return url.Values{"grant_type": {"authorization_code"}, "code": {code}, "redirect_uri": {testRedirect},
		"client_id": {clientID}, "code_verifier": {p.verifier}}
}

// TestAuthorizeRefusals: a request whose client or redirect URI cannot be
// trusted is answered on a page, never redirected; any other fault goes
// back to the client's redirect URI (RFC 6749 §4.1.2.1) with the state
// and the issuer.
func TestAuthorizeRefusals(t *testing.T) {
	e := newEnv(t, storetest.SQLite(t))
	clientID := e.registerClient(t, testRedirect)
	p := newPKCE()
	for _, c := range []struct {
		name     string
		edit     func(q url.Values)
		onPage   bool
		wantCode string
	}{
		{"unknown client", func(q url.Values) { q.Set("client_id", "oc_aaaaaaaaaaaaaaaaaaaaaaaaaa") }, true, "invalid_client"},
		{"malformed client id", func(q url.Values) { q.Set("client_id", "<script>") }, true, "invalid_client"},
		{"no client id", func(q url.Values) { q.Del("client_id") }, true, "invalid_request"},
		{"client id twice", func(q url.Values) { q.Add("client_id", clientID) }, true, "invalid_request"},
		{"no redirect uri", func(q url.Values) { q.Del("redirect_uri") }, true, "invalid_request"},
		{"redirect uri not registered", func(q url.Values) { q.Set("redirect_uri", "http://127.0.0.1:9/callback/") }, true, "invalid_request"},
		{"redirect uri of another host", func(q url.Values) { q.Set("redirect_uri", "https://evil.example/callback") }, true, "invalid_request"},
		{"response type token", func(q url.Values) { q.Set("response_type", "token") }, false, "unsupported_response_type"},
		{"no response type", func(q url.Values) { q.Del("response_type") }, false, "invalid_request"},
		{"plain challenge method", func(q url.Values) { q.Set("code_challenge_method", "plain") }, false, "invalid_request"},
		{"no challenge method", func(q url.Values) { q.Del("code_challenge_method") }, false, "invalid_request"},
		{"no challenge", func(q url.Values) { q.Del("code_challenge") }, false, "invalid_request"},
		{"challenge not a digest", func(q url.Values) { q.Set("code_challenge", "short") }, false, "invalid_request"},
		{"other resource", func(q url.Values) { q.Set("resource", "https://other.example/mcp") }, false, "invalid_target"},
		{"unsupported scope", func(q url.Values) { q.Set("scope", "openid admin:everything") }, false, "invalid_scope"},
		{"scope twice", func(q url.Values) { q.Add("scope", "openid") }, false, "invalid_request"},
		{"unknown parameter twice", func(q url.Values) { q["sEcReT"] = []string{"1", "2"} }, false, "invalid_request"},
		{"prompt none", func(q url.Values) { q.Set("prompt", "none") }, false, "login_required"},
		{"max_age not a number", func(q url.Values) { q.Set("max_age", "soon") }, false, "invalid_request"},
		{"nonce with a control character", func(q url.Values) { q.Set("nonce", "a\x00b") }, false, "invalid_request"},
	} {
		t.Run(c.name, func(t *testing.T) {
			q := e.authParams(clientID, p)
			c.edit(q)
			resp, body := getPage(t, e.authURL(q), nil)
			if c.onPage {
				if resp.StatusCode != http.StatusBadRequest || resp.Header.Get("Location") != "" || !strings.Contains(body, `<code id="error">`+c.wantCode+`</code>`) {
					t.Errorf("= %d, Location %q; want a 400 page naming %s:\n%s", resp.StatusCode, resp.Header.Get("Location"), c.wantCode, body)
				}
				if strings.Contains(body, "<script>") {
					t.Errorf("the page repeats the request's markup")
				}
				return
			}
			loc, err := url.Parse(resp.Header.Get("Location"))
			if resp.StatusCode != http.StatusSeeOther || err != nil || !strings.HasPrefix(loc.String(), testRedirect+"?") {
				t.Fatalf("= %d, Location %q; want a redirect to %s", resp.StatusCode, resp.Header.Get("Location"), testRedirect)
			}
			got := loc.Query()
			if got.Get("error") != c.wantCode || got.Get("state") != "xyz" || got.Get("iss") != e.base || got.Get("code") != "" {
				t.Errorf("redirect query %v, want error %s, state xyz, iss %s, no code", got, c.wantCode, e.base)
			}
			if strings.Contains(got.Get("error_description"), "sEcReT") {
				t.Errorf("error_description %q repeats what the client sent", got.Get("error_description"))
			}
		})
	}
}

// TestTokenRefusals: the token endpoint's refusals (RFC 6749 §5.2), none
// cached; a code is spent by its first redemption, whatever comes of it,
// but a request refused before it names a valid code leaves it unspent.
func TestTokenRefusals(t *testing.T) {
	storetest.Each(t, pg, func(t *testing.T, db store.DB) {
		e := newEnv(t, db)
		clientID := e.registerClient(t, testRedirect)
		other := e.registerClient(t, testRedirect)
		p := newPKCE()
		want := func(t *testing.T, what string, form url.Values, edit func(*http.Request), status int, code string) {
			t.Helper()
			got, body, h := e.tokenRequest(t, form, edit)
			if desc, _ := body["error_description"].(string); strings.Contains(desc, "sEcReT") {
				t.Errorf("%s: error_description %q repeats what the client sent", what, desc)
			}
			if got != status || body["error"] != code || h.Get("Cache-Control") != "no-store" {
				t.Errorf("%s: %d %v, Cache-Control %q; want %d %s, no-store", what, got, body, h.Get("Cache-Control"), status, code)
			}
			if _, ok := body["access_token"]; ok {
				t.Errorf("%s: an access token was issued", what)
			}
		}
		ok := func(t *testing.T, what string, form url.Values, edit func(*http.Request)) {
			t.Helper()
			got, body, h := e.tokenRequest(t, form, edit)
			if got != http.StatusOK || body["access_token"] == nil || h.Get("Cache-Control") != "no-store" {
				t.Errorf("%s: %d %v, want 200 with an access token, no-store", what, got, body)
			}
		}

		t.Run("replay", func(t *testing.T) {
			code := e.code(t, clientID, p)
			ok(t, "first redemption", redeem(clientID, code, p), nil)
			want(t, "second redemption", redeem(clientID, code, p), nil, http.StatusBadRequest, "invalid_grant")
		})
		t.Run("pkce mismatch", func(t *testing.T) {
			code := e.code(t, clientID, p)
			want(t, "another verifier", redeem(clientID, code, newPKCE()), nil, http.StatusBadRequest, "invalid_grant")
			want(t, "then the right one", redeem(clientID, code, p), nil, http.StatusBadRequest, "invalid_grant")
		})
		t.Run("expired", func(t *testing.T) {
			code := e.code(t, clientID, p)
			e.clock.Advance(authserver.CodeTTL + 1)
			defer e.clock.Advance(-authserver.CodeTTL - 1)
			want(t, "after its lifetime", redeem(clientID, code, p), nil, http.StatusBadRequest, "invalid_grant")
		})
		t.Run("wrong redirect uri", func(t *testing.T) {
			form := redeem(clientID, e.code(t, clientID, p), p)
			form.Set("redirect_uri", "http://127.0.0.1:9/other")
			want(t, "another redirect_uri", form, nil, http.StatusBadRequest, "invalid_grant")
		})
		t.Run("wrong client", func(t *testing.T) {
			want(t, "another client's code", redeem(other, e.code(t, clientID, p), p), nil, http.StatusBadRequest, "invalid_grant")
		})
		t.Run("unknown client", func(t *testing.T) {
			code := e.code(t, clientID, p)
			want(t, "unknown client", redeem("oc_aaaaaaaaaaaaaaaaaaaaaaaaaa", code, p), nil, http.StatusUnauthorized, "invalid_client")
			ok(t, "the code, still unspent", redeem(clientID, code, p), nil)
		})
		t.Run("client secret", func(t *testing.T) {
			form := redeem(clientID, e.code(t, clientID, p), p)
			form.Del("client_id")
			want(t, "Basic with a secret", form, func(r *http.Request) { r.SetBasicAuth(clientID, "secret") }, http.StatusUnauthorized, "invalid_client")
			ok(t, "Basic without a secret", form, func(r *http.Request) { r.SetBasicAuth(clientID, "") })
		})
		t.Run("syntax", func(t *testing.T) {
			code := e.code(t, clientID, p)
			for _, c := range []struct {
				what   string
				edit   func(url.Values)
				status int
				code   string
			}{
				{"refresh_token grant", func(f url.Values) { f.Set("grant_type", "refresh_token") }, 400, "unsupported_grant_type"},
				{"no grant_type", func(f url.Values) { f.Del("grant_type") }, 400, "invalid_request"},
				{"no code_verifier", func(f url.Values) { f.Del("code_verifier") }, 400, "invalid_request"},
				{"short code_verifier", func(f url.Values) { f.Set("code_verifier", strings.Repeat("a", 42)) }, 400, "invalid_request"},
				{"no redirect_uri", func(f url.Values) { f.Del("redirect_uri") }, 400, "invalid_request"},
				{"no client", func(f url.Values) { f.Del("client_id") }, 401, "invalid_client"},
				{"code twice", func(f url.Values) { f.Add("code", code) }, 400, "invalid_request"},
				{"unknown parameter twice", func(f url.Values) { f["sEcReT"] = []string{"1", "2"} }, 400, "invalid_request"},
				{"other resource", func(f url.Values) { f.Set("resource", "https://other.example/mcp") }, 400, "invalid_target"},
			} {
				form := redeem(clientID, code, p)
				c.edit(form)
				want(t, c.what, form, nil, c.status, c.code)
			}
			want(t, "JSON body", redeem(clientID, code, p), func(r *http.Request) { r.Header.Set("Content-Type", "application/json") },
				http.StatusBadRequest, "invalid_request")
			ok(t, "the code, unspent by requests refused before it", redeem(clientID, code, p), nil)
		})
		t.Run("unknown code", func(t *testing.T) {
			want(t, "a code never issued", redeem(clientID, strings.Repeat("A", 43), p), nil, http.StatusBadRequest, "invalid_grant")
		})
	})
}

// TestRegistration: what RFC 7591 registration accepts and what it
// refuses, with the error naming the member and never repeating its value.
func TestRegistration(t *testing.T) {
	e := newEnv(t, storetest.SQLite(t))
	for _, c := range []struct {
		name, metadata, code string
	}{
		{"no redirect uris", `{"client_name":"x"}`, "invalid_redirect_uri"},
		{"empty redirect uris", `{"redirect_uris":[]}`, "invalid_redirect_uri"},
		{"http to a public host", `{"redirect_uris":["http://evil.example/cb"]}`, "invalid_redirect_uri"},
		{"fragment", `{"redirect_uris":["https://app.example/cb#frag"]}`, "invalid_redirect_uri"},
		{"empty fragment", `{"redirect_uris":["https://app.example/cb#"]}`, "invalid_redirect_uri"},
		{"relative", `{"redirect_uris":["/cb"]}`, "invalid_redirect_uri"},
		{"custom scheme", `{"redirect_uris":["myapp://cb"]}`, "invalid_redirect_uri"},
		{"javascript", `{"redirect_uris":["javascript:alert(1)"]}`, "invalid_redirect_uri"},
		{"user information", `{"redirect_uris":["https://user:pw@app.example/cb"]}`, "invalid_redirect_uri"},
		{"too many", `{"redirect_uris":["https://a.example/1","https://a.example/2","https://a.example/3","https://a.example/4","https://a.example/5","https://a.example/6","https://a.example/7","https://a.example/8","https://a.example/9","https://a.example/10","https://a.example/11"]}`, "invalid_redirect_uri"},
		{"too long", `{"redirect_uris":["https://app.example/` + strings.Repeat("a", 2048) + `"]}`, "invalid_redirect_uri"},
		// The query is kept as registered and the response's parameters are
		// added to it (RFC 6749 §3.1.2): one that names a response parameter
		// would reach the client beside the server's, or for it; one that
		// does not parse could not be kept.
		{"query with code", `{"redirect_uris":["https://app.example/cb?code=x"]}`, "invalid_redirect_uri"},
		{"query with state", `{"redirect_uris":["http://127.0.0.1:9/cb?a=1&state=x"]}`, "invalid_redirect_uri"},
		{"query with iss", `{"redirect_uris":["https://app.example/cb?iss=https://evil.example"]}`, "invalid_redirect_uri"},
		{"query with error", `{"redirect_uris":["https://app.example/cb?error=access_denied"]}`, "invalid_redirect_uri"},
		{"query with error_description", `{"redirect_uris":["https://app.example/cb?error_description=x"]}`, "invalid_redirect_uri"},
		{"query with a bad escape", `{"redirect_uris":["https://app.example/cb?x=%zz"]}`, "invalid_redirect_uri"},
		{"query with a semicolon", `{"redirect_uris":["https://app.example/cb?a=1;b=2"]}`, "invalid_redirect_uri"},
		{"not a string", `{"redirect_uris":[1]}`, "invalid_client_metadata"},
		{"name with a control character", `{"redirect_uris":["https://app.example/cb"],"client_name":"a\u0007b"}`, "invalid_client_metadata"},
		{"name with a bidi override", `{"redirect_uris":["https://app.example/cb"],"client_name":"a\u202eb"}`, "invalid_client_metadata"},
		{"name too long", `{"redirect_uris":["https://app.example/cb"],"client_name":"` + strings.Repeat("n", 201) + `"}`, "invalid_client_metadata"},
		{"blank name", `{"redirect_uris":["https://app.example/cb"],"client_name":"  "}`, "invalid_client_metadata"},
		{"implicit grant", `{"redirect_uris":["https://app.example/cb"],"grant_types":["implicit"]}`, "invalid_client_metadata"},
		{"client credentials too", `{"redirect_uris":["https://app.example/cb"],"grant_types":["authorization_code","client_credentials"]}`, "invalid_client_metadata"},
		{"token response", `{"redirect_uris":["https://app.example/cb"],"response_types":["token"]}`, "invalid_client_metadata"},
		{"client secret", `{"redirect_uris":["https://app.example/cb"],"token_endpoint_auth_method":"client_secret_basic"}`, "invalid_client_metadata"},
		{"not JSON", `redirect_uris=https://app.example/cb`, "invalid_client_metadata"},
		{"two values", `{"redirect_uris":["https://app.example/cb"]}{}`, "invalid_client_metadata"},
		// A redirect URI is compared exactly, so it is registered in the one
		// form requests send: RFC 3986's characters, lower-case scheme and
		// host, a port in range without leading zeros, a host that is an IP
		// address or an ASCII DNS name.
		{"port out of range", `{"redirect_uris":["http://127.0.0.1:99999/cb"]}`, "invalid_redirect_uri"},
		{"port 0", `{"redirect_uris":["http://127.0.0.1:0/cb"]}`, "invalid_redirect_uri"},
		{"empty port", `{"redirect_uris":["https://app.example:/cb"]}`, "invalid_redirect_uri"},
		{"port with a leading zero", `{"redirect_uris":["https://app.example:0443/cb"]}`, "invalid_redirect_uri"},
		{"raw space in the path", `{"redirect_uris":["https://app.example/c b"]}`, "invalid_redirect_uri"},
		{"raw space in the query", `{"redirect_uris":["http://127.0.0.1:9/cb?a=b c"]}`, "invalid_redirect_uri"},
		{"tab", `{"redirect_uris":["https://app.example/\tcb"]}`, "invalid_redirect_uri"},
		{"non-ASCII path", `{"redirect_uris":["https://app.example/café"]}`, "invalid_redirect_uri"},
		{"a percent sign alone", `{"redirect_uris":["https://app.example/100%"]}`, "invalid_redirect_uri"},
		{"upper-case scheme", `{"redirect_uris":["HTTPS://app.example/cb"]}`, "invalid_redirect_uri"},
		{"mixed-case scheme to the loopback", `{"redirect_uris":["Http://127.0.0.1:9/cb"]}`, "invalid_redirect_uri"},
		{"upper-case host", `{"redirect_uris":["https://App.example/cb"]}`, "invalid_redirect_uri"},
		{"upper-case localhost", `{"redirect_uris":["http://LOCALHOST:9/cb"]}`, "invalid_redirect_uri"},
		{"non-ASCII host (a Cyrillic look-alike)", `{"redirect_uris":["https://аpple.example/cb"]}`, "invalid_redirect_uri"},
		{"percent-encoded host", `{"redirect_uris":["https://%D0%B0pple.example/cb"]}`, "invalid_redirect_uri"},
		{"IPv6 zone", `{"redirect_uris":["http://[fe80::1%25en0]:9/cb"]}`, "invalid_redirect_uri"},
		{"short IPv4 form", `{"redirect_uris":["https://127.1/cb"]}`, "invalid_redirect_uri"},
		{"hexadecimal IPv4 form", `{"redirect_uris":["https://0x7f.0.0.1/cb"]}`, "invalid_redirect_uri"},
		{"underscore in the host", `{"redirect_uris":["https://a_b.example/cb"]}`, "invalid_redirect_uri"},
		{"trailing dot", `{"redirect_uris":["https://app.example./cb"]}`, "invalid_redirect_uri"},
		{"label starting with a hyphen", `{"redirect_uris":["https://-app.example/cb"]}`, "invalid_redirect_uri"},
		// Read as /mcp reads tool arguments: each member once, valid UTF-8,
		// names exactly as RFC 7591 spells them.
		{"redirect_uris twice", `{"redirect_uris":["https://app.example/cb"],"redirect_uris":["https://evil.example/cb"]}`, "invalid_client_metadata"},
		{"client_name twice", `{"redirect_uris":["https://app.example/cb"],"client_name":"a","client_name":"b"}`, "invalid_client_metadata"},
		{"an ignored member twice", `{"redirect_uris":["https://app.example/cb"],"scope":"a","scope":"b"}`, "invalid_client_metadata"},
		{"a duplicate inside an ignored member", `{"redirect_uris":["https://app.example/cb"],"jwks":{"k":1,"k":2}}`, "invalid_client_metadata"},
		{"invalid UTF-8", "{\"redirect_uris\":[\"https://app.example/cb\"],\"client_name\":\"a\xffb\"}", "invalid_client_metadata"},
		{"lone surrogate", `{"redirect_uris":["https://app.example/cb"],"client_name":"a\ud800b"}`, "invalid_client_metadata"},
		{"the member's name in another case", `{"Redirect_URIs":["https://app.example/cb"]}`, "invalid_redirect_uri"},
		{"redirect_uris a string", `{"redirect_uris":"https://app.example/cb"}`, "invalid_client_metadata"},
		{"client_name a number", `{"redirect_uris":["https://app.example/cb"],"client_name":7}`, "invalid_client_metadata"},
	} {
		t.Run(c.name, func(t *testing.T) {
			status, body := e.register(t, c.metadata)
			desc, _ := body["error_description"].(string)
			if status != http.StatusBadRequest || body["error"] != c.code || desc == "" {
				t.Errorf("register %s = %d %v, want 400 %s with a description", c.metadata, status, body, c.code)
			}
			for _, secret := range []string{"evil.example", "#frag", "user:pw", "alert(", "myapp://"} {
				if strings.Contains(desc, secret) {
					t.Errorf("the description %q repeats the request", desc)
				}
			}
		})
	}
	t.Run("content type", func(t *testing.T) {
		resp, err := http.Post(e.base+authserver.RegisterPath, "text/plain", strings.NewReader(`{"redirect_uris":["https://app.example/cb"]}`))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest {
			t.Errorf("text/plain registration = %d, want 400", resp.StatusCode)
		}
	})
	t.Run("accepted", func(t *testing.T) {
		// What the MCP clients send: refresh_token is dropped, loopback
		// http and https are taken.
		status, body := e.register(t, `{"redirect_uris":["http://localhost:6274/oauth/callback","http://[::1]:8/cb","https://app.example/cb",
"https://xn--80ak6aa92e.example:8443/cb","http://127.0.0.1:65535/cb","https://[2001:db8::1]/cb","https://app.example/cb?a=%C3%A9&b='1'"],
"client_name":"MCP Inspector","grant_types":["authorization_code","refresh_token"],"response_types":["code"],
"token_endpoint_auth_method":"none","client_uri":"https://github.com/modelcontextprotocol/inspector","scope":"collections:read"}`)
		if status != http.StatusCreated {
			t.Fatalf("register = %d %v", status, body)
		}
		want := map[string]any{"client_name": "MCP Inspector", "grant_types": []any{"authorization_code"}, "response_types": []any{"code"},
			"token_endpoint_auth_method": "none",
			"redirect_uris": []any{"http://localhost:6274/oauth/callback", "http://[::1]:8/cb", "https://app.example/cb",
				"https://xn--80ak6aa92e.example:8443/cb", "http://127.0.0.1:65535/cb", "https://[2001:db8::1]/cb", "https://app.example/cb?a=%C3%A9&b='1'"}}
		for k, v := range want {
			if got, _ := json.Marshal(body[k]); string(got) != mustJSON(t, v) {
				t.Errorf("registered %s = %s, want %s", k, got, mustJSON(t, v))
			}
		}
		if id, _ := body["client_id"].(string); !strings.HasPrefix(id, "oc_") || body["client_id_issued_at"] == nil {
			t.Errorf("registered client_id %v, issued at %v", body["client_id"], body["client_id_issued_at"])
		}
		if _, ok := body["client_secret"]; ok {
			t.Errorf("a public client was given a secret")
		}
	})
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestClientsPersistAndAreBounded: a registration survives a restart (a new
// server on the same store, as an MCP client that cached it expects), and
// only the newest MaxClients are kept.
func TestClientsPersistAndAreBounded(t *testing.T) {
	storetest.Each(t, pg, func(t *testing.T, db store.DB) {
		const bound = 3
		first := newEnvWith(t, db, authserver.Options{MaxClients: bound})
		var ids []string
		for range bound + 2 {
			ids = append(ids, first.registerClient(t, testRedirect))
		}
		restarted := newEnvWith(t, db, authserver.Options{MaxClients: bound})
		for i, id := range ids {
			resp, body := getPage(t, restarted.authURL(restarted.authParams(id, newPKCE())), nil)
			known := resp.StatusCode == http.StatusOK
			if wantKnown := i >= 2; known != wantKnown {
				t.Errorf("client %d of %d after a restart: %d, known %v; want known %v (the newest %d are kept):\n%s",
					i+1, len(ids), resp.StatusCode, known, wantKnown, bound, body)
			}
		}
		if n := storetest.Count(t, db, "oauth_client"); n != bound {
			t.Errorf("%d registered clients stored, want %d", n, bound)
		}
	})
}

// TestLoopbackRedirectAnyPort: an http redirect URI to a loopback host
// matches a request's at any port (RFC 8252 §7.3: a native client listens
// on the port it gets at the moment), and the code is bound to the
// request's; anything else about it — path, query, host, scheme — is still
// compared exactly, and the port must be one.
func TestLoopbackRedirectAnyPort(t *testing.T) {
	e := newEnv(t, storetest.SQLite(t))
	status, body := e.register(t, `{"redirect_uris":["http://127.0.0.1/callback","http://[::1]:9/cb","http://localhost:1234/l?x=1","https://app.example:8443/cb"]}`)
	clientID, _ := body["client_id"].(string)
	if status != http.StatusCreated {
		t.Fatalf("register = %d %v", status, body)
	}
	for _, c := range []struct {
		redirect string
		ok       bool
	}{
		{"http://127.0.0.1/callback", true},
		{"http://127.0.0.1:51234/callback", true},
		{"http://127.0.0.1:1/callback", true},
		{"http://[::1]:65535/cb", true},
		{"http://[::1]/cb", true},
		{"http://localhost:80/l?x=1", true},
		{"http://127.0.0.1:51234/callback/", false},
		{"http://127.0.0.1:51234/Callback", false},
		{"http://127.0.0.1:51234/callback?a=1", false},
		{"http://localhost:1234/l?x=2", false},
		{"http://localhost:51234/callback", false},
		{"http://127.0.0.2:51234/callback", false},
		{"http://[::1]:9/callback", false},
		{"http://127.0.0.1:99999/callback", false},
		{"http://127.0.0.1:0/callback", false},
		{"http://127.0.0.1:08/callback", false},
		{"http://127.0.0.1:/callback", false},
		{"http://LOCALHOST:1234/l?x=1", false},
		{"https://127.0.0.1:51234/callback", false},
		{"https://app.example:9443/cb", false},
		{"https://app.example/cb", false},
	} {
		t.Run(c.redirect, func(t *testing.T) {
			p := newPKCE()
			q := e.authParams(clientID, p)
			q.Set("redirect_uri", c.redirect)
			if !c.ok {
				resp, page := getPage(t, e.authURL(q), nil)
				if resp.StatusCode != http.StatusBadRequest || resp.Header.Get("Location") != "" || !strings.Contains(page, `<code id="error">invalid_request</code>`) {
					t.Errorf("= %d, Location %q; want a 400 page, never a redirect", resp.StatusCode, resp.Header.Get("Location"))
				}
				return
			}
			got := e.signIn(t, e.authURL(q), nil)
			if got.Get("code") == "" {
				t.Fatalf("sign-in redirected with %v, no code", got)
			}
			form := redeem(clientID, got.Get("code"), p)
			form.Set("redirect_uri", c.redirect)
			if status, body, _ := e.tokenRequest(t, form, nil); status != http.StatusOK {
				t.Errorf("redeeming with the request's redirect URI = %d %v", status, body)
			}
		})
	}
	t.Run("the code is bound to the port asked for", func(t *testing.T) {
		p := newPKCE()
		q := e.authParams(clientID, p)
		q.Set("redirect_uri", "http://127.0.0.1:51234/callback")
		resp, page := getPage(t, e.authURL(q), nil)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET the page = %d", resp.StatusCode)
		}
		resp, _ = e.submit(t, parseForm(t, page))
		loc, err := url.Parse(resp.Header.Get("Location"))
		if err != nil || loc.Host != "127.0.0.1:51234" {
			t.Fatalf("redirected to %q, want port 51234", resp.Header.Get("Location"))
		}
		form := redeem(clientID, loc.Query().Get("code"), p)
		form.Set("redirect_uri", "http://127.0.0.1:51235/callback")
		if status, body, _ := e.tokenRequest(t, form, nil); status != http.StatusBadRequest || body["error"] != "invalid_grant" {
			t.Errorf("redeeming with another port = %d %v, want 400 invalid_grant", status, body)
		}
	})
}
