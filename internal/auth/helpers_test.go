package auth

import (
	"bytes"
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"log/slog"
	"math/big"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

const testResource = "https://cobranca.test/mcp"

// testKeys are generated once per test binary: RSA generation is slow.
type testKeys struct {
	rsa     *rsa.PrivateKey
	ec      *ecdsa.PrivateKey
	ed      ed25519.PrivateKey
	rsa2    *rsa.PrivateKey // for rotation
	ecOther *ecdsa.PrivateKey
}

var keysOnce = sync.OnceValue(func() testKeys {
	must := func(err error) {
		if err != nil {
			panic(err)
		}
	}
	var k testKeys
	var err error
	k.rsa, err = rsa.GenerateKey(rand.Reader, 2048)
	must(err)
	k.rsa2, err = rsa.GenerateKey(rand.Reader, 2048)
	must(err)
	k.ec, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	must(err)
	k.ecOther, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	must(err)
	_, k.ed, err = ed25519.GenerateKey(rand.Reader)
	must(err)
	return k
})

// jwkOf renders the public half of key as a JWK.
func jwkOf(t testing.TB, kid string, key crypto.Signer) map[string]string {
	t.Helper()
	enc := base64.RawURLEncoding.EncodeToString
	switch pub := key.Public().(type) {
	case *rsa.PublicKey:
		return map[string]string{"kty": "RSA", "kid": kid, "use": "sig", "alg": "RS256",
			"n": enc(pub.N.Bytes()), "e": enc(big.NewInt(int64(pub.E)).Bytes())}
	case *ecdsa.PublicKey:
		b, err := pub.Bytes()
		if err != nil {
			t.Fatal(err)
		}
		return map[string]string{"kty": "EC", "kid": kid, "crv": "P-256", "x": enc(b[1:33]), "y": enc(b[33:])}
	case ed25519.PublicKey:
		return map[string]string{"kty": "OKP", "kid": kid, "crv": "Ed25519", "x": enc(pub)}
	}
	t.Fatalf("unsupported key %T", key)
	return nil
}

// testIssuer serves a JWKS over real HTTP and counts fetches.
type testIssuer struct {
	srv     *httptest.Server
	fetches atomic.Int64
	mu      sync.Mutex
	jwks    []byte
}

func newTestIssuer(t testing.TB, keys map[string]crypto.Signer) *testIssuer {
	t.Helper()
	iss := &testIssuer{}
	iss.setKeys(t, keys)
	iss.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		iss.fetches.Add(1)
		iss.mu.Lock()
		body := iss.jwks
		iss.mu.Unlock()
		w.Header().Set("Content-Type", "application/jwk-set+json")
		w.Write(body)
	}))
	t.Cleanup(iss.srv.Close)
	return iss
}

func (iss *testIssuer) setKeys(t testing.TB, keys map[string]crypto.Signer) {
	t.Helper()
	var set struct {
		Keys []map[string]string `json:"keys"`
	}
	for kid, k := range keys {
		set.Keys = append(set.Keys, jwkOf(t, kid, k))
	}
	data, err := json.Marshal(set)
	if err != nil {
		t.Fatal(err)
	}
	iss.mu.Lock()
	iss.jwks = data
	iss.mu.Unlock()
}

func (iss *testIssuer) URL() string { return iss.srv.URL }

// testClock is a settable clock.
type testClock struct{ ns atomic.Int64 }

func newTestClock(t time.Time) *testClock {
	c := &testClock{}
	c.ns.Store(t.UnixNano())
	return c
}
func (c *testClock) Now() time.Time          { return time.Unix(0, c.ns.Load()).UTC() }
func (c *testClock) Advance(d time.Duration) { c.ns.Add(int64(d)) }

var t0 = time.Date(2026, 3, 2, 12, 0, 0, 0, time.UTC)

// env is an issuer, an Authenticator trusting it, and a server behind the
// Middleware that echoes the Principal as JSON.
type env struct {
	iss   *testIssuer
	clock *testClock
	a     *Authenticator
	srv   *httptest.Server
	logs  *syncBuffer
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}
func (s *syncBuffer) String() string { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

func defaultKeys() map[string]crypto.Signer {
	k := keysOnce()
	return map[string]crypto.Signer{"rsa-1": k.rsa, "ec-1": k.ec, "ed-1": k.ed}
}

func newEnv(t testing.TB, mod ...func(*Config)) *env {
	t.Helper()
	e := &env{iss: newTestIssuer(t, defaultKeys()), clock: newTestClock(t0), logs: &syncBuffer{}}
	cfg := Config{
		Issuer:         e.iss.URL(),
		Resource:       testResource,
		JWKSURL:        e.iss.URL() + "/jwks.json",
		AgentClientIDs: []string{"collector-bot"},
		Now:            e.clock.Now,
		Logger:         newJSONLogger(e.logs),
	}
	for _, m := range mod {
		m(&cfg)
	}
	a, err := New(t.Context(), cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	e.a = a
	e.srv = httptest.NewServer(a.Middleware(echoPrincipal()))
	t.Cleanup(e.srv.Close)
	return e
}

func echoPrincipal() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, ok := PrincipalFrom(r.Context())
		if !ok {
			http.Error(w, "no principal", http.StatusInternalServerError)
			return
		}
		json.NewEncoder(w).Encode(p)
	})
}

// claimsFor returns valid claims for e at its clock; edit them per case.
func (e *env) claims() jwt.MapClaims {
	now := e.clock.Now()
	return jwt.MapClaims{
		"iss":       e.iss.URL(),
		"sub":       "alice",
		"aud":       []string{testResource},
		"iat":       now.Add(-time.Minute).Unix(),
		"exp":       now.Add(time.Hour).Unix(),
		"client_id": "web-console",
		"scope":     "collections.read",
		"jti":       "tok-1",
	}
}

// sign signs claims with method and key under kid, as an access token (typ at+jwt).
func sign(t testing.TB, method jwt.SigningMethod, key any, kid string, claims jwt.MapClaims) string {
	t.Helper()
	tok := jwt.NewWithClaims(method, claims)
	tok.Header["typ"] = "at+jwt"
	if kid != "" {
		tok.Header["kid"] = kid
	}
	s, err := tok.SignedString(key)
	if err != nil {
		t.Fatalf("sign: %v", err)
	}
	return s
}

// get calls the protected server with the given Authorization header
// (none when empty) and returns the response.
func (e *env) get(t testing.TB, authorization, query string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, e.srv.URL+"/mcp"+query, nil)
	if err != nil {
		t.Fatal(err)
	}
	if authorization != "" {
		req.Header.Set("Authorization", authorization)
	}
	resp, err := e.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var buf bytes.Buffer
	buf.ReadFrom(resp.Body)
	return resp, buf.Bytes()
}

func newJSONLogger(w *syncBuffer) *slog.Logger {
	return slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: slog.LevelDebug}))
}
