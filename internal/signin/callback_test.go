package signin

import (
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"math/big"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/cobranca/cobranca/internal/store/storetest"
)

// provider is an OpenID provider over real HTTP (discovery, keys, token endpoint) whose ID
// tokens a test writes claim by claim, as an issuer other than the development one may.
type provider struct {
	srv    *httptest.Server
	key    *rsa.PrivateKey
	mu     sync.Mutex
	claims func(nonce string) jwt.MapClaims // the next ID token's claims
	nonce  string                           // the nonce of the last authorization request
}

func newProvider(t *testing.T, subjectTypes ...string) *provider {
	t.Helper()
	if subjectTypes == nil {
		subjectTypes = []string{"public"}
	}
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	p := &provider{key: key}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/openid-configuration", func(w http.ResponseWriter, r *http.Request) {
		base := p.srv.URL
		_ = json.NewEncoder(w).Encode(map[string]any{"issuer": base, "authorization_endpoint": base + "/authorize",
			"token_endpoint": base + "/token", "jwks_uri": base + "/keys", "id_token_signing_alg_values_supported": []string{"RS256"},
			"response_types_supported": []string{"code"}, "subject_types_supported": subjectTypes})
	})
	mux.HandleFunc("GET /keys", func(w http.ResponseWriter, r *http.Request) {
		b64 := base64.RawURLEncoding.EncodeToString
		_ = json.NewEncoder(w).Encode(map[string]any{"keys": []map[string]string{{"kty": "RSA", "kid": "k1", "alg": "RS256", "use": "sig",
			"n": b64(key.N.Bytes()), "e": b64(big.NewInt(int64(key.E)).Bytes())}}})
	})
	mux.HandleFunc("POST /token", func(w http.ResponseWriter, r *http.Request) {
		p.mu.Lock()
		claims := p.claims(p.nonce)
		p.mu.Unlock()
		tok := jwt.NewWithClaims(jwt.SigningMethodRS256, claims)
		tok.Header["kid"] = "k1"
		raw, err := tok.SignedString(key)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"access_token": "at", "token_type": "Bearer", "expires_in": 300, "id_token": raw})
	})
	p.srv = httptest.NewServer(mux)
	t.Cleanup(p.srv.Close)
	return p
}

// TestCallbackChecksIDToken: the callback holds the ID token to OpenID Connect Core 3.1.3.7
// beyond what go-oidc checks: an azp naming another client, or an audience besides this
// client (which trusts no other), is not a sign-in for this client; an ID token without
// auth_time does not pass a step-up that asked for max_age.
func TestCallbackChecksIDToken(t *testing.T) {
	const client = "cobranca-web"
	op := newProvider(t)
	rp, err := New(Config{Issuer: op.srv.URL, ClientID: client, PublicURL: "http://cobranca.test", DB: storetest.SQLite(t), Keys: testRing(t, "k1")})
	if err != nil {
		t.Fatal(err)
	}
	idToken := func(extra jwt.MapClaims) func(string) jwt.MapClaims {
		return func(nonce string) jwt.MapClaims {
			now := time.Now()
			c := jwt.MapClaims{"iss": op.srv.URL, "sub": "bruno", "aud": client, "azp": client, "nonce": nonce,
				"iat": now.Unix(), "exp": now.Add(5 * time.Minute).Unix(), "auth_time": now.Unix(), "acr": "urn:mfa"}
			for k, v := range extra {
				if v == nil {
					delete(c, k)
				} else {
					c[k] = v
				}
			}
			return c
		}
	}
	// signIn starts a sign-in (query: /signin's), lets the provider answer with claims, and
	// returns the callback's answer.
	signIn := func(query string, claims func(string) jwt.MapClaims) *httptest.ResponseRecorder {
		t.Helper()
		start := httptest.NewRecorder()
		rp.SignIn().ServeHTTP(start, httptest.NewRequest(http.MethodGet, SignInPath+"?return=/approvals/a_x"+query, nil))
		if start.Code != http.StatusFound {
			t.Fatalf("/signin = %d: %s", start.Code, start.Body)
		}
		authz, err := url.Parse(start.Header().Get("Location"))
		if err != nil {
			t.Fatal(err)
		}
		op.mu.Lock()
		op.nonce, op.claims = authz.Query().Get("nonce"), claims
		op.mu.Unlock()
		req := httptest.NewRequest(http.MethodGet, CallbackPath+"?"+url.Values{"code": {"c"}, "state": {authz.Query().Get("state")}}.Encode(), nil)
		for _, c := range start.Result().Cookies() {
			req.AddCookie(c)
		}
		rec := httptest.NewRecorder()
		rp.Callback().ServeHTTP(rec, req)
		return rec
	}
	for _, tc := range []struct {
		name, query string
		claims      jwt.MapClaims
		status      int
		code        string // "" for a session
	}{
		{"this client", "", nil, http.StatusSeeOther, ""},
		{"no azp, one audience", "", jwt.MapClaims{"azp": nil}, http.StatusSeeOther, ""},
		{"several audiences, azp this client", "", jwt.MapClaims{"aud": []string{client, "other"}}, http.StatusBadGateway, string(CodeSigninFailed)},
		{"one audience in a list", "", jwt.MapClaims{"aud": []string{client}}, http.StatusSeeOther, ""},
		{"azp another client", "", jwt.MapClaims{"azp": "other"}, http.StatusBadGateway, string(CodeSigninFailed)},
		{"several audiences, no azp", "", jwt.MapClaims{"aud": []string{client, "other"}, "azp": nil}, http.StatusBadGateway, string(CodeSigninFailed)},
		{"max_age asked, no auth_time", "&max_age=300", jwt.MapClaims{"auth_time": nil}, http.StatusForbidden, "insufficient_user_authentication"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := signIn(tc.query, idToken(tc.claims))
			session := false
			for _, c := range rec.Result().Cookies() {
				session = session || (c.Name == rp.CookieName() && c.Value != "")
			}
			if rec.Code != tc.status || session != (tc.code == "") || (tc.code != "" && !strings.Contains(rec.Body.String(), `"code":"`+tc.code+`"`)) {
				t.Errorf("callback = %d (session cookie: %v): %s; want %d %s", rec.Code, session, rec.Body, tc.status, tc.code)
			}
		})
	}
}

