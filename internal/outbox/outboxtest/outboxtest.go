// Package outboxtest runs outboxes for a test's length, for the tests of what sends mail: the
// outbox's own, the tools', the server's, the clients'.
package outboxtest

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/cobranca/cobranca/internal/outbox"
	"github.com/cobranca/cobranca/internal/outbox/queue"
	"github.com/cobranca/cobranca/internal/smtptest"
	"github.com/cobranca/cobranca/internal/store"
)

// Driver is River's driver on db (queue.For), for an outbox.Config.
func Driver(t testing.TB, db store.DB) *outbox.Driver {
	t.Helper()
	d, err := queue.For(db)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// Run runs an outbox of cfg on db until the test ends, and returns it; cfg without a Driver
// gets db's.
func Run(t testing.TB, db store.DB, cfg outbox.Config) *outbox.Outbox {
	t.Helper()
	if cfg.Driver == nil {
		cfg.Driver = Driver(t, db)
	}
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

// Entry is an outbox entry as River stores it.
type Entry struct {
	ID    outbox.ID
	Args  outbox.Args
	State string // River's: available, running, completed, retryable, cancelled…
	// Attempt is how many times a worker took it: more than 1, it was sent again (retried, or
	// rescued from a worker that died).
	Attempt int
}

// MessageID is the entry's Message-ID, angle brackets included, sent from the bare address from.
func (e Entry) MessageID(from string) string {
	return "<" + outbox.MessageID(e.ID, e.Args.Token, from[strings.LastIndexByte(from, '@')+1:]) + ">"
}

// Entries returns the outbox's entries in db (its e-mail jobs), in the order they were enqueued.
func Entries(t testing.TB, db store.DB) []Entry {
	t.Helper()
	args := `CAST(args AS text)`
	if db.Dialect() == store.SQLite {
		args = `json(args)` // River's SQLite driver stores JSONB
	}
	// Other jobs share River's table (the approvers' notifications, the schedules' batches).
	rows, err := db.Query(context.Background(), `SELECT id, `+args+`, state, attempt FROM river_job WHERE kind = $1 ORDER BY id`, outbox.Args{}.Kind())
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var all []Entry
	for rows.Next() {
		var e Entry
		var id int64
		var raw string
		if err := rows.Scan(&id, &raw, &e.State, &e.Attempt); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal([]byte(raw), &e.Args); err != nil {
			t.Fatalf("outbox entry %d: %v", id, err)
		}
		e.ID = outbox.ID(id)
		all = append(all, e)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return all
}
