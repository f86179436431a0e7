// Package smtptest gives tests a real SMTP server (github.com/emersion/go-smtp) on a loopback
// port: it records each message's envelope and raw bytes, and answers the next DATA commands
// with the 4xx/5xx replies a test queues.
//
//	s := smtptest.New(t)                   // plain SMTP; s.URL() is smtp://…?starttls=off
//	s.Refuse(smtptest.Transient, smtptest.Permanent) // the next two messages are refused
//	got := s.Wait(t, 1, 10*time.Second)   // the messages received, once there is one
package smtptest

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"log"
	"mime"
	"mime/multipart"
	"mime/quotedprintable"
	"net"
	"net/mail"
	"net/textproto"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/emersion/go-smtp"
)

// Message is one message the server accepted: its envelope, its raw bytes as received after
// DATA, and what the tests compare most (read from the raw message).
type Message struct {
	From string   // MAIL FROM
	To   []string // RCPT TO, in order
	Raw  []byte
	TLS  bool // the message came over TLS (STARTTLS or implicit)
	// Conn numbers the connection the message came on: 1 for the server's first, and so on.
	Conn int

	Header    mail.Header // the message's header fields, as written
	MessageID string      // the Message-Id header, as written (with its angle brackets)
	Subject   string      // decoded (RFC 2047)
	Body      string      // the text body (a multipart message's text/plain part), decoded, white space trimmed
	HTML      string      // a multipart message's text/html part, decoded; "" when none
	// Inline are the parts an HTML part names by cid:, by Content-ID (without angle
	// brackets), decoded.
	Inline map[string]InlinePart
	// Tree is the whole MIME tree, for a test that checks the message's structure.
	Tree Part
}

// Part is one part of a message's MIME tree as the standard library reads it back: its media
// type, the header fields that matter to a reader, its body decoded from its
// Content-Transfer-Encoding, and its parts.
type Part struct {
	Type        string // media type, lower case, no parameters
	Charset     string
	Disposition string // the Content-Disposition's type ("" when none)
	ContentID   string // as written, with its angle brackets
	Body        []byte // decoded; nil for a multipart
	Parts       []Part
}

// Shape is the tree's media types, one a line, indented by depth: what a test compares to
// check a message's structure at a glance.
func (p Part) Shape() string {
	var b strings.Builder
	var walk func(p Part, depth int)
	walk = func(p Part, depth int) {
		b.WriteString(strings.Repeat("  ", depth) + p.Type + "\n")
		for _, c := range p.Parts {
			walk(c, depth+1)
		}
	}
	walk(p, 0)
	return b.String()
}

// InlinePart is an inline part of a message: an image its HTML shows.
type InlinePart struct {
	ContentType string
	Data        []byte
}

// Replies a test can queue with Refuse: a transient and a permanent refusal, as a real
// server words them.
var (
	Transient = &smtp.SMTPError{Code: 451, EnhancedCode: smtp.EnhancedCode{4, 3, 0}, Message: "try again later"}
	Permanent = &smtp.SMTPError{Code: 550, EnhancedCode: smtp.EnhancedCode{5, 1, 1}, Message: "no such user"}
)

// Options says how the server listens. The zero value: plain text, no STARTTLS.
type Options struct {
	// TLS, when set, is the server's certificate: offered through STARTTLS, or from the first
	// byte when Implicit is set.
	TLS      *tls.Config
	Implicit bool
	// Latency is how long the server takes to answer each DATA, as a remote relay does (its
	// round trips, its own checks and queueing): the throughput benchmarks' realistic sink.
	Latency time.Duration
}

// Server is a running SMTP server. It stops when the test ends.
type Server struct {
	addr    string
	latency time.Duration

	mu      sync.Mutex
	got     []Message
	refuse  []*smtp.SMTPError
	arrived chan struct{}       // closed and replaced whenever a message is accepted
	conns   map[*smtp.Conn]int  // every connection that greeted the server, numbered from 1
	open    map[*smtp.Conn]bool // those with a session, not closed yet
}

// New starts a plain-text server (no STARTTLS offered) on a loopback port.
func New(t testing.TB) *Server { return Start(t, Options{}) }

