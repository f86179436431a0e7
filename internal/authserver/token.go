package authserver

import (
	"crypto/subtle"
	"errors"
	"log/slog"
	"mime"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/cobranca/cobranca/internal/auth"
)

// tokenResponse is RFC 6749 §5.1's answer, with OpenID Connect's id_token.
// No refresh_token: this server issues none.
type tokenResponse struct {
	AccessToken string `json:"access_token"`
	TokenType   string `json:"token_type"`
	ExpiresIn   int64  `json:"expires_in"`
	Scope       string `json:"scope"`
	IDToken     string `json:"id_token,omitempty"`
}

// token is POST /oauth/token: the authorization_code grant with PKCE, for
// public clients.
func (s *Server) token(w http.ResponseWriter, r *http.Request) {
	resp, oe := s.exchange(w, r)
	if oe != nil {
		s.refused(r, "token", oe)
		writeError(w, oe)
		return
	}
	writeJSON(w, http.StatusOK, resp)
}

func (s *Server) exchange(w http.ResponseWriter, r *http.Request) (*tokenResponse, *oauthError) {
	bad := func(code, desc string) (*tokenResponse, *oauthError) {
		status := http.StatusBadRequest
		if code == errInvalidClient {
			status = http.StatusUnauthorized
		}
		return nil, newError(status, code, desc)
	}
	if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt != "application/x-www-form-urlencoded" {
		return bad(errInvalidRequest, "the request body must be application/x-www-form-urlencoded")
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxBody)
	if err := r.ParseForm(); err != nil {
		return bad(errInvalidRequest, "the request body is not a form")
	}
	// The body only: token parameters in the query string are not read.
	body := r.PostForm
	for name, v := range body {
		if len(v) > 1 {
			return bad(errInvalidRequest, repeated(name, tokenParams))
		}
	}
	switch body.Get("grant_type") {
	case grantAuthorizationCode:
	case "":
		return bad(errInvalidRequest, "grant_type is missing")
	default:
		return bad(errUnsupportedGrantType, "only grant_type=authorization_code is supported")
	}
	// The client: public, named by client_id in the body or by HTTP Basic
	// with an empty password (what OAuth libraries send for a client
	// without a secret).
	clientID := body.Get("client_id")
	if user, pass, ok := r.BasicAuth(); ok {
		if u, err := url.QueryUnescape(user); err == nil {
			user = u
		}
		switch {
		case pass != "":
			return bad(errInvalidClient, "clients of this server are public: no client secret")
		case clientID != "" && clientID != user:
			return bad(errInvalidRequest, "client_id differs from the Authorization header's")
		}
		clientID = user
	}
	if clientID == "" {
		return bad(errInvalidClient, "client_id is missing")
	}
	if _, err := s.lookupClient(r.Context(), clientID); err != nil {
		if !errors.Is(err, errUnknownClient) {
			s.log.ErrorContext(r.Context(), "authserver: client lookup failed", slog.Any("err", err))
			return nil, newError(http.StatusInternalServerError, errServerError, "the server failed; try again")
		}
		return bad(errInvalidClient, "client_id names no registered client; the client must register again")
	}
	code, redirect, verifier := body.Get("code"), body.Get("redirect_uri"), body.Get("code_verifier")
	switch {
	case code == "":
		return bad(errInvalidRequest, "code is missing")
	case len(code) > 256:
		return bad(errInvalidGrant, "the code is invalid, expired or already used")
	case redirect == "":
		return bad(errInvalidRequest, "redirect_uri is missing")
	case verifier == "":
		return bad(errInvalidRequest, "code_verifier is missing: PKCE is required")
	case !isVerifier(verifier):
		return bad(errInvalidRequest, "code_verifier must be 43 to 128 unreserved characters (RFC 7636)")
	}
	if res := body.Get("resource"); res != "" && res != s.auth.Resource() {
		return bad(errInvalidTarget, "resource must be this server's resource, "+s.auth.Resource())
	}
	g, ok, err := s.spendCode(r.Context(), code)
	if err != nil {
		s.log.ErrorContext(r.Context(), "authserver: spending a code failed", slog.Any("err", err))
		return nil, newError(http.StatusInternalServerError, errServerError, "the server failed; try again")
	}
	switch {
	case !ok:
		return bad(errInvalidGrant, "the code is invalid, expired or already used")
	case !s.now().Before(g.Expires):
		return bad(errInvalidGrant, "the code is invalid, expired or already used")
	case g.ClientID != clientID:
		return bad(errInvalidGrant, "the code was issued to another client")
	case g.RedirectURI != redirect:
		return bad(errInvalidGrant, "redirect_uri differs from the authorization request's")
	case subtle.ConstantTimeCompare([]byte(challengeOf(verifier)), []byte(g.Challenge)) != 1:
		return bad(errInvalidGrant, "code_verifier does not match the code_challenge")
	}
	return s.issue(r, g)
}

// issue mints the tokens for a redeemed grant.
func (s *Server) issue(r *http.Request, g grant) (*tokenResponse, *oauthError) {
	opts := auth.MintOptions{Subject: g.Subject, Scopes: g.Scopes, ACR: g.ACR, ClientID: g.ClientID,
		AuthTime: g.AuthTime, TTL: AccessTokenTTL, Roles: g.Roles}
	agent := ""
	if g.Kind == kindAgent {
		// The client is the agent, acting for the subject (RFC 8693 act).
		agent, opts.Agent = g.ClientID, g.ClientID
	}
	resp := &tokenResponse{TokenType: "Bearer", ExpiresIn: int64(AccessTokenTTL.Seconds()), Scope: strings.Join(g.Scopes, " ")}
	var err error
	if resp.AccessToken, err = s.auth.Mint(opts); err != nil {
		s.log.ErrorContext(r.Context(), "authserver: minting an access token failed", slog.Any("err", err))
		return nil, newError(http.StatusInternalServerError, errServerError, "the server failed; try again")
	}
	if slices.Contains(g.Scopes, ScopeOpenID) {
		resp.IDToken, err = s.auth.MintIDToken(auth.IDTokenOptions{Subject: g.Subject, ClientID: g.ClientID, Nonce: g.Nonce,
			ACR: g.ACR, AuthTime: g.AuthTime, Agent: agent, TTL: IDTokenTTL, Roles: g.Roles})
		if err != nil {
			s.log.ErrorContext(r.Context(), "authserver: minting an ID token failed", slog.Any("err", err))
			return nil, newError(http.StatusInternalServerError, errServerError, "the server failed; try again")
		}
	}
	return resp, nil
}
