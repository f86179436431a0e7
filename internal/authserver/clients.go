package authserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/cobranca/cobranca/internal/auth"
	"github.com/cobranca/cobranca/internal/canonical"
	"github.com/cobranca/cobranca/internal/ident"
	"github.com/cobranca/cobranca/internal/store"
)

// clientPrefix starts every registered client id.
const clientPrefix = "oc_"

// Bounds on registration metadata.
const (
	maxRedirectURIs     = 10
	maxRedirectURIBytes = 2048
	maxClientNameBytes  = 200
)

// client is a registered client (or the built-in web client).
type client struct {
	ID           string
	Name         string
	RedirectURIs []string
}

// registration is the client metadata of an RFC 7591 request that this
// server reads (readRegistration); every other member is ignored (§2:
// "MUST ignore any client metadata sent by the client that it does not
// understand").
type registration struct {
	RedirectURIs            []string
	ClientName              *string
	GrantTypes              []string
	ResponseTypes           []string
	TokenEndpointAuthMethod *string
}

// registered is the RFC 7591 §3.2.1 answer: the metadata as registered.
type registered struct {
	ClientID                string   `json:"client_id"`
	ClientIDIssuedAt        int64    `json:"client_id_issued_at"`
	ClientName              string   `json:"client_name,omitempty"`
	RedirectURIs            []string `json:"redirect_uris"`
	GrantTypes              []string `json:"grant_types"`
	ResponseTypes           []string `json:"response_types"`
	TokenEndpointAuthMethod string   `json:"token_endpoint_auth_method"`
}

