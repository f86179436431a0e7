package authserver_test

import (
	"context"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"

	"github.com/cobranca/cobranca/internal/auth"
	"github.com/cobranca/cobranca/internal/authserver"
	"github.com/cobranca/cobranca/internal/store"
	"github.com/cobranca/cobranca/internal/store/storetest"
)

// TestOIDCClientFlow: golang.org/x/oauth2 and coreos/go-oidc, as a
// relying party would use them, discover the development authorization
// server, register, sign in through the page (a person with the step-up
// acr), redeem the code with PKCE and verify the ID token; the access token
// is one the resource accepts, for the scopes chosen.
func TestOIDCClientFlow(t *testing.T) {
	storetest.Each(t, pg, func(t *testing.T, db store.DB) {
		ctx := context.Background()
		e := newEnv(t, db)
		provider, err := oidc.NewProvider(ctx, e.base)
		if err != nil {
			t.Fatalf("oidc discovery: %v", err)
		}
		redirect := "http://127.0.0.1:9/callback"
		clientID := e.registerClient(t, redirect)
		cfg := oauth2.Config{ClientID: clientID, Endpoint: provider.Endpoint(), RedirectURL: redirect,
			Scopes: []string{oidc.ScopeOpenID, "collections:read"}}
		verifier := oauth2.GenerateVerifier()
		authURL := cfg.AuthCodeURL("state-123", oauth2.S256ChallengeOption(verifier), oidc.Nonce("nonce-456"),
			oauth2.SetAuthURLParam("resource", e.auth.Resource()), oauth2.SetAuthURLParam("acr_values", mfa))
		signedIn := time.Now().Truncate(time.Second)
		q := e.signIn(t, authURL, func(v url.Values) {
			if got := v.Get("acr"); got != mfa {
				t.Errorf("acr pre-filled %q, want the requested %q", got, mfa)
			}
			if got := v["scope"]; !slices.Equal(got, []string{oidc.ScopeOpenID, "collections:read"}) {
				t.Errorf("scopes pre-checked %v, want the requested ones", got)
			}
			v.Set("subject", "alice@example.com")
		})
		if q.Get("state") != "state-123" || q.Get("iss") != e.base || q.Get("code") == "" {
			t.Fatalf("redirect query %v: want the code, state-123 and iss %s", q, e.base)
		}
		tok, err := cfg.Exchange(ctx, q.Get("code"), oauth2.VerifierOption(verifier))
		if err != nil {
			t.Fatalf("exchange: %v", err)
		}
		rawID, _ := tok.Extra("id_token").(string)
		idt, err := provider.Verifier(&oidc.Config{ClientID: clientID}).Verify(ctx, rawID)
		if err != nil {
			t.Fatalf("ID token: %v", err)
		}
		var claims struct {
			Nonce    string `json:"nonce"`
			ACR      string `json:"acr"`
			AZP      string `json:"azp"`
			AuthTime int64  `json:"auth_time"`
			AMR      []string
			Act      *struct{ Sub string }
		}
		if err := idt.Claims(&claims); err != nil {
			t.Fatal(err)
		}
		if idt.Subject != "alice@example.com" || idt.Issuer != e.base || claims.Nonce != "nonce-456" || claims.ACR != mfa ||
			claims.AZP != clientID || claims.Act != nil || time.Unix(claims.AuthTime, 0).Before(signedIn) {
			t.Errorf("ID token: sub %q iss %q, claims %+v; want alice@example.com, %s, the nonce, %s, azp the client, no act, auth_time now",
				idt.Subject, idt.Issuer, claims, e.base, mfa)
		}
		p, err := e.auth.Verify(ctx, tok.AccessToken)
		if err != nil {
			t.Fatalf("the access token is refused: %v", err)
		}
		if p.Subject != "alice@example.com" || p.ClientID != clientID || p.Kind != auth.KindHuman || p.ACR != mfa ||
			!slices.Equal(p.Scopes, []string{oidc.ScopeOpenID, "collections:read"}) || p.AuthTime.Before(signedIn) {
			t.Errorf("access token principal %+v: want alice@example.com, a person, client %s, acr %s, the scopes, auth_time now", p, clientID, mfa)
		}
		if tok.TokenType != "Bearer" || tok.RefreshToken != "" || time.Until(tok.Expiry) < 50*time.Minute {
			t.Errorf("token type %q, refresh token %q, expiry %v: want Bearer, none, an hour", tok.TokenType, tok.RefreshToken, tok.Expiry)
		}
		// The access token calls the resource.
		req, _ := http.NewRequest(http.MethodGet, e.base+"/contracts", nil)
		req.Header.Set("Authorization", "Bearer "+tok.AccessToken)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("GET /contracts with the access token = %d, want 200", resp.StatusCode)
		}
		// The ID token is no access token.
		if _, err := e.auth.Verify(ctx, rawID); err == nil {
			t.Errorf("the ID token was accepted as an access token")
		}
	})
}

