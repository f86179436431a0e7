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

// BenchmarkMediumTierCallSteps times each round trip of two transactions on PostgreSQL, one
// call at a time (serial: the time of a step is its round trip and its work, with no
// queueing), reported as µs per step: where a medium-tier call's time goes.
//
//   - bare_insert: storetest.Yardstick, BEGIN; a one-row INSERT; COMMIT.
//   - medium_call: the transaction the pipeline runs for a call with side effects and an
//     idempotency key, as the store sends it: Begin (advisory lock and read) with the BEGIN, a
//     one-row effect, then the audit event (auditlog.Log.AppendStmt) and the ~300-byte stored
//     answer (CompleteStmt), deferred to the commit's round trip. Every call has a key of its
//     own, as retries are rare.
//
// The end-to-end number, pipeline.Do in parallel against the yardstick, is the pipeline's
// BenchmarkMediumTierPipeline. See docs/benchmarks.md.
func BenchmarkMediumTierCallSteps(b *testing.B) {
	m := newMedium(b)
	for _, c := range []struct {
		name  string
		steps []string
		run   func(b *testing.B, mark func()) error
	}{
		{"bare_insert", []string{"BEGIN", "INSERT", "COMMIT"}, func(_ *testing.B, mark func()) error { return m.y.Insert(context.Background(), mark) }},
		{"medium_call", []string{"BEGIN+Begin", "effect", "audit+Complete+COMMIT"}, m.call},
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
	y           *storetest.Yardstick
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
	return &medium{db: db, y: storetest.NewYardstick(b, db), s: s, l: l, resp: resp, fingerprint: fp("arguments")}
}

// call is one medium-tier call with a key of its own. mark is called after Begin and after
// the effect.
func (m *medium) call(b *testing.B, mark func()) error {
	k := idempotency.Key{Principal: "user-1|client-9", Tool: "collections.draft_reminder", Key: "bench-" + strconv.FormatInt(m.keys.Add(1), 10)}
	start := time.Now()
	return m.db.InTx(context.Background(), func(ctx context.Context, tx store.Tx) error {
		r, err := m.s.Begin(ctx, tx, k, m.fingerprint)
		if err != nil || r.State != idempotency.Fresh {
			b.Errorf("Begin = %v, %v", r.State, err)
			return err
		}
		mark()
		if _, err := tx.Exec(ctx, `INSERT INTO effect (principal, customer, amount_cents, status) VALUES ($1, $2, $3, $4)`,
			k.Principal, "C-1042", int64(129_990), "draft"); err != nil {
			return err
		}
		mark()
		audit, err := m.l.AppendStmt(mediumEvent(k, time.Since(start)))
		if err != nil {
			return err
		}
		answer, err := m.s.CompleteStmt(tx, k, m.fingerprint, m.resp)
		if err != nil {
			return err
		}
		tx.Defer(audit, answer)
		return nil
	})
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
