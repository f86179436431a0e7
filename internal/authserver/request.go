package authserver

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/cobranca/cobranca/internal/auth"
)

// authRequest is a checked authorization request (RFC 6749 §4.1.1 with
// RFC 7636, RFC 8707 and OpenID Connect Core §3.1.2.1): what the sign-in
// page's form carries, sealed, to the POST that answers it.
type authRequest struct {
	ClientID      string   `json:"c"`
	ClientName    string   `json:"cn,omitempty"`
	RedirectURI   string   `json:"r"`
	State         string   `json:"s,omitempty"`
	CodeChallenge string   `json:"pk"`
	Scopes        []string `json:"sc,omitempty"` // requested; nil: none named
	Nonce         string   `json:"n,omitempty"`
	ACRValues     []string `json:"acr,omitempty"`
	LoginHint     string   `json:"lh,omitempty"`
	Expires       int64    `json:"exp"` // Unix seconds: the form's deadline
	// Form names this form, at random: its first decision spends it
	// (spendForm), so one form gives at most one code.
	Form string `json:"f"`
}

// Bounds on what a request carries (everything reaches the sealed form).
const (
	maxStateBytes = 1024
	maxParamBytes = auth.MaxIdentityBytes
)

// redirectError is an authorization error the client hears about at its
// redirect URI (§4.1.2.1); pageError one shown to the person instead,
// because the redirect URI cannot be trusted.
type redirectError struct {
	*oauthError
	req *authRequest // RedirectURI and State to answer
}

// parseAuthRequest checks an authorization request's parameters. It
// returns a *oauthError for the page (unknown client, bad redirect URI) or
// a *redirectError.
func (s *Server) parseAuthRequest(ctx context.Context, q url.Values) (*authRequest, error) {
	page := func(code, desc string) (*authRequest, error) {
		return nil, newError(http.StatusBadRequest, code, desc)
	}
	one := func(name string) (string, bool) {
		v := q[name]
		return strings.Join(v, ""), len(v) <= 1
	}
	clientID, ok := one("client_id")
	switch {
	case !ok:
		return page(errInvalidRequest, "client_id is repeated")
	case clientID == "":
		return page(errInvalidRequest, "client_id is missing")
	}
	c, err := s.lookupClient(ctx, clientID)
	if errors.Is(err, errUnknownClient) {
		return page(errInvalidClient, "client_id names no registered client; the client must register again")
	}
	if err != nil {
		return nil, err
	}
	redirect, ok := one("redirect_uri")
	switch {
	case !ok:
		return page(errInvalidRequest, "redirect_uri is repeated")
	case redirect == "":
		return page(errInvalidRequest, "redirect_uri is missing")
	case !redirectAllowed(c.RedirectURIs, redirect):
		return page(errInvalidRequest, "redirect_uri is not one the client registered (they are compared exactly, but for the port of an http loopback one)")
	}
	req := &authRequest{ClientID: c.ID, ClientName: c.Name, RedirectURI: redirect, Expires: s.now().Add(formTTL).Unix(), Form: newFormID()}
	// From here on, errors go back to the client.
	fail := func(code, desc string) (*authRequest, error) {
		return nil, &redirectError{oauthError: newError(http.StatusFound, code, desc), req: req}
	}
	state, ok := one("state")
	if ok && len(state) <= maxStateBytes && isVSChars(state) {
		req.State = state
	} else {
		return fail(errInvalidRequest, "state is repeated, longer than 1024 bytes, or not printable ASCII")
	}
	for name := range q {
		if len(q[name]) > 1 && name != "resource" {
			return fail(errInvalidRequest, repeated(name, authorizeParams))
		}
	}
	switch rt := q.Get("response_type"); rt {
	case responseTypeCode:
	case "":
		return fail(errInvalidRequest, "response_type is missing")
	default:
		return fail(errUnsupportedResponseType, "only response_type=code is supported")
	}
	switch m := q.Get("code_challenge_method"); m {
	case methodS256:
	case "":
		return fail(errInvalidRequest, "code_challenge_method is missing: PKCE with S256 is required")
	default:
		return fail(errInvalidRequest, "code_challenge_method must be S256")
	}
	req.CodeChallenge = q.Get("code_challenge")
	if req.CodeChallenge == "" {
		return fail(errInvalidRequest, "code_challenge is missing: PKCE with S256 is required")
	}
	if !isS256Challenge(req.CodeChallenge) {
		return fail(errInvalidRequest, "code_challenge is not a base64url SHA-256 digest (43 characters)")
	}
	for _, res := range q["resource"] {
		if res != s.auth.Resource() {
			return fail(errInvalidTarget, "resource must be this server's resource, "+s.auth.Resource())
		}
	}
	if sc, ok := q["scope"]; ok {
		scopes, err := auth.ParseScope(sc[0])
		if err != nil {
			return fail(errInvalidScope, "scope is not a list of scope tokens")
		}
		for _, x := range scopes {
			if !slices.Contains(s.scopes, x) {
				return fail(errInvalidScope, "scope names a scope this server does not support (see scopes_supported)")
			}
		}
		req.Scopes = scopes
		if req.Scopes == nil {
			req.Scopes = []string{}
		}
	}
	for _, p := range strings.Fields(q.Get("prompt")) {
		if p == "none" {
			// The page is always shown: the developer signs in afresh.
			return fail(errLoginRequired, "prompt=none cannot be honoured: the development sign-in page is always shown")
		}
	}
	if v := q.Get("max_age"); v != "" {
		// Every sign-in here is new (auth_time = now), so any max_age is met.
		if n, err := strconv.ParseUint(v, 10, 63); err != nil || n > 1<<31 {
			return fail(errInvalidRequest, "max_age is not a number of seconds")
		}
	}
	for _, f := range []struct {
		name string
		dst  *string
	}{{"nonce", &req.Nonce}, {"login_hint", &req.LoginHint}} {
		if v := q.Get(f.name); v != "" {
			if err := auth.CheckText(v, maxParamBytes); err != nil {
				return fail(errInvalidRequest, f.name+": "+err.Error())
			}
			*f.dst = v
		}
	}
	for acr := range strings.FieldsSeq(q.Get("acr_values")) {
		if err := auth.CheckText(acr, maxParamBytes); err != nil || len(req.ACRValues) == 8 {
			return fail(errInvalidRequest, "acr_values: at most 8 values, each an identifier")
		}
		req.ACRValues = append(req.ACRValues, acr)
	}
	return req, nil
}

