package authserver

import (
	"encoding/json"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/cobranca/cobranca/internal/auth"
)

// FuzzRedirectURI: a redirect URI accepted at registration is absolute,
// has no fragment or user information, a query redirectURL keeps as it
// is and that names no response parameter, and is https, or http to a
// loopback host.
func FuzzRedirectURI(f *testing.F) {
	for _, s := range []string{"https://app.example/cb", "http://127.0.0.1:9/cb", "http://localhost/cb", "http://[::1]:8/cb",
		"http://evil.example/cb", "https://a.example/cb#x", "javascript:alert(1)", "HTTPS://A.EXAMPLE/", "http://127.0.0.1.evil.example/",
		"https://user@a.example/", "http://[::ffff:127.0.0.1]/", "//a.example/cb", "https:///cb", "https://a.example/cb?b=1&a=2",
		"https://a.example/cb?code=x", "https://a.example/cb?x=%zz"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if checkRedirectURI(s) != nil {
			return
		}
		u, err := url.Parse(s)
		if err != nil || !u.IsAbs() || u.Host == "" || strings.Contains(s, "#") || u.User != nil || len(s) > maxRedirectURIBytes {
			t.Fatalf("accepted %q: %+v, %v", s, u, err)
		}
		if u.Scheme != "https" && !(u.Scheme == "http" && isLoopback(u.Hostname())) {
			t.Fatalf("accepted %q: scheme %q host %q", s, u.Scheme, u.Hostname())
		}
		if q, err := url.ParseQuery(u.RawQuery); err != nil || slices.ContainsFunc(responseParams, q.Has) {
			t.Fatalf("accepted %q: a query redirectURL cannot keep as it is (%v) or naming a response parameter", s, err)
		}
	})
}

// FuzzRegistration: any body either is refused with an RFC 7591 code or
// registers a client whose every redirect URI and name pass the rules.
func FuzzRegistration(f *testing.F) {
	for _, s := range []string{`{"redirect_uris":["https://app.example/cb"],"client_name":"x"}`,
		`{"redirect_uris":["http://localhost:1/cb"],"grant_types":["authorization_code","refresh_token"],"token_endpoint_auth_method":"none"}`,
		`{"redirect_uris":["https://a.example/"],"response_types":["code","token"]}`, `{"redirect_uris":null}`, `[]`, `{"client_name":1}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		var req registration
		if json.Unmarshal(body, &req) != nil {
			return
		}
		c, oe := checkRegistration(req)
		if oe != nil {
			if oe.Code != errInvalidRedirectURI && oe.Code != errInvalidClientMetadata || oe.Description == "" {
				t.Fatalf("refusal %+v", oe)
			}
			return
		}
		if len(c.RedirectURIs) == 0 || len(c.RedirectURIs) > maxRedirectURIs {
			t.Fatalf("registered %d redirect URIs", len(c.RedirectURIs))
		}
		for _, u := range c.RedirectURIs {
			if checkRedirectURI(u) != nil {
				t.Fatalf("registered %q", u)
			}
		}
		if c.Name != "" && auth.CheckText(c.Name, maxClientNameBytes) != nil {
			t.Fatalf("registered the name %q", c.Name)
		}
	})
}

// FuzzSealedForm: the sign-in form's hidden field opens only as sealed —
// anything else, and any change to a sealed one, is refused — and a sealed
// request opens to itself until its deadline.
func FuzzSealedForm(f *testing.F) {
	s := &Server{sealKey: []byte("0123456789abcdef0123456789abcdef")}
	now := time.Unix(1_800_000_000, 0)
	f.Add("oc_x", "http://127.0.0.1:9/cb", "state", "nonce", "", 0)
	f.Add("", "", "", "", "eyJjIjoib2NfIn0.AAAA", 3)
	f.Fuzz(func(t *testing.T, client, redirect, state, nonce, raw string, flip int) {
		if _, err := s.open(raw, now); err == nil {
			t.Fatalf("opened a field not sealed here: %q", raw)
		}
		// What is sealed was checked first: text, valid UTF-8 (JSON would
		// change anything else).
		for _, v := range []string{client, redirect, state, nonce} {
			if !utf8.ValidString(v) {
				return
			}
		}
		req := &authRequest{ClientID: client, RedirectURI: redirect, State: state, Nonce: nonce, CodeChallenge: "c", Expires: now.Unix(), Form: newFormID()}
		sealed := s.seal(req)
		got, err := s.open(sealed, now)
		if err != nil || got.ClientID != client || got.RedirectURI != redirect || got.State != state || got.Nonce != nonce || got.Form != req.Form {
			t.Fatalf("sealed %+v opened as %+v, %v", req, got, err)
		}
		if _, err := s.open(sealed, now.Add(time.Second)); err == nil {
			t.Fatalf("opened past its deadline")
		}
		b := []byte(sealed)
		i := (flip%len(b) + len(b)) % len(b)
		b[i] ^= 1 + byte(flip>>8&0x3f)
		if _, err := s.open(string(b), now); err == nil {
			t.Fatalf("opened %q, a change of %q at %d", b, sealed, i)
		}
	})
}
