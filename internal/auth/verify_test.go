package auth

import (
	"crypto"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/google/go-cmp/cmp"
)

const metaURL = "https://cobranca.test/.well-known/oauth-protected-resource/mcp"

func challenge(desc string) string {
	if desc == "" {
		return `Bearer resource_metadata="` + metaURL + `"`
	}
	return `Bearer error="invalid_token", error_description="` + desc + `", resource_metadata="` + metaURL + `"`
}

// TestRefused sends each kind of unacceptable request through real HTTP
// and expects 401 with the right challenge.
func TestRefused(t *testing.T) {
	k := keysOnce()
	rsaPubPEM := func() []byte {
		der, err := x509.MarshalPKIXPublicKey(k.rsa.Public())
		if err != nil {
			t.Fatal(err)
		}
		return pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
	}()
	with := func(e *env, edit func(jwt.MapClaims)) jwt.MapClaims {
		c := e.claims()
		edit(c)
		return c
	}
	bearer := func(tok string) string { return "Bearer " + tok }

	tests := []struct {
		name string
		// request returns the Authorization header and query string.
		request     func(t *testing.T, e *env) (authorization, query string)
		wantDesc    string // "" means no error= (no token presented)
		wantFetches int64  // -1: don't care
	}{
		{
			name:        "no header",
			request:     func(*testing.T, *env) (string, string) { return "", "" },
			wantFetches: 0,
		},
		{
			name:        "basic",
			request:     func(*testing.T, *env) (string, string) { return "Basic YWxpY2U6c2VjcmV0", "" },
			wantFetches: 0,
		},
		{
			name:        "bearer without token",
			request:     func(*testing.T, *env) (string, string) { return "Bearer ", "" },
			wantDesc:    "token is malformed",
			wantFetches: 0,
		},
		{
			name:        "bearer with two tokens",
			request:     func(*testing.T, *env) (string, string) { return "Bearer abc def", "" },
			wantDesc:    "token is malformed",
			wantFetches: 0,
		},
		{
			name:        "malformed JWT",
			request:     func(*testing.T, *env) (string, string) { return "Bearer not.a.jwt", "" },
			wantDesc:    "token is malformed",
			wantFetches: 0,
		},
		{
			name: "alg none",
			request: func(t *testing.T, e *env) (string, string) {
				return bearer(sign(t, jwt.SigningMethodNone, jwt.UnsafeAllowNoneSignatureType, "rsa-1", e.claims())), ""
			},
			wantDesc:    "token signature cannot be verified",
			wantFetches: 0,
		},
		{
			name: "HS256 keyed with the RSA public key",
			request: func(t *testing.T, e *env) (string, string) {
				return bearer(sign(t, jwt.SigningMethodHS256, rsaPubPEM, "rsa-1", e.claims())), ""
			},
			wantDesc:    "token signature cannot be verified",
			wantFetches: 0,
		},
		{
			name: "RS384 off the list",
			request: func(t *testing.T, e *env) (string, string) {
				return bearer(sign(t, jwt.SigningMethodRS384, k.rsa, "rsa-1", e.claims())), ""
			},
			wantDesc:    "token signature cannot be verified",
			wantFetches: 0,
		},
		{
			name: "PS256 off the list",
			request: func(t *testing.T, e *env) (string, string) {
				return bearer(sign(t, jwt.SigningMethodPS256, k.rsa, "rsa-1", e.claims())), ""
			},
			wantDesc:    "token signature cannot be verified",
			wantFetches: 0,
		},
		{
			name: "ES256 header naming an RSA key",
			request: func(t *testing.T, e *env) (string, string) {
				return bearer(sign(t, jwt.SigningMethodES256, k.ec, "rsa-1", e.claims())), ""
			},
			wantDesc:    "token signature cannot be verified",
			wantFetches: 1,
		},
		{
			name: "signed by another key under a known kid",
			request: func(t *testing.T, e *env) (string, string) {
				return bearer(sign(t, jwt.SigningMethodES256, k.ecOther, "ec-1", e.claims())), ""
			},
			wantDesc:    "token signature cannot be verified",
			wantFetches: 1,
		},
		{
			name: "expired",
			request: func(t *testing.T, e *env) (string, string) {
				return bearer(sign(t, jwt.SigningMethodES256, k.ec, "ec-1", with(e, func(c jwt.MapClaims) {
					c["exp"] = e.clock.Now().Add(-2 * time.Minute).Unix()
				}))), ""
			},
			wantDesc:    "token is expired",
			wantFetches: 1,
		},
		{
			name: "nbf in the future",
			request: func(t *testing.T, e *env) (string, string) {
				return bearer(sign(t, jwt.SigningMethodES256, k.ec, "ec-1", with(e, func(c jwt.MapClaims) {
					c["nbf"] = e.clock.Now().Add(2 * time.Minute).Unix()
				}))), ""
			},
			wantDesc:    "token is not valid yet",
			wantFetches: 1,
		},
		{
			name: "iat in the future",
			request: func(t *testing.T, e *env) (string, string) {
				return bearer(sign(t, jwt.SigningMethodES256, k.ec, "ec-1", with(e, func(c jwt.MapClaims) {
					c["iat"] = e.clock.Now().Add(2 * time.Minute).Unix()
				}))), ""
			},
			wantDesc:    "token is not valid yet",
			wantFetches: 1,
		},
		{
			name: "no exp",
			request: func(t *testing.T, e *env) (string, string) {
				return bearer(sign(t, jwt.SigningMethodES256, k.ec, "ec-1", with(e, func(c jwt.MapClaims) {
					delete(c, "exp")
				}))), ""
			},
			wantDesc:    "token lacks a required claim",
			wantFetches: 1,
		},
		{
			name: "wrong iss",
			request: func(t *testing.T, e *env) (string, string) {
				return bearer(sign(t, jwt.SigningMethodES256, k.ec, "ec-1", with(e, func(c jwt.MapClaims) {
					c["iss"] = "https://evil.example"
				}))), ""
			},
			wantDesc:    "token is from another issuer",
			wantFetches: 1,
		},
		{
			name: "wrong aud",
			request: func(t *testing.T, e *env) (string, string) {
				return bearer(sign(t, jwt.SigningMethodES256, k.ec, "ec-1", with(e, func(c jwt.MapClaims) {
					c["aud"] = []string{"https://other.test/mcp", "https://cobranca.test"}
				}))), ""
			},
			wantDesc:    "token is not meant for this resource",
			wantFetches: 1,
		},
		{
			name: "no aud",
			request: func(t *testing.T, e *env) (string, string) {
				return bearer(sign(t, jwt.SigningMethodES256, k.ec, "ec-1", with(e, func(c jwt.MapClaims) {
					delete(c, "aud")
				}))), ""
			},
			wantDesc:    "token lacks a required claim",
			wantFetches: 1,
		},
		{
			name: "no sub",
			request: func(t *testing.T, e *env) (string, string) {
				return bearer(sign(t, jwt.SigningMethodES256, k.ec, "ec-1", with(e, func(c jwt.MapClaims) {
					delete(c, "sub")
				}))), ""
			},
			wantDesc:    "token has no subject",
			wantFetches: 1,
		},
		{
			name: "typ of an ID token",
			request: func(t *testing.T, e *env) (string, string) {
				tok := jwt.NewWithClaims(jwt.SigningMethodES256, e.claims())
				tok.Header["kid"], tok.Header["typ"] = "ec-1", "id+jwt"
				s, err := tok.SignedString(k.ec)
				if err != nil {
					t.Fatal(err)
				}
				return bearer(s), ""
			},
			wantDesc:    "token is not an access token",
			wantFetches: 0,
		},
		{
			name: "act claim that is not an object",
			request: func(t *testing.T, e *env) (string, string) {
				return bearer(sign(t, jwt.SigningMethodES256, k.ec, "ec-1", with(e, func(c jwt.MapClaims) {
					c["act"] = "bot"
				}))), ""
			},
			wantDesc:    "token has a malformed act claim",
			wantFetches: 1,
		},
		{
			name: "unknown kid",
			request: func(t *testing.T, e *env) (string, string) {
				return bearer(sign(t, jwt.SigningMethodES256, k.ecOther, "ec-unknown", e.claims())), ""
			},
			wantDesc:    "token is signed by an unknown key",
			wantFetches: 1,
		},
		{
			name: "over 8 KiB",
			request: func(t *testing.T, e *env) (string, string) {
				tok := sign(t, jwt.SigningMethodES256, k.ec, "ec-1", with(e, func(c jwt.MapClaims) {
					c["padding"] = strings.Repeat("x", MaxTokenBytes)
				}))
				if len(tok) <= MaxTokenBytes {
					t.Fatalf("token of %d bytes is not over the limit", len(tok))
				}
				return bearer(tok), ""
			},
			wantDesc:    "token is too large",
			wantFetches: 0,
		},
		{
			name: "valid token in the query string",
			request: func(t *testing.T, e *env) (string, string) {
				tok := sign(t, jwt.SigningMethodES256, k.ec, "ec-1", e.claims())
				return "", "?access_token=" + url.QueryEscape(tok)
			},
			wantFetches: 0,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			authz, query := tt.request(t, e)
			resp, body := e.get(t, authz, query)
			if resp.StatusCode != http.StatusUnauthorized {
				t.Errorf("status = %d, want 401; body %s", resp.StatusCode, body)
			}
			if diff := cmp.Diff(challenge(tt.wantDesc), resp.Header.Get("WWW-Authenticate")); diff != "" {
				t.Errorf("WWW-Authenticate (-want +got):\n%s", diff)
			}
			if tt.wantFetches >= 0 {
				if got := e.iss.fetches.Load(); got != tt.wantFetches {
					t.Errorf("JWKS fetches = %d, want %d", got, tt.wantFetches)
				}
			}
			if tok := strings.TrimPrefix(authz, "Bearer "); len(tok) > 10 && strings.Contains(e.logs.String(), tok) {
				t.Errorf("logs contain the token: %s", e.logs.String())
			}
		})
	}
}

