package auth

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/google/go-cmp/cmp"
)

// TestMintForClient: the development authorization server's access tokens
// name the client they were issued to and the sign-in time; for an agent
// the client is also the actor.
func TestMintForClient(t *testing.T) {
	a, err := New(t.Context(), devConfig(t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	signedIn := t0.Add(-10 * time.Minute)
	for _, c := range []struct {
		name     string
		opts     MintOptions
		kind     Kind
		client   string
		actor    string
		wantTime time.Time
	}{
		{"person", MintOptions{Subject: "alice", ClientID: "oc_x", AuthTime: signedIn}, KindHuman, "oc_x", "", signedIn},
		{"agent", MintOptions{Subject: "alice", ClientID: "oc_x", Agent: "oc_x", AuthTime: signedIn}, KindAgent, "oc_x", "oc_x", signedIn},
		{"defaults", MintOptions{Subject: "alice"}, KindHuman, DevClientID, "", t0},
	} {
		tok, err := a.Mint(c.opts)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		p, err := a.Verify(t.Context(), tok)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if p.Kind != c.kind || p.ClientID != c.client || p.Actor != c.actor || !p.AuthTime.Equal(c.wantTime) {
			t.Errorf("%s: principal %+v; want %s, client %s, actor %q, auth_time %v", c.name, p, c.kind, c.client, c.actor, c.wantTime)
		}
	}
	if _, err := a.Mint(MintOptions{Subject: "alice", ClientID: "a\u202eb"}); err == nil {
		t.Errorf("Mint accepted a client_id with a bidi override")
	}
}

// TestMintIDToken: an ID token carries OpenID Connect Core's claims for its
// client, signed with the development key, and is no access token.
func TestMintIDToken(t *testing.T) {
	a, err := New(t.Context(), devConfig(t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	signedIn := t0.Add(-time.Minute)
	tok, err := a.MintIDToken(IDTokenOptions{Subject: "bob", ClientID: DevWebClientID, Nonce: "n-1", ACR: "urn:mfa", AuthTime: signedIn, Agent: "oc_agent"})
	if err != nil {
		t.Fatal(err)
	}
	parsed, err := jwt.Parse(tok, func(*jwt.Token) (any, error) { return a.dev.key.Public(), nil },
		jwt.WithValidMethods([]string{"EdDSA"}), jwt.WithTimeFunc(func() time.Time { return t0 }))
	if err != nil {
		t.Fatal(err)
	}
	got := parsed.Claims.(jwt.MapClaims)
	want := jwt.MapClaims{
		"iss": "http://localhost:8080", "sub": "bob", "aud": DevWebClientID, "azp": DevWebClientID, "nonce": "n-1", "acr": "urn:mfa",
		"iat": float64(t0.Unix()), "exp": float64(t0.Add(5 * time.Minute).Unix()), "auth_time": float64(signedIn.Unix()),
		"amr": []any{"user"}, "act": map[string]any{"sub": "oc_agent"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ID token claims (-want +got):\n%s", diff)
	}
	if parsed.Header["kid"] != a.dev.kid || parsed.Header["typ"] != "JWT" {
		t.Errorf("header %v, want kid %s and typ JWT", parsed.Header, a.dev.kid)
	}
	if _, err := a.Verify(t.Context(), tok); err == nil {
		t.Errorf("an ID token was accepted as an access token")
	}
	for name, opts := range map[string]IDTokenOptions{
		"no subject":   {ClientID: "c", AuthTime: signedIn},
		"no client":    {Subject: "bob", AuthTime: signedIn},
		"no auth time": {Subject: "bob", ClientID: "c"},
		"bad nonce":    {Subject: "bob", ClientID: "c", AuthTime: signedIn, Nonce: "a\nb"},
	} {
		if _, err := a.MintIDToken(opts); err == nil {
			t.Errorf("%s: minted", name)
		}
	}
	prod := &Authenticator{cfg: Config{Issuer: "https://idp.example"}}
	if _, err := prod.MintIDToken(IDTokenOptions{Subject: "bob", ClientID: "c", AuthTime: signedIn}); !errors.Is(err, ErrNotDevMode) {
		t.Errorf("outside development mode: %v, want ErrNotDevMode", err)
	}
}

// TestDevSecret: one secret per purpose, stable across restarts, none
// outside development mode.
func TestDevSecret(t *testing.T) {
	dir := t.TempDir()
	a1, err := New(t.Context(), devConfig(dir))
	if err != nil {
		t.Fatal(err)
	}
	a2, err := New(t.Context(), devConfig(dir))
	if err != nil {
		t.Fatal(err)
	}
	s1, err1 := a1.DevSecret("form")
	s2, err2 := a2.DevSecret("form")
	other, err3 := a1.DevSecret("other")
	if err := errors.Join(err1, err2, err3); err != nil {
		t.Fatal(err)
	}
	if len(s1) != 32 || !bytes.Equal(s1, s2) || bytes.Equal(s1, other) || bytes.Contains(a1.dev.key, s1) {
		t.Errorf("secrets %x, %x, %x: want 32 bytes, the same for a purpose across restarts, another for another purpose, not the key", s1, s2, other)
	}
	if _, err := (&Authenticator{}).DevSecret("form"); !errors.Is(err, ErrNotDevMode) {
		t.Errorf("outside development mode: %v, want ErrNotDevMode", err)
	}
}

// TestCheckText: the identity claims' rules, for any short text.
func TestCheckText(t *testing.T) {
	for _, c := range []struct {
		v, rule string
	}{
		{"alice@ex.c", ""},
		{"Ana Ltda", ""},
		{strings.Repeat("a", 11), "longer than 10 bytes"},
		{"a\x00b", "control"},
		{"a\u200bb", "format"},
		{"\xff", "UTF-8"},
		{" \t", "control"},
		{"   ", "blank"},
	} {
		err := CheckText(c.v, 10)
		if c.rule == "" && err != nil || c.rule != "" && (err == nil || !strings.Contains(err.Error(), c.rule)) {
			t.Errorf("CheckText(%q) = %v, want %q", c.v, err, c.rule)
		}
	}
}
