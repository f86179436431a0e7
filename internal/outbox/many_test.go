package outbox_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/cobranca/cobranca/internal/failure"
	"github.com/cobranca/cobranca/internal/outbox"
	"github.com/cobranca/cobranca/internal/outbox/outboxtest"
	"github.com/cobranca/cobranca/internal/smtptest"
	"github.com/cobranca/cobranca/internal/store"
	"github.com/cobranca/cobranca/internal/store/storetest"
)

// messages are n messages, each to its own address and with its own Ref.
func messages(n int) []outbox.Message {
	ms := make([]outbox.Message, n)
	for i := range ms {
		ms[i] = outbox.Message{To: fmt.Sprintf("c%d@cliente.example", i), Subject: fmt.Sprintf("Lembrete %d", i), Text: "Olá.", Ref: fmt.Sprintf("d_%d", i)}
	}
	return ms
}

// TestEnqueueMany: the entries come back in the order of the messages (each entry's
// Message-ID is the one its own message carries); nothing leaves when the transaction rolls
// back; one invalid message refuses them all, naming its index and field.
func TestEnqueueMany(t *testing.T) {
	storetest.Each(t, pg, func(t *testing.T, db store.DB) {
		s := smtptest.New(t)
		o := start(t, db, smtpSender(t, s), nil)
		ctx := context.Background()
		ms := messages(7)
		bad := append(messages(3), outbox.Message{To: "not an address", Subject: "x", Ref: "d_x"})
		err := db.InTx(ctx, func(ctx context.Context, tx store.Tx) error {
			_, err := o.EnqueueMany(ctx, tx, bad)
			return err
		})
		if fe, ok := failure.As(err); !ok || fe.Code != failure.InvalidArguments || fe.Field != "to" {
			t.Fatalf("EnqueueMany with an invalid message = %v, want invalid_arguments on to", err)
		}
		rolledBack := errors.New("the effect failed")
		err = db.InTx(ctx, func(ctx context.Context, tx store.Tx) error {
			if _, err := o.EnqueueMany(ctx, tx, messages(2)); err != nil {
				return err
			}
			return rolledBack
		})
		if !errors.Is(err, rolledBack) {
			t.Fatal(err)
		}
		var entries []outbox.Entry
		if err := db.InTx(ctx, func(ctx context.Context, tx store.Tx) error {
			var err error
			entries, err = o.EnqueueMany(ctx, tx, ms)
			return err
		}); err != nil {
			t.Fatal(err)
		}
		if len(entries) != len(ms) {
			t.Fatalf("%d entries for %d messages", len(entries), len(ms))
		}
		got := s.Wait(t, len(ms), 20*time.Second)
		byID := map[string]string{}
		for _, m := range got {
			byID[m.MessageID] = m.To[0]
		}
		for i, e := range entries {
			if !messageIDForm.MatchString(e.MessageID) || byID[e.MessageID] != ms[i].To {
				t.Errorf("entry %d = %+v: its Message-ID went to %q, want %q", i, e, byID[e.MessageID], ms[i].To)
			}
		}
		time.Sleep(200 * time.Millisecond)
		if n := len(s.Messages()); n != len(ms) {
			t.Errorf("received %d messages, want %d (none of the rolled-back or refused ones)", n, len(ms))
		}
	})
}

// BenchmarkEnqueue10000 enqueues 10 000 messages (a bulk send's most) in one transaction: one at a time (Enqueue) and
// in one statement (EnqueueMany), on each store.
func BenchmarkEnqueue10000(b *testing.B) {
	for _, f := range storetest.Fixtures(pg) {
		db := f.Serving(b)
		o, err := outbox.New(db, outbox.Config{Driver: outboxtest.Driver(b, db), Sender: outbox.Dir{Path: b.TempDir()}, From: "cobranca@cobranca.test"})
		if err != nil {
			b.Fatal(err)
		}
		ms := messages(10000)
		for _, many := range []bool{false, true} {
			b.Run(fmt.Sprintf("%s/many=%v", f.Dialect, many), func(b *testing.B) {
				for b.Loop() {
					err := db.InTx(context.Background(), func(ctx context.Context, tx store.Tx) error {
						if many {
							_, err := o.EnqueueMany(ctx, tx, ms)
							return err
						}
						for _, m := range ms {
							if _, err := o.Enqueue(ctx, tx, m); err != nil {
								return err
							}
						}
						return nil
					})
					if err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// TestEstimate: with serve's configuration (16 workers, a 5 ms fetch cooldown) the queue's own
// cost per message bounds the estimate, not the fetch rounds; with few workers and a long poll
// the rounds do.
func TestEstimate(t *testing.T) {
	db := storetest.SQLite(t)
	for _, tc := range []struct {
		cfg  outbox.Config
		n    int
		want time.Duration
	}{
		{outbox.Config{}, 10000, 10000 * outbox.QueueCost},
		{outbox.Config{}, 0, 0},
		// 1 worker, rounds of the 5 ms cooldown: longer than 4 ms a message.
		{outbox.Config{Workers: 1}, 100, 100 * 5 * time.Millisecond},
		// A 2 ms poll caps the cooldown at 2 ms: the queue's cost is longer again.
		{outbox.Config{Workers: 1, PollInterval: 2 * time.Millisecond}, 100, 100 * outbox.QueueCost},
	} {
		tc.cfg.Sender, tc.cfg.From, tc.cfg.Driver = outbox.Dir{Path: t.TempDir()}, "cobranca@cobranca.test", outboxtest.Driver(t, db)
		o, err := outbox.New(db, tc.cfg)
		if err != nil {
			t.Fatal(err)
		}
		if got := o.Estimate(tc.n); got != tc.want {
			t.Errorf("workers %d, poll %v: Estimate(%d) = %v, want %v", tc.cfg.Workers, tc.cfg.PollInterval, tc.n, got, tc.want)
		}
	}
}
