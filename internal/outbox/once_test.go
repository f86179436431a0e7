package outbox_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/riverqueue/river"

	"github.com/cobranca/cobranca/internal/failure"
	"github.com/cobranca/cobranca/internal/outbox"
	"github.com/cobranca/cobranca/internal/outbox/outboxtest"
	"github.com/cobranca/cobranca/internal/smtptest"
	"github.com/cobranca/cobranca/internal/store"
	"github.com/cobranca/cobranca/internal/store/storetest"
)

// TestEnqueueOnce: a message to one address about one Ref is enqueued once however often it
// is asked for — the second call returns the first's entry, Message-ID included — while
// another address or Ref is another message; an invalid message is refused naming its field.
func TestEnqueueOnce(t *testing.T) {
	storetest.Each(t, pg, func(t *testing.T, db store.DB) {
		s := smtptest.New(t)
		o := start(t, db, smtpSender(t, s), nil)
		once := func(m outbox.Message) (outbox.Entry, bool) {
			t.Helper()
			var e outbox.Entry
			var again bool
			if err := db.InTx(context.Background(), func(ctx context.Context, tx store.Tx) error {
				var err error
				e, again, err = o.EnqueueOnce(ctx, tx, m)
				return err
			}); err != nil {
				t.Fatal(err)
			}
			return e, again
		}
		m := outbox.Message{To: "ana@financeiro.test", Subject: "Approval a_1 waits", Text: "…", Ref: "a_1"}
		first, again := once(m)
		if again || !messageIDForm.MatchString(first.MessageID) {
			t.Fatalf("EnqueueOnce = %+v, again %v; want a new entry", first, again)
		}
		m2 := m
		m2.Subject = "asked again, worded otherwise"
		if e, again := once(m2); !again || e != first {
			t.Errorf("EnqueueOnce again = %+v, %v; want %+v, true", e, again, first)
		}
		other := m
		other.To = "rui@financeiro.test"
		if _, again := once(other); again {
			t.Error("EnqueueOnce to another address was taken for the first")
		}
		other = m
		other.Ref = "a_2"
		if _, again := once(other); again {
			t.Error("EnqueueOnce about another Ref was taken for the first")
		}
		// The outbox holds three entries, so no fourth message can be sent; each is sent once.
		if n := len(outboxtest.Entries(t, db)); n != 3 {
			t.Errorf("the outbox holds %d entries, want 3", n)
		}
		got := s.Wait(t, 3, 20*time.Second)
		if n := len(s.Messages()); n != 3 {
			t.Errorf("received %d messages, want 3", n)
		}
		for _, g := range got {
			if g.Subject == m2.Subject {
				t.Errorf("the second ask was sent: %q", g.Subject)
			}
		}
		err := db.InTx(context.Background(), func(ctx context.Context, tx store.Tx) error {
			_, _, err := o.EnqueueOnce(ctx, tx, outbox.Message{To: "ana@financeiro.test", Subject: "x"})
			return err
		})
		if fe, ok := failure.As(err); !ok || fe.Field != "ref" {
			t.Errorf("EnqueueOnce without a Ref = %v, want invalid_arguments on ref", err)
		}
	})
}

// pingArgs is a job of another kind than e-mail, for TestJobs.
type pingArgs struct {
	Key string `json:"key" river:"unique"`
	N   int    `json:"n"`
}

func (pingArgs) Kind() string { return "test.ping" }

// TestJobs: the outbox's River client works a Job's kind in its queue, handing the worker the
// outbox; Insert with unique options adds one job per key; Insert refuses e-mail's queue.
func TestJobs(t *testing.T) {
	storetest.Each(t, pg, func(t *testing.T, db store.DB) {
		var worked atomic.Int64
		var handed atomic.Pointer[outbox.Outbox]
		job := outbox.NewJob("ping", 2, func(ctx context.Context, o *outbox.Outbox, j *river.Job[pingArgs]) error {
			handed.Store(o)
			worked.Add(int64(j.Args.N))
			return nil
		})
		o := run(t, db, outbox.Config{Sender: outbox.Dir{Path: t.TempDir()}, From: "cobranca@cobranca.test", PollInterval: 50 * time.Millisecond,
			Jobs: []outbox.Job{job}})
		insert := func(a pingArgs, opts *river.InsertOpts) (int64, bool, error) {
			var id int64
			var again bool
			err := db.InTx(context.Background(), func(ctx context.Context, tx store.Tx) error {
				var err error
				id, again, err = o.Insert(ctx, tx, a, opts)
				return err
			})
			return id, again, err
		}
		unique := &river.InsertOpts{Queue: "ping", UniqueOpts: river.UniqueOpts{ByArgs: true}}
		id1, again, err := insert(pingArgs{Key: "k", N: 1}, unique)
		if err != nil || again {
			t.Fatalf("Insert = %d, %v, %v", id1, again, err)
		}
		if id2, again, err := insert(pingArgs{Key: "k", N: 100}, unique); err != nil || !again || id2 != id1 {
			t.Errorf("Insert of the same key = %d, %v, %v; want %d, true", id2, again, err, id1)
		}
		if _, again, err := insert(pingArgs{Key: "k2", N: 10}, unique); err != nil || again {
			t.Errorf("Insert of another key = %v, %v", again, err)
		}
		if _, _, err := insert(pingArgs{Key: "k3"}, &river.InsertOpts{Queue: "email"}); err == nil || !strings.Contains(err.Error(), "queue") {
			t.Errorf("Insert in e-mail's queue = %v, want refused", err)
		}
		deadline := time.Now().Add(20 * time.Second)
		for worked.Load() < 11 && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
		if n := worked.Load(); n != 11 || handed.Load() != o {
			t.Errorf("worked %d (want 11: 1 + 10, not the duplicate's 100), handed the outbox: %v", n, handed.Load() == o)
		}
	})
}

// TestJobsRefused: a Job that is not NewJob's, or whose queue is e-mail's or another's, stops
// New.
func TestJobsRefused(t *testing.T) {
	db := storetest.SQLite(t)
	work := func(context.Context, *outbox.Outbox, *river.Job[pingArgs]) error { return nil }
	for name, jobs := range map[string][]outbox.Job{
		"not NewJob's":  {{Queue: "ping"}},
		"e-mail's":      {outbox.NewJob("email", 1, work)},
		"twice":         {outbox.NewJob("ping", 1, work), outbox.NewJob("ping", 1, work)},
		"without queue": {outbox.NewJob("", 1, work)},
	} {
		_, err := outbox.New(db, outbox.Config{Sender: outbox.Dir{Path: t.TempDir()}, From: "cobranca@cobranca.test", Driver: outboxtest.Driver(t, db), Jobs: jobs})
		if err == nil || errors.Is(err, context.Canceled) {
			t.Errorf("New with jobs %s = %v, want refused", name, err)
		}
	}
}
