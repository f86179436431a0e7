package collections_test

import (
	"context"
	"flag"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/cobranca/cobranca/internal/outbox"
	"github.com/cobranca/cobranca/internal/outbox/outboxtest"
	"github.com/cobranca/cobranca/internal/pipeline/pipelinetest"
	"github.com/cobranca/cobranca/internal/reminders"
	"github.com/cobranca/cobranca/internal/reminders/reminderstest"
	"github.com/cobranca/cobranca/internal/smtptest"
	"github.com/cobranca/cobranca/internal/store"
	"github.com/cobranca/cobranca/internal/store/storetest"
)

// The outbox's throughput (issue 14, item 3; docs/benchmarks.md, "Outbox throughput"):
//
//	go test -run '^$' -bench OutboxThroughput -benchtime 1x -timeout 30m ./internal/collections/
//	go test -run '^$' -bench 'OutboxThroughput/sqlite/latency=0s' -benchtime 1x ./internal/collections/ -args -outbox.messages=1000
var (
	throughputMessages = flag.Int("outbox.messages", 10000, "BenchmarkOutboxThroughput: the messages of one bulk")
	throughputTimeout  = flag.Duration("outbox.timeout", 20*time.Minute, "BenchmarkOutboxThroughput: how long one bulk may take to be delivered")
)

// throughputLatencies are the sink's answers to DATA: at once (what the queue can do), and a
// relay's usual (what production sees).
var throughputLatencies = []time.Duration{0, 30 * time.Millisecond}

// throughputFrom is the outbox's sender in the benchmark.
const throughputFrom = "cobranca@cobranca.test"

// BenchmarkOutboxThroughput measures, on each store and for each sink latency, how fast a bulk
// of -outbox.messages reminder drafts leaves through the outbox: from the start of the call
// that queues them (the approved retry of collections.bulk_send_reminders) to the last
// message accepted by a local SMTP server (go-smtp, answering
// each DATA after the latency), the outbox configured as `cobranca serve` configures it. In
// the same run the same messages (built by outbox.Compose, so of the same sizes) are sent to
// a fresh server of the same latency directly, by as many goroutines as the outbox has
// workers, through the outbox's own SMTP sender: what SMTP alone allows. outbox_msgs/s well
// below direct_msgs/s means the queue is the bound.
//
// Reported: outbox_msgs/s (end to end), enqueue_msgs/s (the call that queues them),
// delivery_msgs/s (from the call's end to the last message accepted), first_ms (from the
// call's start to the first message accepted), direct_msgs/s, and outbox/direct (the ratio
// of the end-to-end rate to the direct one). ns/op counts one bulk and the direct feed of
// it, not the drafts' writing.
func BenchmarkOutboxThroughput(b *testing.B) {
	n := *throughputMessages
	for _, f := range storetest.Fixtures(pg) {
		for _, latency := range throughputLatencies {
			b.Run(fmt.Sprintf("%s/latency=%s", f.Dialect, latency), func(b *testing.B) {
				var viaOutbox, enqueue, first, direct time.Duration
				for b.Loop() {
					b.StopTimer()
					db := f.Serving(b)
					drafts := reminderstest.Bulk(b, db, n)
					b.StartTimer()
					r := deliverBulk(b, db, drafts, latency)
					viaOutbox += r.delivered
					enqueue += r.enqueued
					first += r.first
					direct += sendDirect(b, r.sent, latency)
				}
				msgs := float64(n * b.N)
				b.ReportMetric(msgs/viaOutbox.Seconds(), "outbox_msgs/s")
				b.ReportMetric(msgs/enqueue.Seconds(), "enqueue_msgs/s")
				b.ReportMetric(msgs/(viaOutbox-enqueue).Seconds(), "delivery_msgs/s")
				b.ReportMetric(msgs/direct.Seconds(), "direct_msgs/s")
				b.ReportMetric(direct.Seconds()/viaOutbox.Seconds(), "outbox/direct")
				b.ReportMetric(float64(first.Milliseconds())/float64(b.N), "first_ms")
			})
		}
	}
}

// bulkRun is what deliverBulk measured.
type bulkRun struct {
	enqueued  time.Duration      // the call that queued the bulk
	first     time.Duration      // from the call's start to the first message accepted
	delivered time.Duration      // from the call's start to the last message accepted
	sent      []outboxtest.Entry // what the outbox sent, for the direct feed
}

