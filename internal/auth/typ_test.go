package auth

import (
	"net/http"
	"testing"

	"github.com/golang-jwt/jwt/v5"
)

// TestAccessTokenType: an access token's JOSE typ is RFC 9068's at+jwt or
// application/at+jwt, in any case; JWT (what ID tokens and many issuers'
// access tokens carry), application/jwt or no typ only with
// COBRANCA_ACCEPT_JWT_TYP=true (Config.AcceptJWTTyp); anything else never.
func TestAccessTokenType(t *testing.T) {
	k := keysOnce()
	const absent = "(none)"
	for _, c := range []struct {
		typ                   string
		strict, withJWTAccept bool
	}{
		{"at+jwt", true, true},
		{"AT+JWT", true, true},
		{"application/at+jwt", true, true},
		{"Application/At+Jwt", true, true},
		{"JWT", false, true},
		{"jwt", false, true},
		{"application/jwt", false, true},
		{absent, false, true},
		{"", false, false},
		{"id+jwt", false, false},
		{"logout+jwt", false, false},
		{"at+jwt ", false, false},
		{"at+jwt; charset=utf-8", false, false},
		{"JOSE", false, false},
	} {
		for _, accept := range []bool{false, true} {
			e := newEnv(t, func(cfg *Config) { cfg.AcceptJWTTyp = accept })
			tok := jwt.NewWithClaims(jwt.SigningMethodES256, e.claims())
			tok.Header["kid"] = "ec-1"
			if c.typ == absent {
				delete(tok.Header, "typ")
			} else {
				tok.Header["typ"] = c.typ
			}
			s, err := tok.SignedString(k.ec)
			if err != nil {
				t.Fatal(err)
			}
			resp, _ := e.get(t, "Bearer "+s, "")
			want := c.strict || accept && c.withJWTAccept
			if got := resp.StatusCode == http.StatusOK; got != want {
				t.Errorf("typ %q, AcceptJWTTyp %v: status %d, accepted %v; want accepted %v (%s)", c.typ, accept, resp.StatusCode, got, want, resp.Header.Get("WWW-Authenticate"))
			}
		}
	}
	// A non-string typ is no type.
	e := newEnv(t, func(cfg *Config) { cfg.AcceptJWTTyp = true })
	tok := jwt.NewWithClaims(jwt.SigningMethodES256, e.claims())
	tok.Header["kid"], tok.Header["typ"] = "ec-1", 7
	s, err := tok.SignedString(k.ec)
	if err != nil {
		t.Fatal(err)
	}
	if resp, _ := e.get(t, "Bearer "+s, ""); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("typ 7 = %d, want 401", resp.StatusCode)
	}
}