// TestWebClientAgent: the built-in web client needs no registration; an
// agent's sign-in gives an access token whose act and client_id are the
// client, and an ID token with act.
func TestWebClientAgent(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, storetest.SQLite(t))
	provider, err := oidc.NewProvider(ctx, e.base)
	if err != nil {
		t.Fatal(err)
	}
	cfg := oauth2.Config{ClientID: auth.DevWebClientID, Endpoint: provider.Endpoint(), RedirectURL: e.base + "/signin/callback",
		Scopes: []string{oidc.ScopeOpenID}}
	verifier := oauth2.GenerateVerifier()
	q := e.signIn(t, cfg.AuthCodeURL("s", oauth2.S256ChallengeOption(verifier), oidc.Nonce("n"),
		oauth2.SetAuthURLParam("prompt", "login")), func(v url.Values) {
		v.Set("subject", "bob")
		v.Set("kind", "agent")
		v.Set("acr", "")
	})
	tok, err := cfg.Exchange(ctx, q.Get("code"), oauth2.VerifierOption(verifier))
	if err != nil {
		t.Fatalf("exchange: %v", err)
	}
	idt, err := provider.Verifier(&oidc.Config{ClientID: auth.DevWebClientID}).Verify(ctx, tok.Extra("id_token").(string))
	if err != nil {
		t.Fatal(err)
	}
	var claims struct {
		Act *struct{ Sub string }
		ACR string
	}
	if err := idt.Claims(&claims); err != nil {
		t.Fatal(err)
	}
	if idt.Subject != "bob" || claims.Act == nil || claims.Act.Sub != auth.DevWebClientID || claims.ACR != "" {
		t.Errorf("ID token sub %q, claims %+v; want bob, act {sub: %s}, no acr", idt.Subject, claims, auth.DevWebClientID)
	}
	p, err := e.auth.Verify(ctx, tok.AccessToken)
	if err != nil {
		t.Fatal(err)
	}
	if p.Kind != auth.KindAgent || p.Actor != auth.DevWebClientID || p.ClientID != auth.DevWebClientID || p.Subject != "bob" {
		t.Errorf("principal %+v: want the agent %s acting for bob", p, auth.DevWebClientID)
	}
	_ = authserver.Paths
}

// TestRedirectQueryKept: a registered redirect URI's query is kept as it
// is, in its order, and the response's parameters follow it (RFC 6749
// §3.1.2), on success and on error.
func TestRedirectQueryKept(t *testing.T) {
	e := newEnv(t, storetest.SQLite(t))
	redirect := "http://127.0.0.1:9/callback?z=1&a=%7E&z=2&flag"
	clientID := e.registerClient(t, redirect)
	q := e.authParams(clientID, newPKCE())
	q.Set("redirect_uri", redirect)
	resp, page := getPage(t, e.authURL(q), nil)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET the page = %d:\n%s", resp.StatusCode, page)
	}
	answer, _ := e.submit(t, parseForm(t, page))
	q.Set("code_challenge_method", "plain")
	refused, _ := getPage(t, e.authURL(q), nil)
	for name, resp := range map[string]*http.Response{"code": answer, "error": refused} {
		loc := resp.Header.Get("Location")
		rest, ok := strings.CutPrefix(loc, redirect+"&")
		got, err := url.ParseQuery(rest)
		if resp.StatusCode != http.StatusSeeOther || !ok || err != nil || got.Get(name) == "" || got.Get("state") != "xyz" || got.Get("iss") != e.base {
			t.Errorf("%s: %d, Location %q; want the registered URI as it is, then %s, state and iss", name, resp.StatusCode, loc, name)
		}
	}
}

