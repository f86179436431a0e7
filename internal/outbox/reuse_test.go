package outbox_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/wneessen/go-mail"

	"github.com/cobranca/cobranca/internal/outbox"
	"github.com/cobranca/cobranca/internal/outbox/outboxtest"
	"github.com/cobranca/cobranca/internal/smtptest"
	"github.com/cobranca/cobranca/internal/store"
	"github.com/cobranca/cobranca/internal/store/storetest"
)

// composed is message i, built as the worker builds it.
func composed(t *testing.T, i int) *mail.Msg {
	t.Helper()
	m, err := outbox.Compose("cobranca@cobranca.test", outbox.ID(i+1), outbox.Args{Message: messages(i + 1)[i], Token: fmt.Sprintf("t%d", i)}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// conns are the connections the messages came on, in order.
func conns(ms []smtptest.Message) []int {
	var cs []int
	for _, m := range ms {
		cs = append(cs, m.Conn)
	}
	return cs
}

// TestSMTPReusesConnections: the SMTP sender sends one message after another on one
// connection (RSET between them); when the server has dropped it meanwhile, the next message
// goes on a new connection, once; a refused message closes its connection, and the next opens
// another; a connection idle for the idle timeout is closed, and so are the idle ones on Close;
// senders at once open no more connections than there are of them.
func TestSMTPReusesConnections(t *testing.T) {
	ctx := context.Background()
	s := smtptest.New(t)
	snd, err := outbox.NewSMTP(s.URL(), nil)
	if err != nil {
		t.Fatal(err)
	}
	send := func(i int) error { return snd.Send(ctx, composed(t, i)) }
	for i := range 3 {
		if err := send(i); err != nil {
			t.Fatal(err)
		}
	}
	if got := conns(s.Messages()); fmt.Sprint(got) != "[1 1 1]" || s.Open() != 1 {
		t.Fatalf("3 messages came on connections %v, %d open; want all on the first, still open", got, s.Open())
	}

	s.Drop()
	waitFor(t, "the server to drop the connection", func() bool { return s.Open() == 0 })
	if err := send(3); err != nil {
		t.Fatalf("Send after the server dropped the idle connection = %v, want it sent on a new one", err)
	}
	if got := conns(s.Messages()); fmt.Sprint(got) != "[1 1 1 2]" {
		t.Fatalf("after the drop, messages came on connections %v, want the 4th once, on the 2nd", got)
	}

	s.Refuse(smtptest.Transient)
	if err := send(4); err == nil {
		t.Fatal("Send of a refused message = nil, want the server's 451")
	}
	waitFor(t, "the refused message's connection closed", func() bool { return s.Open() == 0 })
	if err := send(5); err != nil {
		t.Fatal(err)
	}
	if got := conns(s.Messages()); fmt.Sprint(got) != "[1 1 1 2 3]" {
		t.Fatalf("after a refusal, messages came on connections %v, want the next on the 3rd", got)
	}

	if err := snd.Close(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "Close to close the idle connection", func() bool { return s.Open() == 0 })

	outbox.SetIdleTimeout(snd, 50*time.Millisecond)
	if err := send(6); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the idle connection closed after the idle timeout", func() bool { return s.Open() == 0 })
	outbox.SetIdleTimeout(snd, time.Minute)

	before := s.Conns()
	const senders, each = 4, 10
	var wg sync.WaitGroup
	errs := make(chan error, senders*each)
	for g := range senders {
		wg.Go(func() {
			for i := range each {
				errs <- send(100 + g*each + i)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if opened := s.Conns() - before; opened < 1 || opened > senders {
		t.Errorf("%d senders at once opened %d connections, want 1 to %d", senders, opened, senders)
	}
	ids := map[string]int{}
	for _, m := range s.Messages() {
		ids[m.MessageID]++
	}
	if len(ids) != len(s.Messages()) || len(ids) != 6+senders*each {
		t.Errorf("the server received %d messages under %d Message-IDs, want %d once each", len(s.Messages()), len(ids), 6+senders*each)
	}
}

// TestOutboxReusesConnections: an outbox's workers send a bulk on as many connections as
// there are workers at most, each message once, every delivery told to the owner once (in the
// transaction that completes its entry, with others' or alone); Run closes the connections
// once it has stopped.
func TestOutboxReusesConnections(t *testing.T) {
	storetest.Each(t, pg, func(t *testing.T, db store.DB) {
		const workers, n = 4, 40
		s := smtptest.New(t)
		own := &owner{}
		cfg := outbox.Config{Driver: outboxtest.Driver(t, db), Sender: smtpSender(t, s), From: "cobranca@cobranca.test", Owner: own,
			PollInterval: 50 * time.Millisecond, Workers: workers}
		o, err := outbox.New(db, cfg)
		if err != nil {
			t.Fatal(err)
		}
		var entries []outbox.Entry
		if err := db.InTx(context.Background(), func(ctx context.Context, tx store.Tx) error {
			entries, err = o.EnqueueMany(ctx, tx, messages(n))
			return err
		}); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- o.Run(ctx) }()
		got := s.Wait(t, n, 20*time.Second)
		waitFor(t, "every delivery recorded", func() bool { return len(own.deliveries()) >= n })
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if s.Conns() > workers {
			t.Errorf("%d workers sent %d messages on %d connections, want at most one each", workers, n, s.Conns())
		}
		// Run closed its connections before it returned; the server notices each close when its
		// own goroutine reads the QUIT, a moment later.
		waitFor(t, "the server to see every connection closed after Run returned", func() bool { return s.Open() == 0 })
		ids := map[string]int{}
		for _, m := range got {
			ids[m.MessageID]++
		}
		want := map[string]bool{}
		for i, e := range entries {
			want[fmt.Sprintf("%d d_%d running", e.ID, i)] = true
			if ids[e.MessageID] != 1 {
				t.Errorf("entry %d: received %d times, want once", e.ID, ids[e.MessageID])
			}
		}
		told := own.deliveries()
		for _, d := range told {
			if !want[d] {
				t.Errorf("owner told %q, want each entry once, its job running in the transaction", d)
			}
			delete(want, d)
		}
		if len(told) != n {
			t.Errorf("owner told of %d deliveries, want %d", len(told), n)
		}
		for _, e := range outboxtest.Entries(t, db) {
			if e.State != "completed" {
				t.Errorf("entry %d is %s, want completed", e.ID, e.State)
			}
		}
	})
}