// deliverBulk serves the tools on db with an outbox as serve configures it, delivering to a
// fresh sink of the latency; an agent sends the drafts in one bulk call — its dry run, the
// call citing the dry run's planHash, a stepped-up approver's approval, the retry that
// queues them — and deliverBulk waits until the sink has accepted every message and every
// draft is recorded sent; it checks each draft was received once.
func deliverBulk(b *testing.B, db store.DB, drafts []string, latency time.Duration) bulkRun {
	b.Helper()
	sink := smtptest.Start(b, smtptest.Options{Latency: latency})
	smtp, err := outbox.NewSMTP(sink.URL(), nil)
	if err != nil {
		b.Fatal(err)
	}
	e := newSendEnvOn(b, db, sink, func(now func() time.Time) *outbox.Outbox {
		// serve's configuration (cmd/cobranca newOutbox): everything else River's and the
		// outbox's defaults.
		return outboxtest.Run(b, db, outbox.Config{Sender: smtp, From: throughputFrom, Owner: reminders.Delivery{}, Now: now})
	})
	sel := map[string]any{"filter": map[string]any{}}
	dr := e.dry(b, sender, sel)
	if dr.RecipientCount != len(drafts) {
		b.Fatalf("the dry run counts %d recipients, want %d", dr.RecipientCount, len(drafts))
	}
	ask := pipelinetest.AskedOf(b, e.bulkCall(urlClient, sel, dr.PlanHash, "bench", pipelinetest.Asked{}), urlClient)
	e.approve(b, ask.ID)

	var r bulkRun
	start := time.Now()
	queued := decode[bulkSent](b, e.bulkCall(urlClient, sel, dr.PlanHash, "bench", ask))
	r.enqueued = time.Since(start)
	if queued.Queued != len(drafts) {
		b.Fatalf("the approved call queued %d messages, want %d", queued.Queued, len(drafts))
	}
	sink.Wait(b, 1, *throughputTimeout)
	r.first = time.Since(start)
	got := sink.Wait(b, len(drafts), *throughputTimeout)
	r.delivered = time.Since(start)

	byRef := map[string]int{}
	for _, m := range got {
		byRef[m.MessageID]++
	}
	if len(byRef) != len(drafts) || len(got) != len(drafts) {
		b.Fatalf("the sink received %d messages under %d Message-IDs, want %d once each", len(got), len(byRef), len(drafts))
	}
	reminderstest.WaitSent(b, db, len(drafts), *throughputTimeout)
	r.sent = outboxtest.Entries(b, db)
	// The entries name their drafts (FromOwner): the direct send gets the very bodies the
	// outbox read from them, so both send messages of the same sizes.
	for i := range r.sent {
		c, err := (reminders.Delivery{}).Content(context.Background(), db, r.sent[i].Args.Ref)
		if err != nil {
			b.Fatal(err)
		}
		a := &r.sent[i].Args
		a.Text, a.HTML, a.Related, a.FromOwner = c.Text, c.HTML, c.Related, false
	}
	return r
}

// sendDirect sends msgs to a fresh sink of the latency through the outbox's SMTP sender,
// outbox.DefaultWorkers at a time, and returns how long they took to be accepted.
func sendDirect(b *testing.B, msgs []outboxtest.Entry, latency time.Duration) time.Duration {
	b.Helper()
	sink := smtptest.Start(b, smtptest.Options{Latency: latency})
	sender, err := outbox.NewSMTP(sink.URL(), nil)
	if err != nil {
		b.Fatal(err)
	}
	next := make(chan outboxtest.Entry)
	var wg sync.WaitGroup
	errs := make(chan error, outbox.DefaultWorkers)
	start := time.Now()
	for range outbox.DefaultWorkers {
		wg.Go(func() {
			for m := range next {
				msg, err := outbox.Compose(throughputFrom, m.ID, m.Args, time.Now())
				if err == nil {
					err = sender.Send(context.Background(), msg)
				}
				if err != nil {
					errs <- err
					for range next {
					}
					return
				}
			}
		})
	}
	for _, m := range msgs {
		next <- m
	}
	close(next)
	wg.Wait()
	took := time.Since(start)
	close(errs)
	if err := <-errs; err != nil {
		b.Fatal(err)
	}
	if got := len(sink.Messages()); got != len(msgs) {
		b.Fatalf("the direct sink received %d messages, want %d", got, len(msgs))
	}
	return took
}
