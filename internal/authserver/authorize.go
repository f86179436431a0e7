package authserver

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/cobranca/cobranca/internal/auth"
	"github.com/cobranca/cobranca/internal/store"
)

// Who the developer signs in as (the code's kind column).
const (
	kindPerson = "person"
	kindAgent  = "agent"
)

// defaultSubject pre-fills the page when the request gives no login_hint.
const defaultSubject = "developer"

// authorize is GET /oauth/authorize: it checks the request and shows the
// sign-in page, or answers an error at the client's redirect URI (when
// that URI is the client's) or on a page (when not).
func (s *Server) authorize(w http.ResponseWriter, r *http.Request) {
	req, err := s.parseAuthRequest(r.Context(), r.URL.Query())
	if err != nil {
		s.authError(w, r, err)
		return
	}
	subject := req.LoginHint
	if subject == "" {
		subject = defaultSubject
	}
	scopes := req.Scopes
	if scopes == nil { // none named: offer all
		scopes = s.scopes
	}
	acr := ""
	if len(req.ACRValues) > 0 {
		acr = req.ACRValues[0]
	}
	render(w, http.StatusOK, s.formPage(r, req, subject, scopes, false, acr, s.roles, ""))
}

// authError answers err from parseAuthRequest or decide.
func (s *Server) authError(w http.ResponseWriter, r *http.Request, err error) {
	if re, ok := errors.AsType[*redirectError](err); ok {
		s.refused(r, "authorize", re.oauthError)
		params := url.Values{"error": {re.Code}, "error_description": {re.Description}}
		http.Redirect(w, r, s.redirectURL(re.req, params), http.StatusSeeOther)
		return
	}
	if oe, ok := errors.AsType[*oauthError](err); ok {
		s.refused(r, "authorize", oe)
		renderError(w, r, oe)
		return
	}
	s.log.ErrorContext(r.Context(), "authserver: authorization failed", slog.Any("err", err))
	renderError(w, r, newError(http.StatusInternalServerError, errServerError, "the server failed; try again"))
}

// decide is POST /oauth/authorize, the sign-in form (behind
// http.CrossOriginProtection): the developer's choice, and the request
// sealed in the form. Allowed, the client is redirected with a code;
// denied, with access_denied.
func (s *Server) decide(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, maxBody)
	if err := r.ParseForm(); err != nil {
		renderError(w, r, newError(http.StatusBadRequest, errInvalidRequest, "the form could not be read"))
		return
	}
	f := r.PostForm
	req, err := s.open(f.Get("request"), s.now())
	if err != nil {
		renderError(w, r, newError(http.StatusBadRequest, errInvalidRequest, "the sign-in form expired or was altered"))
		return
	}
	if f.Get("action") == "deny" {
		if err := s.db.InTx(r.Context(), func(ctx context.Context, tx store.Tx) error { return s.spendForm(ctx, tx, req) }); err != nil {
			s.formError(w, r, err)
			return
		}
		s.authError(w, r, &redirectError{oauthError: newError(http.StatusFound, errAccessDenied, "the developer denied the request"), req: req})
		return
	}
	subject, acr, rolesText := strings.TrimSpace(f.Get("subject")), strings.TrimSpace(f.Get("acr")), f.Get("roles")
	scopes := f["scope"]
	agent := f.Get("kind") == kindAgent
	again := func(problem string) {
		render(w, http.StatusBadRequest, s.formPage(r, req, subject, scopes, agent, acr, rolesText, problem))
	}
	if err := auth.CheckText(subject, auth.MaxIdentityBytes); err != nil {
		again("subject: " + err.Error())
		return
	}
	if acr != "" {
		if err := auth.CheckText(acr, auth.MaxIdentityBytes); err != nil {
			again("acr: " + err.Error())
			return
		}
	}
	roles, err := auth.ParseRoles(rolesText)
	if err != nil {
		again("roles: " + err.Error())
		return
	}
	if k := f.Get("kind"); k != kindPerson && k != kindAgent {
		again("kind: choose person or agent")
		return
	}
	for _, sc := range scopes {
		if !slices.Contains(s.scopes, sc) {
			again("scope: not a scope this server supports")
			return
		}
	}
	g := grant{ClientID: req.ClientID, RedirectURI: req.RedirectURI, Challenge: req.CodeChallenge, Subject: subject,
		Kind: kindPerson, Scopes: scopes, ACR: acr, Roles: roles, Nonce: req.Nonce, AuthTime: s.now()}
	if agent {
		// No role lets an agent do anything (it neither approves nor writes off), and the
		// pre-filled roles would tell its model of the forbidden tools' roles.
		g.Kind, g.Roles = kindAgent, nil
	}
	code, err := s.saveCode(r.Context(), req, g)
	if err != nil {
		s.formError(w, r, err)
		return
	}
	http.Redirect(w, r, s.redirectURL(req, url.Values{"code": {code}}), http.StatusSeeOther)
}