// TestPairwiseIssuerRefused: an issuer that gives each client its own subject identifiers
// (OIDC Core 8, pairwise only) would give the person signing in to the page another sub than
// the access tokens of their agent carry, so the page could not tell the requester approving
// their own agent's call: sign-in refuses such an issuer, saying so in the log.
func TestPairwiseIssuerRefused(t *testing.T) {
	for _, tc := range []struct {
		types  []string
		status int
	}{{[]string{"pairwise"}, http.StatusServiceUnavailable}, {[]string{"public", "pairwise"}, http.StatusFound}, {[]string{"public"}, http.StatusFound}} {
		op := newProvider(t, tc.types...)
		rp, err := New(Config{Issuer: op.srv.URL, ClientID: "cobranca-web", PublicURL: "http://cobranca.test", DB: storetest.SQLite(t), Keys: testRing(t, "k1")})
		if err != nil {
			t.Fatal(err)
		}
		rec := httptest.NewRecorder()
		rp.SignIn().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, SignInPath+"?return=/", nil))
		if rec.Code != tc.status {
			t.Errorf("subject_types_supported %v: /signin = %d, want %d: %s", tc.types, rec.Code, tc.status, rec.Body)
		}
	}
}

// TestSignInFetchSite: a sign-in starts from this site's pages, a typed address or a bookmark
// (Sec-Fetch-Site same-origin or none; a browser too old to send it is let through), never
// from another site's page, which could otherwise make its visitors' browsers start sign-ins.
func TestSignInFetchSite(t *testing.T) {
	op := newProvider(t)
	rp, err := New(Config{Issuer: op.srv.URL, ClientID: "cobranca-web", PublicURL: "https://cobranca.test", DB: storetest.SQLite(t), Keys: testRing(t, "k1")})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		site   string
		status int
	}{{"", http.StatusFound}, {"same-origin", http.StatusFound}, {"none", http.StatusFound},
		{"cross-site", http.StatusForbidden}, {"same-site", http.StatusForbidden}, {"bogus", http.StatusForbidden}} {
		req := httptest.NewRequest(http.MethodGet, SignInPath+"?return=/approvals/a_x", nil)
		if tc.site != "" {
			req.Header.Set("Sec-Fetch-Site", tc.site)
		}
		rec := httptest.NewRecorder()
		rp.SignIn().ServeHTTP(rec, req)
		if rec.Code != tc.status {
			t.Errorf("/signin with Sec-Fetch-Site %q = %d, want %d: %s", tc.site, rec.Code, tc.status, rec.Body)
		}
		var cookie *http.Cookie
		for _, c := range rec.Result().Cookies() {
			if c.Name == "__Host-cobranca_signin" {
				cookie = c
			}
		}
		switch {
		case tc.status != http.StatusFound && cookie != nil:
			t.Errorf("Sec-Fetch-Site %q: refused, yet a sign-in cookie was set", tc.site)
		case tc.status == http.StatusFound && (cookie == nil || !cookie.Secure || !cookie.HttpOnly || cookie.SameSite != http.SameSiteLaxMode || cookie.Path != "/" ||
			cookie.Domain != "" || cookie.MaxAge != int(signinTTL/time.Second)):
			t.Errorf("Sec-Fetch-Site %q: sign-in cookie %+v, want __Host-, Secure, HttpOnly, SameSite=Lax, Path=/, 10 minutes", tc.site, cookie)
		}
	}
}
