// Package signin signs people in to cobranca's own web pages (the approval page today, an
// operations console later): an OpenID Connect relying party of the configured issuer
// (go-oidc and x/oauth2; in development, the server's own development authorization server),
// authorization code with PKCE S256, state, nonce and verifier kept in the browser in a sealed,
// short-lived cookie (cookie.go: nothing is stored on the server until a person has signed
// in), the ID token verified (iss, aud, exp, nonce, signature) and turned into a
// principal by auth.PrincipalFromIDToken. A signed-in person holds a server-side session
// (migration 00090) behind an HttpOnly, SameSite=Lax cookie; every state-changing form is
// checked by CheckForm (net/http's cross-origin protection and the session's CSRF token).
//
// Step-up (RFC 9470 semantics): a page that needs a recent, stronger sign-in sends the person
// to SignInURL with the requirement; /signin forwards acr_values, max_age and prompt=login to
// the issuer, and the callback checks what the ID token says (acr among the requested ones,
// auth_time within max_age) before it replaces the session, refusing otherwise with
// insufficient_user_authentication.
package signin

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime/multipart"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"

	"github.com/cobranca/cobranca/internal/auditlog"
	"github.com/cobranca/cobranca/internal/auth"
	"github.com/cobranca/cobranca/internal/failure"
	"github.com/cobranca/cobranca/internal/reqstate"
	"github.com/cobranca/cobranca/internal/request"
	"github.com/cobranca/cobranca/internal/store"
)

// The paths this package serves (internal/server lists them in Routes).
const (
	SignInPath   = "/signin"
	CallbackPath = "/signin/callback"
	SignOutPath  = "/signout"
)

// Defaults of Config.
const (
	DefaultSessionTTL = 8 * time.Hour
	DefaultIdleTTL    = 30 * time.Minute
	// signinTTL is how long a sign-in may take, from /signin to the callback.
	signinTTL = 10 * time.Minute
	// discoveryRetry is how long a failed discovery is remembered before the next request
	// tries again.
	discoveryRetry = 2 * time.Second
	// maxStepUpAge bounds max_age on /signin (a day; step-up asks for minutes).
	maxStepUpAge = 24 * time.Hour
)

// Codes of the refusals of sign-in and of the forms.
const (
	CodeInvalidRequest    failure.Code = "invalid_request"      // a parameter of /signin, or a form field, is malformed
	CodeStateInvalid      failure.Code = "signin_state_invalid" // no sign-in of this browser matches the callback (none, replayed, expired, altered, wrong state)
	CodeSigninFailed      failure.Code = "signin_failed"        // the issuer refused, or its answer does not verify
	CodeCrossOrigin       failure.Code = "cross_origin_request" // a state-changing form posted, or a sign-in started, from another site
	CodeCSRFInvalid       failure.Code = "csrf_token_invalid"   // a form without the session's CSRF token
	CodeNotSignedIn       failure.Code = "not_signed_in"        // a form posted without a live session
	CodeIssuerUnavailable failure.Code = failure.Unavailable    // discovery of the issuer failed: retry
)

// Refusals counts refusals for the audit log in bounded numbers (auditlog.Refusals: one event
// per class and client a minute, with the count), so that a flood of them cannot fill it.
type Refusals interface {
	Refused(r *http.Request, ev auditlog.Event)
}

// The audit events of the refusals Refusals counts.
const (
	// EventFormRefused: a form refused by CheckForm (cross_origin_request, not_signed_in,
	// csrf_token_invalid); the event's Tool is the form's route, e.g. "POST /approvals/{id}".
	EventFormRefused = "web.form.refused"
	// EventSigninRefused: a sign-in refused at the callback (signin_state_invalid,
	// signin_failed, insufficient_user_authentication).
	EventSigninRefused = "web.signin.refused"
)

// Refuser answers a request with a refusal page: status, the stable code and a message a
// person reads. internal/web renders it in the person's language.
type Refuser func(w http.ResponseWriter, r *http.Request, status int, fe *failure.Error)