// formError answers a decision that could not be recorded: a form
// already spent, or a failure of the store.
func (s *Server) formError(w http.ResponseWriter, r *http.Request, err error) {
	if errors.Is(err, errFormSpent) {
		oe := newError(http.StatusBadRequest, errInvalidRequest, "this sign-in form was already used: one form signs in once")
		s.refused(r, "authorize", oe)
		renderError(w, r, oe)
		return
	}
	s.authError(w, r, err)
}

// errFormSpent is spendForm's answer for a form already decided.
var errFormSpent = errors.New("authserver: the sign-in form was already used")

// spendForm records req's form as decided, or answers errFormSpent if it
// already was; spent forms whose deadline passed are deleted on the way.
// A form is recorded only by a decision, which only this machine can post
// (localOnly), and kept only while it could be posted: the table holds no
// more rows than the developer's sign-ins of the last formTTL.
func (s *Server) spendForm(ctx context.Context, tx store.Tx, req *authRequest) error {
	now := s.now()
	if _, err := tx.Exec(ctx, `DELETE FROM oauth_form_spent WHERE expires_at < $1`, now.UnixMicro()); err != nil {
		return fmt.Errorf("authserver: delete expired forms: %w", err)
	}
	hash := sha256.Sum256([]byte(req.Form))
	// open accepts the form through the second req.Expires.
	n, err := tx.Exec(ctx, `INSERT INTO oauth_form_spent (form_hash, expires_at) VALUES ($1, $2) ON CONFLICT (form_hash) DO NOTHING`,
		hash[:], time.Unix(req.Expires+1, 0).UnixMicro())
	if err != nil {
		return fmt.Errorf("authserver: spend the form: %w", err)
	}
	if n == 0 {
		return errFormSpent
	}
	return nil
}

// grant is what an authorization code stands for.
type grant struct {
	ClientID, RedirectURI, Challenge string
	Subject, Kind                    string
	Scopes                           []string
	ACR, Nonce                       string
	Roles                            []string
	AuthTime                         time.Time
	Expires                          time.Time
}

// saveCode spends req's form and stores g under a fresh code, which it
// returns, in one transaction; expired codes are deleted on the way.
func (s *Server) saveCode(ctx context.Context, req *authRequest, g grant) (string, error) {
	var b [32]byte
	rand.Read(b[:])
	code := base64.RawURLEncoding.EncodeToString(b[:])
	hash := sha256.Sum256([]byte(code))
	now := s.now()
	err := s.db.InTx(ctx, func(ctx context.Context, tx store.Tx) error {
		if err := s.spendForm(ctx, tx, req); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `DELETE FROM oauth_code WHERE expires_at < $1`, now.UnixMicro()); err != nil {
			return fmt.Errorf("authserver: delete expired codes: %w", err)
		}
		_, err := tx.Exec(ctx, `INSERT INTO oauth_code (code_hash, client_id, redirect_uri, code_challenge, subject, kind,
scope, acr, nonce, auth_time, expires_at, roles) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)`,
			hash[:], g.ClientID, g.RedirectURI, g.Challenge, g.Subject, g.Kind, strings.Join(g.Scopes, " "), g.ACR, g.Nonce,
			g.AuthTime.UnixMicro(), now.Add(CodeTTL).UnixMicro(), strings.Join(g.Roles, " "))
		if err != nil {
			return fmt.Errorf("authserver: save code: %w", err)
		}
		return nil
	})
	if err != nil {
		return "", err
	}
	return code, nil
}

// spendCode deletes code's grant and returns it: a code is spent by its
// first redemption, whatever comes of it. ok is false for a code never
// issued or already spent.
func (s *Server) spendCode(ctx context.Context, code string) (g grant, ok bool, err error) {
	hash := sha256.Sum256([]byte(code))
	var scope, roles string
	var authTime, expires int64
	err = s.db.InTx(ctx, func(ctx context.Context, tx store.Tx) error {
		return tx.QueryRow(ctx, `DELETE FROM oauth_code WHERE code_hash = $1 RETURNING client_id, redirect_uri, code_challenge,
subject, kind, scope, acr, nonce, auth_time, expires_at, roles`, hash[:]).Scan(&g.ClientID, &g.RedirectURI, &g.Challenge,
			&g.Subject, &g.Kind, &scope, &g.ACR, &g.Nonce, &authTime, &expires, &roles)
	})
	if errors.Is(err, store.ErrNoRows) {
		return grant{}, false, nil
	}
	if err != nil {
		return grant{}, false, fmt.Errorf("authserver: spend code: %w", err)
	}
	g.Scopes, g.Roles = strings.Fields(scope), strings.Fields(roles)
	g.AuthTime, g.Expires = time.UnixMicro(authTime), time.UnixMicro(expires)
	return g, true, nil
}
