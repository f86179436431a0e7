package auth

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"os"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"
)

// Signing algorithms accepted, and the key type each needs. Never none,
// never HMAC: every key here is public.
const (
	algRS256 = "RS256"
	algES256 = "ES256"
	algEdDSA = "EdDSA"
)

var allowedAlgs = []string{algRS256, algES256, algEdDSA}

const (
	minRSABits   = 2048
	maxJWKSBytes = 1 << 20
	maxJWKSKeys  = 100
)

var errUnknownKey = errors.New("no key with this kid")

// keySource finds the public key that verifies a token.
type keySource interface {
	publicKey(ctx context.Context, kid string) (crypto.PublicKey, error)
}

// checkKeyAlg reports whether key may verify alg: the key type must match
// the algorithm, so a token cannot pick how its own key is used.
func checkKeyAlg(key crypto.PublicKey, alg string) error {
	switch k := key.(type) {
	case *rsa.PublicKey:
		if alg == algRS256 && k.N.BitLen() >= minRSABits {
			return nil
		}
	case *ecdsa.PublicKey:
		if alg == algES256 && k.Curve == elliptic.P256() {
			return nil
		}
	case ed25519.PublicKey:
		if alg == algEdDSA {
			return nil
		}
	}
	return fmt.Errorf("key type %T does not match alg %q", key, alg)
}

// staticKey is one key from a PEM file (or the development key); the
// token's kid does not matter.
type staticKey struct{ key crypto.PublicKey }

func (s staticKey) publicKey(context.Context, string) (crypto.PublicKey, error) { return s.key, nil }

// loadPublicKeyFile reads a PEM "PUBLIC KEY" (PKIX) or "CERTIFICATE".
func loadPublicKeyFile(path string) (crypto.PublicKey, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	block, _ := pem.Decode(data)
	if block == nil {
		return nil, errors.New("no PEM block")
	}
	var key any
	switch block.Type {
	case "PUBLIC KEY":
		key, err = x509.ParsePKIXPublicKey(block.Bytes)
	case "CERTIFICATE":
		var cert *x509.Certificate
		cert, err = x509.ParseCertificate(block.Bytes)
		if err == nil {
			key = cert.PublicKey
		}
	default:
		return nil, fmt.Errorf("PEM block %q: want PUBLIC KEY or CERTIFICATE", block.Type)
	}
	if err != nil {
		return nil, err
	}
	for _, alg := range allowedAlgs {
		if checkKeyAlg(key, alg) == nil {
			return key, nil
		}
	}
	return nil, fmt.Errorf("unsupported key type %T (want RSA ≥ %d bits, EC P-256 or Ed25519)", key, minRSABits)
}

// jwk is the subset of RFC 7517/7518/8037 this server reads.
type jwk struct {
	Kty string `json:"kty"`
	Kid string `json:"kid"`
	Use string `json:"use,omitempty"`
	Alg string `json:"alg,omitempty"`
	Crv string `json:"crv,omitempty"`
	N   string `json:"n,omitempty"`
	E   string `json:"e,omitempty"`
	X   string `json:"x,omitempty"`
	Y   string `json:"y,omitempty"`
}

type jwkSet struct {
	Keys []json.RawMessage `json:"keys"`
}

func b64(s string) ([]byte, error) { return base64.RawURLEncoding.DecodeString(s) }

// publicKey decodes k. It refuses private keys so that a misconfigured
// issuer does not make us hold its secrets.
func (k jwk) publicKey() (crypto.PublicKey, error) {
	switch k.Kty {
	case "RSA":
		n, err1 := b64(k.N)
		e, err2 := b64(k.E)
		if err := errors.Join(err1, err2); err != nil {
			return nil, err
		}
		if len(e) == 0 || len(e) > 4 {
			return nil, errors.New("bad RSA exponent")
		}
		key := &rsa.PublicKey{N: new(big.Int).SetBytes(n), E: int(new(big.Int).SetBytes(e).Int64())}
		if key.N.BitLen() < minRSABits {
			return nil, fmt.Errorf("RSA key of %d bits is too small", key.N.BitLen())
		}
		return key, nil
	case "EC":
		if k.Crv != "P-256" {
			return nil, fmt.Errorf("unsupported curve %q", k.Crv)
		}
		x, err1 := b64(k.X)
		y, err2 := b64(k.Y)
		if err := errors.Join(err1, err2); err != nil {
			return nil, err
		}
		if len(x) != 32 || len(y) != 32 {
			return nil, errors.New("bad P-256 coordinates")
		}
		// ParseUncompressedPublicKey checks the point is on the curve.
		raw := append(append([]byte{4}, x...), y...)
		return ecdsa.ParseUncompressedPublicKey(elliptic.P256(), raw)
	case "OKP":
		if k.Crv != "Ed25519" {
			return nil, fmt.Errorf("unsupported curve %q", k.Crv)
		}
		x, err := b64(k.X)
		if err != nil {
			return nil, err
		}
		if len(x) != ed25519.PublicKeySize {
			return nil, errors.New("bad Ed25519 key size")
		}
		return ed25519.PublicKey(x), nil
	}
	return nil, fmt.Errorf("unsupported kty %q", k.Kty)
}

