// Package auth makes cobranca an OAuth 2.1 resource server: it verifies
// JWT access tokens (golang-jwt/jwt/v5) from the configured issuer, turns
// them into a Principal (agent or human, scopes, acr, auth_time), answers
// missing or bad tokens, missing scopes and missing step-up authentication
// with the RFC 6750 / RFC 9470 challenges, publishes RFC 9728 protected
// resource metadata, and, in development mode, signs its own tokens.
package auth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Authenticator verifies access tokens and writes the OAuth challenges.
type Authenticator struct {
	cfg         Config
	verifier    *verifier
	metadataURL string
	dev         *devIssuer // nil outside development mode
}

// New validates cfg, reporting every problem at once, and prepares the key
// source: the issuer's JWKS (fetched on first use), a public key file, or,
// in development mode, the local signing key in cfg.DataDir (created on
// first start).
func New(ctx context.Context, cfg Config) (*Authenticator, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	a := &Authenticator{cfg: cfg, metadataURL: MetadataURL(cfg.Resource)}
	var keys keySource
	switch {
	case cfg.DevMode():
		dev, err := loadDevIssuer(cfg)
		if err != nil {
			return nil, fmt.Errorf("development signing key in COBRANCA_DATA_DIR: %w", err)
		}
		a.dev = dev
		a.cfg.Issuer = cfg.BaseURL
		keys = staticKey{dev.key.Public()}
		cfg.Logger.WarnContext(ctx, "DEVELOPMENT MODE: accepting only tokens signed by the local key; mint one with `cobranca token`; set COBRANCA_ISSUER for production",
			slog.String("issuer", a.cfg.Issuer), slog.String("resource", cfg.Resource), slog.String("key_file", dev.path))
	case cfg.PublicKeyFile != "":
		key, err := loadPublicKeyFile(cfg.PublicKeyFile)
		if err != nil {
			return nil, fmt.Errorf("COBRANCA_JWT_PUBLIC_KEY: %w", err)
		}
		keys = staticKey{key}
	default:
		keys = &jwksCache{
			url:             cfg.JWKSURL,
			client:          cfg.HTTPClient,
			now:             cfg.Now,
			refreshInterval: cfg.JWKSRefreshInterval,
			maxAge:          cfg.JWKSMaxAge,
		}
	}
	a.verifier = newVerifier(a.cfg, keys)
	return a, nil
}

// DevMode reports whether a signs and accepts its own development tokens.
func (a *Authenticator) DevMode() bool { return a.dev != nil }

// RolesClaim is the claim a token's roles are read from (COBRANCA_ROLES_CLAIM).
func (a *Authenticator) RolesClaim() string { return a.cfg.RolesClaim }

// Issuer is the issuer tokens must come from.
func (a *Authenticator) Issuer() string { return a.cfg.Issuer }

// Resource is this server's resource identifier, the audience tokens must
// name.
func (a *Authenticator) Resource() string { return a.cfg.Resource }

// ResourceMetadataURL is where the RFC 9728 metadata for Resource is
// served; every challenge points there.
func (a *Authenticator) ResourceMetadataURL() string { return a.metadataURL }

// Verify checks an access token and returns its principal. Errors are
// *TokenError.
func (a *Authenticator) Verify(ctx context.Context, token string) (*Principal, error) {
	return a.verifier.verify(ctx, token)
}

