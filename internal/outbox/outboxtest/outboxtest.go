// Package outboxtest runs outboxes for a test's length, for the tests of what sends mail: the
// outbox's own, the tools', the server's, the clients'.
package outboxtest

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/cobranca/cobranca/internal/outbox"
	"github.com/cobranca/cobranca/internal/smtptest"
	"github.com/cobranca/cobranca/internal/store"
)

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
func Deliver(t testing.TB, db store.DB, s *smtptest.Server, cfg outbox.Config) *outbox.Outbox {
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

// Text is a message body as a test compares it: lines ending in \n (SMTP carries them as CRLF).
func Text(body string) string { return strings.ReplaceAll(body, "\r\n", "\n") }