// parseJWKS keeps the usable signing keys of a JWK Set, by kid. Keys it
// cannot use are skipped, so one exotic key does not take down the rest.
func parseJWKS(data []byte) (map[string]crypto.PublicKey, error) {
	var set jwkSet
	if err := json.Unmarshal(data, &set); err != nil {
		return nil, fmt.Errorf("decode JWKS: %w", err)
	}
	keys := make(map[string]crypto.PublicKey)
	for _, raw := range set.Keys {
		var k jwk
		if json.Unmarshal(raw, &k) != nil || k.Kid == "" || (k.Use != "" && k.Use != "sig") {
			continue
		}
		var priv struct {
			D string `json:"d"`
		}
		if json.Unmarshal(raw, &priv) != nil || priv.D != "" {
			continue
		}
		key, err := k.publicKey()
		if err != nil {
			continue
		}
		if k.Alg != "" && checkKeyAlg(key, k.Alg) != nil {
			continue
		}
		keys[k.Kid] = key
		if len(keys) == maxJWKSKeys {
			break
		}
	}
	if len(keys) == 0 {
		return nil, errors.New("JWKS has no usable signing keys")
	}
	return keys, nil
}

// jwksCache holds the issuer's keys. An unknown kid triggers a fetch, at
// most one per refreshInterval; concurrent callers share that fetch. Keys
// older than maxAge are fetched again (keeping the old ones if that fails)
// so that keys the issuer withdraws stop working.
type jwksCache struct {
	url             string
	client          *http.Client
	now             func() time.Time
	refreshInterval time.Duration
	maxAge          time.Duration

	group singleflight.Group

	mu          sync.Mutex
	keys        map[string]crypto.PublicKey
	fetched     time.Time // last successful fetch
	lastAttempt time.Time // last fetch, successful or not
}

func (c *jwksCache) publicKey(ctx context.Context, kid string) (crypto.PublicKey, error) {
	if kid == "" {
		return nil, errors.New("token has no kid")
	}
	c.mu.Lock()
	key, ok := c.keys[kid]
	fresh := !c.fetched.IsZero() && c.now().Sub(c.fetched) < c.maxAge
	c.mu.Unlock()
	if ok && fresh {
		return key, nil
	}
	if err := c.refresh(ctx); err != nil && !ok {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if key, ok := c.keys[kid]; ok {
		return key, nil
	}
	return nil, errUnknownKey
}

// refresh fetches the JWKS unless a fetch started less than
// refreshInterval ago. Concurrent calls share one fetch.
func (c *jwksCache) refresh(ctx context.Context) error {
	ch := c.group.DoChan("jwks", func() (any, error) {
		c.mu.Lock()
		now := c.now()
		if !c.lastAttempt.IsZero() && now.Sub(c.lastAttempt) < c.refreshInterval {
			c.mu.Unlock()
			return nil, nil
		}
		c.lastAttempt = now
		c.mu.Unlock()

		// The fetch serves every waiter, so the first caller's
		// cancellation must not fail the others.
		fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		keys, err := c.fetch(fctx)
		if err != nil {
			return nil, err
		}
		c.mu.Lock()
		c.keys, c.fetched = keys, now
		c.mu.Unlock()
		return nil, nil
	})
	select {
	case r := <-ch:
		return r.Err
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (c *jwksCache) fetch(ctx context.Context) (map[string]crypto.PublicKey, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.url, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/jwk-set+json, application/json")
	resp, err := c.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("fetch JWKS: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("fetch JWKS: status %s", resp.Status)
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxJWKSBytes+1))
	if err != nil {
		return nil, fmt.Errorf("fetch JWKS: %w", err)
	}
	if len(data) > maxJWKSBytes {
		return nil, errors.New("fetch JWKS: document too large")
	}
	return parseJWKS(data)
}

// thumbprint is the RFC 7638 JWK thumbprint of an Ed25519 key, used as the
// development key's kid.
func thumbprint(pub ed25519.PublicKey) string {
	x := base64.RawURLEncoding.EncodeToString(pub)
	sum := sha256.Sum256([]byte(`{"crv":"Ed25519","kty":"OKP","x":"` + x + `"}`))
	return base64.RawURLEncoding.EncodeToString(sum[:])
}
