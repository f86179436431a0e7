package auth

import (
	"crypto/ed25519"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/cobranca/cobranca/internal/keyfile"
)

// devKeyFile is the development signing key, under COBRANCA_DATA_DIR.
const devKeyFile = "dev-signing-key.pem"

// devIssuer signs development tokens with a local Ed25519 key.
type devIssuer struct {
	key  ed25519.PrivateKey
	kid  string
	path string
}

// loadDevIssuer reads the development key, creating it on first start
// (keyfile: mode 0600, atomic, the same key for processes starting together).
func loadDevIssuer(cfg Config) (*devIssuer, error) {
	path := filepath.Join(cfg.DataDir, devKeyFile)
	key, err := keyfile.LoadOrCreateEd25519(path)
	if err != nil {
		return nil, fmt.Errorf("development signing key: %w", err)
	}
	return &devIssuer{key: key, kid: thumbprint(key.Public().(ed25519.PublicKey)), path: path}, nil
}

func (d *devIssuer) jwks() any {
	type okp struct {
		Kty string `json:"kty"`
		Crv string `json:"crv"`
		X   string `json:"x"`
		Kid string `json:"kid"`
		Use string `json:"use"`
		Alg string `json:"alg"`
	}
	pub := d.key.Public().(ed25519.PublicKey)
	return struct {
		Keys []okp `json:"keys"`
	}{[]okp{{"OKP", "Ed25519", base64.RawURLEncoding.EncodeToString(pub), d.kid, "sig", algEdDSA}}}
}

// MintOptions describe a development token.
type MintOptions struct {
	Subject string   // sub; required
	Scopes  []string // scope
	// Agent, when set, makes an agent token: act {"sub": Agent} and
	// client_id Agent.
	Agent string
	ACR   string        // acr
	TTL   time.Duration // default 1h
	// ClientID, when set, is the client_id claim (the client the
	// development authorization server issued the token to); otherwise it
	// is Agent for an agent and DevClientID for a person.
	ClientID string
	// AuthTime is when the user signed in (auth_time); zero means now.
	AuthTime time.Time
	// Roles, when any, are written as a JSON array in the roles claim
	// (Config.RolesClaim).
	Roles []string
}

// DevClientID is the client_id of development tokens minted for humans.
const DevClientID = "cobranca-dev"

// DevWebClientID is the client the development authorization server knows
// without registration: cobranca's own web pages (a public client using
// PKCE, redirected to BaseURL + "/signin/callback"). COBRANCA_OIDC_CLIENT_ID
// defaults to it in development mode.
const DevWebClientID = "cobranca-web"

// ErrNotDevMode is returned by Mint outside development mode.
var ErrNotDevMode = errors.New("auth: tokens can be minted only in development mode (COBRANCA_ISSUER unset)")

// Mint signs a development access token this Authenticator accepts.
func (a *Authenticator) Mint(opts MintOptions) (string, error) {
	if a.dev == nil {
		return "", ErrNotDevMode
	}
	if strings.TrimSpace(opts.Subject) == "" {
		return "", errors.New("auth: mint: subject is required")
	}
	// A token the verifier would refuse is not minted: the same identity
	// rules, with the same limits, apply to each claim Mint writes.
	for _, f := range []struct {
		name, v string
		limit   int
	}{
		{"sub", opts.Subject, MaxIdentityBytes},
		{"act.sub", opts.Agent, MaxClientIDBytes},
		{"acr", opts.ACR, MaxIdentityBytes},
		{"client_id", opts.ClientID, MaxClientIDBytes},
	} {
		if f.v == "" {
			continue
		}
		if err := checkIdentity(f.name, f.v, f.limit); err != nil {
			return "", fmt.Errorf("auth: mint: %w", err)
		}
	}
	for _, sc := range opts.Scopes {
		if err := checkScopeToken(sc); err != nil {
			return "", fmt.Errorf("auth: mint: scope: %w", err)
		}
	}
	if err := checkRoles(opts.Roles); err != nil {
		return "", fmt.Errorf("auth: mint: role: %w", err)
	}
	if opts.TTL < 0 {
		return "", errors.New("auth: mint: ttl must be positive")
	}
	if opts.TTL == 0 {
		opts.TTL = time.Hour
	}
	now := a.cfg.Now().Truncate(time.Second)
	authTime := now
	if !opts.AuthTime.IsZero() {
		authTime = opts.AuthTime.Truncate(time.Second)
	}
	claims := jwt.MapClaims{
		"iss":       a.cfg.Issuer,
		"sub":       opts.Subject,
		"aud":       a.cfg.Resource,
		"iat":       now.Unix(),
		"exp":       now.Add(opts.TTL).Unix(),
		"auth_time": authTime.Unix(),
		"jti":       newJTI(),
		"client_id": DevClientID,
	}
	if len(opts.Scopes) > 0 {
		claims["scope"] = strings.Join(opts.Scopes, " ")
	}
	if opts.Agent != "" {
		claims["act"] = map[string]string{"sub": opts.Agent}
		claims["client_id"] = opts.Agent
	}
	if opts.ClientID != "" {
		claims["client_id"] = opts.ClientID
	}
	if opts.ACR != "" {
		claims["acr"] = opts.ACR
	}
	a.putRoles(claims, opts.Roles)
	return a.dev.sign(claims, "at+jwt")
}