// register is POST /oauth/register (RFC 7591 §3).
func (s *Server) register(w http.ResponseWriter, r *http.Request) {
	if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt != "application/json" {
		writeError(w, newError(http.StatusBadRequest, errInvalidClientMetadata, "the request body must be application/json"))
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	if err != nil {
		writeError(w, newError(http.StatusBadRequest, errInvalidClientMetadata, fmt.Sprintf("the request body could not be read, or is larger than %d bytes", maxBody)))
		return
	}
	req, oe := readRegistration(body)
	if oe != nil {
		s.refused(r, "register", oe)
		writeError(w, oe)
		return
	}
	c, oe := checkRegistration(req)
	if oe != nil {
		s.refused(r, "register", oe)
		writeError(w, oe)
		return
	}
	c.ID = ident.New(clientPrefix)
	now := s.now()
	if err := s.saveClient(r.Context(), c, now.UnixMicro()); err != nil {
		s.log.ErrorContext(r.Context(), "authserver: registering a client failed", slog.Any("err", err))
		writeError(w, newError(http.StatusInternalServerError, errServerError, "the client could not be registered"))
		return
	}
	writeJSON(w, http.StatusCreated, registered{
		ClientID: c.ID, ClientIDIssuedAt: now.Unix(), ClientName: c.Name, RedirectURIs: c.RedirectURIs,
		GrantTypes: []string{grantAuthorizationCode}, ResponseTypes: []string{responseTypeCode},
		TokenEndpointAuthMethod: authMethodNone,
	})
}

// readRegistration reads body as /mcp reads tool arguments: one JSON
// object with each member named once, valid UTF-8 throughout
// (canonical.Transform's rule), and members named exactly as RFC 7591
// spells them — encoding/json alone would take the last of two members,
// and "Redirect_URIs" for redirect_uris.
func readRegistration(body []byte) (registration, *oauthError) {
	var req registration
	bad := func(desc string) (registration, *oauthError) {
		return registration{}, newError(http.StatusBadRequest, errInvalidClientMetadata, desc)
	}
	if _, err := canonical.Transform(body); err != nil {
		return bad("the request body must be one JSON object with each member named once and every string valid UTF-8")
	}
	var members map[string]json.RawMessage
	if err := json.Unmarshal(body, &members); err != nil || members == nil {
		return bad("the request body is not a JSON object of client metadata")
	}
	for _, m := range []struct {
		name, shape string
		dst         any
	}{
		{"redirect_uris", "an array of strings", &req.RedirectURIs},
		{"client_name", "a string", &req.ClientName},
		{"grant_types", "an array of strings", &req.GrantTypes},
		{"response_types", "an array of strings", &req.ResponseTypes},
		{"token_endpoint_auth_method", "a string", &req.TokenEndpointAuthMethod},
	} {
		if raw, ok := members[m.name]; ok {
			if err := json.Unmarshal(raw, m.dst); err != nil {
				return bad(m.name + ": must be " + m.shape)
			}
		}
	}
	return req, nil
}

// checkRegistration validates req's metadata and returns the client to
// register, or the RFC 7591 error naming the member at fault.
func checkRegistration(req registration) (client, *oauthError) {
	bad := func(code, desc string) (client, *oauthError) {
		return client{}, newError(http.StatusBadRequest, code, desc)
	}
	if len(req.RedirectURIs) == 0 {
		return bad(errInvalidRedirectURI, "redirect_uris: at least one redirect URI is required")
	}
	if len(req.RedirectURIs) > maxRedirectURIs {
		return bad(errInvalidRedirectURI, fmt.Sprintf("redirect_uris: at most %d redirect URIs", maxRedirectURIs))
	}
	for i, u := range req.RedirectURIs {
		if err := checkRedirectURI(u); err != nil {
			return bad(errInvalidRedirectURI, fmt.Sprintf("redirect_uris[%d]: %v", i, err))
		}
	}
	c := client{RedirectURIs: slices.Compact(slices.Clone(req.RedirectURIs))}
	if req.ClientName != nil {
		if err := auth.CheckText(*req.ClientName, maxClientNameBytes); err != nil {
			return bad(errInvalidClientMetadata, "client_name: "+err.Error())
		}
		c.Name = *req.ClientName
	}
	// grant_types: the code grant is required; refresh_token, which MCP
	// clients ask for by default, is dropped from what is registered
	// (§3.2.1 lets the server replace requested values): this server
	// issues no refresh tokens.
	if req.GrantTypes != nil {
		if !slices.Contains(req.GrantTypes, grantAuthorizationCode) {
			return bad(errInvalidClientMetadata, "grant_types: must include authorization_code, the only grant this server supports")
		}
		for _, g := range req.GrantTypes {
			if g != grantAuthorizationCode && g != "refresh_token" {
				return bad(errInvalidClientMetadata, "grant_types: only authorization_code is supported")
			}
		}
	}
	for _, rt := range req.ResponseTypes {
		if rt != responseTypeCode {
			return bad(errInvalidClientMetadata, "response_types: only code is supported")
		}
	}
	if req.TokenEndpointAuthMethod != nil && *req.TokenEndpointAuthMethod != authMethodNone {
		return bad(errInvalidClientMetadata, "token_endpoint_auth_method: only none is supported (public clients using PKCE)")
	}
	return c, nil
}

// checkRedirectURI accepts an absolute URI without a fragment or user
// information, whose query checkRedirectQuery accepts: https, or http to a
// loopback host (RFC 8252 §7.3; OAuth 2.1 §2.3.1). It is written as
// authorization requests will send it, since they are compared exactly
// (but for a loopback port: redirectAllowed): the URI characters of
// RFC 3986 only (anything else percent-encoded), the scheme and host in
// lower case, a port from 1 to 65535 without leading zeros, and a host
// that is an IP address or a DNS name of letters, digits and hyphens
// whose last label starts with a letter (a browser reads 127.1 or 0x7f.1
// as an IP address). An internationalized name is accepted in its ASCII
// form only (xn--…), which the sign-in page shows as written, never
// decoded, so that a look-alike of another name cannot pass for it.
func checkRedirectURI(s string) error {
	if len(s) > maxRedirectURIBytes {
		return fmt.Errorf("longer than %d bytes", maxRedirectURIBytes)
	}
	if err := checkURIChars(s); err != nil {
		return err
	}
	u, err := url.Parse(s)
	switch {
	case err != nil:
		return errors.New("not a URI")
	case !u.IsAbs() || u.Host == "" || u.Opaque != "":
		return errors.New("must be an absolute URI with a host")
	case strings.Contains(s, "#"):
		return errors.New("must not have a fragment")
	case u.User != nil:
		return errors.New("must not carry user information")
	}
	if err := checkAuthority(s, u); err != nil {
		return err
	}
	if err := checkRedirectQuery(u.RawQuery); err != nil {
		return err
	}
	switch {
	case u.Scheme == "https":
		return nil
	case u.Scheme == "http" && isLoopback(u.Hostname()):
		return nil
	case u.Scheme == "http":
		return errors.New("http is allowed for loopback hosts only (localhost, 127.0.0.1, [::1]); use https")
	default:
		return errors.New("must be an https URI, or http to a loopback host")
	}
}

// checkURIChars accepts s made of RFC 3986's characters: unreserved,
// reserved, and % followed by two hex digits.
func checkURIChars(s string) error {
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("-._~:/?#[]@!$&'()*+,;=", c) >= 0:
		case c == '%' && i+2 < len(s) && isHex(s[i+1]) && isHex(s[i+2]):
			i += 2
		default:
			return errors.New("must be written with URI characters only (RFC 3986): no space, control or non-ASCII character, and % only before two hex digits")
		}
	}
	return nil
}

