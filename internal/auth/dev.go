package auth

import (
	"crypto/ed25519"
	"crypto/rand"
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
}

// DevClientID is the client_id of development tokens minted for humans.
const DevClientID = "cobranca-dev"

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
	if opts.TTL < 0 {
		return "", errors.New("auth: mint: ttl must be positive")
	}
	if opts.TTL == 0 {
		opts.TTL = time.Hour
	}
	now := a.cfg.Now().Truncate(time.Second)
	id := make([]byte, 16)
	_, _ = rand.Read(id)
	claims := jwt.MapClaims{
		"iss":       a.cfg.Issuer,
		"sub":       opts.Subject,
		"aud":       a.cfg.Resource,
		"iat":       now.Unix(),
		"exp":       now.Add(opts.TTL).Unix(),
		"auth_time": now.Unix(),
		"jti":       base64.RawURLEncoding.EncodeToString(id),
		"client_id": DevClientID,
	}
	if len(opts.Scopes) > 0 {
		claims["scope"] = strings.Join(opts.Scopes, " ")
	}
	if opts.Agent != "" {
		claims["act"] = map[string]string{"sub": opts.Agent}
		claims["client_id"] = opts.Agent
	}
	if opts.ACR != "" {
		claims["acr"] = opts.ACR
	}
	t := jwt.NewWithClaims(jwt.SigningMethodEdDSA, claims)
	t.Header["kid"] = a.dev.kid
	t.Header["typ"] = "at+jwt"
	return t.SignedString(a.dev.key)
}
