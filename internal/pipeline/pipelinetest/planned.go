package pipelinetest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"testing"

	"github.com/cobranca/cobranca/internal/contract"
	"github.com/cobranca/cobranca/internal/failure"
	"github.com/cobranca/cobranca/internal/pipeline"
	"github.com/cobranca/cobranca/internal/store"
)

// Planned returns a tool with side effects whose dry run is mandatory, for c (a contract of
// contracttest.WithMandatoryDryRun, or its like): Effectful's tool, planning. Its plan is the
// call's arguments and the plan's version, a number ChangePlan moves in the store (as an
// edited draft moves a bulk send's). Its dry run answers
// {"ok":true,"dryRun":true,"planHash":…,"missingPermissions":[…]} (the scopes the caller
// lacks, pipeline.MissingPermissions) and changes nothing; a call recomputes the plan in its
// transaction and answers plan_changed when it is not the one its planHash names, and
// otherwise adds Effectful's row (ran is called then, when not nil). Its pipeline's options
// come from WithStore.
func Planned(c *contract.Contract, ran func()) pipeline.Tool {
	t := Effectful(c, nil)
	t.DryRun = func(ctx context.Context, q store.Querier, v any) (pipeline.Effect, error) {
		h, err := planOf(ctx, q, c.Name, v)
		if err != nil {
			return pipeline.Effect{}, err
		}
		missing := pipeline.MissingPermissions(ctx)
		if missing == nil {
			missing = []string{}
		}
		return pipeline.Effect{Structured: map[string]any{"ok": true, "dryRun": true, "planHash": h, "missingPermissions": missing},
			Summary: "would change a test row", PlanHash: h}, nil
	}
	execute := t.Execute
	t.Execute = func(ctx context.Context, tx store.Tx, v any) (pipeline.Effect, error) {
		h, err := planOf(ctx, tx, c.Name, v)
		if err != nil {
			return pipeline.Effect{}, err
		}
		if h != pipeline.PlanHashFrom(ctx) {
			return pipeline.Effect{}, &failure.Error{Code: failure.PlanChanged, Field: contract.ArgPlanHash,
				Message: "names a plan that changed since the dry run: dry-run again and call with the planHash it answers. Nothing was done"}
		}
		if ran != nil {
			ran()
		}
		return execute(ctx, tx, v)
	}
	return t
}

// planOf is the hash of the plan of tool's call with arguments v: the arguments (encoding/json
// writes a map's keys sorted) and the plan's version, as stored in q.
func planOf(ctx context.Context, q store.Querier, tool string, v any) (string, error) {
	args, err := json.Marshal(v)
	if err != nil {
		return "", err
	}
	var version int64
	err = q.QueryRow(ctx, `SELECT version FROM pipelinetest_plan WHERE tool = $1`, tool).Scan(&version)
	if err != nil && !errors.Is(err, store.ErrNoRows) {
		return "", err
	}
	h := sha256.New()
	_ = json.NewEncoder(h).Encode([]any{tool, json.RawMessage(args), version})
	return hex.EncodeToString(h.Sum(nil)), nil
}

// ChangePlan moves the plan of every call of Planned's tool in db: a call citing a dry run made
// before is refused plan_changed.
func ChangePlan(t testing.TB, db store.DB, tool string) {
	t.Helper()
	if _, err := db.Exec(context.Background(), `INSERT INTO pipelinetest_plan (tool, version) VALUES ($1, 1)
ON CONFLICT (tool) DO UPDATE SET version = pipelinetest_plan.version + 1`, tool); err != nil {
		t.Fatal(err)
	}
}
