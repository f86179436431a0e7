// Package authserver is cobranca's development authorization server: in
// development mode (no COBRANCA_ISSUER) the server signs its own tokens,
// and this package lets OAuth clients obtain them the standard way, so
// nobody copies tokens by hand — RFC 8414 / OpenID Connect discovery,
// RFC 7591 dynamic client registration, the authorization code grant with
// PKCE S256 only (RFC 6749, RFC 7636, RFC 8707's resource), a sign-in page
// where the developer picks who signs in, and ID tokens for OpenID Connect
// clients (the server's own web pages among them, as auth.DevWebClientID).
//
// Production never mounts it: New refuses an Authenticator outside
// development mode, and the tokens it has minted are signed by the local
// key, which a production Authenticator does not trust. Refresh tokens
// are not issued: a client signs in again when its access token expires.
package authserver

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/cobranca/cobranca/internal/auth"
	"github.com/cobranca/cobranca/internal/store"
)

// The paths this package serves (server.Routes mounts them). The JWKS its
// tokens are verified with stays at auth.JWKSPath.
const (
	MetadataPath     = "/.well-known/oauth-authorization-server" // RFC 8414
	OpenIDConfigPath = "/.well-known/openid-configuration"       // OpenID Connect Discovery 1.0
	RegisterPath     = "/oauth/register"                         // RFC 7591
	AuthorizePath    = "/oauth/authorize"                        // GET: the sign-in page; POST: its form
	TokenPath        = "/oauth/token"
)

// Paths lists every path the Server answers.
var Paths = []string{MetadataPath, OpenIDConfigPath, RegisterPath, AuthorizePath, TokenPath}

// Lifetimes and bounds.
const (
	// CodeTTL is how long an authorization code can be redeemed.
	CodeTTL = 60 * time.Second
	// AccessTokenTTL is the lifetime of the access tokens issued.
	AccessTokenTTL = time.Hour
	// IDTokenTTL is the lifetime of the ID tokens issued.
	IDTokenTTL = 5 * time.Minute
	// formTTL is how long a sign-in page's form can be submitted.
	formTTL = 10 * time.Minute
	// MaxClients is the default bound on registered clients: past it, each
	// registration deletes the oldest, whose client then registers again
	// (the MCP clients do on invalid_client).
	MaxClients = 1000
	// maxBody bounds a registration or token request's body.
	maxBody = 64 << 10
)

// ScopeOpenID asks for an ID token (OpenID Connect Core §3.1.2.1).
const ScopeOpenID = "openid"

// Options configure a Server.
type Options struct {
	// Auth is the development-mode Authenticator: its issuer is this
	// server's, its key signs the tokens. Required.
	Auth *auth.Authenticator
	// DB keeps registered clients and authorization codes (migration
	// 00100). Required.
	DB store.DB
	// Scopes are the scopes the served contracts need; scopes_supported is
	// openid and these.
	Scopes []string
	// StepUpACR are COBRANCA_STEPUP_ACR's values, offered on the sign-in
	// page and published as acr_values_supported.
	StepUpACR []string
	// Roles pre-fill the sign-in page's roles field: every role the served
	// and the forbidden contracts name (contract.Roles), so a developer signed
	// in as a person may decide any critical call and write an invoice off
	// without setup (and clears the field to see the refusals). The tokens carry what was submitted, in
	// the configured roles claim.
	Roles []string
	// MaxClients bounds the registered clients (default MaxClients).
	MaxClients int
	// Now is the clock of codes and forms. Default time.Now.
	Now func() time.Time
	// Logger receives refusals' codes (never a code, token or what the
	// developer typed). Default: discard.
	Logger *slog.Logger
}

// Server is the development authorization server, an http.Handler for
// Paths.
type Server struct {
	auth     *auth.Authenticator
	db       store.DB
	scopes   []string // supported: openid first, then the contracts' sorted
	acr      []string
	roles    string // the roles field's default, space separated
	now      func() time.Time
	log      *slog.Logger
	sealKey  []byte
	clients  int    // the bound on registered clients
	web      client // auth.DevWebClientID
	mux      *http.ServeMux
	metadata http.Handler
	openid   http.Handler
}

