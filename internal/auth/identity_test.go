package auth

import (
	"errors"
	"net/http"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/golang-jwt/jwt/v5"
)

// TestIdentityClaims: an identity claim that could not reach the audit log
// as it is — NUL, another control, an invisible or bidirectional
// character, invalid UTF-8, blank, too long — refuses the token with a 401
// naming the claim, never its value; each has an accepted neighbour.
func TestIdentityClaims(t *testing.T) {
	k := keysOnce()
	set := func(claim, v string) func(jwt.MapClaims) {
		return func(c jwt.MapClaims) {
			if claim == "act.sub" {
				c["act"] = map[string]any{"sub": v}
				return
			}
			c[claim] = v
		}
	}
	cimd := "https://client.example.com/" + strings.Repeat("p", MaxClientIDBytes-len("https://client.example.com/"))
	type tc struct {
		name  string
		edit  func(jwt.MapClaims)
		claim string // the claim the refusal names; "" for accepted
		value string // must not be repeated in logs or answer
	}
	var tests []tc
	for _, claim := range []string{"sub", "client_id", "azp", "act.sub", "acr", "jti"} {
		limit := MaxIdentityBytes
		if claim == "client_id" || claim == "azp" || claim == "act.sub" {
			limit = MaxClientIDBytes
		}
		for _, bad := range []struct{ name, v string }{
			{"NUL", "user\x00sneaky"},
			{"escape", "user\x1b[31msneaky"},
			{"DEL", "user\x7fsneaky"},
			{"C1 control", "user\u0085sneaky"},
			{"RLO", "user\u202esneaky"},
			{"RLM", "user\u200fsneaky"},
			{"ALM", "user\u061csneaky"},
			{"zero width space", "user\u200bsneaky"},
			{"soft hyphen", "user\u00adsneaky"},
			{"Hangul filler", "user\u3164sneaky"},
			{"variation selector", "user\ufe0fsneaky"},
			{"tag character", "user\U000e0041sneaky"},
			{"line separator", "user\u2028sneaky"},
			{"too long", "sneaky" + strings.Repeat("x", limit+1-len("sneaky"))},
		} {
			tests = append(tests, tc{name: claim + " with " + bad.name, edit: set(claim, bad.v), claim: claim, value: bad.v})
		}
		if claim != "sub" { // a blank sub is "token has no subject" (TestClaimShapes)
			tests = append(tests, tc{name: "blank " + claim, edit: set(claim, " \u00a0 "), claim: claim, value: " \u00a0 "})
		}
		tests = append(tests,
			tc{name: claim + " at the limit", edit: set(claim, strings.Repeat("é", limit/2))},
			tc{name: claim + " with spaces and accents", edit: set(claim, "José da Silva")},
		)
	}
	tests = append(tests,
		tc{name: "client_id as a CIMD URL at the limit", edit: set("client_id", cimd)},
		tc{name: "azp as a CIMD URL at the limit", edit: set("azp", cimd)},
	)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			c := e.claims()
			tt.edit(c)
			tok := sign(t, jwt.SigningMethodES256, k.ec, "ec-1", c)
			resp, body := e.get(t, "Bearer "+tok, "")
			if tt.claim == "" {
				if resp.StatusCode != http.StatusOK {
					t.Fatalf("status = %d, want 200; %s", resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
				}
				return
			}
			if resp.StatusCode != http.StatusUnauthorized {
				t.Fatalf("status = %d, want 401", resp.StatusCode)
			}
			want := "token has an invalid " + tt.claim + " claim"
			challenge := resp.Header.Get("WWW-Authenticate")
			if !strings.Contains(challenge, `error="invalid_token"`) || !strings.Contains(challenge, want) {
				t.Errorf("WWW-Authenticate = %q, want invalid_token and %q", challenge, want)
			}
			logs := e.logs.String()
			if !strings.Contains(logs, want) {
				t.Errorf("logs do not give the reason %q: %s", want, logs)
			}
			for _, secret := range []string{tok, "sneaky", tt.value} {
				if strings.Contains(logs, secret) || strings.Contains(string(body), secret) || strings.Contains(challenge, secret) {
					t.Errorf("the log or the answer repeats %q from the token", secret)
				}
			}
		})
	}
}

// FuzzCheckIdentity: checkIdentity accepts exactly the non-blank valid UTF-8 within the limit
// that holds no refused character, and never repeats the value in its error.
func FuzzCheckIdentity(f *testing.F) {
	for _, s := range []string{"alice", "", " ", "a\x00", "a\u202e", "https://c.example/x", "José", "\xff", "a\u3164", "\u00a0"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		err := checkIdentity("sub", v, 64)
		want := len(v) <= 64 && utf8.ValidString(v) && strings.TrimFunc(v, unicode.IsSpace) != ""
		for _, r := range v {
			if unicode.In(r, refusedInIdentity...) {
				want = false
			}
		}
		if want != (err == nil) {
			t.Fatalf("checkIdentity(%q) = %v, want accepted: %v", v, err, want)
		}
		var te *TokenError
		if err != nil && (!errors.As(err, &te) || (len(v) > 3 && strings.Contains(te.Description, v))) {
			t.Fatalf("checkIdentity(%q) = %#v: want a TokenError whose description does not hold the value", v, err)
		}
	})
}
