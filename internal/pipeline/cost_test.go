package pipeline_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cobranca/cobranca/internal/contract"
	"github.com/cobranca/cobranca/internal/contract/contracttest"
	"github.com/cobranca/cobranca/internal/failure"
	"github.com/cobranca/cobranca/internal/limits"
	limitspg "github.com/cobranca/cobranca/internal/limits/postgres"
	limitssqlite "github.com/cobranca/cobranca/internal/limits/sqlite"
	"github.com/cobranca/cobranca/internal/pipeline"
	"github.com/cobranca/cobranca/internal/pipeline/pipelinetest"
	"github.com/cobranca/cobranca/internal/store"
	"github.com/cobranca/cobranca/internal/store/postgres"
	"github.com/cobranca/cobranca/internal/store/storetest"
)

// bulkCost is a critical tool with a mandatory dry run, like bulk_send_reminders, whose calls
// cost one unit per 10 members of their items argument.
var bulkCost = contracttest.WithCost(contracttest.WithMandatoryDryRun(contracttest.New("test.bulk", contract.Critical, "test:send"), "test:read"), 10)

// items is the arguments' members for a call of n items.
func items(n int) string {
	return `"items":[` + strings.TrimSuffix(strings.Repeat("1,", n), ",") + `]`
}

// TestCostWeightedBudget: a call its contract weighs by its size spends its cost from the tier
// budget, on a real limiter over each store: one unit for a small call; a dry run that would
// overdraw the budget is refused rate_limited, with a Retry-After, before the tool plans
// anything, and audited as a refusal with its cost; one above the whole burst waits for a full
// budget and leaves the caller in debt.
func TestCostWeightedBudget(t *testing.T) {
	both(t, func(t *testing.T, db store.DB) {
		var backend limits.Backend = limitssqlite.New(db, nil)
		if pg, ok := db.(*postgres.DB); ok {
			backend = limitspg.New(pg.Pool())
		}
		const interval = 6 * time.Minute // 10/1h: nothing refills during the test
		lim := limits.New(backend, limits.Options{Policies: limits.Policies{Write: limits.Limit{Rate: 10, Period: time.Hour, Burst: 10}}})
		var planned atomic.Int64
		tool := pipelinetest.Planned(bulkCost, nil)
		dryRun := tool.DryRun
		tool.DryRun = func(ctx context.Context, q store.Querier, v any) (pipeline.Effect, error) {
			planned.Add(1)
			return dryRun(ctx, q, v)
		}
		tool.Size = func(_ context.Context, _ store.Querier, v any) (int, error) {
			list, _ := (*v.(*map[string]any))["items"].([]any)
			return len(list), nil
		}
		p, err := pipeline.New(pipelinetest.WithStore(t, db, pipeline.Options{Tools: []pipeline.Tool{tool}, Limits: lim,
			Auditor: pipelinetest.Auditor(t, db), States: pipelinetest.Ring(t)}))
		if err != nil {
			t.Fatal(err)
		}
		e := &plannedEnv{db: db, p: p}
		agent := func(name string) *pipeline.Call {
			pr := *planner
			pr.Subject = name
			return &pipeline.Call{Principal: &pr, Tool: bulkCost.Name, Client: legacy}
		}
		dry := func(c *pipeline.Call, n int) pipeline.Result {
			c.Args = json.RawMessage(withMembers(items(n), `"dryRun":true`))
			return e.p.Do(context.Background(), *c)
		}
		refused := func(what string, res pipeline.Result, retry time.Duration) {
			t.Helper()
			if res.Kind != pipeline.ToolError || res.Err.Code != failure.RateLimited || (res.Err.RetryAfter-retry).Abs() > time.Second {
				t.Fatalf("%s: %s %+v, want rate_limited, retry after ≈%v", what, kindName(res.Kind), res.Err, retry)
			}
		}

		// ana: a small dry run spends one unit; a dry run of 100 items (10 units, the whole
		// budget) is refused with nothing planned, recorded or done, and audited. Its retry is
		// admitted once the budget is full again: the two small ones and its own first unit
		// refilled.
		ana := agent("ana")
		for range 2 {
			if res := dry(ana, 3); res.Kind != pipeline.Complete {
				t.Fatalf("a dry run of 3 items: %s %+v", kindName(res.Kind), res.Err)
			}
		}
		plannedBefore, recorded := planned.Load(), storetest.Count(t, db, "dry_runs")
		res := dry(ana, 100)
		refused("a dry run of 100 items after two of 3", res, 3*interval)
		if !strings.Contains(res.Err.Message, "costs 10 units") {
			t.Errorf("the refusal says %q, want its cost (10 units)", res.Err.Message)
		}
		if planned.Load() != plannedBefore || storetest.Count(t, db, "dry_runs") != recorded {
			t.Errorf("the refused dry run planned %d times and recorded %d dry runs, want none",
				planned.Load()-plannedBefore, storetest.Count(t, db, "dry_runs")-recorded)
		}
		if got := pipelinetest.Audited(t, db, bulkCost.Name); got["rate_limited"] != 1 || got["dry_run"] != 2 {
			t.Errorf("audited %v, want two dry runs and one rate_limited", got)
		}
		var details string
		var counts map[string]int64
		if err := db.QueryRow(context.Background(), `SELECT details FROM audit_event WHERE tool = $1 AND outcome = 'rate_limited'`, bulkCost.Name).Scan(&details); err != nil ||
			json.Unmarshal([]byte(details), &counts) != nil || counts["budgetUnits"] != 10 {
			t.Errorf("the refusal's audit details = %s, %v; want budgetUnits 10", details, err)
		}

		// bo: the same dry run on a full budget is planned, and spends all of it.
		bo := agent("bo")
		if res := dry(bo, 100); res.Kind != pipeline.Complete {
			t.Fatalf("a dry run of 100 items on a full budget: %s %+v", kindName(res.Kind), res.Err)
		}
		refused("a small dry run after one of 10 units", dry(bo, 1), interval)

		// cy: 250 items cost 25 units, more than the burst: admitted on a full budget, and the
		// next call waits for 16 of them to refill.
		cy := agent("cy")
		if res := dry(cy, 250); res.Kind != pipeline.Complete {
			t.Fatalf("a dry run of 250 items on a full budget: %s %+v", kindName(res.Kind), res.Err)
		}
		refused("a small dry run after one of 25 units", dry(cy, 1), 16*interval)
	})
}

// TestCostNeedsSize: a pipeline refuses to start with a tool whose contract weighs calls by
// their size and that gives no Size to count them, or a Size and no cost rule.
func TestCostNeedsSize(t *testing.T) {
	db := storetest.SQLite(t)
	for _, tt := range []struct {
		name string
		tool pipeline.Tool
		want string
	}{
		{"cost without Size", pipelinetest.Planned(bulkCost, nil), "give Size"},
		{"Size without cost", func() pipeline.Tool {
			tool := pipelinetest.Planned(plannedMedium, nil)
			tool.Size = func(context.Context, store.Querier, any) (int, error) { return 1, nil }
			return tool
		}(), "no cost rule"},
	} {
		_, err := pipeline.New(pipelinetest.WithStore(t, db, pipeline.Options{Tools: []pipeline.Tool{tt.tool}, States: pipelinetest.Ring(t)}))
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: New = %v, want an error saying %q", tt.name, err, tt.want)
		}
	}
}
