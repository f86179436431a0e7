package outbox_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/wneessen/go-mail"

	"github.com/cobranca/cobranca/internal/outbox"
	"github.com/cobranca/cobranca/internal/store"
	"github.com/cobranca/cobranca/internal/store/storetest"
)

// downSender fails every attempt as a mail server that cannot be reached does: transiently.
type downSender struct{}

func (downSender) Send(context.Context, *mail.Msg) error {
	return errors.New("dial tcp 192.0.2.1:587: connect: connection refused")
}

// TestRetriesExhausted: an entry whose every attempt failed transiently is, at its last
// attempt, reported undeliverable to its owner — a reminder draft must not stay queued forever
// for a message River gave up on.
func TestRetriesExhausted(t *testing.T) {
	storetest.Each(t, pg, func(t *testing.T, db store.DB) {
		own := &owner{}
		o := run(t, db, outbox.Config{Sender: downSender{}, From: "cobranca@cobranca.test", Owner: own,
			PollInterval: 50 * time.Millisecond, MaxAttempts: 1})
		id, err := enqueue(t, db, o, msg, nil)
		if err != nil {
			t.Fatal(err)
		}
		waitFor(t, "the entry given up", func() bool { st, _ := jobState(t, db, id.ID); return st == "discarded" || st == "cancelled" })
		told := own.told()
		if len(told) != 1 || !strings.HasPrefix(told[0], msg.Ref+": ") || !strings.Contains(told[0], "1 attempt") {
			t.Fatalf("owner told %q, want %s undeliverable after its 1 attempt", told, msg.Ref)
		}
		if strings.Contains(told[0], "192.0.2.1") || strings.Contains(told[0], "cliente.example") {
			t.Errorf("reason %q names an address", told[0])
		}
	})
}

// lateSender is a mail server that accepts the message just as the job's time runs out: the
// worker's context is done when Send returns.
type lateSender struct{}

func (lateSender) Send(ctx context.Context, _ *mail.Msg) error {
	<-ctx.Done()
	return nil
}

// TestDeliveredAfterTimeout: a message the mail server accepted is recorded with its owner
// even when the job's context ended meanwhile (River's job timeout, a shutdown): the draft
// must not stay queued for a message that went.
func TestDeliveredAfterTimeout(t *testing.T) {
	storetest.Each(t, pg, func(t *testing.T, db store.DB) {
		own := &owner{}
		o := run(t, db, outbox.Config{Sender: lateSender{}, From: "cobranca@cobranca.test", Owner: own,
			PollInterval: 50 * time.Millisecond, MaxAttempts: 1, RescueAfter: time.Second}) // the send is cut off at 500 ms
		e, err := enqueue(t, db, o, msg, nil)
		if err != nil {
			t.Fatal(err)
		}
		waitFor(t, "the entry done", func() bool { st, _ := jobState(t, db, e.ID); return st == "completed" })
		if got := own.deliveries(); len(got) != 1 {
			t.Fatalf("deliveries recorded = %q, want the one delivery", got)
		}
	})
}
