package auditlog

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// LoadOrCreateDigestKey reads the digest key kept at path (hex), creating a random 32-byte key
// there (mode 0600) when the file does not exist. For development: production passes the key
// in configuration.
func LoadOrCreateDigestKey(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		key := make([]byte, 32)
		rand.Read(key)
		if err := writeNew(path, []byte(hex.EncodeToString(key)+"\n")); err != nil {
			if errors.Is(err, fs.ErrExist) { // another process made it first
				return LoadOrCreateDigestKey(path)
			}
			return nil, fmt.Errorf("audit digest key: %w", err)
		}
		return key, nil
	}
	if err != nil {
		return nil, fmt.Errorf("audit digest key: %w", err)
	}
	key, err := hex.DecodeString(strings.TrimSpace(string(b)))
	if err != nil || len(key) < MinKeyLen {
		return nil, fmt.Errorf("audit digest key %s: want at least %d bytes in hex", path, MinKeyLen)
	}
	return key, nil
}

// LoadOrCreateSigningKey reads the Ed25519 checkpoint signing key at path (PEM, PKCS #8),
// creating one there (mode 0600) when the file does not exist.
func LoadOrCreateSigningKey(path string) (ed25519.PrivateKey, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		_, key, err := ed25519.GenerateKey(rand.Reader)
		if err != nil {
			return nil, err
		}
		der, err := x509.MarshalPKCS8PrivateKey(key)
		if err != nil {
			return nil, err
		}
		if err := writeNew(path, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})); err != nil {
			if errors.Is(err, fs.ErrExist) {
				return LoadOrCreateSigningKey(path)
			}
			return nil, fmt.Errorf("audit signing key: %w", err)
		}
		return key, nil
	}
	if err != nil {
		return nil, fmt.Errorf("audit signing key: %w", err)
	}
	blk, _ := pem.Decode(b)
	if blk == nil || blk.Type != "PRIVATE KEY" {
		return nil, fmt.Errorf("audit signing key %s: want a PEM PRIVATE KEY", path)
	}
	k, err := x509.ParsePKCS8PrivateKey(blk.Bytes)
	if err != nil {
		return nil, fmt.Errorf("audit signing key %s: %w", path, err)
	}
	key, ok := k.(ed25519.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("audit signing key %s: not an Ed25519 key", path)
	}
	return key, nil
}

// writeNew creates path with data, failing with fs.ErrExist if it is there already. The file
// appears complete or not at all (written aside, then hard-linked into place), so a process
// racing to create the same key reads the winner's.
func writeNew(path string, data []byte) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, ".key-*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Link(f.Name(), path)
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
