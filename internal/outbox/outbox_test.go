package outbox_test

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"net/mail"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/jackc/pgx/v5"

	"github.com/cobranca/cobranca/internal/outbox"
	"github.com/cobranca/cobranca/internal/outbox/outboxtest"
	"github.com/cobranca/cobranca/internal/pgtest"
	"github.com/cobranca/cobranca/internal/smtptest"
	"github.com/cobranca/cobranca/internal/store"
	"github.com/cobranca/cobranca/internal/store/storetest"
)

var pg = pgtest.New()

func TestMain(m *testing.M) { pg.Run(m) }

// syncBuffer is a log destination the worker's goroutines share.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// owner records what it is told of.
type owner struct {
	mu        sync.Mutex
	got       []string
	delivered []string
}

func (o *owner) Undeliverable(_ context.Context, _ store.Tx, ref string, _ int64, reason string, _ time.Time) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.got = append(o.got, ref+": "+reason)
	return nil
}

// Delivered records each delivery with the job's state as tx, the transaction that completes
// the job, reads it: running, not yet completed.
func (o *owner) Delivered(ctx context.Context, tx store.Tx, accepted []outbox.Accepted) error {
	for _, a := range accepted {
		var st string
		if err := tx.QueryRow(ctx, `SELECT state FROM river_job WHERE id = $1`, a.Entry).Scan(&st); err != nil {
			return err
		}
		o.mu.Lock()
		o.delivered = append(o.delivered, fmt.Sprintf("%d %s %s", a.Entry, a.Ref, st))
		o.mu.Unlock()
	}
	return nil
}

func (o *owner) deliveries() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]string(nil), o.delivered...)
}

func (o *owner) told() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]string(nil), o.got...)
}

// start runs an outbox on db until the test ends.
func start(t *testing.T, db store.DB, sender outbox.Sender, own outbox.Owner) *outbox.Outbox {
	t.Helper()
	return run(t, db, outbox.Config{Sender: sender, From: "cobranca@cobranca.test", Owner: own,
		PollInterval: 50 * time.Millisecond, MaxAttempts: 5})
}

// run runs an outbox of cfg on db until the test ends.
func run(t *testing.T, db store.DB, cfg outbox.Config) *outbox.Outbox {
	return outboxtest.Run(t, db, cfg)
}

func smtpSender(t *testing.T, s *smtptest.Server) outbox.Sender {
	t.Helper()
	snd, err := outbox.NewSMTP(s.URL(), nil)
	if err != nil {
		t.Fatal(err)
	}
	return snd
}

// messageIDForm is the form of an entry's Message-ID: its id, 128 random bits in lower-case
// base32, the outbox's domain.
var messageIDForm = regexp.MustCompile(`^<[0-9]+\.[a-z2-7]{26}\.outbox@cobranca\.test>$`)

var msg = outbox.Message{To: "ana@cliente.example", Subject: "Lembrete: fatura 42", Text: "Olá Ana, a fatura vence amanhã.", Ref: "d_draft1"}

func enqueue(t *testing.T, db store.DB, o *outbox.Outbox, m outbox.Message, fail error) (outbox.Entry, error) {
	t.Helper()
	var id outbox.Entry
	err := db.InTx(context.Background(), func(ctx context.Context, tx store.Tx) error {
		var err error
		id, err = o.Enqueue(ctx, tx, m)
		if err != nil {
			return err
		}
		return fail
	})
	return id, err
}

// waitFor polls cond until it holds or ten seconds pass.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatalf("timed out waiting for %s", what)
}

// jobState reads the River state of entry id.
func jobState(t *testing.T, db store.DB, id outbox.ID) (state string, errs string) {
	t.Helper()
	if err := db.QueryRow(context.Background(), `SELECT state, COALESCE(CAST(errors AS text), '') FROM river_job WHERE id = $1`, int64(id)).Scan(&state, &errs); err != nil {
		if errors.Is(err, store.ErrNoRows) {
			return "", ""
		}
		t.Fatal(err)
	}
	return state, errs
}

