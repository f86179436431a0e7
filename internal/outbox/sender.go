package outbox

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/wneessen/go-mail"
)

// Sender delivers one message.
type Sender interface {
	Send(ctx context.Context, m *mail.Msg) error
}

// SMTP sends through an SMTP server.
type SMTP struct{ c *mail.Client }

// ParseSMTPURL checks an SMTP URL: smtp://[user:pass@]host[:port] (STARTTLS required; port
// 587 by default) or smtps://… (implicit TLS; 465), with ?starttls=off for a local relay
// without TLS (smtp:// only). Errors never quote the URL: it may hold a password.
func ParseSMTPURL(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, errors.New("not a URL")
	}
	if u.Scheme != "smtp" && u.Scheme != "smtps" {
		return nil, errors.New("the scheme must be smtp or smtps")
	}
	if u.Hostname() == "" {
		return nil, errors.New("no host")
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return nil, errors.New("invalid port")
		}
	}
	if u.Path != "" && u.Path != "/" {
		return nil, errors.New("no path allowed")
	}
	q := u.Query()
	for k := range q {
		if k != "starttls" {
			return nil, fmt.Errorf("unknown parameter %q", k)
		}
	}
	switch q.Get("starttls") {
	case "", "required":
	case "off":
		if u.Scheme == "smtps" {
			return nil, errors.New("starttls=off applies to smtp:// only")
		}
	default:
		return nil, errors.New("starttls must be required or off")
	}
	return u, nil
}

// NewSMTP returns a sender for an SMTP URL (ParseSMTPURL). tlsConfig, when not nil, replaces
// the default (tests trust their own certificate with it).
func NewSMTP(raw string, tlsConfig *tls.Config) (*SMTP, error) {
	u, err := ParseSMTPURL(raw)
	if err != nil {
		return nil, fmt.Errorf("smtp url: %w", err)
	}
	opts := []mail.Option{}
	port := 587
	switch {
	case u.Scheme == "smtps":
		port = 465
		opts = append(opts, mail.WithSSL())
	case u.Query().Get("starttls") == "off":
		opts = append(opts, mail.WithTLSPolicy(mail.NoTLS))
	default:
		opts = append(opts, mail.WithTLSPolicy(mail.TLSMandatory))
	}
	if p := u.Port(); p != "" {
		port, _ = strconv.Atoi(p)
	}
	opts = append(opts, mail.WithPort(port))
	if tlsConfig != nil {
		opts = append(opts, mail.WithTLSConfig(tlsConfig))
	}
	if u.User != nil {
		pass, _ := u.User.Password()
		opts = append(opts, mail.WithSMTPAuth(mail.SMTPAuthAutoDiscover),
			mail.WithUsername(u.User.Username()), mail.WithPassword(pass))
	}
	c, err := mail.NewClient(u.Hostname(), opts...)
	if err != nil {
		return nil, fmt.Errorf("smtp: %w", err)
	}
	return &SMTP{c: c}, nil
}

// Send delivers m on a connection of its own.
func (s *SMTP) Send(ctx context.Context, m *mail.Msg) error {
	return s.c.DialAndSendWithContext(ctx, m)
}

// Dir writes each message as an RFC 5322 file, <Message-ID>.eml, in a directory: delivery in
// development, where no SMTP server is configured.
type Dir struct{ Path string }

// Send writes m to the directory, replacing the file of an earlier attempt.
func (d Dir) Send(_ context.Context, m *mail.Msg) error {
	ids := m.GetGenHeader(mail.HeaderMessageID)
	if len(ids) != 1 {
		return errors.New("eml: the message has no Message-ID")
	}
	name := strings.Trim(ids[0], "<>") + ".eml"
	if strings.ContainsAny(name, `/\`) {
		return errors.New("eml: invalid Message-ID")
	}
	var b strings.Builder
	if _, err := m.WriteTo(&b); err != nil {
		return fmt.Errorf("eml: %w", err)
	}
	if err := os.MkdirAll(d.Path, 0o700); err != nil {
		return fmt.Errorf("eml: %w", err)
	}
	// Written whole or not at all: a temporary file renamed over the name.
	f, err := os.CreateTemp(d.Path, ".tmp-*.eml")
	if err != nil {
		return fmt.Errorf("eml: %w", err)
	}
	_, err = f.WriteString(b.String())
	err = errors.Join(err, f.Sync(), f.Close())
	if err == nil {
		err = os.Rename(f.Name(), filepath.Join(d.Path, name))
	}
	if err != nil {
		_ = os.Remove(f.Name())
		return fmt.Errorf("eml: %w", err)
	}
	return nil
}
