package auth

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestPrincipalFromIDToken: an ID token's payload becomes a principal under the access
// tokens' identity rules: an act claim or a listed client makes an agent; a claim those rules
// refuse refuses the ID token, naming the claim and never its value.
func TestPrincipalFromIDToken(t *testing.T) {
	const exp, authTime = 1900000000, 1800000000
	agents := []string{"listed-agent"}
	ok := []struct {
		name    string
		payload string
		want    Principal
	}{
		{"person", `{"iss":"https://i","sub":"ana","aud":"cobranca-web","azp":"cobranca-web","exp":1900000000,"iat":1800000000,"auth_time":1800000000,"acr":"urn:mfa","nonce":"n"}`,
			Principal{Subject: "ana", ClientID: "cobranca-web", ACR: "urn:mfa", AuthTime: time.Unix(authTime, 0), Expiry: time.Unix(exp, 0), Kind: KindHuman}},
		{"agent by act", `{"sub":"ana","aud":"cobranca-web","azp":"cobranca-web","exp":1900000000,"act":{"sub":"bot-1"}}`,
			Principal{Subject: "ana", ClientID: "cobranca-web", Actor: "bot-1", Expiry: time.Unix(exp, 0), Kind: KindAgent}},
		{"agent by listed client", `{"sub":"ana","aud":"listed-agent","azp":"listed-agent","exp":1900000000}`,
			Principal{Subject: "ana", ClientID: "listed-agent", Actor: "listed-agent", Expiry: time.Unix(exp, 0), Kind: KindAgent}},
		{"roles in the configured claim, an array", `{"sub":"ana","aud":"w","exp":1900000000,"groups":["b.approver","a","b.approver"],"roles":["ignored"]}`,
			Principal{Subject: "ana", Roles: []string{"a", "b.approver"}, Expiry: time.Unix(exp, 0), Kind: KindHuman}},
		{"roles in the configured claim, a string", `{"sub":"ana","aud":"w","exp":1900000000,"groups":" a  b.approver "}`,
			Principal{Subject: "ana", Roles: []string{"a", "b.approver"}, Expiry: time.Unix(exp, 0), Kind: KindHuman}},
	}
	for _, tc := range ok {
		t.Run(tc.name, func(t *testing.T) {
			p, err := PrincipalFromIDToken([]byte(tc.payload), agents, "groups")
			if err != nil {
				t.Fatalf("PrincipalFromIDToken = %v, want a principal", err)
			}
			if diff := cmp.Diff(&tc.want, p, cmp.Comparer(func(a, b time.Time) bool { return a.Equal(b) })); diff != "" {
				t.Errorf("principal (-want +got):\n%s", diff)
			}
		})
	}
	bad := []struct {
		name, payload, want string
	}{
		{"no subject", `{"aud":"w","exp":1900000000}`, "token has no subject"},
		{"blank subject", `{"sub":"  ","aud":"w","exp":1900000000}`, "token has no subject"},
		{"control in subject", `{"sub":"a\u0000na","aud":"w","exp":1900000000}`, "invalid sub claim"},
		{"bidi in act.sub", `{"sub":"ana","aud":"w","exp":1900000000,"act":{"sub":"bot\u202e"}}`, "invalid act.sub claim"},
		{"act without sub", `{"sub":"ana","aud":"w","exp":1900000000,"act":{}}`, "malformed act claim"},
		{"long acr", `{"sub":"ana","aud":"w","exp":1900000000,"acr":"` + strings.Repeat("x", MaxIdentityBytes+1) + `"}`, "invalid acr claim"},
		{"auth_time a string", `{"sub":"ana","aud":"w","exp":1900000000,"auth_time":"1800000000"}`, "time claim that is not a number"},
		{"no exp", `{"sub":"ana","aud":"w"}`, "lacks a required claim"},
		{"not JSON", `{"sub":`, "malformed"},
		{"roles a number", `{"sub":"ana","aud":"w","exp":1900000000,"groups":7}`, "invalid groups claim: neither an array"},
		{"roles with a control", `{"sub":"ana","aud":"w","exp":1900000000,"groups":["bot\u0007"]}`, "invalid groups claim: it contains a control"},
		{"a role with a space", `{"sub":"ana","aud":"w","exp":1900000000,"groups":["bot x"]}`, "invalid groups claim: it contains a space"},
	}
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			p, err := PrincipalFromIDToken([]byte(tc.payload), agents, "groups")
			var te *TokenError
			if !errors.As(err, &te) {
				t.Fatalf("PrincipalFromIDToken = %v, %v; want a *TokenError", p, err)
			}
			if !strings.Contains(te.Description, tc.want) {
				t.Errorf("description %q, want it to say %q", te.Description, tc.want)
			}
			if strings.Contains(te.Description, "ana") || strings.Contains(te.Description, "bot") {
				t.Errorf("description %q repeats a claim's value", te.Description)
			}
		})
	}
}