func isHex(c byte) bool { return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F' }

// checkAuthority checks the scheme and authority of s, parsed as u, as
// written (url.Parse lower-cases the scheme and decodes the host).
func checkAuthority(s string, u *url.URL) error {
	if s[:len(u.Scheme)] != u.Scheme {
		return errors.New("the scheme must be written in lower case")
	}
	authority := s[len(u.Scheme)+len("://"):]
	if i := strings.IndexAny(authority, "/?#"); i >= 0 {
		authority = authority[:i]
	}
	if authority != strings.ToLower(authority) {
		return errors.New("the host must be written in lower case")
	}
	if strings.Contains(authority, "%") {
		return errors.New("the host must not be percent-encoded nor carry an IPv6 zone")
	}
	if port := u.Port(); port != "" || strings.HasSuffix(authority, ":") {
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 || strconv.Itoa(n) != port {
			return errors.New("the port must be a number from 1 to 65535, without leading zeros")
		}
	}
	host := u.Hostname()
	if strings.HasPrefix(authority, "[") {
		if ip, err := netip.ParseAddr(host); err != nil || !ip.Is6() {
			return errors.New("the host in brackets must be an IPv6 address")
		}
		return nil
	}
	if ip, err := netip.ParseAddr(host); err == nil && ip.Is4() {
		return nil
	}
	if !isDNSName(host) {
		return errors.New("the host must be an IP address or a DNS name of letters, digits and hyphens (an internationalized name in its xn-- form), whose last label starts with a letter")
	}
	return nil
}

// isDNSName reports whether host is a DNS name in lower-case ASCII: labels
// of 1 to 63 letters, digits and hyphens, not starting or ending with a
// hyphen, at most 253 bytes, the last label starting with a letter.
func isDNSName(host string) bool {
	if host == "" || len(host) > 253 {
		return false
	}
	labels := strings.Split(host, ".")
	for _, l := range labels {
		if l == "" || len(l) > 63 || l[0] == '-' || l[len(l)-1] == '-' {
			return false
		}
		for i := 0; i < len(l); i++ {
			if c := l[i]; !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-') {
				return false
			}
		}
	}
	last := labels[len(labels)-1]
	return 'a' <= last[0] && last[0] <= 'z'
}

// redirectAllowed reports whether an authorization request may name
// redirect for a client that registered registered: exactly one of them,
// or, for an http loopback one, the same URI with any port — a native
// client listens on a port the system gives it at the moment (RFC 8252
// §7.3). The code is then bound to redirect as sent.
func redirectAllowed(registered []string, redirect string) bool {
	if slices.Contains(registered, redirect) {
		return true
	}
	key := loopbackKey(redirect)
	if key == "" || checkRedirectURI(redirect) != nil {
		return false
	}
	return slices.ContainsFunc(registered, func(r string) bool { return loopbackKey(r) == key })
}

