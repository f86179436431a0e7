// Package outboxtest is a real SMTP server (github.com/emersion/go-smtp) on a loopback port,
// and outboxes run for a test's length, for the tests of what sends mail: the outbox's own,
// the tools', the server's.
package outboxtest

import (
	"bytes"
	"context"
	"io"
	"mime"
	"mime/quotedprintable"
	"net"
	"net/mail"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/emersion/go-smtp"

	"github.com/cobranca/cobranca/internal/outbox"
	"github.com/cobranca/cobranca/internal/store"
)

// Received is one message the server accepted.
type Received struct {
	From, To  string
	MessageID string
	Subject   string // decoded (RFC 2047)
	Body      string // decoded (quoted-printable), lines ending in \n, trimmed
	TLS       bool   // the message came over TLS
}

// Server is an SMTP server speaking real SMTP on a loopback port, closed when the test ends.
type Server struct {
	// Srv is go-smtp's server, for a test that configures TLS before the first message.
	Srv    *smtp.Server
	mu     sync.Mutex
	got    []Received
	refuse []*smtp.SMTPError
	addr   string
}

// NewServer starts a Server.
func NewServer(t testing.TB) *Server {
	t.Helper()
	s := &Server{}
	srv := smtp.NewServer(s)
	srv.Domain = "localhost"
	srv.AllowInsecureAuth = true
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s.Srv, s.addr = srv, ln.Addr().String()
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return s
}

// Addr is the server's host:port.
func (s *Server) Addr() string { return s.addr }

// URL is the server's COBRANCA_SMTP_URL: plain SMTP, STARTTLS off (a local relay).
func (s *Server) URL() string { return "smtp://" + s.addr + "?starttls=off" }

// Messages returns the messages accepted so far, in order.
func (s *Server) Messages() []Received {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Received(nil), s.got...)
}

// Refuse has the server answer the next DATA commands with errs, in order, instead of
// accepting them; the reply quotes the recipient, as servers do.
func (s *Server) Refuse(errs ...*smtp.SMTPError) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.refuse = append(s.refuse, errs...)
}

// Refusing is how many refusals Refuse set are still to be answered.
func (s *Server) Refusing() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.refuse)
}

// WaitFor polls until the server accepted n messages, or fails the test after d.
func (s *Server) WaitFor(t testing.TB, n int, d time.Duration) []Received {
	t.Helper()
	for deadline := time.Now().Add(d); ; time.Sleep(20 * time.Millisecond) {
		if got := s.Messages(); len(got) >= n {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("the SMTP server received %d messages in %v, want %d", len(s.Messages()), d, n)
		}
	}
}

// NewSession is go-smtp's Backend.
func (s *Server) NewSession(c *smtp.Conn) (smtp.Session, error) { return &session{s: s, c: c}, nil }

type session struct {
	s        *Server
	c        *smtp.Conn
	from, to string
}

func (ss *session) Mail(from string, _ *smtp.MailOptions) error { ss.from = from; return nil }
func (ss *session) Rcpt(to string, _ *smtp.RcptOptions) error   { ss.to = to; return nil }
func (ss *session) Reset()                                      {}
func (ss *session) Logout() error                               { return nil }
func (ss *session) Data(r io.Reader) error {
	raw, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	ss.s.mu.Lock()
	defer ss.s.mu.Unlock()
	if len(ss.s.refuse) > 0 {
		e := *ss.s.refuse[0]
		ss.s.refuse = ss.s.refuse[1:]
		e.Message += " for " + ss.to // as servers do: the reply quotes the recipient
		return &e
	}
	m, err := mail.ReadMessage(bytes.NewReader(raw))
	if err != nil {
		return err
	}
	var br io.Reader = m.Body
	if strings.EqualFold(m.Header.Get("Content-Transfer-Encoding"), "quoted-printable") {
		br = quotedprintable.NewReader(br)
	}
	body, err := io.ReadAll(br)
	if err != nil {
		return err
	}
	subject, err := new(mime.WordDecoder).DecodeHeader(m.Header.Get("Subject"))
	if err != nil {
		return err
	}
	got := Received{
		From: ss.from, To: ss.to, MessageID: m.Header.Get("Message-Id"),
		Subject: subject, Body: strings.TrimSpace(strings.ReplaceAll(string(body), "\r\n", "\n")),
	}
	_, got.TLS = ss.c.TLSConnectionState()
	ss.s.got = append(ss.s.got, got)
	return nil
}

// Run runs an outbox of cfg on db until the test ends, and returns it.
func Run(t testing.TB, db store.DB, cfg outbox.Config) *outbox.Outbox {
	t.Helper()
	o, err := outbox.New(db, cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- o.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("outbox Run: %v", err)
		}
	})
	return o
}

// Deliver runs, until the test ends, an outbox on db that delivers to s over SMTP: cfg with
// its Sender set to s, From to cobranca@cobranca.test when empty, and a 50 ms PollInterval
// when none.
func (s *Server) Deliver(t testing.TB, db store.DB, cfg outbox.Config) *outbox.Outbox {
	t.Helper()
	sender, err := outbox.NewSMTP(s.URL(), nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Sender = sender
	if cfg.From == "" {
		cfg.From = "cobranca@cobranca.test"
	}
	if cfg.PollInterval == 0 {
		cfg.PollInterval = 50 * time.Millisecond
	}
	return Run(t, db, cfg)
}
