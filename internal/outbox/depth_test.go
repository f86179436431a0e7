package outbox_test

import (
	"context"
	"testing"
	"time"

	"github.com/cobranca/cobranca/internal/outbox"
	"github.com/cobranca/cobranca/internal/outbox/outboxtest"
	"github.com/cobranca/cobranca/internal/smtptest"
	"github.com/cobranca/cobranca/internal/store"
	"github.com/cobranca/cobranca/internal/store/storetest"
)

// TestDepthAndUndeliverable: ReadDepth counts the messages not sent yet and those waiting for
// a retry; Undeliverable counts the ones this process gave up on. Three messages: the mail
// server refuses one for good, defers one (sent at its retry) and takes one.
func TestDepthAndUndeliverable(t *testing.T) {
	storetest.Each(t, pg, func(t *testing.T, db store.DB) {
		ctx := context.Background()
		depth := func(limit int64) outbox.Depth {
			t.Helper()
			d, err := outbox.ReadDepth(ctx, db, limit)
			if err != nil {
				t.Fatal(err)
			}
			return d
		}
		s := smtptest.New(t)
		s.Refuse(smtptest.Permanent, smtptest.Transient)
		// Enqueued by an outbox that does not deliver: the messages wait.
		idle, err := outbox.New(db, outbox.Config{Driver: outboxtest.Driver(t, db), Sender: smtpSender(t, s), From: "cobranca@cobranca.test"})
		if err != nil {
			t.Fatal(err)
		}
		if got := depth(100); got != (outbox.Depth{}) {
			t.Errorf("empty outbox: depth %+v, want zero", got)
		}
		if err := db.InTx(ctx, func(ctx context.Context, tx store.Tx) error {
			_, err := idle.EnqueueMany(ctx, tx, []outbox.Message{msg, msg, msg})
			return err
		}); err != nil {
			t.Fatal(err)
		}
		if got := depth(100); got != (outbox.Depth{Queued: 3}) {
			t.Errorf("three enqueued: depth %+v, want 3 queued", got)
		}
		if got := depth(2); got.Queued != 2 {
			t.Errorf("ReadDepth(limit 2) = %+v, want 2 counted", got)
		}
		// Delivered: one refused for good, one deferred, one sent.
		cfg := outbox.Config{Sender: smtpSender(t, s), From: "cobranca@cobranca.test", PollInterval: 50 * time.Millisecond}
		outbox.SetRetryAfter(&cfg, 500*time.Millisecond) // River's first is about a second: long enough to be seen either way
		o := run(t, db, cfg)
		var seen outbox.Depth
		waitFor(t, "one undeliverable, one sent, one waiting for its retry", func() bool {
			if d := depth(100); d.Retrying > 0 {
				seen = d
			}
			return o.Undeliverable() == 1 && len(s.Messages()) >= 1 && seen.Retrying == 1
		})
		if idle.Undeliverable() != 0 {
			t.Errorf("the outbox that delivered nothing counts %d undeliverable", idle.Undeliverable())
		}
		if seen.Queued < 1 || seen.Queued > 2 {
			t.Errorf("while one message waited for its retry: depth %+v, want it queued too (and the one in the sending, maybe)", seen)
		}
		waitFor(t, "the deferred message sent at its retry", func() bool { return depth(100) == (outbox.Depth{}) && len(s.Messages()) == 2 })
		if n := o.Undeliverable(); n != 1 {
			t.Errorf("Undeliverable() = %d after the round, want 1", n)
		}
	})
}
