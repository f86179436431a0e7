package main

import (
	"bufio"
	"context"
	"crypto/sha256"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cobranca/cobranca/internal/approval"
	"github.com/cobranca/cobranca/internal/auditlog"
	"github.com/cobranca/cobranca/internal/clocktest"
	"github.com/cobranca/cobranca/internal/idempotency"
	"github.com/cobranca/cobranca/internal/metrics"
	"github.com/cobranca/cobranca/internal/outbox"
	"github.com/cobranca/cobranca/internal/outbox/outboxtest"
	"github.com/cobranca/cobranca/internal/store"
	"github.com/cobranca/cobranca/internal/store/storetest"
)

// opsFixture is a store with the services whose state the operator metrics read, the
// metrics registered on them, and ways to put real data there.
type opsFixture struct {
	db        store.DB
	clock     *clocktest.Clock
	approvals *approval.Store
	alog      *auditlog.Log
	mailer    *outbox.Outbox
	keys      *idempotency.Store
	m         *metrics.Metrics
}

func newOpsFixture(t testing.TB, db store.DB) *opsFixture {
	t.Helper()
	f := &opsFixture{db: db, clock: &clocktest.Clock{}, m: metrics.New()}
	var err error
	if f.approvals, err = approval.New(15*time.Minute, f.clock.Now); err != nil {
		t.Fatal(err)
	}
	if f.alog, err = auditlog.New(db, []byte("0123456789abcdef0123456789abcdef"), auditlog.Options{Now: f.clock.Now}); err != nil {
		t.Fatal(err)
	}
	if f.mailer, err = outbox.New(db, outbox.Config{Driver: outboxtest.Driver(t, db), Sender: outbox.Dir{Path: t.TempDir()}, From: "cobranca@cobranca.test"}); err != nil {
		t.Fatal(err)
	}
	if f.keys, err = idempotency.New(db.Dialect(), time.Hour, f.clock.Now); err != nil {
		t.Fatal(err)
	}
	registerOperatorMetrics(f.m, db, f.approvals, f.alog, f.mailer, f.clock.Now, slog.New(slog.DiscardHandler))
	return f
}

func (f *opsFixture) tx(t testing.TB, fn func(ctx context.Context, tx store.Tx) error) {
	t.Helper()
	if err := f.db.InTx(context.Background(), fn); err != nil {
		t.Fatal(err)
	}
}

// add puts n of each thing in the store: pending approvals, audit events (unsealed), queued
// messages and stored idempotency keys.
func (f *opsFixture) add(t testing.TB, approvals, events, messages, keys int) {
	t.Helper()
	ctx := context.Background()
	f.tx(t, func(ctx context.Context, tx store.Tx) error {
		for i := range approvals {
			if _, err := f.approvals.Create(ctx, tx, "test.critical", sha256.Sum256([]byte(strconv.Itoa(i))), "preview", nil, approval.Requester{Subject: "alice", Client: "agent"}); err != nil {
				return err
			}
		}
		for i := range keys {
			k := idempotency.Key{Principal: "alice", Tool: "test.write", Key: fmt.Sprintf("k-%d-%d", time.Now().UnixNano(), i)}
			fp := sha256.Sum256([]byte(k.Key))
			if _, err := f.keys.Begin(ctx, tx, k, fp[:]); err != nil {
				return err
			}
			if err := f.keys.Complete(ctx, tx, k, fp[:], []byte(`{"ok":true}`)); err != nil {
				return err
			}
		}
		ms := make([]outbox.Message, messages)
		for i := range ms {
			ms[i] = outbox.Message{To: "ana@cliente.example", Subject: "Lembrete", Text: "Olá", Ref: "d_" + strconv.Itoa(i)}
		}
		_, err := f.mailer.EnqueueMany(ctx, tx, ms)
		return err
	})
	for range events {
		if err := f.alog.Record(ctx, auditlog.Event{Name: "test.event", Outcome: auditlog.Allowed}); err != nil {
			t.Fatal(err)
		}
	}
}

