package auth

import (
	"context"
	"encoding/base64"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/golang-jwt/jwt/v5"
	"github.com/google/go-cmp/cmp"
)

// TestRolesClaim: an access token's roles come from the configured claim, as an array or a
// space-separated string, sorted and once each; a claim breaking the identity rules, or with
// too many roles, refuses the token and the description names the claim, never a role.
func TestRolesClaim(t *testing.T) {
	many := make([]any, MaxRoles+1)
	for i := range many {
		many[i] = "r" + strings.Repeat("x", i)
	}
	for _, tc := range []struct {
		name    string
		claim   string // COBRANCA_ROLES_CLAIM; empty: the default
		set     map[string]any
		want    []string
		wantErr string
	}{
		{name: "default claim, array", set: map[string]any{"roles": []any{"collections.approver", "ops"}}, want: []string{"collections.approver", "ops"}},
		{name: "default claim, string", set: map[string]any{"roles": "ops  collections.approver ops"}, want: []string{"collections.approver", "ops"}},
		{name: "no claim", set: map[string]any{}},
		{name: "null", set: map[string]any{"roles": nil}},
		{name: "another claim configured", claim: "cobranca_roles", set: map[string]any{"roles": []any{"x"}, "cobranca_roles": []any{"collections.approver"}}, want: []string{"collections.approver"}},
		{name: "the configured claim absent", claim: "cobranca_roles", set: map[string]any{"roles": []any{"collections.approver"}}},
		{name: "an object", set: map[string]any{"roles": map[string]any{"a": 1}}, wantErr: "invalid roles claim: neither an array"},
		{name: "a number in the array", set: map[string]any{"roles": []any{"a", 1}}, wantErr: "invalid roles claim: neither an array"},
		{name: "a bidi control", set: map[string]any{"roles": []any{"secret\u202eapprover"}}, wantErr: "invalid roles claim: it contains a control"},
		{name: "a blank role", set: map[string]any{"roles": []any{" "}}, wantErr: "invalid roles claim: blank"},
		{name: "a role with a space", set: map[string]any{"roles": []any{"a b"}}, wantErr: "invalid roles claim: it contains a space"},
		{name: "too long", set: map[string]any{"roles": []any{"secret" + strings.Repeat("x", MaxIdentityBytes)}}, wantErr: "invalid roles claim: longer than"},
		{name: "too many", set: map[string]any{"roles": many}, wantErr: "invalid roles claim: more than 64 roles"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, func(c *Config) { c.RolesClaim = tc.claim })
			c := e.claims()
			for k, v := range tc.set {
				c[k] = v
			}
			tok := sign(t, jwt.SigningMethodEdDSA, keysOnce().ed, "ed-1", c)
			p, err := e.a.Verify(context.Background(), tok)
			if tc.wantErr != "" {
				var te *TokenError
				if !errors.As(err, &te) || !strings.Contains(te.Description, tc.wantErr) {
					t.Fatalf("Verify = %v, %v; want a *TokenError saying %q", p, err, tc.wantErr)
				}
				if strings.Contains(te.Description, "secret") {
					t.Errorf("description %q repeats a role", te.Description)
				}
				return
			}
			if err != nil {
				t.Fatalf("Verify = %v", err)
			}
			if diff := cmp.Diff(tc.want, p.Roles); diff != "" {
				t.Errorf("roles (-want +got):\n%s", diff)
			}
		})
	}
}

// TestRolesClaimConfig: COBRANCA_ROLES_CLAIM must be a claim name cobranca reads for nothing
// else.
func TestRolesClaimConfig(t *testing.T) {
	for _, name := range []string{"scope", "sub", "acr", "has space", "bad\u200b"} {
		cfg := Config{DataDir: t.TempDir(), BaseURL: "http://localhost:8080", RolesClaim: name}
		if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "COBRANCA_ROLES_CLAIM") {
			t.Errorf("Validate(RolesClaim %q) = %v, want an error naming COBRANCA_ROLES_CLAIM", name, err)
		}
	}
	for _, name := range []string{"", "roles", "groups", "https://example.com/roles"} {
		cfg := Config{DataDir: t.TempDir(), BaseURL: "http://localhost:8080", RolesClaim: name}
		if err := cfg.Validate(); err != nil {
			t.Errorf("Validate(RolesClaim %q) = %v", name, err)
		}
	}
}

// TestMintRoles: development tokens, access and ID tokens, carry the roles in the configured
// claim, and the verifiers read them back; a role the verifier would refuse is not minted.
// payloadOf returns the JSON payload of a signed token (which the test's caller trusts).
func payloadOf(t *testing.T, tok string) []byte {
	t.Helper()
	parts := strings.Split(tok, ".")
	b, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestMintRoles(t *testing.T) {
	cfg := devConfig(t.TempDir())
	cfg.RolesClaim = "groups"
	a, err := New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := a.Mint(MintOptions{Subject: "ana", Roles: []string{"collections.approver"}})
	if err != nil {
		t.Fatal(err)
	}
	p, err := a.Verify(context.Background(), tok)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"collections.approver"}, p.Roles); diff != "" {
		t.Errorf("access token roles (-want +got):\n%s", diff)
	}
	id, err := a.MintIDToken(IDTokenOptions{Subject: "ana", ClientID: DevWebClientID, AuthTime: a.cfg.Now(), Roles: []string{"collections.approver"}})
	if err != nil {
		t.Fatal(err)
	}
	p, err = PrincipalFromIDToken(payloadOf(t, id), nil, a.RolesClaim())
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"collections.approver"}, p.Roles); diff != "" {
		t.Errorf("ID token roles (-want +got):\n%s", diff)
	}
	if _, err := a.Mint(MintOptions{Subject: "ana", Roles: []string{"a b"}}); err == nil {
		t.Error("Mint with the role \"a b\" succeeded")
	}
	if _, err := a.MintIDToken(IDTokenOptions{Subject: "ana", ClientID: DevWebClientID, AuthTime: a.cfg.Now(), Roles: []string{"x\u0000"}}); err == nil {
		t.Error("MintIDToken with a control character in a role succeeded")
	}
}

// FuzzParseRoles: any roles claim value is read or refused, never panics; what is read is
// at most MaxRoles roles, each passing CheckRole, sorted and once each.
func FuzzParseRoles(f *testing.F) {
	for _, s := range []string{`["collections.approver"]`, `"a b  c"`, `null`, `7`, `["a","a"]`, `[" "]`, `"x\u202ey"`, `[1]`, `{}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		roles, err := parseRoles(raw)
		if err != nil {
			if _, ok := err.(*TextError); !ok {
				t.Fatalf("parseRoles(%q) error %T, want a *TextError", raw, err)
			}
			return
		}
		if len(roles) > MaxRoles || !slices.IsSorted(roles) || len(slices.Compact(slices.Clone(roles))) != len(roles) {
			t.Fatalf("parseRoles(%q) = %q: too many, unsorted or repeated", raw, roles)
		}
		for _, r := range roles {
			if err := CheckRole(r); err != nil {
				t.Fatalf("parseRoles(%q) accepted %q: %v", raw, r, err)
			}
		}
	})
}
