package auth

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// devKeyFile is the development signing key, under COBRANCA_DATA_DIR.
const devKeyFile = "dev-signing-key.pem"

// devIssuer signs development tokens with a local Ed25519 key.
type devIssuer struct {
	key  ed25519.PrivateKey
	kid  string
	path string
}

// loadDevIssuer reads the development key, creating it on first start.
func loadDevIssuer(cfg Config) (*devIssuer, error) {
	path := filepath.Join(cfg.DataDir, devKeyFile)
	key, err := readDevKey(path)
	if errors.Is(err, fs.ErrNotExist) {
		key, err = createDevKey(path)
	}
	if err != nil {
		return nil, err
	}
	return &devIssuer{key: key, kid: thumbprint(key.Public().(ed25519.PublicKey)), path: path}, nil
}

func readDevKey(path string) (ed25519.PrivateKey, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	block, _ := pem.Decode(data)
	if block == nil || block.Type != "PRIVATE KEY" {
		return nil, fmt.Errorf("%s: no PEM PRIVATE KEY", path)
	}
	k, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	key, ok := k.(ed25519.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("%s: not an Ed25519 key", path)
	}
	return key, nil
}

// createDevKey writes a new key atomically with mode 0600: to a temporary
// file in the same directory, synced, then linked into place. If another
// process won the race, its key is used.
func createDevKey(path string) (ed25519.PrivateKey, error) {
	_, key, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, err
	}
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, err
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	tmp, err := os.CreateTemp(dir, ".dev-signing-key-*")
	if err != nil {
		return nil, err
	}
	defer os.Remove(tmp.Name())
	// CreateTemp already uses 0600; Chmod makes it explicit whatever the umask.
	err = errors.Join(
		tmp.Chmod(0o600),
		pem.Encode(tmp, &pem.Block{Type: "PRIVATE KEY", Bytes: der}),
		tmp.Sync(),
		tmp.Close(),
	)
	if err != nil {
		return nil, err
	}
	// Link, unlike Rename, never replaces a key another process created.
	if err := os.Link(tmp.Name(), path); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return readDevKey(path)
		}
		return nil, err
	}
	return key, nil
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