func TestMultipleAuthorizationHeaders(t *testing.T) {
	e := newEnv(t)
	k := keysOnce()
	tok := sign(t, jwt.SigningMethodES256, k.ec, "ec-1", e.claims())
	req, err := http.NewRequest(http.MethodGet, e.srv.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Add("Authorization", "Bearer "+tok)
	req.Header.Add("Authorization", "Bearer "+tok)
	resp, err := e.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	want := `Bearer error="invalid_request", error_description="more than one Authorization header", resource_metadata="` + metaURL + `"`
	if resp.StatusCode != http.StatusBadRequest || resp.Header.Get("WWW-Authenticate") != want {
		t.Errorf("got %d %q, want 400 %q", resp.StatusCode, resp.Header.Get("WWW-Authenticate"), want)
	}
}

// TestAccepted checks valid tokens of each key type and the Principal
// built from them.
func TestAccepted(t *testing.T) {
	k := keysOnce()
	tests := []struct {
		name   string
		method jwt.SigningMethod
		key    any
		kid    string
		edit   func(c jwt.MapClaims, now time.Time)
		want   Principal
	}{
		{
			name: "RS256, scope string, human", method: jwt.SigningMethodRS256, key: k.rsa, kid: "rsa-1",
			edit: func(c jwt.MapClaims, now time.Time) {
				c["scope"] = "collections.read collections.write"
				c["acr"] = "urn:cobranca:mfa"
				c["auth_time"] = now.Add(-10 * time.Minute).Unix()
			},
			want: Principal{Subject: "alice", ClientID: "web-console", Scopes: []string{"collections.read", "collections.write"},
				ACR: "urn:cobranca:mfa", AuthTime: t0.Add(-10 * time.Minute), Kind: KindHuman, TokenID: "tok-1", Expiry: t0.Add(time.Hour)},
		},
		{
			name: "ES256, scp array, act makes an agent", method: jwt.SigningMethodES256, key: k.ec, kid: "ec-1",
			edit: func(c jwt.MapClaims, now time.Time) {
				delete(c, "scope")
				c["scp"] = []string{"collections.read", "reminders.draft"}
				c["act"] = map[string]any{"sub": "agent:ledger-copilot"}
			},
			want: Principal{Subject: "alice", ClientID: "web-console", Actor: "agent:ledger-copilot",
				Scopes: []string{"collections.read", "reminders.draft"}, Kind: KindAgent, TokenID: "tok-1", Expiry: t0.Add(time.Hour)},
		},
		{
			name: "EdDSA, agent client id via azp, typ at+jwt, aud string", method: jwt.SigningMethodEdDSA, key: k.ed, kid: "ed-1",
			edit: func(c jwt.MapClaims, now time.Time) {
				delete(c, "client_id")
				c["azp"] = "collector-bot"
				c["aud"] = testResource
			},
			want: Principal{Subject: "alice", ClientID: "collector-bot", Actor: "collector-bot", Scopes: []string{"collections.read"},
				Kind: KindAgent, TokenID: "tok-1", Expiry: t0.Add(time.Hour)},
		},
		{
			name: "expired within leeway, scope and scp merged", method: jwt.SigningMethodES256, key: k.ec, kid: "ec-1",
			edit: func(c jwt.MapClaims, now time.Time) {
				c["exp"] = now.Add(-30 * time.Second).Unix()
				c["nbf"] = now.Add(30 * time.Second).Unix()
				c["scp"] = "collections.read audit.read"
			},
			want: Principal{Subject: "alice", ClientID: "web-console", Scopes: []string{"collections.read", "audit.read"},
				Kind: KindHuman, TokenID: "tok-1", Expiry: t0.Add(-30 * time.Second)},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			c := e.claims()
			tt.edit(c, e.clock.Now())
			tok := jwt.NewWithClaims(tt.method, c)
			tok.Header["kid"] = tt.kid
			tok.Header["typ"] = "at+jwt"
			if tt.method == jwt.SigningMethodRS256 {
				tok.Header["typ"] = "application/AT+JWT" // a media type: any case
			}
			s, err := tok.SignedString(tt.key)
			if err != nil {
				t.Fatal(err)
			}
			resp, body := e.get(t, "bearer  "+s, "")
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("status = %d, want 200; %s %s", resp.StatusCode, resp.Header.Get("WWW-Authenticate"), body)
			}
			var got Principal
			if err := json.Unmarshal(body, &got); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Principal (-want +got):\n%s", diff)
			}
			if strings.Contains(e.logs.String(), s) {
				t.Errorf("logs contain the token")
			}
		})
	}
}