// Middleware lets through only requests with a valid bearer token in the
// Authorization header, with their Principal in the context (see
// PrincipalFrom). Others get 401 and a challenge pointing at the resource
// metadata. A token in the query string is never read.
func (a *Authenticator) Middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		headers := r.Header.Values("Authorization")
		if len(headers) == 0 {
			a.writeChallenge(w, http.StatusUnauthorized, nil)
			return
		}
		if len(headers) > 1 {
			a.writeChallenge(w, http.StatusBadRequest, []param{
				{"error", "invalid_request"},
				{"error_description", "more than one Authorization header"},
			})
			return
		}
		token, ok := ParseBearer(headers[0])
		if !ok {
			scheme, _, _ := strings.Cut(headers[0], " ")
			if !strings.EqualFold(scheme, "bearer") {
				// Another scheme: no bearer token was presented (RFC 6750 §3.1).
				a.writeChallenge(w, http.StatusUnauthorized, nil)
				return
			}
			a.writeInvalidToken(w, "token is malformed")
			return
		}
		p, err := a.Verify(r.Context(), token)
		if err != nil {
			desc := "token is invalid"
			if te, ok := errors.AsType[*TokenError](err); ok {
				desc = te.Description
			}
			a.cfg.Logger.InfoContext(r.Context(), "access token refused", slog.String("reason", desc), slog.Any("cause", errors.Unwrap(err)))
			a.writeInvalidToken(w, desc)
			return
		}
		next.ServeHTTP(w, r.WithContext(WithPrincipal(r.Context(), p)))
	})
}

func (a *Authenticator) writeInvalidToken(w http.ResponseWriter, desc string) {
	a.writeChallenge(w, http.StatusUnauthorized, []param{
		{"error", "invalid_token"},
		{"error_description", desc},
	})
}

// WriteInsufficientScope answers 403 naming every scope in missing
// (RFC 6750 §3.1), so the client can ask the user for exactly those.
func (a *Authenticator) WriteInsufficientScope(w http.ResponseWriter, missing []string) {
	a.writeChallenge(w, http.StatusForbidden, []param{
		{"error", "insufficient_scope"},
		{"error_description", "the token lacks scopes this call needs"},
		{"scope", strings.Join(missing, " ")},
	})
}

// WriteStepUpRequired answers 401 asking the client to authenticate the
// user again as req demands (RFC 9470 §3).
func (a *Authenticator) WriteStepUpRequired(w http.ResponseWriter, req StepUp) {
	ps := []param{
		{"error", "insufficient_user_authentication"},
		{"error_description", req.description()},
	}
	if len(req.ACRValues) > 0 {
		ps = append(ps, param{"acr_values", strings.Join(req.ACRValues, " ")})
	}
	if req.MaxAge > 0 {
		ps = append(ps, param{"max_age", fmt.Sprint(int64(req.MaxAge / time.Second))})
	}
	a.writeChallenge(w, http.StatusUnauthorized, ps)
}

type param struct{ name, value string }

// writeChallenge writes status with a Bearer challenge carrying ps and
// resource_metadata, and the same error as a small JSON body.
func (a *Authenticator) writeChallenge(w http.ResponseWriter, status int, ps []param) {
	var b strings.Builder
	b.WriteString("Bearer ")
	body := map[string]string{}
	for _, p := range ps {
		fmt.Fprintf(&b, "%s=%s, ", p.name, quote(p.value))
		body[p.name] = p.value
	}
	fmt.Fprintf(&b, "resource_metadata=%s", quote(a.metadataURL))
	h := w.Header()
	h.Set("WWW-Authenticate", b.String())
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	if _, ok := body["error"]; !ok {
		body["error"] = "unauthorized"
		body["error_description"] = "this resource needs a bearer access token in the Authorization header"
	}
	_ = json.NewEncoder(w).Encode(body)
}

// quote makes an RFC 9110 quoted-string. Values are ours (never a token),
// but escape anyway.
func quote(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`)
	return `"` + r.Replace(s) + `"`
}

// MetadataURL returns where RFC 9728 §3.1 puts the metadata of resource:
// the well-known path inserted between host and path.
func MetadataURL(resource string) string {
	u, err := url.Parse(resource)
	if err != nil || u.Host == "" {
		return ""
	}
	path := strings.TrimSuffix(u.EscapedPath(), "/")
	return u.Scheme + "://" + u.Host + "/.well-known/oauth-protected-resource" + path
}
