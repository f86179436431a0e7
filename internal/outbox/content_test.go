package outbox_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/cobranca/cobranca/internal/failure"
	"github.com/cobranca/cobranca/internal/outbox"
	"github.com/cobranca/cobranca/internal/outbox/outboxtest"
	"github.com/cobranca/cobranca/internal/smtptest"
	"github.com/cobranca/cobranca/internal/store"
	"github.com/cobranca/cobranca/internal/store/storetest"
)

// contentOwner is an owner that keeps the bodies of its messages, by ref; a ref in failing
// fails its next failing[ref] reads transiently.
type contentOwner struct {
	*owner
	bodies map[string]outbox.Content

	mu      sync.Mutex
	failing map[string]int
	reads   map[string]int
}

func (c *contentOwner) Content(ctx context.Context, q store.Querier, ref string) (outbox.Content, error) {
	// A read of the store, as a real owner's is: q must be usable outside a transaction.
	var one int
	if err := q.QueryRow(ctx, `SELECT 1`).Scan(&one); err != nil {
		return outbox.Content{}, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.reads[ref]++
	if c.failing[ref] > 0 {
		c.failing[ref]--
		return outbox.Content{}, errors.New("read tcp 10.0.0.5:5432: connection reset by peer")
	}
	b, ok := c.bodies[ref]
	if !ok {
		return outbox.Content{}, fmt.Errorf("draft %s: %w", ref, outbox.ErrNoContent)
	}
	return b, nil
}

func (c *contentOwner) readsOf(ref string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.reads[ref]
}

// fromOwner is a message whose body its owner gives.
func fromOwner(to, ref string) outbox.Message {
	return outbox.Message{To: to, Subject: "Lembrete " + ref, Ref: ref, FromOwner: true}
}

// TestFromOwner: a FromOwner entry is stored without its body and sent with the one its owner
// gives when it is delivered — text, HTML and inline image; an owner with no body for it makes
// it undeliverable, the owner told; a transient failure to read the body is retried, then the
// message delivered once; a body the owner gives that cannot be sent is undeliverable too.
func TestFromOwner(t *testing.T) {
	storetest.Each(t, pg, func(t *testing.T, db store.DB) {
		s := smtptest.New(t)
		h := htmlMessage(t)
		body := outbox.Content{Text: h.Text, HTML: h.HTML, Related: h.Related}
		own := &contentOwner{owner: &owner{},
			bodies: map[string]outbox.Content{
				"d_ok": body, "d_flaky": {Text: "Olá Bia."},
				"d_bad": {Text: "x", Related: h.Related}, // an image and no HTML to show it
			},
			failing: map[string]int{"d_flaky": 2}, reads: map[string]int{}}
		cfg := outbox.Config{Sender: smtpSender(t, s), From: "cobranca@cobranca.test", Owner: own,
			PollInterval: 50 * time.Millisecond, MaxAttempts: 5}
		outbox.SetRetryAfter(&cfg, 50*time.Millisecond)
		o := run(t, db, cfg)

		// Delivered with the owner's body.
		ok, err := enqueue(t, db, o, fromOwner("ana@cliente.example", "d_ok"), nil)
		if err != nil {
			t.Fatal(err)
		}
		waitFor(t, "d_ok delivered", func() bool { st, _ := jobState(t, db, ok.ID); return st == "completed" })
		got := s.Messages()
		if len(got) != 1 || got[0].MessageID != ok.MessageID {
			t.Fatalf("received %d messages, want d_ok's once", len(got))
		}
		m, err := smtptest.Parse(got[0].Raw)
		if err != nil {
			t.Fatal(err)
		}
		if want := strings.TrimSpace(body.Text); outboxtest.Text(m.Body) != want {
			t.Errorf("text (-want +got):\n%s", cmp.Diff(want, outboxtest.Text(m.Body)))
		}
		if outboxtest.Text(m.HTML) != body.HTML {
			t.Errorf("HTML (-want +got):\n%s", cmp.Diff(body.HTML, outboxtest.Text(m.HTML)))
		}
		if img, ok := m.Inline["pix-qr@cobranca"]; !ok || img.ContentType != "image/png" || !bytes.Equal(img.Data, body.Related[0].Data) {
			t.Errorf("inline parts = %v, want the owner's QR image under pix-qr@cobranca", m.Inline)
		}
		// The entry holds no body: only what names it.
		for _, e := range outboxtest.Entries(t, db) {
			if e.ID == ok.ID && (e.Args.Text != "" || e.Args.HTML != "" || e.Args.Related != nil || !e.Args.FromOwner || e.Args.Ref != "d_ok") {
				t.Errorf("stored entry = %+v, want d_ok's, FromOwner, without a body", e.Args)
			}
		}

		// The owner has no body: undeliverable, the owner told, nothing sent, no retry.
		gone, err := enqueue(t, db, o, fromOwner("rui@cliente.example", "d_gone"), nil)
		if err != nil {
			t.Fatal(err)
		}
		waitFor(t, "d_gone given up", func() bool { st, _ := jobState(t, db, gone.ID); return st == "cancelled" })
		if told := own.told(); len(told) != 1 || told[0] != "d_gone: the message's body is gone (its owner has none for it)" {
			t.Errorf("owner told %q, want d_gone's body gone", told)
		}
		if n := own.readsOf("d_gone"); n != 1 {
			t.Errorf("d_gone's body read %d times, want once (no retry)", n)
		}

		// Two transient failures to read the body, then delivered once.
		flaky, err := enqueue(t, db, o, fromOwner("bia@cliente.example", "d_flaky"), nil)
		if err != nil {
			t.Fatal(err)
		}
		waitFor(t, "d_flaky delivered", func() bool { st, _ := jobState(t, db, flaky.ID); return st == "completed" })
		if n := own.readsOf("d_flaky"); n != 3 {
			t.Errorf("d_flaky's body read %d times, want 3 (two failures, then the body)", n)
		}
		if _, errs := jobState(t, db, flaky.ID); !strings.Contains(errs, "connection reset by peer") {
			t.Errorf("d_flaky's errors = %s, want the two read failures", errs)
		}
		got = s.Messages()
		var sent []string
		for _, m := range got {
			if m.MessageID == flaky.MessageID {
				sent = append(sent, m.Body)
			}
		}
		if len(sent) != 1 || sent[0] != "Olá Bia." {
			t.Errorf("d_flaky sent as %q, want once with its owner's text", sent)
		}

		// The owner's body cannot be sent: undeliverable, the owner told.
		bad, err := enqueue(t, db, o, fromOwner("caio@cliente.example", "d_bad"), nil)
		if err != nil {
			t.Fatal(err)
		}
		waitFor(t, "d_bad given up", func() bool { st, _ := jobState(t, db, bad.ID); return st == "cancelled" })
		if _, errs := jobState(t, db, bad.ID); !strings.Contains(errs, "cannot be built") {
			t.Errorf("d_bad's errors = %s, want the message unbuildable", errs)
		}
		if told := own.told(); len(told) != 2 || told[1] != "d_bad: the message cannot be built" {
			t.Errorf("owner told %q, want d_bad unbuildable", told)
		}

		if got := own.deliveries(); len(got) != 2 {
			t.Errorf("deliveries recorded = %q, want d_ok's and d_flaky's", got)
		}
		if got := s.Messages(); len(got) != 2 {
			t.Errorf("received %d messages, want 2 (d_ok, d_flaky)", len(got))
		}
	})
}

// TestFromOwnerRefused: a FromOwner message with a body of its own is refused naming the field;
// an outbox whose Owner gives no bodies refuses FromOwner messages on every enqueue path, and
// nothing is queued.
func TestFromOwnerRefused(t *testing.T) {
	db := storetest.SQLite(t)
	h := htmlMessage(t)
	for _, tc := range []struct {
		name  string
		f     func(m *outbox.Message)
		field string
	}{
		{"text", func(m *outbox.Message) { m.Text = "x" }, "text"},
		{"html", func(m *outbox.Message) { m.HTML = h.HTML }, "html"},
		{"related", func(m *outbox.Message) { m.HTML, m.Related = h.HTML, h.Related }, "html"},
		{"related alone", func(m *outbox.Message) { m.Related = h.Related }, "related"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := fromOwner("ana@cliente.example", "d_1")
			tc.f(&m)
			err := m.Validate()
			if fe, ok := failure.As(err); !ok || fe.Code != failure.InvalidArguments || fe.Field != tc.field {
				t.Fatalf("Validate = %v, want invalid_arguments naming %s", err, tc.field)
			}
		})
	}
	if m := fromOwner("ana@cliente.example", "d_1"); m.Validate() != nil {
		t.Fatalf("Validate(a FromOwner message) = %v", m.Validate())
	}

	for _, own := range []outbox.Owner{nil, &owner{}} {
		o, err := outbox.New(db, outbox.Config{Driver: outboxtest.Driver(t, db), Sender: outbox.Dir{Path: t.TempDir()}, From: "a@example.com", Owner: own})
		if err != nil {
			t.Fatal(err)
		}
		m := fromOwner("ana@cliente.example", "d_1")
		for name, enq := range map[string]func(ctx context.Context, tx store.Tx) error{
			"Enqueue": func(ctx context.Context, tx store.Tx) error { _, err := o.Enqueue(ctx, tx, m); return err },
			"EnqueueOnce": func(ctx context.Context, tx store.Tx) error {
				_, _, err := o.EnqueueOnce(ctx, tx, m)
				return err
			},
			"EnqueueMany": func(ctx context.Context, tx store.Tx) error {
				_, err := o.EnqueueMany(ctx, tx, append(messages(2), m))
				return err
			},
		} {
			err := db.InTx(context.Background(), func(ctx context.Context, tx store.Tx) error { return enq(ctx, tx) })
			if err == nil || !strings.Contains(err.Error(), "ContentOwner") {
				t.Errorf("%s of a FromOwner message, Owner %T = %v, want refused: the Owner gives no bodies", name, own, err)
			}
		}
	}
	var n int64
	if err := db.QueryRow(context.Background(), `SELECT count(*) FROM river_job`).Scan(&n); err != nil || n != 0 {
		t.Fatalf("river_job holds %d rows (%v), want none", n, err)
	}

	// An outbox whose Owner gives bodies takes it, and stores it without one.
	o, err := outbox.New(db, outbox.Config{Driver: outboxtest.Driver(t, db), Sender: outbox.Dir{Path: t.TempDir()}, From: "a@example.com",
		Owner: &contentOwner{owner: &owner{}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := enqueue(t, db, o, fromOwner("ana@cliente.example", "d_1"), nil); err != nil {
		t.Fatalf("Enqueue to a ContentOwner's outbox = %v", err)
	}
	e := outboxtest.Entries(t, db)
	if len(e) != 1 || !cmp.Equal(e[0].Args.Message, fromOwner("ana@cliente.example", "d_1")) {
		t.Fatalf("entries = %+v, want the FromOwner message as given", e)
	}
}

// TestContentValidate: a body an owner gives is checked as a message's is, naming the field.
func TestContentValidate(t *testing.T) {
	h := htmlMessage(t)
	good := outbox.Content{Text: h.Text, HTML: h.HTML, Related: h.Related}
	if err := good.Validate(); err != nil {
		t.Fatalf("Validate(a reminder's body) = %v", err)
	}
	for _, tc := range []struct {
		name  string
		c     outbox.Content
		field string
	}{
		{"text too long", outbox.Content{Text: strings.Repeat("a", outbox.MaxText+1)}, "text"},
		{"html too long", outbox.Content{HTML: strings.Repeat("a", outbox.MaxText+1)}, "html"},
		{"image without html", outbox.Content{Text: "x", Related: h.Related}, "related"},
		{"image the html does not name", outbox.Content{HTML: "<p>x</p>", Related: h.Related}, "related[0].contentId"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.c.Validate()
			if fe, ok := failure.As(err); !ok || fe.Code != failure.InvalidArguments || fe.Field != tc.field {
				t.Fatalf("Validate = %v, want invalid_arguments naming %s", err, tc.field)
			}
		})
	}
}

// TestFromOwnerReadsExhausted: an entry whose body could not be read on any attempt is, at its
// last, reported undeliverable to its owner, as one the mail server deferred every time is.
func TestFromOwnerReadsExhausted(t *testing.T) {
	storetest.Each(t, pg, func(t *testing.T, db store.DB) {
		s := smtptest.New(t)
		own := &contentOwner{owner: &owner{}, bodies: map[string]outbox.Content{"d_1": {Text: "x"}},
			failing: map[string]int{"d_1": 1}, reads: map[string]int{}}
		o := run(t, db, outbox.Config{Sender: smtpSender(t, s), From: "cobranca@cobranca.test", Owner: own,
			PollInterval: 50 * time.Millisecond, MaxAttempts: 1})
		e, err := enqueue(t, db, o, fromOwner("ana@cliente.example", "d_1"), nil)
		if err != nil {
			t.Fatal(err)
		}
		waitFor(t, "the entry given up", func() bool { st, _ := jobState(t, db, e.ID); return st == "cancelled" })
		if told := own.told(); len(told) != 1 || told[0] != "d_1: the message's body could not be read in 1 attempt" {
			t.Errorf("owner told %q, want d_1 undeliverable after its 1 attempt", told)
		}
		if got := s.Messages(); len(got) != 0 {
			t.Errorf("received %d messages, want none", len(got))
		}
	})
}
