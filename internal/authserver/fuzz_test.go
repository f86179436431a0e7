package authserver

import (
	"bytes"
	"encoding/json"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/cobranca/cobranca/internal/auth"
)

// FuzzRedirectURI: a redirect URI accepted at registration is absolute,
// has no fragment or user information, a query redirectURL keeps as it
// is and that names no response parameter, and is https, or http to a
// loopback host; it is written as requests send it — RFC 3986's printable
// ASCII, the scheme and host in lower case, a port from 1 to 65535 —
// so that comparing it exactly means something.
func FuzzRedirectURI(f *testing.F) {
	for _, s := range []string{"https://app.example/cb", "http://127.0.0.1:9/cb", "http://localhost/cb", "http://[::1]:8/cb",
		"http://evil.example/cb", "https://a.example/cb#x", "javascript:alert(1)", "HTTPS://A.EXAMPLE/", "http://127.0.0.1.evil.example/",
		"https://user@a.example/", "http://[::ffff:127.0.0.1]/", "//a.example/cb", "https:///cb", "https://a.example/cb?b=1&a=2",
		"https://a.example/cb?code=x", "https://a.example/cb?x=%zz", "http://127.0.0.1:99999/cb", "http://127.0.0.1:0/cb",
		"https://a.example/c b", "https://xn--80ak6aa92e.example/", "https://\u0430pple.example/", "https://%41.example/", "https://127.1/"} {
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
		for _, r := range s {
			if r <= ' ' || r >= 0x7f || strings.ContainsRune(`"<>\^`+"`{|}", r) {
				t.Fatalf("accepted %q: it holds %q, not a URI character", s, r)
			}
		}
		if !strings.HasPrefix(s, u.Scheme+"://"+u.Host) || u.Host != strings.ToLower(u.Host) {
			t.Fatalf("accepted %q: scheme %q and host %q not as written, or not in lower case", s, u.Scheme, u.Host)
		}
		if p := u.Port(); p != "" {
			if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
				t.Fatalf("accepted %q: port %q", s, p)
			}
		}
		if !utf8.ValidString(u.Hostname()) || strings.ContainsFunc(u.Hostname(), func(r rune) bool { return r >= 0x80 }) {
			t.Fatalf("accepted %q: host %q is not ASCII", s, u.Hostname())
		}
	})
}

// FuzzRedirectAllowed: an authorization request's redirect URI is allowed
// for a registered one only when it is that one, or differs from an http
// loopback one in its port alone, and is itself a valid redirect URI.
func FuzzRedirectAllowed(f *testing.F) {
	f.Add("http://127.0.0.1/cb", "http://127.0.0.1:5000/cb")
	f.Add("http://[::1]:9/cb?a=1", "http://[::1]/cb?a=1")
	f.Add("http://localhost:9/cb", "http://localhost:99999/cb")
	f.Add("https://app.example/cb", "https://app.example:8443/cb")
	f.Add("http://127.0.0.1/cb", "http://127.0.0.1:5/cb/")
	f.Add("http://127.0.0.1/cb", "http://127.0.0.2:5/cb")
	f.Fuzz(func(t *testing.T, registered, requested string) {
		if checkRedirectURI(registered) != nil || !redirectAllowed([]string{registered}, requested) || requested == registered {
			return
		}
		if checkRedirectURI(requested) != nil {
			t.Fatalf("%q allowed for %q, but not a valid redirect URI", requested, registered)
		}
		r, _ := url.Parse(registered)
		q, _ := url.Parse(requested)
		if r.Scheme != "http" || q.Scheme != "http" || !isLoopback(r.Hostname()) || r.Hostname() != q.Hostname() ||
			r.EscapedPath() != q.EscapedPath() || r.RawQuery != q.RawQuery || r.ForceQuery != q.ForceQuery {
			t.Fatalf("%q allowed for %q: they differ in more than an http loopback port", requested, registered)
		}
	})
}

// FuzzRegistration: any body either is refused with an RFC 7591 code or
// registers a client whose every redirect URI and name pass the rules; a
// body with a member named twice (at any depth) or invalid UTF-8 is
// refused, and what is read is what the exactly named members hold.
func FuzzRegistration(f *testing.F) {
	for _, s := range []string{`{"redirect_uris":["https://app.example/cb"],"client_name":"x"}`,
		`{"redirect_uris":["http://localhost:1/cb"],"grant_types":["authorization_code","refresh_token"],"token_endpoint_auth_method":"none"}`,
		`{"redirect_uris":["https://a.example/"],"response_types":["code","token"]}`, `{"redirect_uris":null}`, `[]`, `{"client_name":1}`,
		`{"redirect_uris":["https://a.example/"],"redirect_uris":["https://b.example/"]}`, `{"REDIRECT_URIS":["https://a.example/"]}`,
		`{"redirect_uris":["https://a.example/"],"client_name":"a\ud800"}`, "{\"redirect_uris\":[\"https://a.example/\"],\"client_name\":\"\xff\"}",
		`{"redirect_uris":["https://a.example/"],"x":{"y":1,"y":2}}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		req, oe := readRegistration(body)
		if oe != nil {
			if oe.Code != errInvalidClientMetadata || oe.Description == "" {
				t.Fatalf("refusal %+v", oe)
			}
			return
		}
		if !utf8.Valid(body) || hasDuplicate(t, body) {
			t.Fatalf("read %q: invalid UTF-8 or a member named twice", body)
		}
		var members map[string]json.RawMessage
		if err := json.Unmarshal(body, &members); err != nil {
			t.Fatalf("read %q, not an object: %v", body, err)
		}
		if raw, ok := members["redirect_uris"]; ok {
			var want []string
			if json.Unmarshal(raw, &want) != nil || !slices.Equal(want, req.RedirectURIs) {
				t.Fatalf("read redirect_uris %q from %q", req.RedirectURIs, body)
			}
		} else if req.RedirectURIs != nil {
			t.Fatalf("read redirect_uris %q from %q, which names none", req.RedirectURIs, body)
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

// hasDuplicate reports whether an object in the JSON text body names a
// member twice: the naive oracle, with encoding/json's tokens.
func hasDuplicate(t *testing.T, body []byte) bool {
	dec := json.NewDecoder(bytes.NewReader(body))
	type frame struct {
		object bool
		names  map[string]bool
		key    bool // the next string is a member name
	}
	var stack []*frame
	for {
		tok, err := dec.Token()
		if err != nil {
			return false
		}
		var top *frame
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		isKey := top != nil && top.object && top.key
		switch v := tok.(type) {
		case json.Delim:
			switch v {
			case '{':
				stack = append(stack, &frame{object: true, names: map[string]bool{}, key: true})
				continue
			case '[':
				stack = append(stack, &frame{})
				continue
			default:
				stack = stack[:len(stack)-1]
			}
		case string:
			if isKey {
				if top.names[v] {
					return true
				}
				top.names[v] = true
				top.key = false
				continue
			}
		}
		if len(stack) > 0 && stack[len(stack)-1].object {
			stack[len(stack)-1].key = true
		}
	}
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
