package outbox_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"math/big"
	"net"
	"testing"
	"time"

	"github.com/wneessen/go-mail"

	"github.com/cobranca/cobranca/internal/outbox"
	"github.com/cobranca/cobranca/internal/smtptest"
)

// testCert returns a server certificate for 127.0.0.1 and a client configuration trusting it.
func testCert(t *testing.T) (server, client *tls.Config) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "127.0.0.1"},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}}},
		&tls.Config{RootCAs: pool, ServerName: "127.0.0.1"}
}

func testMsg(t *testing.T) *mail.Msg {
	t.Helper()
	m := mail.NewMsg()
	if err := m.From("cobranca@cobranca.test"); err != nil {
		t.Fatal(err)
	}
	if err := m.To(msg.To); err != nil {
		t.Fatal(err)
	}
	m.Subject(msg.Subject)
	m.SetMessageIDWithValue("1.outbox@cobranca.test")
	m.SetBodyString(mail.TypeTextPlain, msg.Text)
	return m
}

// TestSMTPTLS: smtp:// sends only after STARTTLS, and never in plain text to a server that
// does not offer it; smtps:// speaks TLS from the start; starttls=off is the explicit way to a
// plain relay.
func TestSMTPTLS(t *testing.T) {
	serverTLS, clientTLS := testCert(t)
	for _, tc := range []struct {
		name     string
		url      func(addr string) string
		tls      *tls.Config // the server's; nil: no TLS offered
		implicit bool
		sent     bool
	}{
		{"STARTTLS", func(a string) string { return "smtp://" + a }, serverTLS, false, true},
		{"STARTTLS required, not offered", func(a string) string { return "smtp://" + a }, nil, false, false},
		{"implicit TLS", func(a string) string { return "smtps://" + a }, serverTLS, true, true},
		{"plain relay, opted out", func(a string) string { return "smtp://" + a + "?starttls=off" }, nil, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := smtptest.Start(t, smtptest.Options{TLS: tc.tls, Implicit: tc.implicit})
			snd, err := outbox.NewSMTP(tc.url(s.Addr()), clientTLS)
			if err != nil {
				t.Fatal(err)
			}
			err = snd.Send(context.Background(), testMsg(t))
			if got := len(s.Messages()); (err == nil) != tc.sent || got != map[bool]int{true: 1}[tc.sent] {
				t.Fatalf("Send = %v, server received %d; want sent=%v", err, got, tc.sent)
			}
			if tc.sent && s.Messages()[0].TLS != (tc.tls != nil) {
				t.Errorf("received over TLS: %v, want %v", s.Messages()[0].TLS, tc.tls != nil)
			}
		})
	}
}