// Start starts a server as opts says on a loopback port.
func Start(t testing.TB, opts Options) *Server {
	t.Helper()
	s := &Server{arrived: make(chan struct{}), latency: opts.Latency, conns: map[*smtp.Conn]int{}, open: map[*smtp.Conn]bool{}}
	srv := smtp.NewServer(backend{s})
	srv.Domain = "localhost"
	srv.AllowInsecureAuth = opts.TLS == nil
	srv.TLSConfig = opts.TLS
	srv.ReadTimeout = time.Minute
	srv.WriteTimeout = time.Minute
	// A client that dies mid-session (the kill tests' SIGKILL) is no error of the server's.
	srv.ErrorLog = log.New(io.Discard, "", 0)
	var ln net.Listener
	var err error
	if opts.Implicit {
		ln, err = tls.Listen("tcp", "127.0.0.1:0", opts.TLS)
	} else {
		ln, err = net.Listen("tcp", "127.0.0.1:0")
	}
	if err != nil {
		t.Fatalf("smtptest: %v", err)
	}
	s.addr = ln.Addr().String()
	served := make(chan struct{})
	go func() { defer close(served); _ = srv.Serve(ln) }()
	t.Cleanup(func() { srv.Close(); <-served })
	return s
}

// Addr is the server's host:port.
func (s *Server) Addr() string { return s.addr }

// URL is the COBRANCA_SMTP_URL that reaches the server: plain SMTP, STARTTLS explicitly off.
func (s *Server) URL() string { return "smtp://" + s.addr + "?starttls=off" }

// Refuse queues replies: the next DATA commands are answered with them, in order, one each,
// and their messages are not recorded. Like a real server, each reply names the recipient.
func (s *Server) Refuse(replies ...*smtp.SMTPError) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.refuse = append(s.refuse, replies...)
}

// Refusing returns how many queued replies are not used yet.
func (s *Server) Refusing() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.refuse)
}

// Messages returns the messages accepted so far, in order.
func (s *Server) Messages() []Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Message(nil), s.got...)
}

// Wait returns the messages accepted so far once there are at least n, failing the test when
// timeout passes first.
func (s *Server) Wait(t testing.TB, n int, timeout time.Duration) []Message {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	for {
		// Copied only once there are enough: a benchmark waits for thousands.
		s.mu.Lock()
		have, arrived := len(s.got), s.arrived
		if have >= n {
			got := append([]Message(nil), s.got...)
			s.mu.Unlock()
			return got
		}
		s.mu.Unlock()
		select {
		case <-arrived:
		case <-ctx.Done():
			t.Fatalf("smtptest: %d messages received in %v, want %d", have, timeout, n)
		}
	}
}

// Conns is how many connections have greeted the server (EHLO) so far.
func (s *Server) Conns() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.conns)
}

// Open is how many of those are still open.
func (s *Server) Open() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.open)
}

// Drop closes the open connections without a word, as a server does when a client has been
// idle too long or when it restarts: the client finds out at its next command.
func (s *Server) Drop() {
	s.mu.Lock()
	var cs []*smtp.Conn
	for c := range s.open {
		cs = append(cs, c)
	}
	s.mu.Unlock()
	for _, c := range cs {
		c.Close()
	}
}

// accept answers one DATA: the next queued refusal, or the message recorded.
func (s *Server) accept(m Message) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.refuse) > 0 {
		e := *s.refuse[0]
		s.refuse = s.refuse[1:]
		e.Message += " for " + strings.Join(m.To, ", ")
		return &e
	}
	s.got = append(s.got, m)
	close(s.arrived)
	s.arrived = make(chan struct{})
	return nil
}

type backend struct{ s *Server }

func (b backend) NewSession(c *smtp.Conn) (smtp.Session, error) {
	s := b.s
	s.mu.Lock()
	defer s.mu.Unlock()
	n, ok := s.conns[c]
	if !ok {
		n = len(s.conns) + 1
		s.conns[c] = n
	}
	s.open[c] = true
	return &session{s: s, c: c, conn: n}, nil
}

type session struct {
	s    *Server
	c    *smtp.Conn
	conn int // s.conns[c]
	from string
	to   []string
}

func (ss *session) Mail(from string, _ *smtp.MailOptions) error { ss.from = from; return nil }
func (ss *session) Rcpt(to string, _ *smtp.RcptOptions) error {
	ss.to = append(ss.to, to)
	return nil
}
func (ss *session) Reset() { ss.from, ss.to = "", nil }
func (ss *session) Logout() error {
	ss.s.mu.Lock()
	defer ss.s.mu.Unlock()
	delete(ss.s.open, ss.c)
	return nil
}