// TestUnknownKidFetchesOnce: a burst of tokens with an unknown kid causes
// exactly one JWKS fetch; another comes only after the refresh interval.
func TestUnknownKidFetchesOnce(t *testing.T) {
	e := newEnv(t)
	k := keysOnce()
	tok := "Bearer " + sign(t, jwt.SigningMethodES256, k.ecOther, "nobody", e.claims())
	var wg sync.WaitGroup
	for range 20 {
		wg.Go(func() {
			resp, _ := e.get(t, tok, "")
			if resp.StatusCode != http.StatusUnauthorized {
				t.Errorf("status = %d, want 401", resp.StatusCode)
			}
		})
	}
	wg.Wait()
	e.get(t, tok, "")
	if got := e.iss.fetches.Load(); got != 1 {
		t.Errorf("JWKS fetches after a burst = %d, want 1", got)
	}
	e.clock.Advance(31 * time.Second)
	e.get(t, tok, "")
	e.get(t, tok, "")
	if got := e.iss.fetches.Load(); got != 2 {
		t.Errorf("JWKS fetches after the interval = %d, want 2", got)
	}
}

// TestKeyRotation: the issuer replaces its key; tokens signed by the new
// key are accepted after a refresh, and the withdrawn key stops working.
func TestKeyRotation(t *testing.T) {
	e := newEnv(t)
	k := keysOnce()
	oldTok := "Bearer " + sign(t, jwt.SigningMethodRS256, k.rsa, "rsa-1", e.claims())
	newTok := "Bearer " + sign(t, jwt.SigningMethodRS256, k.rsa2, "rsa-2", e.claims())
	status := func(tok string) int {
		resp, _ := e.get(t, tok, "")
		return resp.StatusCode
	}
	if got := status(oldTok); got != http.StatusOK {
		t.Fatalf("old key before rotation: status %d, want 200", got)
	}
	e.iss.setKeys(t, map[string]crypto.Signer{"rsa-2": k.rsa2})
	e.clock.Advance(45 * time.Second)
	if got := status(newTok); got != http.StatusOK {
		t.Errorf("new key after rotation: status %d, want 200", got)
	}
	if got := status(oldTok); got != http.StatusUnauthorized {
		t.Errorf("withdrawn key: status %d, want 401", got)
	}
	if got := e.iss.fetches.Load(); got != 2 {
		t.Errorf("JWKS fetches = %d, want 2", got)
	}
}

