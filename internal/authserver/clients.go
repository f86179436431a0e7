package authserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"mime"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/cobranca/cobranca/internal/auth"
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
// server reads; every other member is ignored (§2: "MUST ignore any client
// metadata sent by the client that it does not understand").
type registration struct {
	RedirectURIs            []string `json:"redirect_uris"`
	ClientName              *string  `json:"client_name"`
	GrantTypes              []string `json:"grant_types"`
	ResponseTypes           []string `json:"response_types"`
	TokenEndpointAuthMethod *string  `json:"token_endpoint_auth_method"`
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
	var req registration
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxBody))
	if err := dec.Decode(&req); err != nil {
		writeError(w, newError(http.StatusBadRequest, errInvalidClientMetadata, "the request body is not a JSON object of client metadata"))
		return
	}
	if dec.More() {
		writeError(w, newError(http.StatusBadRequest, errInvalidClientMetadata, "the request body holds more than one JSON value"))
		return
	}
	c, err := checkRegistration(req)
	if err != nil {
		s.refused(r, "register", err)
		writeError(w, err)
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
// loopback host (RFC 8252 §7.3; OAuth 2.1 §2.3.1).
func checkRedirectURI(s string) error {
	if len(s) > maxRedirectURIBytes {
		return fmt.Errorf("longer than %d bytes", maxRedirectURIBytes)
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

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

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