// loopbackKey is s without its port when s is an http URI to a loopback
// host, the form RFC 8252 §7.3 compares; "" otherwise.
func loopbackKey(s string) string {
	rest, ok := strings.CutPrefix(s, "http://")
	if !ok {
		return ""
	}
	end := strings.IndexAny(rest, "/?#")
	if end < 0 {
		end = len(rest)
	}
	authority, tail := rest[:end], rest[end:]
	host := authority
	if strings.HasPrefix(authority, "[") {
		i := strings.IndexByte(authority, ']')
		if i < 0 {
			return ""
		}
		host = authority[:i+1]
	} else if i := strings.IndexByte(authority, ':'); i >= 0 {
		host = authority[:i]
	}
	if !isLoopback(strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")) {
		return ""
	}
	return "http://" + host + tail
}

// responseParams are the parameters an authorization response adds to the
// redirect URI's query (RFC 6749 §4.1.2, §4.1.2.1; RFC 9207).
var responseParams = []string{"code", "state", "iss", "error", "error_description", "error_uri"}

// checkRedirectQuery accepts a redirect URI's query that redirectURL can
// keep as it is (RFC 6749 §3.1.2) and add the response to: name=value
// pairs, none named as a response parameter, which the client could not
// tell from the server's.
func checkRedirectQuery(raw string) error {
	q, err := url.ParseQuery(raw)
	if err != nil {
		return errors.New("the query must be name=value pairs separated by &, validly percent-encoded")
	}
	for _, name := range responseParams {
		if q.Has(name) {
			return fmt.Errorf("the query must not hold %s, a parameter of the authorization response", name)
		}
	}
	return nil
}

// isLoopback is a redirect URI's loopback rule: LoopbackHost, written in
// lower case (checkAuthority).
func isLoopback(host string) bool { return host == strings.ToLower(host) && LoopbackHost(host) }

// saveClient stores c, then deletes the clients older than the newest
// s.clients.
func (s *Server) saveClient(ctx context.Context, c client, at int64) error {
	uris, err := json.Marshal(c.RedirectURIs)
	if err != nil {
		return err
	}
	return s.db.InTx(ctx, func(ctx context.Context, tx store.Tx) error {
		if _, err := tx.Exec(ctx, `INSERT INTO oauth_client (id, client_name, redirect_uris, created_at) VALUES ($1, $2, $3, $4)`,
			c.ID, c.Name, string(uris), at); err != nil {
			return fmt.Errorf("authserver: save client: %w", err)
		}
		if _, err := tx.Exec(ctx, `DELETE FROM oauth_client WHERE (created_at, id) <
(SELECT created_at, id FROM oauth_client ORDER BY created_at DESC, id DESC LIMIT 1 OFFSET $1)`, s.clients-1); err != nil {
			return fmt.Errorf("authserver: bound clients: %w", err)
		}
		return nil
	})
}

// errUnknownClient is lookupClient's answer for an id no client has.
var errUnknownClient = errors.New("authserver: unknown client")

// lookupClient returns the built-in web client or a registered one.
func (s *Server) lookupClient(ctx context.Context, id string) (client, error) {
	if id == s.web.ID {
		return s.web, nil
	}
	if !ident.Valid(clientPrefix, id) {
		return client{}, errUnknownClient
	}
	c := client{ID: id}
	var uris string
	err := s.db.QueryRow(ctx, `SELECT client_name, redirect_uris FROM oauth_client WHERE id = $1`, id).Scan(&c.Name, &uris)
	if errors.Is(err, store.ErrNoRows) {
		return client{}, errUnknownClient
	}
	if err != nil {
		return client{}, fmt.Errorf("authserver: look up client: %w", err)
	}
	if err := json.Unmarshal([]byte(uris), &c.RedirectURIs); err != nil {
		return client{}, fmt.Errorf("authserver: client's redirect URIs: %w", err)
	}
	return c, nil
}

// refused logs a refusal's code: never a value the client sent.
func (s *Server) refused(r *http.Request, endpoint string, e *oauthError) {
	s.log.InfoContext(r.Context(), "authserver: request refused", slog.String("endpoint", endpoint),
		slog.String("error", e.Code), slog.String("description", e.Description))
}
