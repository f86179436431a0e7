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
	"net/url"
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
	// TrustedProxyHeader is COBRANCA_TRUSTED_PROXY_HEADER: a request that
	// carries it came through a forwarder, and is refused like one with a
	// Forwarded or X-Forwarded-* header (see localOnly).
	TrustedProxyHeader string
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
	proxy    string // TrustedProxyHeader
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
	s := &Server{auth: o.Auth, db: o.DB, acr: slices.Clone(o.StepUpACR), roles: roles, now: o.Now, log: o.Logger, sealKey: key, proxy: o.TrustedProxyHeader}
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
	mux.Handle(RegisterPath, s.localOnly(jsonRefusal, cors(http.MethodPost, http.HandlerFunc(s.register))))
	mux.Handle("GET "+AuthorizePath, s.localOnly(pageRefusal, http.HandlerFunc(s.authorize)))
	mux.Handle("POST "+AuthorizePath, s.localOnly(pageRefusal, http.NewCrossOriginProtection().Handler(http.HandlerFunc(s.decide))))
	mux.Handle(TokenPath, s.localOnly(jsonRefusal, cors(http.MethodPost, http.HandlerFunc(s.token))))
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

// localOnly serves next to this machine only, directly: a request from a
// peer that is not a loopback address, one that came through a forwarder
// (it carries a header a proxy or tunnel adds), or one whose Host is not a
// loopback name is refused with access_denied, as a page or as JSON.
//
// Which endpoints: the sign-in page and its form, where whoever submits
// signs in as anyone with any role; registration, which writes the store
// and evicts the oldest of MaxClients registrations, so that anyone who
// reaches it could push the developer's clients out; and the token
// endpoint, which hands out tokens (only for a code and its PKCE verifier,
// but a code is minted here, for here). Discovery (MetadataPath,
// OpenIDConfigPath) stays public: it is fixed text, and a client elsewhere
// learns from it where to fail clearly.
//
// Why more than the peer: behind nginx, Caddy or a tunnel on the same
// host every peer is the loopback, so the peer alone let anyone reaching
// the forwarder sign in. No header is trusted to say who the client is;
// any forwarding header is taken as proof that the request was forwarded.
// A forwarder that adds none and rewrites Host to a loopback name is
// indistinguishable from a local client: `cobranca serve` refuses to start
// in development mode when its settings say it is reachable from
// elsewhere (a public URL or allowed host not on the loopback, a trusted
// proxy header), and the documentation says never to forward to it.
func (s *Server) localOnly(refuse func(http.ResponseWriter, *http.Request, *oauthError), next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if why := s.notLocal(r); why != "" {
			oe := newError(http.StatusForbidden, errAccessDenied,
				"the development authorization server answers this machine only, directly (anyone who reaches it signs in as anyone): "+why)
			s.refused(r, "local_only", oe)
			refuse(w, r, oe)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// notLocal says why r is not a direct request from this machine, or "".
func (s *Server) notLocal(r *http.Request) string {
	if ap, err := netip.ParseAddrPort(r.RemoteAddr); err != nil || !ap.Addr().Unmap().IsLoopback() {
		return "the connection comes from another machine"
	}
	if name := forwardedBy(r.Header, s.proxy); name != "" {
		return "the request came through a forwarder (it carries " + name + ")"
	}
	if !LoopbackHost((&url.URL{Host: r.Host}).Hostname()) {
		return "its Host is not a loopback name (localhost, 127.0.0.1, [::1])"
	}
	return ""
}

// forwardedBy returns the name of a header in h that a forwarder adds —
// Forwarded (RFC 7239), Via (RFC 9110 §7.6.3), X-Forwarded-*, X-Real-IP,
// or the configured trusted proxy header — or "". Names are compared
// without regard to case; the first in sorted order is named.
func forwardedBy(h http.Header, trusted string) string {
	var found []string
	for name := range h {
		n := strings.ToLower(name)
		if n == "forwarded" || n == "via" || n == "x-real-ip" || strings.HasPrefix(n, "x-forwarded-") || trusted != "" && strings.EqualFold(name, trusted) {
			found = append(found, http.CanonicalHeaderKey(name))
		}
	}
	if len(found) == 0 {
		return ""
	}
	return slices.Min(found)
}

// LoopbackHost reports whether host (a host name or IP address, without
// brackets or port) names this machine's loopback: localhost (in any
// case) or a loopback IP address (127.0.0.0/8, ::1, and their IPv4-mapped
// forms).
func LoopbackHost(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.Zone() == "" && ip.Unmap().IsLoopback()
}

// pageRefusal shows a refusal of the sign-in page; jsonRefusal answers one
// of a JSON endpoint.
func pageRefusal(w http.ResponseWriter, r *http.Request, e *oauthError) { renderError(w, r, e) }

func jsonRefusal(w http.ResponseWriter, _ *http.Request, e *oauthError) { writeError(w, e) }