// The parameters each endpoint reads, which an error may name.
var (
	authorizeParams = []string{"response_type", "client_id", "redirect_uri", "state", "code_challenge",
		"code_challenge_method", "scope", "resource", "prompt", "max_age", "nonce", "login_hint", "acr_values"}
	tokenParams = []string{"grant_type", "code", "redirect_uri", "client_id", "code_verifier", "resource"}
)

// repeated describes a parameter sent twice (RFC 6749 §3.1, §3.2), naming
// it only if it is one of known: the name of another came from the client
// and is not repeated back, nor logged.
func repeated(name string, known []string) string {
	if slices.Contains(known, name) {
		return name + " is repeated"
	}
	return "a parameter is repeated"
}

// isVSChars reports whether s is VSCHAR* (RFC 6749 Appendix A: %x20-7E).
func isVSChars(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] > 0x7e {
			return false
		}
	}
	return true
}

// isS256Challenge reports whether s can be BASE64URL(SHA256(verifier)):
// 43 characters of the unpadded base64url alphabet.
func isS256Challenge(s string) bool {
	b, err := base64.RawURLEncoding.Strict().DecodeString(s)
	return err == nil && len(b) == sha256.Size && len(s) == 43
}

// isVerifier reports whether s is a PKCE code_verifier (RFC 7636 §4.1):
// 43 to 128 unreserved characters.
func isVerifier(s string) bool {
	if len(s) < 43 || len(s) > 128 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-' || c == '.' || c == '_' || c == '~') {
			return false
		}
	}
	return true
}

// challengeOf is the S256 code_challenge of verifier.
func challengeOf(verifier string) string {
	sum := sha256.Sum256([]byte(verifier))
	return base64.RawURLEncoding.EncodeToString(sum[:])
}

// sealContext separates the form's MAC from any other use of the key.
const sealContext = "cobranca/authserver/form/v1\x00"

// seal writes req as the sign-in form's hidden field: base64url(JSON) "."
// base64url(HMAC-SHA256). The field is authenticated, not encrypted:
// everything in it came from the request the browser itself sent.
func (s *Server) seal(req *authRequest) string {
	body, err := json.Marshal(req)
	if err != nil {
		panic(err) // strings only
	}
	p := base64.RawURLEncoding.EncodeToString(body)
	return p + "." + base64.RawURLEncoding.EncodeToString(s.mac(p))
}

func (s *Server) mac(payload string) []byte {
	m := hmac.New(sha256.New, s.sealKey)
	m.Write([]byte(sealContext))
	m.Write([]byte(payload))
	return m.Sum(nil)
}

// maxSealed bounds a sealed field before anything decodes it: the form's
// body bound, which a request at every bound parseAuthRequest sets fits
// however JSON escapes it (6 bytes for a '<'), where 8 KiB did not.
const maxSealed = maxBody

// errBadForm is open's answer for a field that is not one seal made, or
// whose deadline passed.
var errBadForm = errors.New("authserver: the sign-in form is not valid")

// open returns the request sealed in v, if v is one seal made and its
// form has not expired.
func (s *Server) open(v string, now time.Time) (*authRequest, error) {
	if len(v) > maxSealed {
		return nil, errBadForm
	}
	p, tag, ok := strings.Cut(v, ".")
	if !ok {
		return nil, errBadForm
	}
	got, err := base64.RawURLEncoding.Strict().DecodeString(tag)
	if err != nil || !hmac.Equal(got, s.mac(p)) {
		return nil, errBadForm
	}
	body, err := base64.RawURLEncoding.Strict().DecodeString(p)
	if err != nil {
		return nil, errBadForm
	}
	var req authRequest
	if err := json.Unmarshal(body, &req); err != nil || now.Unix() > req.Expires || req.Form == "" {
		return nil, errBadForm
	}
	return &req, nil
}

// newFormID is a form's random name: 128 bits, base64url.
func newFormID() string {
	var b [16]byte
	rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// redirectURL is the client's redirect URI with params, state and iss
// (RFC 9207) added after its query, which is kept as registered (RFC 6749
// §3.1.2; checkRedirectQuery: it names none of them).
func (s *Server) redirectURL(req *authRequest, params url.Values) string {
	u, _ := url.Parse(req.RedirectURI) // checked at registration
	add := url.Values{}
	maps.Copy(add, params)
	if req.State != "" {
		add.Set("state", req.State)
	}
	add.Set("iss", s.auth.Issuer())
	if u.RawQuery != "" {
		u.RawQuery += "&"
	}
	u.RawQuery += add.Encode()
	return u.String()
}