// putRoles writes roles, when any, in the configured roles claim.
func (a *Authenticator) putRoles(claims jwt.MapClaims, roles []string) {
	if len(roles) > 0 {
		claims[a.cfg.RolesClaim] = roles
	}
}

func newJTI() string {
	id := make([]byte, 16)
	_, _ = rand.Read(id)
	return base64.RawURLEncoding.EncodeToString(id)
}

// sign signs claims with the development key, under typ.
func (d *devIssuer) sign(claims jwt.MapClaims, typ string) (string, error) {
	t := jwt.NewWithClaims(jwt.SigningMethodEdDSA, claims)
	t.Header["kid"] = d.kid
	t.Header["typ"] = typ
	return t.SignedString(d.key)
}

// IDTokenOptions describe a development OpenID Connect ID token: what the
// development authorization server says about a sign-in to the client
// that asked for it.
type IDTokenOptions struct {
	Subject  string    // sub; required
	ClientID string    // aud and azp; required
	Nonce    string    // nonce, echoed from the authorization request
	ACR      string    // acr
	AuthTime time.Time // auth_time; required
	// Agent, when set, says the sign-in was an agent's acting for Subject:
	// act {"sub": Agent}.
	Agent string
	TTL   time.Duration // default 5 minutes
	Roles []string      // the roles claim (Config.RolesClaim), as MintOptions.Roles
}

// idTokenAMR is the ID token's amr (RFC 8176): the development sign-in
// page tests only that someone is there and submits it.
var idTokenAMR = []string{"user"}

// MintIDToken signs a development ID token (OpenID Connect Core §2) for a
// client of the development authorization server, with the key of Mint's
// tokens; it is no access token (its aud is the client, not this
// resource), so the Authenticator refuses it as one.
func (a *Authenticator) MintIDToken(opts IDTokenOptions) (string, error) {
	if a.dev == nil {
		return "", ErrNotDevMode
	}
	if opts.AuthTime.IsZero() {
		return "", errors.New("auth: mint ID token: auth time is required")
	}
	for _, f := range []struct {
		name, v  string
		limit    int
		required bool
	}{
		{"sub", opts.Subject, MaxIdentityBytes, true},
		{"aud", opts.ClientID, MaxClientIDBytes, true},
		{"act.sub", opts.Agent, MaxClientIDBytes, false},
		{"acr", opts.ACR, MaxIdentityBytes, false},
		{"nonce", opts.Nonce, MaxIdentityBytes, false},
	} {
		if f.v == "" && !f.required {
			continue
		}
		if err := checkIdentity(f.name, f.v, f.limit); err != nil {
			return "", fmt.Errorf("auth: mint ID token: %w", err)
		}
	}
	if err := checkRoles(opts.Roles); err != nil {
		return "", fmt.Errorf("auth: mint ID token: role: %w", err)
	}
	ttl := opts.TTL
	if ttl <= 0 {
		ttl = 5 * time.Minute
	}
	now := a.cfg.Now().Truncate(time.Second)
	claims := jwt.MapClaims{
		"iss":       a.cfg.Issuer,
		"sub":       opts.Subject,
		"aud":       opts.ClientID,
		"azp":       opts.ClientID,
		"iat":       now.Unix(),
		"exp":       now.Add(ttl).Unix(),
		"auth_time": opts.AuthTime.Truncate(time.Second).Unix(),
		"amr":       idTokenAMR,
	}
	if opts.Nonce != "" {
		claims["nonce"] = opts.Nonce
	}
	if opts.ACR != "" {
		claims["acr"] = opts.ACR
	}
	if opts.Agent != "" {
		claims["act"] = map[string]string{"sub": opts.Agent}
	}
	a.putRoles(claims, opts.Roles)
	return a.dev.sign(claims, "JWT")
}

// DevSecret derives a 32-byte secret for purpose from the development
// signing key (HKDF-SHA256), so the development authorization server can
// MAC what it hands a browser without a second key to keep, and without
// the signing key leaving this package. Outside development mode it
// returns ErrNotDevMode.
func (a *Authenticator) DevSecret(purpose string) ([]byte, error) {
	if a.dev == nil {
		return nil, ErrNotDevMode
	}
	return hkdf.Key(sha256.New, a.dev.key.Seed(), nil, "cobranca/dev/"+purpose, 32)
}
