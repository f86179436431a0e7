package main

import (
	"encoding/json"
	"net/http"
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
