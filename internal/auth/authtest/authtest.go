// Package authtest helps tests configure internal/auth outside development
// mode.
package authtest

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"testing"
)

// IssuerKeyFile writes a fresh issuer's Ed25519 public key as PEM, for
// COBRANCA_JWT_PUBLIC_KEY (auth.Config.PublicKeyFile), in the test's
// temporary directory, and returns its path. Nobody holds the private key:
// an Authenticator trusting it accepts no token at all.
func IssuerKeyFile(t testing.TB) string {
	t.Helper()
	pub, _, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "issuer.pem")
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}