// New returns the development authorization server for o.Auth, which must
// be in development mode.
func New(o Options) (*Server, error) {
	if o.Auth == nil || !o.Auth.DevMode() {
		return nil, errors.New("authserver: the development authorization server runs only in development mode (COBRANCA_ISSUER unset)")
	}
	if o.DB == nil {
		return nil, errors.New("authserver: a store is required")
	}
	key, err := o.Auth.DevSecret("authserver-form")
	if err != nil {
		return nil, fmt.Errorf("authserver: %w", err)
	}
	for _, r := range o.Roles {
		if err := auth.CheckRole(r); err != nil {
			return nil, fmt.Errorf("authserver: role: %w", err)
		}
	}
	roles := strings.Join(o.Roles, " ")
	s := &Server{auth: o.Auth, db: o.DB, acr: slices.Clone(o.StepUpACR), roles: roles, now: o.Now, log: o.Logger, sealKey: key}
	s.clients = o.MaxClients
	if s.clients <= 0 {
		s.clients = MaxClients
	}
	if s.now == nil {
		s.now = time.Now
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	scopes := slices.Clone(o.Scopes)
	slices.Sort(scopes)
	scopes = slices.DeleteFunc(slices.Compact(scopes), func(sc string) bool { return sc == ScopeOpenID })
	for _, sc := range scopes {
		if _, err := auth.ParseScope(sc); err != nil {
			return nil, fmt.Errorf("authserver: scope %q: %w", sc, err)
		}
	}
	s.scopes = append([]string{ScopeOpenID}, scopes...)
	s.web = client{ID: auth.DevWebClientID, Name: "cobranca", RedirectURIs: []string{o.Auth.Issuer() + "/signin/callback"}}
	s.metadata = auth.PublicJSON(s.serverMetadata())
	s.openid = auth.PublicJSON(s.openIDMetadata())

	mux := http.NewServeMux()
	mux.Handle("GET "+MetadataPath, s.metadata)
	mux.Handle("GET "+OpenIDConfigPath, s.openid)
	mux.Handle(RegisterPath, cors(http.MethodPost, http.HandlerFunc(s.register)))
	mux.Handle("GET "+AuthorizePath, localOnly(http.HandlerFunc(s.authorize)))
	mux.Handle("POST "+AuthorizePath, localOnly(http.NewCrossOriginProtection().Handler(http.HandlerFunc(s.decide))))
	mux.Handle(TokenPath, cors(http.MethodPost, http.HandlerFunc(s.token)))
	s.mux = mux
	return s, nil
}

// ServeHTTP answers the paths in Paths.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.mux.ServeHTTP(w, r) }

// endpoint is the absolute URL of path on this server.
func (s *Server) endpoint(path string) string { return s.auth.Issuer() + path }

// cors lets a browser-based client (the MCP Inspector's web UI) call
// method on the endpoint from any origin: answers carry no cookie and
// need none, and what they hand out needs the caller's own PKCE verifier.
// Other methods are 405.
func cors(method string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Access-Control-Allow-Origin", "*")
		switch r.Method {
		case method:
			next.ServeHTTP(w, r)
		case http.MethodOptions:
			h.Set("Access-Control-Allow-Methods", method)
			h.Set("Access-Control-Allow-Headers", "Content-Type, Authorization, MCP-Protocol-Version")
			h.Set("Access-Control-Max-Age", "600")
			w.WriteHeader(http.StatusNoContent)
		default:
			h.Set("Allow", method+", OPTIONS")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		}
	})
}

// localOnly serves the sign-in page to loopback peers only. Whoever
// submits it signs in as anyone, with any scope: on a server listening on
// a network address (COBRANCA_ADDR=0.0.0.0:…) anyone who reaches the port
// would get a token without the key `cobranca token` needs — and the
// Host guard, a defence against DNS rebinding in browsers, stops no other
// client, which sends the Host it likes. The peer is the connection's: no
// forwarding header is read, since any client can write one.
func localOnly(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if ap, err := netip.ParseAddrPort(r.RemoteAddr); err != nil || !ap.Addr().Unmap().IsLoopback() {
			renderError(w, r, newError(http.StatusForbidden, errAccessDenied,
				"the development sign-in page answers this machine only (a loopback address), since on it anyone signs in as anyone"))
			return
		}
		next.ServeHTTP(w, r)
	})
}