// TestJWKSMaxAge: keys are fetched again after JWKSMaxAge even when every
// kid is known, so a withdrawn key stops working without an unknown kid.
func TestJWKSMaxAge(t *testing.T) {
	e := newEnv(t)
	k := keysOnce()
	claims := e.claims()
	claims["exp"] = e.clock.Now().Add(24 * time.Hour).Unix()
	tok := "Bearer " + sign(t, jwt.SigningMethodEdDSA, k.ed, "ed-1", claims)
	if resp, _ := e.get(t, tok, ""); resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d, want 200", resp.StatusCode)
	}
	e.iss.setKeys(t, map[string]crypto.Signer{"rsa-2": k.rsa2})
	e.clock.Advance(10 * time.Minute)
	if resp, _ := e.get(t, tok, ""); resp.StatusCode != http.StatusOK {
		t.Errorf("before max age: status %d, want 200", resp.StatusCode)
	}
	e.clock.Advance(6 * time.Minute)
	if resp, _ := e.get(t, tok, ""); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("after max age: status %d, want 401", resp.StatusCode)
	}
}

// TestPublicKeyFile verifies against a static PEM key; the kid does not
// matter and the key type must still match the alg.
func TestPublicKeyFile(t *testing.T) {
	k := keysOnce()
	der, err := x509.MarshalPKIXPublicKey(k.ec.Public())
	if err != nil {
		t.Fatal(err)
	}
	path := t.TempDir() + "/issuer.pem"
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, func(c *Config) { c.JWKSURL, c.PublicKeyFile = "", path })
	good := "Bearer " + sign(t, jwt.SigningMethodES256, k.ec, "whatever", e.claims())
	if resp, body := e.get(t, good, ""); resp.StatusCode != http.StatusOK {
		t.Errorf("ES256 with the file's key: status %d, want 200 (%s)", resp.StatusCode, body)
	}
	bad := "Bearer " + sign(t, jwt.SigningMethodEdDSA, k.ed, "", e.claims())
	if resp, _ := e.get(t, bad, ""); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("EdDSA against an EC key: status %d, want 401", resp.StatusCode)
	}
	if got := e.iss.fetches.Load(); got != 0 {
		t.Errorf("JWKS fetches = %d, want 0", got)
	}
}