// Config configures the relying party.
type Config struct {
	// Issuer is the OpenID provider, discovered at Issuer/.well-known/openid-configuration:
	// COBRANCA_ISSUER, or in development the server's own base URL.
	Issuer string
	// ClientID and ClientSecret are cobranca's web client at the issuer
	// (COBRANCA_OIDC_CLIENT_ID, COBRANCA_OIDC_CLIENT_SECRET; no secret for a public client).
	ClientID, ClientSecret string
	// PublicURL is where people reach the server: the redirect URI is PublicURL +
	// CallbackPath, and an https PublicURL makes the cookies Secure with the __Host- prefix.
	PublicURL string
	// AgentClientIDs are COBRANCA_AGENT_CLIENT_IDS (the access tokens' identity rules).
	AgentClientIDs []string
	// RolesClaim is COBRANCA_ROLES_CLAIM, the ID token's claim the person's roles are read
	// from (auth.DefaultRolesClaim when empty).
	RolesClaim string
	// DB keeps the sessions of people who signed in.
	DB store.DB
	// Keys are the request-state keys (COBRANCA_REQUEST_STATE_KEYS): a sign-in in progress is
	// sealed under a key derived from the current one (cookie.go) and opens under any key of
	// the ring, so a rotation keeps the old key for at least the 10 minutes a sign-in may take.
	Keys *reqstate.Ring
	// SessionTTL is a session's absolute lifetime (DefaultSessionTTL), IdleTTL how long it
	// lasts unused (DefaultIdleTTL).
	SessionTTL, IdleTTL time.Duration
	// HTTPClient talks to the issuer (discovery, token, keys); nil: a client with a 10 s
	// timeout.
	HTTPClient *http.Client
	Logger     *slog.Logger
	Now        func() time.Time
	// Refuse renders refusals; nil: the JSON error body (failure.WriteHTTP).
	Refuse Refuser
	// Refusals audits the refusals of forms and of sign-in callbacks; nil: not audited.
	Refusals Refusals
}

// RP is cobranca's OpenID Connect relying party and its sessions.
type RP struct {
	cfg      Config
	sessions sessions
	redirect string
	secure   bool
	cookie   string // the session cookie's name
	binding  string // the sign-in cookie's name (cookie.go)
	cop      *http.CrossOriginProtection

	mu        sync.Mutex // guards the discovery below
	provider  *oidc.Provider
	lastErr   error
	lastTried time.Time
}

// New checks cfg and returns the relying party. It does not reach the issuer: discovery
// happens on the first sign-in (and again after a failure, at most every two seconds), so
// serve starts while the issuer is down — and in development, where the issuer is the server
// itself, before it listens.
func New(cfg Config) (*RP, error) {
	var errs []error
	if cfg.Issuer == "" {
		errs = append(errs, errors.New("signin: issuer is required"))
	}
	if cfg.ClientID == "" {
		errs = append(errs, errors.New("signin: client id is required"))
	}
	if cfg.DB == nil {
		errs = append(errs, errors.New("signin: store is required"))
	}
	if cfg.Keys == nil {
		errs = append(errs, errors.New("signin: request-state keys are required"))
	}
	u, err := url.Parse(cfg.PublicURL)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		errs = append(errs, fmt.Errorf("signin: public URL %q is not an http(s) URL", cfg.PublicURL))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if cfg.SessionTTL <= 0 {
		cfg.SessionTTL = DefaultSessionTTL
	}
	if cfg.RolesClaim == "" {
		cfg.RolesClaim = auth.DefaultRolesClaim
	}
	if cfg.IdleTTL <= 0 {
		cfg.IdleTTL = DefaultIdleTTL
	}
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = &http.Client{Timeout: 10 * time.Second}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Refuse == nil {
		cfg.Refuse = func(w http.ResponseWriter, _ *http.Request, status int, fe *failure.Error) {
			failure.WriteHTTP(w, status, fe)
		}
	}
	rp := &RP{cfg: cfg, sessions: sessions{db: cfg.DB, now: cfg.Now},
		redirect: strings.TrimSuffix(cfg.PublicURL, "/") + CallbackPath,
		secure:   u.Scheme == "https", cop: http.NewCrossOriginProtection()}
	// Over https the cookies are Secure and __Host- (host-only, Path=/). Over plain-http
	// development a browser would drop a Secure cookie, so there they are plain.
	rp.cookie, rp.binding = "cobranca_session", "cobranca_signin"
	if rp.secure {
		rp.cookie, rp.binding = "__Host-"+rp.cookie, "__Host-"+rp.binding
	}
	return rp, nil
}

