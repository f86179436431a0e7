package auth

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// TestClaimShapes holds the shapes of scope, scp, the time claims and sub
// to their RFCs, with real signed tokens over HTTP: each refused case has an
// accepted neighbour that differs only in the point under test.
func TestClaimShapes(t *testing.T) {
	k := keysOnce()
	const (
		badScope = "invalid scope claim"
		badSCP   = "invalid scp claim"
		badTime  = "time claim that is not a number"
		noSub    = "token has no subject"
	)
	tests := []struct {
		name       string
		edit       func(c jwt.MapClaims, now time.Time)
		wantDesc   string   // "" for accepted
		wantScopes []string // when accepted
	}{
		// RFC 6749 §3.3: scope-tokens are separated by SP only and are
		// 1*NQCHAR; other white space is not a separator but an invalid
		// character, and refuses the whole token.
		{name: "scope with a tab", edit: scope("collections.read\tadmin"), wantDesc: badScope},
		{name: "scope with a newline", edit: scope("collections.read\nadmin"), wantDesc: badScope},
		{name: "scope with a CR LF", edit: scope("collections.read\r\nadmin"), wantDesc: badScope},
		{name: "scope with a no-break space", edit: scope("collections.read\u00a0admin"), wantDesc: badScope},
		{name: "scope with a double quote", edit: scope(`collections.read "admin"`), wantDesc: badScope},
		{name: "scope with a backslash", edit: scope(`collections\read`), wantDesc: badScope},
		{name: "scope with DEL", edit: scope("collections.read\x7f"), wantDesc: badScope},
		{name: "scope with non-ASCII", edit: scope("coleções.read"), wantDesc: badScope},
		{name: "scope separated by spaces", edit: scope("collections.read admin"),
			wantScopes: []string{"collections.read", "admin"}},
		{name: "scope with runs of spaces", edit: scope("  collections.read   admin "),
			wantScopes: []string{"collections.read", "admin"}},
		{name: "scope of every NQCHAR punctuation", edit: scope("urn:x!#$%&'()*+,-./:;<=>?@[]^_`{|}~"),
			wantScopes: []string{"urn:x!#$%&'()*+,-./:;<=>?@[]^_`{|}~"}},
		{name: "empty scope", edit: scope(""), wantScopes: nil},

		{name: "scp array element with a space", edit: scp([]string{"collections.read admin"}), wantDesc: badSCP},
		{name: "scp array element with a tab", edit: scp([]string{"collections.read\tadmin"}), wantDesc: badSCP},
		{name: "scp array with an empty element", edit: scp([]string{"collections.read", ""}), wantDesc: badSCP},
		{name: "scp array", edit: scp([]string{"collections.read", "admin"}),
			wantScopes: []string{"collections.read", "admin"}},
		{name: "scp string with a tab", edit: scp("collections.read\tadmin"), wantDesc: badSCP},
		{name: "scp string", edit: scp("collections.read admin"),
			wantScopes: []string{"collections.read", "admin"}},

		// RFC 7519 §2: a NumericDate is a JSON number.
		{name: "exp as a string", edit: setTime("exp", time.Hour, strDate), wantDesc: badTime},
		{name: "exp as null", edit: func(c jwt.MapClaims, _ time.Time) { c["exp"] = nil }, wantDesc: badTime},
		{name: "exp as a boolean", edit: func(c jwt.MapClaims, _ time.Time) { c["exp"] = true }, wantDesc: badTime},
		{name: "exp as a fractional number", edit: setTime("exp", time.Hour, fracDate),
			wantScopes: []string{"collections.read"}},
		{name: "nbf as a string", edit: setTime("nbf", -time.Minute, strDate), wantDesc: badTime},
		{name: "nbf as a number", edit: setTime("nbf", -time.Minute, intDate),
			wantScopes: []string{"collections.read"}},
		{name: "iat as a string", edit: setTime("iat", -time.Minute, strDate), wantDesc: badTime},
		{name: "iat as a fractional number", edit: setTime("iat", -time.Minute, fracDate),
			wantScopes: []string{"collections.read"}},
		{name: "auth_time as a string", edit: setTime("auth_time", -time.Minute, strDate), wantDesc: badTime},
		{name: "auth_time as a number", edit: setTime("auth_time", -time.Minute, intDate),
			wantScopes: []string{"collections.read"}},

		{name: "empty sub", edit: sub(""), wantDesc: noSub},
		{name: "blank sub", edit: sub("   "), wantDesc: noSub},
		{name: "white space sub", edit: sub("\t\n\u00a0\u3000"), wantDesc: noSub},
		{name: "sub of one character", edit: sub("a"), wantScopes: []string{"collections.read"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			c := e.claims()
			tt.edit(c, e.clock.Now())
			tok := sign(t, jwt.SigningMethodES256, k.ec, "ec-1", c)
			resp, body := e.get(t, "Bearer "+tok, "")
			if tt.wantDesc == "" {
				if resp.StatusCode != http.StatusOK {
					t.Fatalf("status = %d, want 200; %s", resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
				}
				var p Principal
				if err := json.Unmarshal(body, &p); err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(tt.wantScopes, p.Scopes); diff != "" {
					t.Errorf("scopes (-want +got):\n%s", diff)
				}
				return
			}
			if resp.StatusCode != http.StatusUnauthorized {
				t.Fatalf("status = %d, want 401", resp.StatusCode)
			}
			challenge := resp.Header.Get("WWW-Authenticate")
			if !strings.Contains(challenge, `error="invalid_token"`) || !strings.Contains(challenge, tt.wantDesc) {
				t.Errorf("WWW-Authenticate = %q, want invalid_token and %q", challenge, tt.wantDesc)
			}
			logs := e.logs.String()
			if !strings.Contains(logs, tt.wantDesc) {
				t.Errorf("logs do not give the reason %q: %s", tt.wantDesc, logs)
			}
			for _, secret := range []string{tok, "admin", "coleções", `collections\\read`} {
				if strings.Contains(logs, secret) || strings.Contains(string(body), secret) {
					t.Errorf("the log or the answer repeats %q from the token: %s %s", secret, logs, body)
				}
			}
		})
	}
}

func scope(s string) func(jwt.MapClaims, time.Time) {
	return func(c jwt.MapClaims, _ time.Time) { c["scope"] = s }
}

func scp(v any) func(jwt.MapClaims, time.Time) {
	return func(c jwt.MapClaims, _ time.Time) { delete(c, "scope"); c["scp"] = v }
}

func sub(s string) func(jwt.MapClaims, time.Time) {
	return func(c jwt.MapClaims, _ time.Time) { c["sub"] = s }
}

// setTime sets claim to now+d in the representation render gives.
func setTime(claim string, d time.Duration, render func(time.Time) any) func(jwt.MapClaims, time.Time) {
	return func(c jwt.MapClaims, now time.Time) { c[claim] = render(now.Add(d)) }
}

func intDate(t time.Time) any  { return t.Unix() }
func fracDate(t time.Time) any { return float64(t.Unix()) + 0.5 }
func strDate(t time.Time) any  { return strconv.FormatInt(t.Unix(), 10) }

// FuzzParseScope: ParseScope returns exactly the space-separated pieces of
// a scope made of NQCHARs and spaces, and refuses any other scope.
func FuzzParseScope(f *testing.F) {
	for _, s := range []string{"", "a", "collections.read admin", "  a   b ", "a\tb", "a\nb", `a"b`, `a\b`, "coleções", "a\x7fb", "~!#[]"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, scope string) {
		got, err := ParseScope(scope)
		valid := true
		for i := 0; i < len(scope); i++ {
			c := scope[i]
			if c != ' ' && (c < 0x21 || c == '"' || c == '\\' || c > 0x7e) {
				valid = false
			}
		}
		if valid != (err == nil) {
			t.Fatalf("ParseScope(%q) = %q, %v; want an error exactly when a byte is neither SP nor NQCHAR", scope, got, err)
		}
		if err != nil {
			return
		}
		if diff := cmp.Diff(strings.Fields(scope), got, cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("ParseScope(%q) (-want +got):\n%s", scope, diff)
		}
	})
}
