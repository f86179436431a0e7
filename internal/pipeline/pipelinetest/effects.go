package pipelinetest

import (
	"context"
	"testing"
	"time"

	"github.com/cobranca/cobranca/internal/approval"
	"github.com/cobranca/cobranca/internal/contract"
	"github.com/cobranca/cobranca/internal/idempotency"
	"github.com/cobranca/cobranca/internal/pipeline"
	"github.com/cobranca/cobranca/internal/store"
)

// effectsTable holds Effectful's rows, planTable the version of Planned's plans: portable SQL
// on both dialects.
const (
	effectsTable = `CREATE TABLE IF NOT EXISTS pipelinetest_effect (tool TEXT NOT NULL)`
	planTable    = `CREATE TABLE IF NOT EXISTS pipelinetest_plan (tool TEXT PRIMARY KEY, version INTEGER NOT NULL)`
)

// PublicURL is where WithStore's pipelines send people to approve calls.
const PublicURL = "https://cobranca.test"

// WithStore returns opts set to run tools with side effects in db, a
// migrated store: its idempotency keys (internal/idempotency), its
// approvals (internal/approval, unless opts has a store of its own) and
// the tables of Effectful's rows and Planned's plans, which it creates.
func WithStore(t testing.TB, db store.DB, opts pipeline.Options) pipeline.Options {
	t.Helper()
	for _, table := range []string{effectsTable, planTable} {
		if _, err := db.Exec(context.Background(), table); err != nil {
			t.Fatal(err)
		}
	}
	keys, err := idempotency.New(db.Dialect(), time.Hour, opts.Now)
	if err != nil {
		t.Fatal(err)
	}
	approvals, err := approval.New(15*time.Minute, opts.Now)
	if err != nil {
		t.Fatal(err)
	}
	opts.DB, opts.Keys = db, keys
	if opts.Approvals == nil {
		opts.Approvals, opts.PublicURL = approvals, PublicURL
	}
	return opts
}

// Effectful returns a tool with side effects for c (a contract of
// contracttest.New above the low tier, or its like): a call takes any
// object, calls ran when it is not nil, and adds one row for c's tool in
// the pipeline's transaction, which Effects counts once committed. Its
// Preview, which a person confirms on the high tier, is EffectPreview(c);
// where c offers a dry run, one answers {"ok":true,"dryRun":true} and
// changes nothing. Its pipeline's options come from WithStore.
func Effectful(c *contract.Contract, ran func()) pipeline.Tool {
	t := pipeline.Tool{
		Contract: c,
		Decode:   pipeline.Strict[map[string]any](),
		Preview: func(context.Context, store.Querier, any) (string, error) {
			return EffectPreview(c), nil
		},
		Execute: func(ctx context.Context, tx store.Tx, _ any) (pipeline.Effect, error) {
			if ran != nil {
				ran()
			}
			if _, err := tx.Exec(ctx, `INSERT INTO pipelinetest_effect (tool) VALUES ($1)`, c.Name); err != nil {
				return pipeline.Effect{}, err
			}
			return pipeline.Effect{Structured: map[string]any{"ok": true}, Summary: "changed a test row"}, nil
		},
	}
	if c.DryRun != contract.ModeNone {
		t.DryRun = func(context.Context, store.Querier, any) (pipeline.Effect, error) {
			return pipeline.Effect{Structured: map[string]any{"ok": true, "dryRun": true}, Summary: "would change a test row"}, nil
		}
	}
	return t
}

// EffectPreview is what a call of Effectful's tool for c would change, as a
// person confirming it reads it.
func EffectPreview(c *contract.Contract) string {
	return "add one test row for " + c.Name
}

// Effects is how many rows committed calls of tool added to db.
func Effects(t testing.TB, db store.DB, tool string) int {
	t.Helper()
	var n int64
	if err := db.QueryRow(context.Background(), `SELECT COUNT(*) FROM pipelinetest_effect WHERE tool = $1`, tool).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return int(n)
}
