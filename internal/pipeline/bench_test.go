package pipeline_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/cobranca/cobranca/internal/pipeline"
	"github.com/cobranca/cobranca/internal/store/storetest"
)

// BenchmarkMediumTierPipeline measures, on PostgreSQL, what a medium-tier tool call costs
// through the real pipeline against the cheapest transactional write, in the same run:
//
//   - bare_insert: storetest.Yardstick, BEGIN; one-row INSERT; COMMIT on the store's pgx pool
//     directly (three round trips, whatever the store does with its own transactions).
//   - pipeline_do: pipeline.Do of this file's medium-tier test tool by an agent, with an
//     idempotency key of its own per call: scope and tier checks, strict decoding, the
//     canonical fingerprint, then the transaction (key reserved, one-row effect, output
//     check, audit event, stored answer, commit) — what execute runs for every such call.
//
// Both run storetest.Parallel. See docs/benchmarks.md.
func BenchmarkMediumTierPipeline(b *testing.B) {
	db := storetest.Fixtures(pg)[1].Migrated(b)
	y := storetest.NewYardstick(b, db)
	e := newEnv(b, db, envOpts{})
	ctx := context.Background()
	b.Run("bare_insert", func(b *testing.B) {
		storetest.Parallel(b, func() error { return y.Insert(ctx, nil) })
	})
	var keys atomic.Int64
	b.Run("pipeline_do", func(b *testing.B) {
		storetest.Parallel(b, func() error {
			args := json.RawMessage(`{"customer":"C-1042","note":"first reminder","idempotencyKey":"bench-` + strconv.FormatInt(keys.Add(1), 10) + `"}`)
			res := e.p.Do(ctx, pipeline.Call{Principal: agent, RequestID: "bench", Tool: "test.medium", Args: args, Client: modern})
			if res.Kind != pipeline.Complete {
				return fmt.Errorf("Do = %s %v", kindName(res.Kind), res.Err)
			}
			return nil
		})
	})
}