func TestParseJWKSSkipsUnusableKeys(t *testing.T) {
	k := keysOnce()
	good := jwkOf(t, "ok", k.ed)
	priv := jwkOf(t, "private", k.ed)
	priv["d"] = base64.RawURLEncoding.EncodeToString(k.ed.Seed())
	enc := jwkOf(t, "enc", k.ec)
	enc["use"] = "enc"
	mismatch := jwkOf(t, "mismatch", k.ec)
	mismatch["alg"] = "RS256"
	data, err := json.Marshal(map[string]any{"keys": []any{
		good, priv, enc, mismatch,
		map[string]string{"kty": "oct", "kid": "hmac", "k": "c2VjcmV0"},
		map[string]string{"kty": "EC", "kid": "p384", "crv": "P-384", "x": "AA", "y": "AA"},
		map[string]string{"kty": "EC", "kid": "offcurve", "crv": "P-256", "x": strings.Repeat("A", 43), "y": strings.Repeat("A", 43)},
	}})
	if err != nil {
		t.Fatal(err)
	}
	keys, err := parseJWKS(data)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for kid := range keys {
		got = append(got, kid)
	}
	if diff := cmp.Diff([]string{"ok"}, got); diff != "" {
		t.Errorf("usable kids (-want +got):\n%s", diff)
	}
}

// TestCachedTokenStillExpires: a token served from the verified-token cache
// is refused once it expires, and a cache hit hands out a copy.
func TestCachedTokenStillExpires(t *testing.T) {
	e := newEnv(t)
	k := keysOnce()
	claims := e.claims()
	claims["exp"] = e.clock.Now().Add(2 * time.Minute).Unix()
	raw := sign(t, jwt.SigningMethodEdDSA, k.ed, "ed-1", claims)
	for i := range 3 {
		p, err := e.a.Verify(t.Context(), raw)
		if err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
		p.Scopes = append(p.Scopes[:0], "admin:everything")
	}
	p, err := e.a.Verify(t.Context(), raw)
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(p.Scopes, "admin:everything") {
		t.Errorf("a caller's change to a cached principal leaked into the cache: %v", p.Scopes)
	}
	e.clock.Advance(2*time.Minute + 61*time.Second)
	if _, err := e.a.Verify(t.Context(), raw); err == nil {
		t.Errorf("expired token accepted from the cache")
	}
}
