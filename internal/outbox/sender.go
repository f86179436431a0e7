package outbox

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/wneessen/go-mail"
	"github.com/wneessen/go-mail/smtp"
)

// Sender delivers one message.
type Sender interface {
	Send(ctx context.Context, m *mail.Msg) error
}

// SMTP sends through an SMTP server, keeping its connections open between messages: a
// message goes on an idle connection when there is one (after the RSET that ended the last
// message on it, go-mail's), else on a new one (connect, EHLO, STARTTLS, AUTH). Each sender
// holds at most as many connections as it sends messages at once (the outbox's workers), each
// back in the idle set once its message is accepted. A connection is closed, and never used
// again, after any error on it (a 421 included), after IdleTimeout unused, and once it is
// ConnLifetime old; a reused connection that the server dropped meanwhile fails at MAIL FROM,
// before any of the message went, and the message is sent at once on a new one. Close closes
// the idle connections.
type SMTP struct {
	c *mail.Client // the server and its settings; each connection is a *smtp.Client of its own
	// idleTimeout is IdleTimeout; the tests shorten it (export_test.go).
	idleTimeout time.Duration

	mu   sync.Mutex
	idle []*conn // most recently used last
}

// conn is one open connection to the server.
type conn struct {
	c      *smtp.Client
	opened time.Time
	timer  *time.Timer // closes it when it has stayed idle for IdleTimeout
}

// IdleTimeout is how long a connection may wait unused before the sender closes it: less than
// the five minutes RFC 5321 (§4.5.3.2.7) lets a server wait for a command, so that the server
// rarely closes one first. ConnLifetime is how long the sender uses one connection: a relay
// that balances its load by connection (or limits a session's messages) sees new ones.
const (
	IdleTimeout  = 30 * time.Second
	ConnLifetime = 5 * time.Minute
)

// quitTimeout bounds the QUIT that closes a connection.
const quitTimeout = 5 * time.Second

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
	// No NOOP before each message: a connection the server dropped fails at MAIL FROM just as
	// well, and Send dials again then.
	opts = append(opts, mail.WithoutNoop())
	c, err := mail.NewClient(u.Hostname(), opts...)
	if err != nil {
		return nil, fmt.Errorf("smtp: %w", err)
	}
	return &SMTP{c: c, idleTimeout: IdleTimeout}, nil
}

// Send delivers m on an idle connection, or a new one. It is safe to call concurrently.
func (s *SMTP) Send(ctx context.Context, m *mail.Msg) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	c := s.take()
	if c != nil {
		err := s.c.SendWithSMTPClient(c.c, m)
		if err == nil || m.IsDelivered() || !stale(err) {
			return s.after(c, m, err)
		}
		// The server closed the idle connection (a timeout, a 421) before MAIL FROM was
		// answered: nothing of m went; send it on a new connection.
		s.discard(c)
	}
	cl, err := s.c.DialToSMTPClientWithContext(ctx)
	if err != nil {
		return fmt.Errorf("dial failed: %w", err)
	}
	c = &conn{c: cl, opened: time.Now()}
	return s.after(c, m, s.c.SendWithSMTPClient(cl, m))
}

// stale reports whether err, from a reused connection, is the server's having closed it
// before this message: the MAIL FROM that starts it failed.
func stale(err error) bool {
	se, ok := errors.AsType[*mail.SendError](err)
	return ok && (se.Reason == mail.ErrSMTPMailFrom || se.Reason == mail.ErrConnCheck)
}

// after keeps c for the next message when m went on it without error, or closes it; it
// returns what Send does. A message the server accepted is sent, whatever failed after its
// DATA (the RSET): reporting that as a failure would have it sent again.
func (s *SMTP) after(c *conn, m *mail.Msg, err error) error {
	switch {
	case err == nil:
		s.put(c)
		return nil
	case m.IsDelivered():
		s.discard(c)
		return nil
	default:
		s.discard(c)
		return err
	}
}

// take returns the most recently used idle connection, or nil.
func (s *SMTP) take() *conn {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := len(s.idle)
	if n == 0 {
		return nil
	}
	c := s.idle[n-1]
	s.idle[n-1] = nil
	s.idle = s.idle[:n-1]
	c.timer.Stop()
	return c
}

// put makes c idle, to be closed if no message takes it within IdleTimeout; one ConnLifetime
// old is closed at once.
func (s *SMTP) put(c *conn) {
	if time.Since(c.opened) >= ConnLifetime {
		s.discard(c)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	c.timer = time.AfterFunc(s.idleTimeout, func() { s.expire(c) })
	s.idle = append(s.idle, c)
}

// expire closes c if it is still idle (a message may have taken it since its timer fired).
func (s *SMTP) expire(c *conn) {
	s.mu.Lock()
	i := slices.Index(s.idle, c)
	if i >= 0 {
		s.idle = slices.Delete(s.idle, i, i+1)
	}
	s.mu.Unlock()
	if i >= 0 {
		s.discard(c)
	}
}

// discard closes c: QUIT when the server still listens, then the socket.
func (s *SMTP) discard(c *conn) {
	if c.c.HasConnection() && c.c.UpdateDeadline(quitTimeout) == nil {
		_ = c.c.Quit()
	}
	_ = c.c.Close()
}

// Close closes the idle connections (the outbox's Run does once it has stopped). The sender
// stays usable: a later Send opens a new one.
func (s *SMTP) Close() error {
	s.mu.Lock()
	idle := s.idle
	s.idle = nil
	s.mu.Unlock()
	for _, c := range idle {
		c.timer.Stop()
		s.discard(c)
	}
	return nil
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