func TestDelivery(t *testing.T) {
	storetest.Each(t, pg, func(t *testing.T, db store.DB) {
		s := smtptest.New(t)
		own := &owner{}
		var logs syncBuffer
		cfg := outbox.Config{Sender: smtpSender(t, s), From: "cobranca@cobranca.test", Owner: own,
			PollInterval: 50 * time.Millisecond, MaxAttempts: 5, Logger: slog.New(slog.NewJSONHandler(&logs, nil))}
		outbox.SetRetryAfter(&cfg, 50*time.Millisecond)
		o := run(t, db, cfg)

		// Rolled back: nothing is sent.
		rolledBack := errors.New("the effect failed")
		if _, err := enqueue(t, db, o, outbox.Message{To: "x@cliente.example", Subject: "never", Ref: "d_rb"}, rolledBack); !errors.Is(err, rolledBack) {
			t.Fatalf("InTx = %v, want %v", err, rolledBack)
		}
		// Committed: sent once, with the entry's Message-ID.
		id, err := enqueue(t, db, o, msg, nil)
		if err != nil {
			t.Fatal(err)
		}
		waitFor(t, "the message", func() bool { st, _ := jobState(t, db, id.ID); return st == "completed" })
		got := s.Messages()
		want := smtptest.Message{From: "cobranca@cobranca.test", To: []string{msg.To}, MessageID: id.MessageID, Subject: msg.Subject, Body: msg.Text, Conn: 1}
		if len(got) != 1 {
			t.Fatalf("received %d messages, want exactly one", len(got))
		}
		if diff := cmp.Diff(want, got[0], cmpopts.IgnoreFields(smtptest.Message{}, "Raw", "Header", "Tree")); diff != "" {
			t.Fatalf("received (-want +got):\n%s", diff)
		}

		// A 4xx, then success: one message.
		s.Refuse(smtptest.Transient)
		id2, err := enqueue(t, db, o, outbox.Message{To: "bia@cliente.example", Subject: "second", Text: "b", Ref: "d_2"}, nil)
		if err != nil {
			t.Fatal(err)
		}
		waitFor(t, "the retried message", func() bool { st, _ := jobState(t, db, id2.ID); return st == "completed" })
		if got := s.Messages(); len(got) != 2 || got[1].MessageID != id2.MessageID {
			t.Fatalf("after a 4xx and a retry, received %+v, want the second message once", got)
		}

		// A 5xx: recorded, the owner told, no retry.
		s.Refuse(smtptest.Permanent)
		id3, err := enqueue(t, db, o, outbox.Message{To: "nobody@cliente.example", Subject: "third", Text: "c", Ref: "d_3"}, nil)
		if err != nil {
			t.Fatal(err)
		}
		waitFor(t, "the refusal recorded", func() bool { st, _ := jobState(t, db, id3.ID); return st == "cancelled" })
		if _, errs := jobState(t, db, id3.ID); !strings.Contains(errs, "refused the message (550)") {
			t.Errorf("errors recorded = %s, want the 550", errs)
		}
		if told := own.told(); len(told) != 1 || told[0] != "d_3: the mail server refused the message (550)" {
			t.Errorf("owner told %q, want the refusal of d_3", told)
		}
		// The deliveries were recorded once each, in the transaction that completed their job
		// (which still saw it running); the refused message was not.
		if got, want := own.deliveries(), []string{fmt.Sprintf("%d d_draft1 running", id.ID), fmt.Sprintf("%d d_2 running", id2.ID)}; !slices.Equal(got, want) {
			t.Errorf("deliveries recorded = %q, want %q", got, want)
		}
		if !messageIDForm.MatchString(id.MessageID) {
			t.Errorf("Message-ID %q, want <id.token.outbox@cobranca.test>", id.MessageID)
		}
		time.Sleep(300 * time.Millisecond)
		if got := s.Messages(); len(got) != 2 {
			t.Errorf("received %d messages, want 2", len(got))
		}
		// Neither the logs nor the errors stored on the entries name a recipient.
		if strings.Contains(logs.String(), "cliente.example") {
			t.Errorf("the log names a recipient:\n%s", logs.String())
		}
		for _, id := range []outbox.Entry{id2, id3} {
			if _, errs := jobState(t, db, id.ID); strings.Contains(errs, "cliente.example") || errs == "" {
				t.Errorf("entry %d's errors = %s, want the failure without the recipient", id.ID, errs)
			}
		}
		if s.Refusing() != 0 {
			t.Errorf("the 5xx was not reached")
		}
	})
}

