package main

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/cobranca/cobranca/internal/auth/authtest"
	"github.com/cobranca/cobranca/internal/authserver"
)

// TestServeDevAuthorizationServer: `cobranca serve` in development mode is
// its own authorization server, whose issuer is the server's address and
// whose registrations live in its store; with COBRANCA_ISSUER none of its
// paths exists.
func TestServeDevAuthorizationServer(t *testing.T) {
	addr := freeAddr(t) // the issuer names it
	logs, _ := startServe(t, "COBRANCA_ADDR="+addr, "COBRANCA_STEPUP_ACR=urn:cobranca:mfa")
	public, _ := logs.logged("cobranca listening")
	base := "http://" + public
	code, body := get(t, base+authserver.OpenIDConfigPath)
	var doc struct {
		Issuer       string   `json:"issuer"`
		Registration string   `json:"registration_endpoint"`
		Scopes       []string `json:"scopes_supported"`
		ACR          []string `json:"acr_values_supported"`
	}
	if err := json.Unmarshal([]byte(body), &doc); code != http.StatusOK || err != nil {
		t.Fatalf("GET %s = %d (%v):\n%s", authserver.OpenIDConfigPath, code, err, body)
	}
	if doc.Issuer != base || doc.Registration != base+authserver.RegisterPath || len(doc.ACR) != 1 || doc.ACR[0] != "urn:cobranca:mfa" ||
		len(doc.Scopes) < 2 || doc.Scopes[0] != "openid" {
		t.Errorf("discovery %+v: want issuer %s, its registration endpoint, openid and the contracts' scopes, COBRANCA_STEPUP_ACR", doc, base)
	}
	resp, err := http.Post(base+authserver.RegisterPath, "application/json", strings.NewReader(`{"redirect_uris":["http://127.0.0.1:9/cb"]}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		t.Errorf("registration = %d, want 201 (stored by serve's store)", resp.StatusCode)
	}
}

// TestServeIssuerModeHasNoAuthorizationServer: with an issuer configured
// (as in production, which refuses development mode) serve mounts none of
// the development authorization server.
func TestServeIssuerModeHasNoAuthorizationServer(t *testing.T) {
	keyFile := authtest.IssuerKeyFile(t)
	logs, _ := startServe(t, "COBRANCA_ISSUER=https://idp.example.com", "COBRANCA_RESOURCE=https://mcp.example.com/mcp",
		"COBRANCA_JWT_PUBLIC_KEY="+keyFile)
	public, _ := logs.logged("cobranca listening")
	for _, path := range authserver.Paths {
		if code, _ := get(t, "http://"+public+path); code != http.StatusNotFound {
			t.Errorf("GET %s with COBRANCA_ISSUER = %d, want 404", path, code)
		}
	}
}

// TestServeDevRefusesReach: development mode's sign-in page lets anyone sign
// in as anyone, so `cobranca serve` without COBRANCA_ISSUER refuses to start
// when a setting says the server is reached from elsewhere, naming each such
// setting (and only those); loopback values, a wildcard listen address and
// the same settings with an issuer start.
func TestServeDevRefusesReach(t *testing.T) {
	for _, c := range []struct {
		name    string
		environ []string
		want    []string // the variables named; none: it starts
	}{
		{"public URL elsewhere", []string{"COBRANCA_PUBLIC_URL=https://dev.example.com"}, []string{"COBRANCA_PUBLIC_URL"}},
		{"public URL on a private address", []string{"COBRANCA_PUBLIC_URL=http://192.168.1.5:8080"}, []string{"COBRANCA_PUBLIC_URL"}},
		{"public URL of a loopback-looking name", []string{"COBRANCA_PUBLIC_URL=http://localhost.example.com:8080"}, []string{"COBRANCA_PUBLIC_URL"}},
		{"allowed host elsewhere", []string{"COBRANCA_ALLOWED_HOSTS=localhost,dev.example.com"}, []string{"COBRANCA_ALLOWED_HOSTS"}},
		{"allowed host with a port", []string{"COBRANCA_ALLOWED_HOSTS=10.0.0.2:8080"}, []string{"COBRANCA_ALLOWED_HOSTS"}},
		{"trusted proxy header", []string{"COBRANCA_TRUSTED_PROXY_HEADER=X-Forwarded-For"}, []string{"COBRANCA_TRUSTED_PROXY_HEADER"}},
		{"all three", []string{"COBRANCA_PUBLIC_URL=https://dev.example.com", "COBRANCA_ALLOWED_HOSTS=dev.example.com",
			"COBRANCA_TRUSTED_PROXY_HEADER=Fly-Client-IP"}, []string{"COBRANCA_PUBLIC_URL", "COBRANCA_ALLOWED_HOSTS", "COBRANCA_TRUSTED_PROXY_HEADER"}},
		{"loopback settings", []string{"COBRANCA_PUBLIC_URL=http://127.0.0.1:8080", "COBRANCA_ALLOWED_HOSTS=localhost:8080,[::1],127.0.0.2"}, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := checkDevelopmentReach(mustSettings(t, c.environ).Config)
			if len(c.want) == 0 {
				if err != nil {
					t.Errorf("checkDevelopmentReach = %v, want nil", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("checkDevelopmentReach = nil, want %v named", c.want)
			}
			for _, name := range []string{"COBRANCA_PUBLIC_URL", "COBRANCA_ALLOWED_HOSTS", "COBRANCA_TRUSTED_PROXY_HEADER"} {
				if named := strings.Contains(err.Error(), name+":"); named != slices.Contains(c.want, name) {
					t.Errorf("checkDevelopmentReach = %v; %s named %v, want %v", err, name, named, !named)
				}
			}
			// serve itself refuses, before it opens anything.
			dir := t.TempDir()
			serr := run(t.Context(), []string{"serve"}, append([]string{"COBRANCA_DATA_DIR=" + dir, "COBRANCA_ADDR=127.0.0.1:0"}, c.environ...), nil, io.Discard, io.Discard)
			if serr == nil || !strings.Contains(serr.Error(), c.want[0]+":") || !strings.Contains(serr.Error(), "development mode") {
				t.Errorf("serve = %v, want a refusal naming %s", serr, c.want[0])
			}
			if entries, _ := os.ReadDir(dir); len(entries) != 0 {
				t.Errorf("serve wrote %d files in the data directory before refusing", len(entries))
			}
		})
	}
	t.Run("with an issuer", func(t *testing.T) {
		s := mustSettings(t, []string{"COBRANCA_ISSUER=https://idp.example.com", "COBRANCA_RESOURCE=https://dev.example.com/mcp",
			"COBRANCA_JWKS_URL=https://idp.example.com/jwks", "COBRANCA_PUBLIC_URL=https://dev.example.com",
			"COBRANCA_ALLOWED_HOSTS=dev.example.com", "COBRANCA_TRUSTED_PROXY_HEADER=Fly-Client-IP"})
		if err := checkDevelopmentReach(s.Config); err != nil {
			t.Errorf("checkDevelopmentReach with an issuer = %v, want nil", err)
		}
	})
	t.Run("wildcard listener", func(t *testing.T) {
		// docker-compose.yml's development setup: the container listens on every
		// address; a peer on the network is refused by the sign-in page itself.
		if err := checkDevelopmentReach(mustSettings(t, []string{"COBRANCA_ADDR=0.0.0.0:8080"}).Config); err != nil {
			t.Errorf("checkDevelopmentReach(COBRANCA_ADDR=0.0.0.0:8080) = %v, want nil", err)
		}
	})
}

func mustSettings(t *testing.T, environ []string) settings {
	t.Helper()
	s, err := loadSettings(environ)
	if err != nil {
		t.Fatalf("loadSettings(%v): %v", environ, err)
	}
	return s
}
