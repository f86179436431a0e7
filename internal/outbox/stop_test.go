package outbox_test

import (
	"context"
	"testing"
	"time"

	"github.com/wneessen/go-mail"

	"github.com/cobranca/cobranca/internal/outbox"
	"github.com/cobranca/cobranca/internal/outbox/outboxtest"
	"github.com/cobranca/cobranca/internal/smtptest"
	"github.com/cobranca/cobranca/internal/store"
	"github.com/cobranca/cobranca/internal/store/storetest"
)

// slowDial is a sender that takes 300 ms to reach the relay, as a distant relay's connection
// and greeting do, and gives up when its context ends, as a dial does.
type slowDial struct{ outbox.Sender }

func (s slowDial) Send(ctx context.Context, m *mail.Msg) error {
	select {
	case <-time.After(300 * time.Millisecond):
	case <-ctx.Done():
		return ctx.Err()
	}
	return s.Sender.Send(ctx, m)
}

// TestStopFinishesSending: when Run's context ends while messages are being sent (each takes
// 300 ms to reach the relay), the outbox takes no new message and lets those it took finish —
// the ones being sent and the ones waiting for a sending worker: Run returns nil; every message
// the relay accepted is recorded completed; none was cancelled mid-send (no entry is left
// running or retryable); the rest wait, available, and the next Run sends them: each message
// once.
func TestStopFinishesSending(t *testing.T) {
	storetest.Each(t, pg, func(t *testing.T, db store.DB) {
		const workers = 4
		n := 2 * outbox.SlotsPerWorker * workers
		if testing.Short() {
			n = (outbox.SlotsPerWorker + 1) * workers // the rest after the stop: still a round of sends
		}
		s := smtptest.New(t)
		cfg := outbox.Config{Driver: outboxtest.Driver(t, db), Sender: slowDial{smtpSender(t, s)}, From: "cobranca@cobranca.test", PollInterval: 50 * time.Millisecond, Workers: workers}
		o, err := outbox.New(db, cfg)
		if err != nil {
			t.Fatal(err)
		}
		if err := db.InTx(context.Background(), func(ctx context.Context, tx store.Tx) error {
			_, err := o.EnqueueMany(ctx, tx, messages(n))
			return err
		}); err != nil {
			t.Fatal(err)
		}
		states := func() map[string]int {
			m := map[string]int{}
			for _, e := range outboxtest.Entries(t, db) {
				m[e.State]++
			}
			return m
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- o.Run(ctx) }()
		slots := outbox.SlotsPerWorker * workers // the jobs River works at once
		waitFor(t, "messages being sent", func() bool { return states()["running"] == slots })
		stopped := time.Now()
		cancel()
		if err := <-done; err != nil {
			t.Fatalf("Run = %v, want nil: the messages being sent finished", err)
		}
		took := time.Since(stopped)
		got, st := len(s.Messages()), states()
		if st["completed"] != got || st["running"] != 0 || st["retryable"] != 0 || st["available"] != n-got {
			t.Errorf("after the stop: entries %v, the relay accepted %d; want those completed, none running or retryable, the rest available", st, got)
		}
		if got < slots || got > slots+workers {
			t.Errorf("the relay accepted %d messages by the stop, want the %d taken finished and no more than a round after", got, slots)
		}
		t.Logf("stopped in %v with %d sent, %d left", took.Round(time.Millisecond), got, n-got)

		outboxtest.Run(t, db, cfg)
		ids := map[string]int{}
		for _, m := range s.Wait(t, n, 20*time.Second) {
			ids[m.MessageID]++
		}
		time.Sleep(300 * time.Millisecond)
		if len(ids) != n || len(s.Messages()) != n {
			t.Errorf("the relay received %d messages under %d Message-IDs, want %d, each once", len(s.Messages()), len(ids), n)
		}
	})
}