// TestRoles: the sign-in page pre-fills the roles the server was given (the served contracts'
// approver roles), and the access token and the ID token carry what the developer submitted,
// in the roles claim; a cleared field gives tokens with no roles. An agent's sign-in gives
// tokens with no roles, whatever the field says: no role lets an agent do anything (an agent
// neither approves nor writes off), and the pre-filled roles would tell an agent's model of the
// forbidden tools' roles (collections.write_off), which it must not learn of.
func TestRoles(t *testing.T) {
	ctx := context.Background()
	e := newEnvWith(t, storetest.SQLite(t), authserver.Options{Roles: []string{"collections.approver", "ops.lead"}})
	provider, err := oidc.NewProvider(ctx, e.base)
	if err != nil {
		t.Fatal(err)
	}
	redirect := "http://127.0.0.1:9/callback"
	clientID := e.registerClient(t, redirect)
	for _, tc := range []struct {
		name, submit string
		agent        bool
		want         []string
	}{
		{"as pre-filled", "", false, []string{"collections.approver", "ops.lead"}},
		{"edited", "ops.lead  team.x ops.lead", false, []string{"ops.lead", "team.x"}},
		{"cleared", " ", false, nil},
		{"an agent's, as pre-filled", "", true, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := oauth2.Config{ClientID: clientID, Endpoint: provider.Endpoint(), RedirectURL: redirect, Scopes: []string{oidc.ScopeOpenID}}
			verifier := oauth2.GenerateVerifier()
			authURL := cfg.AuthCodeURL("s", oauth2.S256ChallengeOption(verifier), oidc.Nonce("n"), oauth2.SetAuthURLParam("resource", e.auth.Resource()))
			q := e.signIn(t, authURL, func(v url.Values) {
				if got := v.Get("roles"); got != "collections.approver ops.lead" {
					t.Errorf("roles pre-filled %q, want the server's", got)
				}
				if tc.submit != "" {
					v.Set("roles", tc.submit)
				}
				if tc.agent {
					v.Set("kind", "agent")
				}
			})
			tok, err := cfg.Exchange(ctx, q.Get("code"), oauth2.VerifierOption(verifier))
			if err != nil {
				t.Fatalf("exchange: %v", err)
			}
			p, err := e.auth.Verify(ctx, tok.AccessToken)
			if err != nil {
				t.Fatal(err)
			}
			if p.IsAgent() != tc.agent {
				t.Errorf("access token of an agent: %v, want %v", p.IsAgent(), tc.agent)
			}
			if !slices.Equal(p.Roles, tc.want) {
				t.Errorf("access token roles %v, want %v", p.Roles, tc.want)
			}
			rawID, _ := tok.Extra("id_token").(string)
			idt, err := provider.Verifier(&oidc.Config{ClientID: clientID}).Verify(ctx, rawID)
			if err != nil {
				t.Fatal(err)
			}
			var claims struct{ Roles []string }
			if err := idt.Claims(&claims); err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(claims.Roles, tc.want) {
				t.Errorf("ID token roles %v, want %v", claims.Roles, tc.want)
			}
		})
	}
	if _, err := authserver.New(authserver.Options{Auth: e.auth, DB: e.db, Roles: []string{"a b"}}); err == nil {
		t.Error("New with the role \"a b\" succeeded")
	}
}