// CookieName is the session cookie's name: __Host-cobranca_session over https,
// cobranca_session over plain http (development).
func (rp *RP) CookieName() string { return rp.cookie }

// discover returns the issuer's provider, discovering it on first use; a failure is
// remembered for discoveryRetry, then tried again.
func (rp *RP) discover(ctx context.Context) (*oidc.Provider, error) {
	rp.mu.Lock()
	defer rp.mu.Unlock()
	if rp.provider != nil {
		return rp.provider, nil
	}
	now := rp.cfg.Now()
	if rp.lastErr != nil && now.Sub(rp.lastTried) < discoveryRetry {
		return nil, rp.lastErr
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	// The key set go-oidc fetches later uses the client of this context.
	p, err := oidc.NewProvider(oidc.ClientContext(context.WithoutCancel(ctx), rp.cfg.HTTPClient), rp.cfg.Issuer)
	if err == nil {
		err = publicSubjects(p)
	}
	if err != nil {
		rp.lastErr, rp.lastTried = fmt.Errorf("signin: discovery of %s: %w", rp.cfg.Issuer, err), now
		return nil, rp.lastErr
	}
	rp.provider, rp.lastErr = p, nil
	return p, nil
}

// publicSubjects refuses an issuer that offers only pairwise subject identifiers (OIDC Core
// 8): the page's sign-in would give a person another sub than the access tokens of their
// agent carry, and the requester rule (approval.Decider: the person an agent acts for may not
// approve its call) compares the two. An issuer that does not say is taken at its word that
// subjects are public, the default.
func publicSubjects(p *oidc.Provider) error {
	var meta struct {
		SubjectTypes []string `json:"subject_types_supported"`
	}
	if err := p.Claims(&meta); err != nil {
		return err
	}
	if len(meta.SubjectTypes) > 0 && !slices.Contains(meta.SubjectTypes, "public") {
		return fmt.Errorf("the issuer offers only %v subject identifiers, not public ones: a person's sub at this client would differ from their agents' tokens, and the requester of a call could approve it", meta.SubjectTypes)
	}
	return nil
}

func (rp *RP) oauth(p *oidc.Provider) *oauth2.Config {
	return &oauth2.Config{ClientID: rp.cfg.ClientID, ClientSecret: rp.cfg.ClientSecret, Endpoint: p.Endpoint(),
		RedirectURL: rp.redirect, Scopes: []string{oidc.ScopeOpenID}}
}

// SignInURL is where to send a person who must sign in, or sign in again as stepUp demands,
// to come back to returnTo (a local path): /signin?return=…[&acr_values=…&max_age=…&prompt=login].
func SignInURL(returnTo string, stepUp *auth.StepUp) string {
	q := url.Values{"return": {returnTo}}
	if stepUp != nil {
		if len(stepUp.ACRValues) > 0 {
			q.Set("acr_values", strings.Join(stepUp.ACRValues, " "))
		}
		if stepUp.MaxAge > 0 {
			q.Set("max_age", strconv.FormatInt(int64(stepUp.MaxAge/time.Second), 10))
		}
		q.Set("prompt", "login")
	}
	return SignInPath + "?" + q.Encode()
}

// LocalPath reports whether s is a path on this server to send a browser back to: it starts
// with one "/" (not "//" nor "/\", which browsers read as another host), names no scheme or
// host, and holds no control character. Anything else would make sign-in an open redirect.
func LocalPath(s string) bool {
	if len(s) == 0 || len(s) > 2048 || s[0] != '/' || strings.HasPrefix(s, "//") || strings.HasPrefix(s, `/\`) {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == 0x7f || c == '\\' {
			return false
		}
	}
	u, err := url.Parse(s)
	return err == nil && u.Scheme == "" && u.Host == "" && u.User == nil && strings.HasPrefix(u.Path, "/")
}

func (rp *RP) refuse(w http.ResponseWriter, r *http.Request, status int, code failure.Code, field, msg string, cause error) {
	if cause != nil {
		rp.cfg.Logger.InfoContext(r.Context(), "sign-in refused", slog.String("code", string(code)), slog.Any("cause", cause))
	}
	rp.cfg.Refuse(w, r, status, &failure.Error{Code: code, Field: field, Message: msg, Err: cause})
}

// CrossSite reports whether r is a navigation another site started (Fetch Metadata:
// Sec-Fetch-Site other than same-origin or none; a browser too old to send it is let through).
// A sign-in is started only from this site's pages or by a person typing or following a
// bookmark: another site could otherwise make its visitors' browsers start sign-ins at will.
func CrossSite(r *http.Request) bool {
	switch r.Header.Get("Sec-Fetch-Site") {
	case "", "same-origin", "none":
		return false
	}
	return true
}

// refuseSignin refuses a sign-in at the callback, and audits the refusal (Config.Refusals).
func (rp *RP) refuseSignin(w http.ResponseWriter, r *http.Request, status int, code failure.Code, field, msg string, cause error) {
	rp.audit(r, EventSigninRefused, "", code)
	rp.refuse(w, r, status, code, field, msg, cause)
}

// audit counts a refusal of r for the audit log (Config.Refusals; none: nothing).
func (rp *RP) audit(r *http.Request, event, tool string, code failure.Code) {
	if rp.cfg.Refusals != nil {
		rp.cfg.Refusals.Refused(r, auditlog.Event{Name: event, Tool: tool, RequestID: request.From(r.Context()).ID,
			Outcome: auditlog.Denied, FailureCode: string(code)})
	}
}

// SignIn serves GET /signin: it seals a new sign-in into this browser's sign-in cookie and
// sends the browser to the issuer's authorization endpoint. Nothing is stored on the server.
func (rp *RP) SignIn() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		returnTo := q.Get("return")
		if !LocalPath(returnTo) {
			rp.refuse(w, r, http.StatusBadRequest, CodeInvalidRequest, "return", "must be a path on this server, like /approvals/a_…", nil)
			return
		}
		var su auth.StepUp
		if v := q.Get("acr_values"); v != "" {
			// acr values are space-separated tokens; the scope grammar (RFC 6749 NQCHAR) is theirs too.
			acrs, err := auth.ParseScope(v)
			if err != nil || len(acrs) > 16 || len(v) > 1024 {
				rp.refuse(w, r, http.StatusBadRequest, CodeInvalidRequest, "acr_values", "must be up to 16 space-separated values of visible ASCII", nil)
				return
			}
			su.ACRValues = acrs
		}
		if v := q.Get("max_age"); v != "" {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil || n < 1 || time.Duration(n)*time.Second > maxStepUpAge {
				rp.refuse(w, r, http.StatusBadRequest, CodeInvalidRequest, "max_age", "must be a whole number of seconds from 1 to 86400", nil)
				return
			}
			su.MaxAge = time.Duration(n) * time.Second
		}
		prompt := q.Get("prompt")
		if prompt != "" && prompt != "login" {
			rp.refuse(w, r, http.StatusBadRequest, CodeInvalidRequest, "prompt", `must be "login" or absent`, nil)
			return
		}
		if CrossSite(r) {
			rp.refuse(w, r, http.StatusForbidden, CodeCrossOrigin, "", "a sign-in is started from this site's pages, not from another site: use the link below", nil)
			return
		}
		p, err := rp.discover(r.Context())
		if err != nil {
			rp.refuse(w, r, http.StatusServiceUnavailable, CodeIssuerUnavailable, "", "the sign-in service does not answer; try again in a moment", err)
			return
		}
		pend := &pending{state: secret(), nonce: secret(), verifier: oauth2.GenerateVerifier(), returnTo: returnTo,
			stepUp: su, expires: rp.cfg.Now().Add(signinTTL).Truncate(time.Second)}
		binding, err := sealPending(rp.cfg.Keys, rp.binding, pend)
		if errors.Is(err, errCookieTooLong) {
			rp.refuse(w, r, http.StatusBadRequest, CodeInvalidRequest, "return", "with acr_values, is too long to carry through sign-in", nil)
			return
		}
		if err != nil {
			rp.internal(w, r, err)
			return
		}
		opts := []oauth2.AuthCodeOption{oauth2.S256ChallengeOption(pend.verifier), oidc.Nonce(pend.nonce)}
		if len(su.ACRValues) > 0 {
			opts = append(opts, oauth2.SetAuthURLParam("acr_values", strings.Join(su.ACRValues, " ")))
		}
		if su.MaxAge > 0 {
			opts = append(opts, oauth2.SetAuthURLParam("max_age", strconv.FormatInt(int64(su.MaxAge/time.Second), 10)))
		}
		if prompt != "" {
			opts = append(opts, oauth2.SetAuthURLParam("prompt", prompt))
		}
		rp.setCookie(w, rp.binding, binding, signinTTL)
		w.Header().Set("Cache-Control", "no-store")
		http.Redirect(w, r, rp.oauth(p).AuthCodeURL(pend.state, opts...), http.StatusFound)
	})
}

// errorCode matches the OAuth error codes issuers send (access_denied, login_required…): only
// such a code from the issuer's redirect is shown back, never other text.
var errorCode = regexp.MustCompile(`^[a-z_]{1,64}$`)

// Callback serves GET /signin/callback: the issuer's answer. The sign-in cookie is cleared
// whatever happens, so a browser uses its sign-in once (the issuer takes the code once); on
// success the browser gets a new session (a previous one is ended) and goes back where the
// sign-in started.
func (rp *RP) Callback() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-store")
		c, err := r.Cookie(rp.binding)
		if err != nil {
			rp.refuseSignin(w, r, http.StatusBadRequest, CodeStateInvalid, "", "no sign-in was started in this browser, or it was used already or took too long: start again from the page", nil)
			return
		}
		rp.clearCookie(w, rp.binding)
		pend, err := openPending(rp.cfg.Keys, rp.binding, c.Value, rp.cfg.Now())
		if err != nil {
			rp.refuseSignin(w, r, http.StatusBadRequest, CodeStateInvalid, "", "no sign-in was started in this browser, or it was used already or took too long: start again from the page", err)
			return
		}
		q := r.URL.Query()
		if subtle.ConstantTimeCompare([]byte(q.Get("state")), []byte(pend.state)) != 1 {
			rp.refuseSignin(w, r, http.StatusBadRequest, CodeStateInvalid, "state", "does not match the sign-in this browser started: start again from the page", nil)
			return
		}
		if e := q.Get("error"); e != "" {
			msg := "the sign-in service refused the sign-in"
			if errorCode.MatchString(e) {
				msg += " (" + e + ")"
			}
			rp.refuseSignin(w, r, http.StatusForbidden, CodeSigninFailed, "", msg, nil)
			return
		}
		p, err := rp.discover(r.Context())
		if err != nil {
			rp.refuse(w, r, http.StatusServiceUnavailable, CodeIssuerUnavailable, "", "the sign-in service does not answer; try again in a moment", err)
			return
		}
		ctx := context.WithValue(r.Context(), oauth2.HTTPClient, rp.cfg.HTTPClient)
		tok, err := rp.oauth(p).Exchange(ctx, q.Get("code"), oauth2.VerifierOption(pend.verifier))
		if err != nil {
			rp.refuseSignin(w, r, http.StatusBadGateway, CodeSigninFailed, "code", "the sign-in service did not accept the sign-in: start again from the page", err)
			return
		}
		raw, _ := tok.Extra("id_token").(string)
		if raw == "" {
			rp.refuseSignin(w, r, http.StatusBadGateway, CodeSigninFailed, "id_token", "the sign-in service sent no ID token", nil)
			return
		}
		idt, err := p.Verifier(&oidc.Config{ClientID: rp.cfg.ClientID, Now: rp.cfg.Now}).Verify(ctx, raw)
		if err != nil {
			rp.refuseSignin(w, r, http.StatusBadGateway, CodeSigninFailed, "id_token", "the ID token does not verify", err)
			return
		}
		if subtle.ConstantTimeCompare([]byte(idt.Nonce), []byte(pend.nonce)) != 1 {
			rp.refuseSignin(w, r, http.StatusBadRequest, CodeSigninFailed, "nonce", "the ID token is not for the sign-in this browser started: start again from the page", nil)
			return
		}
		var payload json.RawMessage
		if err := idt.Claims(&payload); err != nil {
			rp.internal(w, r, err)
			return
		}
		// What go-oidc leaves to the client (OpenID Connect Core 3.1.3.7 and 2): an ID token
		// with an audience besides this client is refused (this client trusts no other), and
		// an azp, when present, names this client.
		var azp struct {
			AZP *string `json:"azp"`
		}
		if err := json.Unmarshal(payload, &azp); err != nil || len(idt.Audience) != 1 || (azp.AZP != nil && *azp.AZP != rp.cfg.ClientID) {
			rp.refuseSignin(w, r, http.StatusBadGateway, CodeSigninFailed, "id_token", "the ID token was not issued to this server's client alone (aud, azp)", err)
			return
		}
		pr, err := auth.PrincipalFromIDToken(payload, rp.cfg.AgentClientIDs, rp.cfg.RolesClaim)
		if err != nil {
			rp.refuseSignin(w, r, http.StatusBadGateway, CodeSigninFailed, "id_token", "the ID token names no acceptable identity", err)
			return
		}
		if len(pend.stepUp.ACRValues) > 0 || pend.stepUp.MaxAge > 0 {
			if err := auth.CheckStepUp(pend.stepUp, pr, rp.cfg.Now()); err != nil {
				rp.refuseSignin(w, r, http.StatusForbidden, failure.InsufficientUserAuthentication, "", pend.stepUp.Message()+"; the sign-in did not meet it. Nothing was changed", err)
				return
			}
		}
		if old, err := r.Cookie(rp.cookie); err == nil {
			// A new sign-in always gets a new session id (no fixation); the old one ends.
			if err := rp.sessions.delete(r.Context(), old.Value); err != nil {
				rp.internal(w, r, err)
				return
			}
		}
		cookie, _, err := rp.sessions.create(r.Context(), pr, rp.cfg.SessionTTL)
		if err != nil {
			rp.internal(w, r, err)
			return
		}
		rp.setCookie(w, rp.cookie, cookie, rp.cfg.SessionTTL)
		rp.cfg.Logger.InfoContext(r.Context(), "signed in", slog.Any("principal", pr))
		http.Redirect(w, r, pend.returnTo, http.StatusSeeOther)
	})
}

// SignOut serves POST /signout (a form with the session's CSRF token, CheckForm): the session
// ends, its cookie is cleared, and the browser goes to the form's return path (a local path;
// else the sign-in page).
func (rp *RP) SignOut() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, ok := rp.CheckForm(w, r, "POST "+SignOutPath); !ok {
			return
		}
		c, _ := r.Cookie(rp.cookie) // CheckForm found it
		if err := rp.sessions.delete(r.Context(), c.Value); err != nil {
			rp.internal(w, r, err)
			return
		}
		rp.clearCookie(w, rp.cookie)
		returnTo := r.PostFormValue("return")
		if !LocalPath(returnTo) {
			returnTo = SignInPath + "?" + url.Values{"return": {"/"}}.Encode()
		}
		http.Redirect(w, r, returnTo, http.StatusSeeOther)
	})
}

// Session returns the browser's live session, or nil when it has none (no cookie, ended,
// expired or idle too long).
func (rp *RP) Session(r *http.Request) (*Session, error) {
	c, err := r.Cookie(rp.cookie)
	if err != nil || c.Value == "" {
		return nil, nil
	}
	return rp.sessions.get(r.Context(), c.Value, rp.cfg.IdleTTL)
}

// maxFormBytes bounds a form's body.
const maxFormBytes = 8 << 10

// CheckForm checks a state-changing form post: it must come from this site (net/http's
// cross-origin protection: Sec-Fetch-Site, else Origin against Host), from a browser with a
// live session, carrying that session's CSRF token in the field csrf (compared in constant
// time). It returns the session, or answers the refusal and false: cross_origin_request
// (403), not_signed_in (401), csrf_token_invalid (403), each audited (Config.Refusals) as a
// refusal of form, the form's route. The form is parsed (bounded).
func (rp *RP) CheckForm(w http.ResponseWriter, r *http.Request, form string) (*Session, bool) {
	if !rp.sameSite(w, r, form) {
		return nil, false
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxFormBytes)
	if err := r.ParseForm(); err != nil {
		rp.refuse(w, r, http.StatusBadRequest, CodeInvalidRequest, "", "the form could not be read", err)
		return nil, false
	}
	return rp.checkToken(w, r, form, r.PostFormValue("csrf"))
}

// maxTokenBytes bounds the csrf field of an upload: a token is far shorter.
const maxTokenBytes = 1 << 10

// CheckUpload checks a form post of files (multipart/form-data, its body bounded to max
// bytes) as CheckForm checks a form, reading no more of the body than the field csrf, which
// must be the form's first (a browser sends the fields in the form's order): nothing of a
// file is read before the session and its token are. It returns the session and the form's
// other fields, to read in turn, or answers the refusal and false.
func (rp *RP) CheckUpload(w http.ResponseWriter, r *http.Request, form string, max int64) (*Session, *multipart.Reader, bool) {
	if !rp.sameSite(w, r, form) {
		return nil, nil, false
	}
	r.Body = http.MaxBytesReader(w, r.Body, max)
	mr, err := r.MultipartReader()
	if err != nil {
		rp.refuse(w, r, http.StatusBadRequest, CodeInvalidRequest, "", "the form could not be read: want multipart/form-data", err)
		return nil, nil, false
	}
	var token string
	if part, err := mr.NextPart(); err == nil && part.FormName() == "csrf" {
		b, _ := io.ReadAll(io.LimitReader(part, maxTokenBytes))
		token = string(b)
	}
	sess, ok := rp.checkToken(w, r, form, token)
	return sess, mr, ok
}

// sameSite refuses (false) a form another site sent.
func (rp *RP) sameSite(w http.ResponseWriter, r *http.Request, form string) bool {
	if err := rp.cop.Check(r); err != nil {
		rp.audit(r, EventFormRefused, form, CodeCrossOrigin)
		rp.refuse(w, r, http.StatusForbidden, CodeCrossOrigin, "", "this form was sent from another site; open the page here and use its buttons", nil)
		return false
	}
	return true
}

// checkToken returns the request's session when token is its CSRF token, else answers the
// refusal and false.
func (rp *RP) checkToken(w http.ResponseWriter, r *http.Request, form, token string) (*Session, bool) {
	sess, err := rp.Session(r)
	if err != nil {
		rp.internal(w, r, err)
		return nil, false
	}
	if sess == nil {
		rp.audit(r, EventFormRefused, form, CodeNotSignedIn)
		rp.refuse(w, r, http.StatusUnauthorized, CodeNotSignedIn, "", "you are not signed in (or your session ended): sign in and try again", nil)
		return nil, false
	}
	if subtle.ConstantTimeCompare([]byte(token), []byte(sess.CSRF)) != 1 {
		rp.audit(r, EventFormRefused, form, CodeCSRFInvalid)
		rp.refuse(w, r, http.StatusForbidden, CodeCSRFInvalid, "csrf", "is missing or not this session's: reload the page and try again", nil)
		return nil, false
	}
	return sess, true
}

func (rp *RP) internal(w http.ResponseWriter, r *http.Request, err error) {
	ref := request.From(r.Context()).ID
	rp.cfg.Logger.ErrorContext(r.Context(), "sign-in failed", slog.String("ref", ref), slog.Any("err", err))
	rp.cfg.Refuse(w, r, http.StatusInternalServerError, &failure.Error{Code: failure.Internal, Message: "internal error (ref " + ref + ")", Err: err})
}

func (rp *RP) setCookie(w http.ResponseWriter, name, value string, ttl time.Duration) {
	http.SetCookie(w, &http.Cookie{Name: name, Value: value, Path: "/", MaxAge: int(ttl / time.Second),
		HttpOnly: true, Secure: rp.secure, SameSite: http.SameSiteLaxMode})
}

func (rp *RP) clearCookie(w http.ResponseWriter, name string) {
	http.SetCookie(w, &http.Cookie{Name: name, Value: "", Path: "/", MaxAge: -1,
		HttpOnly: true, Secure: rp.secure, SameSite: http.SameSiteLaxMode})
}
