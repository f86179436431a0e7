package pipeline_test

import (
	"context"
	"encoding/json"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/cobranca/cobranca/internal/pipeline"
	"github.com/cobranca/cobranca/internal/store/postgres"
	"github.com/cobranca/cobranca/internal/store/storetest"
)

// BenchmarkMediumTierPipeline measures, on PostgreSQL, what a medium-tier tool call costs
// through the real pipeline against the cheapest transactional write, in the same run:
//
//   - bare_insert: BEGIN; one-row INSERT; COMMIT, on the store's pgx pool directly (three
//     round trips whatever the store does with its own transactions): the yardstick.
//   - pipeline_do: pipeline.Do of this file's medium-tier test tool by an agent, with an
//     idempotency key of its own per call: scope and tier checks, strict decoding, the
//     canonical fingerprint, then the transaction (key reserved, one-row effect, output
//     check, audit event, stored answer, commit) — what execute runs for every such call.
//
// Both run b.RunParallel with 4 goroutines per GOMAXPROCS over the pool as postgres.Open makes
// it (pgxpool's default: 4 connections on 2 cores). See docs/benchmarks.md.
func BenchmarkMediumTierPipeline(b *testing.B) {
	f := storetest.Fixtures(pg)[1]
	db := f.Migrated(b)
	pool := db.(*postgres.DB).Pool()
	ctx := context.Background()
	if _, err := db.Exec(ctx, `CREATE TABLE scratch (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, note text NOT NULL)`); err != nil {
		b.Fatal(err)
	}
	e := newEnv(b, db, envOpts{})
	b.Run("bare_insert", func(b *testing.B) {
		parallel(b, func() error {
			return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
				_, err := tx.Exec(ctx, `INSERT INTO scratch (note) VALUES ($1)`, "one row")
				return err
			})
		})
	})
	var keys atomic.Int64
	b.Run("pipeline_do", func(b *testing.B) {
		parallel(b, func() error {
			args := json.RawMessage(`{"customer":"C-1042","note":"first reminder","idempotencyKey":"bench-` + strconv.FormatInt(keys.Add(1), 10) + `"}`)
			res := e.p.Do(ctx, pipeline.Call{Principal: agent, RequestID: "bench", Tool: "test.medium", Args: args, Client: modern})
			if res.Kind != pipeline.Complete {
				b.Errorf("Do = %s %v", kindName(res.Kind), res.Err)
			}
			return nil
		})
	})
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