// scrapeValues scrapes m and returns its unlabelled samples by name.
func scrapeValues(t testing.TB, m *metrics.Metrics) map[string]float64 {
	t.Helper()
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	vals := map[string]float64{}
	sc := bufio.NewScanner(rec.Body)
	for sc.Scan() {
		name, v, ok := strings.Cut(sc.Text(), " ")
		if !ok || strings.HasPrefix(name, "#") || strings.Contains(name, "{") {
			continue
		}
		f, err := strconv.ParseFloat(v, 64)
		if err != nil {
			t.Fatalf("scrape: %q: %v", sc.Text(), err)
		}
		vals[name] = f
	}
	return vals
}

// TestOperatorMetrics: each operator metric, served on /metrics, reads the store's real
// state, on both stores: the values hold for the TTL however the store changes, and the next
// scrape past it reads the change.
func TestOperatorMetrics(t *testing.T) {
	storetest.Each(t, pg, func(t *testing.T, db store.DB) {
		f := newOpsFixture(t, db)
		want := map[string]float64{metricApprovalsPending: 0, metricApprovalOldestAge: 0, metricOutboxQueued: 0, metricOutboxRetrying: 0,
			metricOutboxUndeliverable: 0, metricAuditUnsealed: 0, metricAuditOldestUnsealed: 0, metricIdempotencyKeysStored: 0}
		check := func(when string, ages ...string) {
			t.Helper()
			got := scrapeValues(t, f.m)
			for name, w := range want {
				g, ok := got[name]
				switch {
				case !ok:
					t.Errorf("%s: /metrics has no %s", when, name)
				case strings.HasSuffix(name, "_seconds") && w > 0:
					// An age: at least the clock's advance, give or take the test's own time.
					if g < w || g > w+10 {
						t.Errorf("%s: %s = %v, want %v (+ up to 10s)", when, name, g, w)
					}
				case g != w:
					t.Errorf("%s: %s = %v, want %v", when, name, g, w)
				}
			}
		}
		check("an empty store")

		f.add(t, 3, 4, 5, 6)
		check("within the TTL of the first read: the values read then")
		f.clock.Advance(90 * time.Second)
		want[metricApprovalsPending], want[metricApprovalOldestAge] = 3, 90
		want[metricOutboxQueued] = 5
		want[metricAuditUnsealed], want[metricAuditOldestUnsealed] = 4, 90
		want[metricIdempotencyKeysStored] = 6
		check("90s later")

		if _, err := f.alog.Seal(context.Background()); err != nil {
			t.Fatal(err)
		}
		f.add(t, 1, 0, 0, 0)
		check("the log sealed and one more approval, within the TTL")
		f.clock.Advance(operatorMetricsTTL)
		want[metricApprovalsPending] = 4
		want[metricApprovalOldestAge] += operatorMetricsTTL.Seconds()
		want[metricAuditUnsealed], want[metricAuditOldestUnsealed] = 0, 0
		check("past the TTL")

		f.clock.Advance(15 * time.Minute) // every approval expired
		want[metricApprovalsPending], want[metricApprovalOldestAge] = 0, 0
		check("every approval expired")
	})
}

// BenchmarkOperatorMetricsScrape is one scrape of /metrics that reads the store (the clock
// moved past the TTL each time), with 10 000 idempotency keys, 1 000 pending approvals, 1 000
// queued messages and 1 000 unsealed audit events in it; "cached" is a scrape within the TTL.
func BenchmarkOperatorMetricsScrape(b *testing.B) {
	for _, fx := range storetest.Fixtures(pg) {
		b.Run(string(fx.Dialect), func(b *testing.B) {
			f := newOpsFixture(b, fx.Serving(b))
			for range 10 {
				f.add(b, 100, 100, 100, 1000)
			}
			got := scrapeValues(b, f.m)
			if got[metricIdempotencyKeysStored] != 10000 || got[metricApprovalsPending] != 1000 || got[metricOutboxQueued] != 1000 || got[metricAuditUnsealed] != 1000 {
				b.Fatalf("the store holds %v", got)
			}
			b.Run("read", func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					f.clock.Advance(operatorMetricsTTL)
					scrapeValues(b, f.m)
				}
			})
			b.Run("cached", func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					scrapeValues(b, f.m)
				}
			})
		})
	}
}
