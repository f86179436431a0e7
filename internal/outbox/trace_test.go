package outbox_test

import (
	"bytes"
	"context"
	"slices"
	"testing"
	"time"

	"github.com/cobranca/cobranca/internal/config"
	"github.com/cobranca/cobranca/internal/outbox"
	"github.com/cobranca/cobranca/internal/outbox/outboxtest"
	"github.com/cobranca/cobranca/internal/smtptest"
	"github.com/cobranca/cobranca/internal/store"
	"github.com/cobranca/cobranca/internal/store/storetest"
	"github.com/cobranca/cobranca/internal/telemetry/otlp"
	"github.com/cobranca/cobranca/internal/telemetry/telemetrytest"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
)

// TestDeliveryTraced: with tracing on, every job of a real SMTP delivery is
// a trace of its own, outbox.job, with its outcome; under it the send,
// smtp.send, failed with the mail server's reply code when it refused, and
// the store's transaction that told the owner. A 4xx then a success is two
// jobs (retry, delivered); a 5xx is undeliverable. The exports name no
// recipient, subject, body or reference.
func TestDeliveryTraced(t *testing.T) {
	storetest.Each(t, pg, func(t *testing.T, db store.DB) {
		rcv := telemetrytest.NewReceiver(t)
		tr, err := otlp.Setup(context.Background(), config.Config{OTLPEndpoint: rcv.URL, ServiceName: "outbox-test"}, "test")
		if err != nil {
			t.Fatal(err)
		}
		s := smtptest.New(t)
		own := &owner{}
		cfg := outbox.Config{Driver: outboxtest.Driver(t, db), Sender: smtpSender(t, s), From: "cobranca@cobranca.test", Owner: own,
			PollInterval: 50 * time.Millisecond, MaxAttempts: 5, Tracing: tr.Provider()}
		outbox.SetRetryAfter(&cfg, 50*time.Millisecond)
		o, err := outbox.New(db, cfg)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- o.Run(ctx) }()

		s.Refuse(smtptest.Transient)
		retried, err := enqueue(t, db, o, outbox.Message{To: "traced.bia@cliente.example", Subject: "Subject QX-retried", Text: "Body QX-retried", Ref: "d_QXretried"}, nil)
		if err != nil {
			t.Fatal(err)
		}
		waitFor(t, "the retried message", func() bool { st, _ := jobState(t, db, retried.ID); return st == "completed" })
		s.Refuse(smtptest.Permanent)
		refused, err := enqueue(t, db, o, outbox.Message{To: "traced.nobody@cliente.example", Subject: "Subject QX-refused", Text: "Body QX-refused", Ref: "d_QXrefused"}, nil)
		if err != nil {
			t.Fatal(err)
		}
		waitFor(t, "the refusal recorded", func() bool { st, _ := jobState(t, db, refused.ID); return st == "cancelled" })
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if err := tr.Shutdown(context.Background()); err != nil { // the jobs' spans have ended: Run waited for them
			t.Fatal(err)
		}

		spans := rcv.Spans()
		type job struct{ outcome, attempt, send, sendCode, reply string }
		var jobs []job
		for _, sp := range spans {
			if sp.GetName() != "outbox.job" {
				continue
			}
			if sp.Parent() != "" || sp.GetKind() != tracepb.Span_SPAN_KIND_CONSUMER || sp.Resource["service.name"] != "outbox-test" {
				t.Errorf("outbox.job %s: parent %q, kind %v, resource %v; want a root, consumer, of outbox-test", sp.ID(), sp.Parent(), sp.GetKind(), sp.Resource)
			}
			j := job{outcome: sp.Attr("cobranca.outcome"), attempt: sp.Attr("cobranca.attempt")}
			var stores []string
			for _, c := range telemetrytest.Children(spans, sp) {
				switch c.GetName() {
				case "smtp.send":
					j.send, j.sendCode, j.reply = c.GetStatus().GetCode().String(), c.Attr("cobranca.code"), c.Attr("cobranca.smtp_reply")
				case "store.tx":
					stores = append(stores, c.Attr("db.system.name"))
				}
			}
			// A delivery is recorded in a transaction under the job; so is a
			// refusal; a retry records nothing.
			wantStores := []string{map[store.Dialect]string{store.SQLite: "sqlite", store.Postgres: "postgresql"}[db.Dialect()]}
			if j.outcome == "retry" {
				wantStores = nil
			}
			if !slices.Equal(stores, wantStores) {
				t.Errorf("job %+v: store.tx spans under it on %q, want %q", j, stores, wantStores)
			}
			jobs = append(jobs, j)
		}
		want := []job{
			{"retry", "1", "STATUS_CODE_ERROR", "smtp_451", "451"},
			{"delivered", "2", "STATUS_CODE_UNSET", "", ""},
			{"undeliverable", "1", "STATUS_CODE_ERROR", "smtp_550", "550"},
		}
		if !slices.Equal(jobs, want) {
			t.Errorf("jobs traced %+v, want %+v", jobs, want)
		}
		raw := rcv.Raw()
		for _, secret := range []string{"cliente.example", "QX-retried", "QX-refused", "d_QXretried", "d_QXrefused", retried.MessageID, "try again later", "no such user"} {
			if bytes.Contains(raw, []byte(secret)) {
				t.Errorf("the exported spans contain %q", secret)
			}
		}
	})
}
