package auth

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func devConfig(dir string) Config {
	return Config{DataDir: dir, BaseURL: "http://localhost:8080", Now: newTestClock(t0).Now}
}

// TestDevKeyPersisted: two starts on one data directory share the key,
// so a token minted before a restart is accepted after it.
func TestDevKeyPersisted(t *testing.T) {
	dir := t.TempDir()
	a1, err := New(t.Context(), devConfig(dir))
	if err != nil {
		t.Fatal(err)
	}
	tok, err := a1.Mint(MintOptions{Subject: "alice", Scopes: []string{"collections.read"}, Agent: "ledger-copilot", TTL: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	a2, err := New(t.Context(), devConfig(dir))
	if err != nil {
		t.Fatal(err)
	}
	if a1.dev.kid != a2.dev.kid || a1.dev.kid == "" {
		t.Errorf("kid changed across restarts: %q then %q", a1.dev.kid, a2.dev.kid)
	}
	fi, err := os.Stat(filepath.Join(dir, devKeyFile))
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("key file mode = %v, want 0600", fi.Mode().Perm())
	}
	if leftovers, _ := filepath.Glob(filepath.Join(dir, ".dev-signing-key-*")); len(leftovers) > 0 {
		t.Errorf("temporary files left behind: %v", leftovers)
	}

	srv := httptest.NewServer(a2.Middleware(echoPrincipal()))
	defer srv.Close()
	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/mcp", nil)
	req.Header.Set("Authorization", "Bearer "+tok)
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("minted token: status %d, want 200 (%s)", resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
	}
	var got Principal
	if err := json.NewDecoder(resp.Body).Decode(&got); err != nil {
		t.Fatal(err)
	}
	got.TokenID = ""
	want := Principal{Subject: "alice", ClientID: "ledger-copilot", Actor: "ledger-copilot", Scopes: []string{"collections.read"},
		Kind: KindAgent, AuthTime: t0, Expiry: t0.Add(time.Hour)}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Principal (-want +got):\n%s", diff)
	}

	// The JWKS the server publishes names the same key.
	rec := httptest.NewRecorder()
	a2.JWKSHandler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/.well-known/jwks.json", nil))
	keys, err := parseJWKS(rec.Body.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := keys[a1.dev.kid]; !ok || len(keys) != 1 {
		t.Errorf("JWKS = %s, want the one key %q", rec.Body, a1.dev.kid)
	}
	if a2.Issuer() != "http://localhost:8080" || a2.Resource() != "http://localhost:8080/mcp" {
		t.Errorf("issuer, resource = %q, %q", a2.Issuer(), a2.Resource())
	}
}

func TestMintHuman(t *testing.T) {
	a, err := New(t.Context(), devConfig(t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	tok, err := a.Mint(MintOptions{Subject: "bob", ACR: "urn:cobranca:mfa"})
	if err != nil {
		t.Fatal(err)
	}
	p, err := a.Verify(t.Context(), tok)
	if err != nil {
		t.Fatal(err)
	}
	if p.Kind != KindHuman || p.ClientID != DevClientID || p.ACR != "urn:cobranca:mfa" || p.Scopes != nil || !p.Expiry.Equal(t0.Add(time.Hour)) {
		t.Errorf("Principal = %+v", p)
	}
	if _, err := a.Mint(MintOptions{}); err == nil {
		t.Error("Mint without subject succeeded")
	}
	// An identity the server would refuse is refused when minted.
	for _, o := range []MintOptions{
		{Subject: "bob\x00"},
		{Subject: "ali\u202ece"},
		{Subject: strings.Repeat("b", MaxIdentityBytes+1)},
		{Subject: "bob", Agent: strings.Repeat("a", MaxClientIDBytes+1)},
		{Subject: "bob", Agent: "copilot\u200b"},
		{Subject: "bob", ACR: "urn:mfa\n"},
	} {
		if tok, err := a.Mint(o); err == nil {
			t.Errorf("Mint(%+q) succeeded: %s", o, tok)
		}
	}
	// A scope the server would refuse is refused when minted.
	if tok, err := a.Mint(MintOptions{Subject: "bob", Scopes: []string{"collections.read\tadmin"}}); err == nil {
		t.Errorf("Mint with a tab inside a scope succeeded: %s", tok)
	}
}

func TestMintRefusedOutsideDevMode(t *testing.T) {
	e := newEnv(t)
	if _, err := e.a.Mint(MintOptions{Subject: "alice"}); !errors.Is(err, ErrNotDevMode) {
		t.Errorf("Mint = %v, want ErrNotDevMode", err)
	}
	if e.a.JWKSHandler() != nil || e.a.DevMode() {
		t.Error("JWKS handler or dev mode outside development mode")
	}
}

// TestConfigProblems checks that New reports every problem together,
// naming the variables, and that production refuses development mode.
func TestConfigProblems(t *testing.T) {
	keyFile := filepath.Join(t.TempDir(), "k.pem")
	tests := []struct {
		name string
		cfg  Config
		want []string // substrings of the error, each required
	}{
		{
			name: "production refuses development mode",
			cfg:  Config{Production: true, DataDir: t.TempDir(), BaseURL: "http://localhost:8080"},
			want: []string{"COBRANCA_ENV=production refuses development mode", "COBRANCA_ISSUER", "COBRANCA_RESOURCE", "COBRANCA_JWKS_URL or COBRANCA_JWT_PUBLIC_KEY"},
		},
		{
			name: "production with keys but no issuer names only the issuer",
			cfg:  Config{Production: true, Resource: "https://c.test/mcp", JWKSURL: "https://idp.test/jwks"},
			want: []string{"missing: COBRANCA_ISSUER"},
		},
		{
			name: "issuer without keys or resource",
			cfg:  Config{Issuer: "https://idp.test"},
			want: []string{"COBRANCA_JWKS_URL or COBRANCA_JWT_PUBLIC_KEY is required", "COBRANCA_RESOURCE is required"},
		},
		{
			name: "both key sources, bad urls",
			cfg:  Config{Issuer: "idp", JWKSURL: "https://idp.test/jwks", PublicKeyFile: keyFile, Resource: "https://c.test/mcp#x"},
			want: []string{"COBRANCA_ISSUER: must be an absolute URL", "set only one of COBRANCA_JWKS_URL and COBRANCA_JWT_PUBLIC_KEY", "COBRANCA_RESOURCE: must have no query or fragment"},
		},
		{
			name: "production wants https",
			cfg:  Config{Production: true, Issuer: "http://idp.test", JWKSURL: "http://idp.test/jwks", Resource: "http://c.test/mcp"},
			want: []string{"COBRANCA_ISSUER: must use https", "COBRANCA_JWKS_URL: must use https", "COBRANCA_RESOURCE: must use https"},
		},
		{
			name: "dev mode with a JWKS URL but no issuer, no data dir",
			cfg:  Config{JWKSURL: "https://idp.test/jwks", BaseURL: "http://localhost:8080"},
			want: []string{"COBRANCA_JWKS_URL is set but COBRANCA_ISSUER is not", "COBRANCA_DATA_DIR is required"},
		},
		{
			name: "missing key file",
			cfg:  Config{Issuer: "https://idp.test", PublicKeyFile: keyFile, Resource: "https://c.test/mcp"},
			want: []string{"COBRANCA_JWT_PUBLIC_KEY:"},
		},
		{
			name: "leeway above a minute",
			cfg:  Config{Issuer: "https://idp.test", JWKSURL: "https://idp.test/jwks", Resource: "https://c.test/mcp", Leeway: 5 * time.Minute},
			want: []string{"leeway"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := New(t.Context(), tt.cfg)
			if err == nil {
				t.Fatal("New succeeded, want an error")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("New error %q\ndoes not mention %q", err, w)
				}
			}
		})
	}
}

func TestDevModeWarnsLoudly(t *testing.T) {
	logs := &syncBuffer{}
	cfg := devConfig(t.TempDir())
	cfg.Logger = newJSONLogger(logs)
	if _, err := New(t.Context(), cfg); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(logs.String(), `"level":"WARN"`) || !strings.Contains(logs.String(), "DEVELOPMENT MODE") {
		t.Errorf("no development mode warning in %s", logs)
	}
}

// TestDevKeyPlanted: in development mode a dev-signing-key.pem that anyone could have
// written (a world-writable data directory lets anyone plant one and mint tokens) stops
// auth.New with an error naming the file.
func TestDevKeyPlanted(t *testing.T) {
	dir := t.TempDir()
	if _, err := New(t.Context(), Config{DataDir: dir, BaseURL: "http://127.0.0.1:8080"}); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, devKeyFile)
	if err := os.Chmod(path, 0o666); err != nil {
		t.Fatal(err)
	}
	_, err := New(t.Context(), Config{DataDir: dir, BaseURL: "http://127.0.0.1:8080"})
	if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "writable by its group or by other users") {
		t.Fatalf("auth.New with a world-writable %s = %v, want it refused naming the file", devKeyFile, err)
	}
}
