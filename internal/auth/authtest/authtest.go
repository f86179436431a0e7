// Package authtest helps tests configure internal/auth outside development
// mode.
package authtest

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/cobranca/cobranca/internal/auth"
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

// Issuer is an OAuth authorization server for servers outside development mode
// (COBRANCA_ISSUER): it signs access tokens for resource with a key of its own and
// publishes the key as a JWK Set over HTTP (COBRANCA_JWKS_URL), as a real issuer does.
// Several servers configured with it accept the same tokens.
type Issuer struct {
	URL     string // the issuer identifier, the tokens' iss
	JWKSURL string
	signer  *auth.Authenticator
}

// NewIssuer starts an issuer of tokens for resource, until the test ends.
func NewIssuer(t testing.TB, resource string) *Issuer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + ln.Addr().String()
	// Development mode's key and claims are an issuer's: its tokens name base as iss and
	// resource as aud.
	signer, err := auth.New(context.Background(), auth.Config{DataDir: t.TempDir(), BaseURL: base, Resource: resource})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("GET "+auth.JWKSPath, signer.JWKSHandler())
	srv := httptest.NewUnstartedServer(mux)
	srv.Listener.Close()
	srv.Listener = ln
	srv.Start()
	t.Cleanup(srv.Close)
	return &Issuer{URL: base, JWKSURL: base + auth.JWKSPath, signer: signer}
}

// Mint signs an access token as opts describe.
func (i *Issuer) Mint(t testing.TB, opts auth.MintOptions) string {
	t.Helper()
	tok, err := i.signer.Mint(opts)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}
