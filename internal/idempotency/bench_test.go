package idempotency_test

import (
	"bytes"
	"context"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cobranca/cobranca/internal/auditlog"
	"github.com/cobranca/cobranca/internal/idempotency"
	"github.com/cobranca/cobranca/internal/store"
	"github.com/cobranca/cobranca/internal/store/storetest"
)

// BenchmarkMediumTierCall measures, on PostgreSQL, what a medium-tier tool call costs in the
// store against the cheapest transactional write, in the same run:
//
//   - bare_insert: BEGIN; one-row INSERT; COMMIT.
//   - medium_call: one transaction holding what the pipeline does for a call with side
//     effects and an idempotency key: Begin (advisory lock and read), a one-row effect, the
//     audit event (auditlog.Log.Append), Complete with a ~300-byte answer. Every call has a
//     key of its own, as retries are rare.
//
// Both run b.RunParallel with 4 goroutines per GOMAXPROCS over the store's pool as
// postgres.Open makes it (pgxpool's default: 4 connections on 2 cores). See
// docs/benchmarks.md.
func BenchmarkMediumTierCall(b *testing.B) {
	m := newMedium(b)
	b.Run("bare_insert", func(b *testing.B) {
		parallel(b, func() error { return m.bare(nil) })
	})
	b.Run("medium_call", func(b *testing.B) {
		parallel(b, func() error { return m.call(b, nil) })
	})
}

// BenchmarkMediumTierCallSteps times each statement of both transactions, one call at a
// time (serial: the time of a statement is its round trip and its work, with no queueing),
// reported as µs per step: where a medium-tier call's time goes.
func BenchmarkMediumTierCallSteps(b *testing.B) {
	m := newMedium(b)
	for _, c := range []struct {
		name  string
		steps []string
		run   func(b *testing.B, mark func()) error
	}{
		{"bare_insert", []string{"BEGIN", "INSERT", "COMMIT"}, func(_ *testing.B, mark func()) error { return m.bare(mark) }},
		{"medium_call", []string{"BEGIN", "Begin", "effect", "audit", "Complete", "COMMIT"}, m.call},
	} {
		b.Run(c.name, func(b *testing.B) {
			spent := make([]time.Duration, len(c.steps))
			b.ReportAllocs()
			for b.Loop() {
				i, last := 0, time.Now()
				mark := func() {
					now := time.Now()
					spent[i] += now.Sub(last)
					i, last = i+1, now
				}
				if err := c.run(b, mark); err != nil {
					b.Fatal(err)
				}
				mark() // the commit
			}
			for i, step := range c.steps {
				b.ReportMetric(float64(spent[i].Microseconds())/float64(b.N), "µs/"+step)
			}
		})
	}
}

// medium is the database of the benchmarks, with what a medium-tier call writes.
type medium struct {
	db          store.DB
	s           *idempotency.Store
	l           *auditlog.Log
	resp        []byte
	fingerprint []byte
	keys        atomic.Int64 // every call of every round its own key
}

func newMedium(b *testing.B) *medium {
	f := storetest.Fixtures(pg)[1]
	if f.Dialect != store.Postgres {
		b.Fatalf("fixture %s, want postgres", f.Dialect)
	}
	db := f.Migrated(b)
	ctx := context.Background()
	if _, err := db.Exec(ctx, `CREATE TABLE scratch (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, note text NOT NULL)`); err != nil {
		b.Fatal(err)
	}
	// The effect of a medium-tier tool: a row of the domain's own, e.g. a reminder drafted.
	if _, err := db.Exec(ctx, `CREATE TABLE effect (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
principal text NOT NULL, customer text NOT NULL, amount_cents bigint NOT NULL, status text NOT NULL)`); err != nil {
		b.Fatal(err)
	}
	s, err := idempotency.New(store.Postgres, 24*time.Hour, nil)
	if err != nil {
		b.Fatal(err)
	}
	l, err := auditlog.New(db, []byte("0123456789abcdef0123456789abcdef"), auditlog.Options{})
	if err != nil {
		b.Fatal(err)
	}
	resp := bytes.Repeat([]byte("x"), 300)
	copy(resp, `{"content":[{"type":"text","text":"Reminder drafted for customer C-1042."}],"structuredContent":{"draftId":"d-000123","status":"draft"}`)
	return &medium{db: db, s: s, l: l, resp: resp, fingerprint: fp("arguments")}
}

// bare is BEGIN; INSERT; COMMIT. mark, when not nil, is called after each statement but the
// commit.
func (m *medium) bare(mark func()) error {
	return m.db.InTx(context.Background(), func(ctx context.Context, tx store.Tx) error {
		step(mark)
		_, err := tx.Exec(ctx, `INSERT INTO scratch (note) VALUES ($1)`, "one row")
		step(mark)
		return err
	})
}

// call is one medium-tier call with a key of its own; mark as for bare.
func (m *medium) call(b *testing.B, mark func()) error {
	k := idempotency.Key{Principal: "user-1|client-9", Tool: "collections.draft_reminder", Key: "bench-" + strconv.FormatInt(m.keys.Add(1), 10)}
	start := time.Now()
	return m.db.InTx(context.Background(), func(ctx context.Context, tx store.Tx) error {
		step(mark)
		r, err := m.s.Begin(ctx, tx, k, m.fingerprint)
		if err != nil || r.State != idempotency.Fresh {
			b.Errorf("Begin = %v, %v", r.State, err)
			return err
		}
		step(mark)
		if _, err := tx.Exec(ctx, `INSERT INTO effect (principal, customer, amount_cents, status) VALUES ($1, $2, $3, $4)`,
			k.Principal, "C-1042", int64(129_990), "draft"); err != nil {
			return err
		}
		step(mark)
		if err := m.l.Append(ctx, tx, mediumEvent(k, time.Since(start))); err != nil {
			return err
		}
		step(mark)
		err = m.s.Complete(ctx, tx, k, m.fingerprint, m.resp)
		step(mark)
		return err
	})
}

func step(mark func()) {
	if mark != nil {
		mark()
	}
}

// parallel runs call on 4 goroutines per GOMAXPROCS and reports calls/s.
func parallel(b *testing.B, call func() error) {
	b.ReportAllocs()
	b.SetParallelism(4)
	b.ResetTimer()
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if err := call(); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "calls/s")
}

// mediumEvent is the audit event of a medium-tier call as the pipeline writes it: the caller,
// digests of arguments and answer, a count.
func mediumEvent(k idempotency.Key, d time.Duration) auditlog.Event {
	return auditlog.Event{
		Name:         "collections.reminder.drafted",
		Tool:         k.Tool,
		Risk:         "medium",
		Subject:      "user-1",
		Actor:        "agent-7",
		ClientID:     "client-9",
		ACR:          "urn:example:acr:mfa",
		RequestID:    "req-" + k.Key,
		Outcome:      auditlog.Allowed,
		ArgsDigest:   "4f2a1c9e7b3d5a6f8e0c2b4d6f8a0c2e4f6a8b0c2d4e6f8a0b2c4d6e8f0a2b4c",
		ResultDigest: "9e8d7c6b5a4f3e2d1c0b9a8f7e6d5c4b3a2f1e0d9c8b7a6f5e4d3c2b1a0f9e8d",
		Duration:     d,
		Details:      map[string]int64{"recipientCount": 1},
	}
}