func (ss *session) Data(r io.Reader) error {
	raw, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	if ss.s.latency > 0 {
		time.Sleep(ss.s.latency)
	}
	m := Message{From: ss.from, To: ss.to, Raw: raw, Conn: ss.conn}
	_, m.TLS = ss.c.TLSConnectionState()
	if err := m.parse(); err != nil {
		return &smtp.SMTPError{Code: 554, EnhancedCode: smtp.EnhancedCode{5, 6, 0}, Message: "not an RFC 5322 message: " + err.Error()}
	}
	return ss.s.accept(m)
}

// parse fills the fields read from m.Raw.
func (m *Message) parse() error {
	p, err := Parse(m.Raw)
	if err != nil {
		return err
	}
	p.From, p.To, p.Raw, p.TLS, p.Conn = m.From, m.To, m.Raw, m.TLS, m.Conn
	*m = p
	return nil
}

// Parse reads a raw message (as received, or a .eml file) with the standard library alone, as
// a receiver that knows nothing of the sender's library: its headers, and its body — a
// text/plain body, or a MIME tree (multipart/alternative, multipart/related,
// multipart/mixed) whose text/plain, text/html and inline parts it takes, each decoded from
// its Content-Transfer-Encoding (an unknown one is an error).
func Parse(raw []byte) (Message, error) {
	msg, err := mail.ReadMessage(bytes.NewReader(raw))
	if err != nil {
		return Message{}, err
	}
	m := Message{Raw: raw, Header: msg.Header, MessageID: msg.Header.Get("Message-Id")}
	if m.Subject, err = new(mime.WordDecoder).DecodeHeader(msg.Header.Get("Subject")); err != nil {
		return Message{}, err
	}
	if m.Tree, err = readPart(textproto.MIMEHeader(msg.Header), msg.Body, 0); err != nil {
		return Message{}, err
	}
	m.take(m.Tree)
	m.Body = strings.TrimSpace(m.Body)
	return m, nil
}

// readPart reads one part of a MIME tree, depth levels down.
func readPart(h textproto.MIMEHeader, body io.Reader, depth int) (Part, error) {
	ct := h.Get("Content-Type")
	if ct == "" {
		ct = "text/plain"
	}
	mt, params, err := mime.ParseMediaType(ct)
	if err != nil {
		return Part{}, fmt.Errorf("Content-Type %q: %w", ct, err)
	}
	p := Part{Type: mt, Charset: params["charset"], ContentID: h.Get("Content-Id")}
	if d := h.Get("Content-Disposition"); d != "" {
		if p.Disposition, _, err = mime.ParseMediaType(d); err != nil {
			return Part{}, fmt.Errorf("Content-Disposition %q: %w", d, err)
		}
	}
	if strings.HasPrefix(mt, "multipart/") {
		if depth > 8 {
			return Part{}, errors.New("MIME tree deeper than 8")
		}
		if params["boundary"] == "" {
			return Part{}, fmt.Errorf("%s without a boundary", mt)
		}
		mr := multipart.NewReader(body, params["boundary"])
		for {
			raw, err := mr.NextRawPart() // raw: the transfer encoding is decoded below, and checked
			if err == io.EOF {
				return p, nil
			}
			if err != nil {
				return Part{}, err
			}
			child, err := readPart(raw.Header, raw, depth+1)
			if err != nil {
				return Part{}, err
			}
			p.Parts = append(p.Parts, child)
		}
	}
	switch cte := strings.ToLower(h.Get("Content-Transfer-Encoding")); cte {
	case "quoted-printable":
		body = quotedprintable.NewReader(body)
	case "base64":
		body = base64.NewDecoder(base64.StdEncoding, body) // it skips line breaks
	case "", "7bit", "8bit":
	default:
		return Part{}, fmt.Errorf("unknown Content-Transfer-Encoding %q", cte)
	}
	if p.Body, err = io.ReadAll(body); err != nil {
		return Part{}, fmt.Errorf("%s body: %w", mt, err)
	}
	return p, nil
}

// take fills m's text, HTML and inline parts from the tree's leaves, in order: the first
// text/plain and text/html, and every other part with a Content-ID.
func (m *Message) take(p Part) {
	if strings.HasPrefix(p.Type, "multipart/") {
		for _, c := range p.Parts {
			m.take(c)
		}
		return
	}
	switch id := strings.Trim(p.ContentID, "<>"); {
	case p.Type == "text/plain" && m.Body == "":
		m.Body = string(p.Body)
	case p.Type == "text/html" && m.HTML == "":
		m.HTML = string(p.Body)
	case id != "":
		if m.Inline == nil {
			m.Inline = map[string]InlinePart{}
		}
		m.Inline[id] = InlinePart{ContentType: p.Type, Data: p.Body}
	}
}
