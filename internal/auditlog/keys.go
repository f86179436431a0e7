package auditlog

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"os"
	"strings"

	"github.com/cobranca/cobranca/internal/keyfile"
)

// LoadOrCreateDigestKey reads the audit key kept at path (hex), creating a random 32-byte key
// there (mode 0600) when the file does not exist. For development: production passes the key
// in configuration.
func LoadOrCreateDigestKey(path string) ([]byte, error) {
	b, err := keyfile.LoadOrCreate(path, func() ([]byte, error) {
		key := make([]byte, 32)
		rand.Read(key)
		return []byte(hex.EncodeToString(key) + "\n"), nil
	})
	if err != nil {
		return nil, fmt.Errorf("audit digest key: %w", err)
	}
	return parseDigestKey(path, b)
}

// LoadDigestKey reads the audit key kept at path (hex) and never creates one: verification
// must not mint the key it then trusts. A missing file is an error wrapping fs.ErrNotExist.
func LoadDigestKey(path string) ([]byte, error) {
	b, err := keyfile.Read(path)
	if err != nil {
		return nil, fmt.Errorf("audit digest key: %w", err)
	}
	return parseDigestKey(path, b)
}

func parseDigestKey(path string, b []byte) ([]byte, error) {
	key, err := hex.DecodeString(strings.TrimSpace(string(b)))
	if err != nil || len(key) < MinKeyLen {
		return nil, fmt.Errorf("audit digest key %s: want at least %d bytes in hex", path, MinKeyLen)
	}
	return key, nil
}

// LoadOrCreateSigningKey reads the Ed25519 checkpoint signing key at path (PEM, PKCS #8),
// creating one there (mode 0600) when the file does not exist.
func LoadOrCreateSigningKey(path string) (ed25519.PrivateKey, error) {
	key, err := keyfile.LoadOrCreateEd25519(path)
	if err != nil {
		return nil, fmt.Errorf("audit signing key: %w", err)
	}
	return key, nil
}

// LoadVerifyKey returns the Ed25519 key that checks checkpoints, from a PEM
// file holding either the public key ("PUBLIC KEY", what an auditor keeps
// off the box) or the signing key itself ("PRIVATE KEY"). It never creates
// a key: verification must not mint the key it then trusts.
func LoadVerifyKey(path string) (ed25519.PublicKey, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("checkpoint key: %w", err)
	}
	blk, _ := pem.Decode(b)
	if blk == nil {
		return nil, fmt.Errorf("checkpoint key %s: not PEM", path)
	}
	var k any
	switch blk.Type {
	case "PUBLIC KEY":
		k, err = x509.ParsePKIXPublicKey(blk.Bytes)
	case "PRIVATE KEY":
		k, err = x509.ParsePKCS8PrivateKey(blk.Bytes)
		if priv, ok := k.(ed25519.PrivateKey); ok && err == nil {
			k = priv.Public()
		}
	default:
		return nil, fmt.Errorf("checkpoint key %s: want a PEM PUBLIC KEY or PRIVATE KEY, got %s", path, blk.Type)
	}
	if err != nil {
		return nil, fmt.Errorf("checkpoint key %s: %w", path, err)
	}
	pub, ok := k.(ed25519.PublicKey)
	if !ok {
		return nil, fmt.Errorf("checkpoint key %s: not an Ed25519 key", path)
	}
	return pub, nil
}

// PublicKeyPEM is pub as a PEM PUBLIC KEY, for `cobranca audit pubkey`.
func PublicKeyPEM(pub ed25519.PublicKey) ([]byte, error) {
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}), nil
}