func TestEnqueueRefusesBadMessages(t *testing.T) {
	db := storetest.SQLite(t)
	o, err := outbox.New(db, outbox.Config{Driver: outboxtest.Driver(t, db), Sender: outbox.Dir{Path: t.TempDir()}, From: "a@example.com"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		m     outbox.Message
		field string
	}{
		{"named address", outbox.Message{To: "Ana <ana@x.example>", Subject: "s", Ref: "r"}, "to"},
		{"two addresses", outbox.Message{To: "a@x.example, b@x.example", Subject: "s", Ref: "r"}, "to"},
		{"no address", outbox.Message{To: "", Subject: "s", Ref: "r"}, "to"},
		{"empty subject", outbox.Message{To: "a@x.example", Subject: " ", Ref: "r"}, "subject"},
		{"header injection", outbox.Message{To: "a@x.example", Subject: "s\r\nBcc: b@x.example", Ref: "r"}, "subject"},
		{"no ref", outbox.Message{To: "a@x.example", Subject: "s"}, "ref"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := enqueue(t, db, o, tc.m, nil)
			if err == nil || !strings.Contains(err.Error(), "invalid_arguments: "+tc.field+":") {
				t.Fatalf("Enqueue = %v, want invalid_arguments naming %s", err, tc.field)
			}
		})
	}
	var n int64
	if err := db.QueryRow(context.Background(), `SELECT count(*) FROM river_job`).Scan(&n); err != nil || n != 0 {
		t.Fatalf("river_job holds %d rows (%v), want none", n, err)
	}
}

func TestDir(t *testing.T) {
	db := storetest.SQLite(t)
	dir := filepath.Join(t.TempDir(), "outbox")
	o := start(t, db, outbox.Dir{Path: dir}, nil)
	id, err := enqueue(t, db, o, msg, nil)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, strings.Trim(id.MessageID, "<>")+".eml")
	waitFor(t, file, func() bool { _, err := os.Stat(file); return err == nil })
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	m, err := mail.ReadMessage(f)
	if err != nil {
		t.Fatalf("the .eml is not RFC 5322: %v", err)
	}
	if got, want := m.Header.Get("Message-Id"), id.MessageID; got != want {
		t.Errorf("Message-ID = %q, want %q", got, want)
	}
	if got := m.Header.Get("To"); got != "<"+msg.To+">" && got != msg.To {
		t.Errorf("To = %q, want %s", got, msg.To)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("%s holds %d files, want 1", dir, len(entries))
	}
}

func TestParseSMTPURL(t *testing.T) {
	for _, tc := range []struct {
		url string
		ok  bool
	}{
		{"smtp://user:secret@mail.example:587", true},
		{"smtps://mail.example", true},
		{"smtp://localhost:25?starttls=off", true},
		{"smtps://mail.example?starttls=off", false},
		{"http://mail.example", false},
		{"smtp://", false},
		{"smtp://mail.example:99999", false},
		{"smtp://mail.example?tls=no", false},
		{"smtp://user:secret@mail.example/path", false},
	} {
		_, err := outbox.ParseSMTPURL(tc.url)
		if (err == nil) != tc.ok {
			t.Errorf("ParseSMTPURL(%q) = %v, want ok=%v", tc.url, err, tc.ok)
		}
		if err != nil && strings.Contains(err.Error(), "secret") {
			t.Errorf("ParseSMTPURL(%q) = %v: quotes the password", tc.url, err)
		}
	}
}

// The transaction types of River's drivers.
type (
	pgxTx = pgx.Tx
	sqlTx = *sql.Tx
)
