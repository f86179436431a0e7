package pipeline_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cobranca/cobranca/internal/approval"
	"github.com/cobranca/cobranca/internal/auth"
	"github.com/cobranca/cobranca/internal/contract"
	"github.com/cobranca/cobranca/internal/contract/contracttest"
	"github.com/cobranca/cobranca/internal/failure"
	"github.com/cobranca/cobranca/internal/idempotency"
	"github.com/cobranca/cobranca/internal/pipeline"
	"github.com/cobranca/cobranca/internal/pipeline/pipelinetest"
	"github.com/cobranca/cobranca/internal/store"
	"github.com/cobranca/cobranca/internal/store/storetest"
)

// The tools whose dry run is mandatory: one that runs on its own (medium), one a person
// approves (critical). A dry run needs only test:read.
var (
	plannedMedium   = contracttest.WithMandatoryDryRun(contracttest.New("test.planned", contract.Medium, "test:write"), "test:read")
	plannedCritical = contracttest.WithMandatoryDryRun(contracttest.New("test.planned_critical", contract.Critical, "test:send"), "test:read")
	plannedHigh     = contracttest.WithMandatoryDryRun(contracttest.New("test.planned_high", contract.High, "test:write"))
)

// clock is a test clock the pipelines and stores read.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time          { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) Advance(d time.Duration) { c.mu.Lock(); c.t = c.t.Add(d); c.mu.Unlock() }

type plannedEnv struct {
	db        store.DB
	p         *pipeline.Pipeline
	keys      *idempotency.Store
	approvals *approval.Store
	clock     *clock
	ran       map[string]int
}

func newPlannedEnv(t *testing.T, db store.DB) *plannedEnv {
	t.Helper()
	e := &plannedEnv{db: db, clock: &clock{t: time.Now()}, ran: map[string]int{}}
	var err error
	if e.approvals, err = approval.New(15*time.Minute, e.clock.Now); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var tools []pipeline.Tool
	for _, c := range []*contract.Contract{plannedMedium, plannedCritical, plannedHigh} {
		tools = append(tools, pipelinetest.Planned(c, func() { mu.Lock(); e.ran[c.Name]++; mu.Unlock() }))
	}
	opts := pipelinetest.WithStore(t, db, pipeline.Options{Tools: tools, Auditor: pipelinetest.Auditor(t, db), Now: e.clock.Now,
		States: pipelinetest.Ring(t), Approvals: e.approvals, PublicURL: pipelinetest.PublicURL})
	e.keys = opts.Keys
	if e.p, err = pipeline.New(opts); err != nil {
		t.Fatal(err)
	}
	return e
}

func (e *plannedEnv) do(pr *auth.Principal, cl pipeline.Client, tool, args string) pipeline.Result {
	return e.p.Do(context.Background(), pipeline.Call{Principal: pr, RequestID: "r1", Tool: tool, Args: json.RawMessage(args), Client: cl})
}

// dryRun makes a dry run of tool with args (a JSON object's members, without the braces) and
// returns the planHash it answered.
func (e *plannedEnv) dryRun(t *testing.T, pr *auth.Principal, tool, args string) string {
	t.Helper()
	res := e.do(pr, legacy, tool, withMembers(args, `"dryRun":true`))
	if res.Kind != pipeline.Complete {
		t.Fatalf("dry run of %s(%s): %s %v, want complete", tool, args, kindName(res.Kind), res.Err)
	}
	var out struct {
		PlanHash string `json:"planHash"`
	}
	if err := json.Unmarshal(res.Structured, &out); err != nil || len(out.PlanHash) != 64 {
		t.Fatalf("dry run answered %s, want a planHash", res.Structured)
	}
	return out.PlanHash
}

func withMembers(members ...string) string {
	var nonEmpty []string
	for _, m := range members {
		if m != "" {
			nonEmpty = append(nonEmpty, m)
		}
	}
	return "{" + strings.Join(nonEmpty, ",") + "}"
}

func plan(h string) string { return `"planHash":"` + h + `"` }

func wantCode(t *testing.T, what string, res pipeline.Result, want failure.Code, field string) {
	t.Helper()
	if res.Kind != pipeline.ToolError || res.Err.Code != want || res.Err.Field != field {
		t.Fatalf("%s: %s %+v, want the tool error %s on %q", what, kindName(res.Kind), res.Err, want, field)
	}
}

var (
	planner = &auth.Principal{Subject: "ana", ClientID: "collector-bot", Actor: "collector-bot", Kind: auth.KindAgent,
		Scopes: []string{"test:read", "test:write", "test:send"}}
	// otherAgent acts for the same person through the same client, as another agent.
	otherAgent = &auth.Principal{Subject: "ana", ClientID: "collector-bot", Actor: "other-bot", Kind: auth.KindAgent,
		Scopes: planner.Scopes}
)

// TestMandatoryDryRun: a call of a tool whose dry run is mandatory runs only when it cites
// (planHash) the latest unexpired dry run of the same arguments by the same caller, and only
// on that plan (plan_changed when it moved); the plan hash is part of what its idempotency key
// binds. Nothing runs otherwise.
func TestMandatoryDryRun(t *testing.T) {
	both(t, func(t *testing.T, db store.DB) {
		e := newPlannedEnv(t, db)
		tool := plannedMedium.Name
		const args = `"customer":"c1"`
		call := func(members ...string) pipeline.Result {
			return e.do(planner, legacy, tool, withMembers(append([]string{args}, members...)...))
		}
		wantCode(t, "a call without planHash", call(`"idempotencyKey":"k0"`), failure.DryRunRequired, contract.ArgPlanHash)
		if res := call(`"idempotencyKey":"k0"`, `"planHash":"ABC"`); res.Kind != pipeline.ToolError || res.Err.Code != failure.InvalidArguments || res.Err.Field != contract.ArgPlanHash ||
			!strings.Contains(res.Err.Message, contract.PlanHashRule) {
			t.Fatalf("a malformed planHash: %+v, want invalid_arguments on planHash saying what it is", res.Err)
		}
		made := strings.Repeat("ab", 32)
		res := call(`"idempotencyKey":"k0"`, plan(made))
		wantCode(t, "a planHash no dry run answered", res, failure.DryRunRequired, contract.ArgPlanHash)
		if !strings.Contains(res.Err.Message, "dry-run again") {
			t.Errorf("dry_run_required says %q; want it to say what to do", res.Err.Message)
		}
		// A dry run needs no key; it answers the plan, changing nothing.
		h := e.dryRun(t, planner, tool, args)
		if n := pipelinetest.Effects(t, db, tool); n != 0 {
			t.Fatalf("the dry run changed %d rows", n)
		}
		// Its plan is no other call's: not for other arguments, not for another agent.
		res = e.do(planner, legacy, tool, withMembers(`"customer":"c2"`, `"idempotencyKey":"k0"`, plan(h)))
		wantCode(t, "other arguments citing the plan", res, failure.DryRunRequired, contract.ArgPlanHash)
		res = e.do(otherAgent, legacy, tool, withMembers(args, `"idempotencyKey":"k0"`, plan(h)))
		wantCode(t, "another agent citing the plan", res, failure.DryRunRequired, contract.ArgPlanHash)
		// The call citing it runs once; its repeat replays.
		for i := range 2 {
			if res := call(`"idempotencyKey":"k1"`, plan(h)); res.Kind != pipeline.Complete {
				t.Fatalf("call %d citing the dry run: %s %+v, want complete", i+1, kindName(res.Kind), res.Err)
			}
		}
		if n := pipelinetest.Effects(t, db, tool); n != 1 || e.ran[tool] != 1 {
			t.Fatalf("%d rows, ran %d times; want 1 and 1", n, e.ran[tool])
		}
		// A dry run under the used key is no conflict: the key binds the call with its plan.
		if res := call(`"idempotencyKey":"k1"`, `"dryRun":true`); res.Kind != pipeline.Complete {
			t.Fatalf("a dry run under the used key: %s %+v, want complete", kindName(res.Kind), res.Err)
		}
		// The plan moves: a call citing the old plan is refused, nothing done.
		pipelinetest.ChangePlan(t, db, tool)
		wantCode(t, "a call citing a plan that moved", call(`"idempotencyKey":"k2"`, plan(h)), failure.PlanChanged, contract.ArgPlanHash)
		h2 := e.dryRun(t, planner, tool, args)
		if h2 == h {
			t.Fatal("the dry run after the plan moved answered the same planHash")
		}
		// The key binds the plan: k1 with the new plan is another call.
		wantCode(t, "k1 with another planHash", call(`"idempotencyKey":"k1"`, plan(h2)), failure.IdempotencyConflict, contract.ArgIdempotencyKey)
		// The newer dry run replaced the older: citing the first plan is no longer enough.
		wantCode(t, "a call citing a replaced dry run", call(`"idempotencyKey":"k3"`, plan(h)), failure.DryRunRequired, contract.ArgPlanHash)
		if res := call(`"idempotencyKey":"k3"`, plan(h2)); res.Kind != pipeline.Complete {
			t.Fatalf("the call citing the new dry run: %s %+v, want complete", kindName(res.Kind), res.Err)
		}
		// A dry run expires.
		h3 := e.dryRun(t, planner, tool, `"customer":"c3"`)
		e.clock.Advance(idempotency.DryRunTTL + time.Second)
		res = e.do(planner, legacy, tool, withMembers(`"customer":"c3"`, `"idempotencyKey":"k4"`, plan(h3)))
		wantCode(t, "a call citing an expired dry run", res, failure.DryRunRequired, contract.ArgPlanHash)
		if n := pipelinetest.Effects(t, db, tool); n != 2 || e.ran[tool] != 2 {
			t.Errorf("%d rows, ran %d times; want 2 and 2", n, e.ran[tool])
		}
		if n, err := e.keys.Reap(context.Background(), db); err != nil || storetest.Count(t, db, "dry_runs") != 0 {
			t.Errorf("Reap = %d, %v; %d dry runs left, want none", n, err, storetest.Count(t, db, "dry_runs"))
		}
		ev := pipelinetest.Audited(t, db, tool)
		if ev["dry_run"] != 4 || ev["allowed"] != 2 || ev["replayed"] != 1 {
			t.Errorf("audit %v, want 4 dry_run, 2 allowed, 1 replayed", ev)
		}
	})
}

// TestDryRunsBounded: a caller's dry runs are kept to the newest idempotency.MaxDryRunsPerCaller.
func TestDryRunsBounded(t *testing.T) {
	both(t, func(t *testing.T, db store.DB) {
		e := newPlannedEnv(t, db)
		var first string
		for i := range idempotency.MaxDryRunsPerCaller + 6 {
			h := e.dryRun(t, planner, plannedMedium.Name, fmt.Sprintf(`"customer":"c%d"`, i))
			if i == 0 {
				first = h
			}
			e.clock.Advance(time.Millisecond)
		}
		e.dryRun(t, otherAgent, plannedMedium.Name, `"customer":"c0"`)
		if n := storetest.Count(t, db, "dry_runs"); n != idempotency.MaxDryRunsPerCaller+1 {
			t.Errorf("%d dry runs kept, want %d of the first caller and 1 of the other", n, idempotency.MaxDryRunsPerCaller+1)
		}
		res := e.do(planner, legacy, plannedMedium.Name, withMembers(`"customer":"c0"`, `"idempotencyKey":"k"`, plan(first)))
		wantCode(t, "citing the oldest dry run, dropped", res, failure.DryRunRequired, contract.ArgPlanHash)
	})
}

// TestMandatoryDryRunApproval: a critical call is put to a person only once it cites its dry
// run; the approval binds the plan: the approved retry runs without the dry run's record, and
// a retry citing another plan never runs under it.
func TestMandatoryDryRunApproval(t *testing.T) {
	both(t, func(t *testing.T, db store.DB) {
		for _, cl := range []pipeline.Client{legacy, modern} {
			t.Run(cl.Protocol, func(t *testing.T) {
				e := newPlannedEnv(t, db)
				tool := plannedCritical.Name
				before := storetest.Count(t, db, "approval")
				args := `"customer":"` + cl.Protocol + `"`
				key := `"idempotencyKey":"` + cl.Protocol + `"`
				wantCode(t, "a call without planHash", e.do(planner, cl, tool, withMembers(args, key)), failure.DryRunRequired, contract.ArgPlanHash)
				wantCode(t, "a call citing no dry run", e.do(planner, cl, tool, withMembers(args, key, plan(strings.Repeat("0", 64)))), failure.DryRunRequired, contract.ArgPlanHash)
				if n := storetest.Count(t, db, "approval") - before; n != 0 {
					t.Fatalf("%d approvals asked for without a dry run", n)
				}
				h := e.dryRun(t, planner, tool, args)
				call := pipeline.Call{Principal: planner, Tool: tool, Args: json.RawMessage(withMembers(args, key, plan(h))), Client: cl}
				asked := pipelinetest.AskedOf(t, e.p.Do(context.Background(), call), cl)
				pipelinetest.Approve(t, db, e.approvals, asked.ID)
				// Another plan under the same approval: refused (a 2026-07-28 retry names its
				// approval), or another call that needs its own (older clients); never run.
				if _, err := db.Exec(context.Background(), `DELETE FROM dry_runs`); err != nil {
					t.Fatal(err)
				}
				other := call
				other.Args = json.RawMessage(withMembers(args, key, plan(strings.Repeat("1", 64))))
				res := e.p.Do(context.Background(), asked.Retry(other))
				if cl.InputRequests {
					wantCode(t, "the approved retry with another planHash", res, failure.ApprovalMismatch, "arguments")
				} else {
					wantCode(t, "the approved retry with another planHash", res, failure.DryRunRequired, contract.ArgPlanHash)
				}
				// The approved call runs, its dry run's record gone: the approval binds the plan.
				if res := e.p.Do(context.Background(), asked.Retry(call)); res.Kind != pipeline.Complete {
					t.Fatalf("the approved retry: %s %+v, want complete", kindName(res.Kind), res.Err)
				}
				if e.ran[tool] != 1 {
					t.Errorf("ran %d times, want once", e.ran[tool])
				}
			})
		}
	})
}

// TestDryRunPermissions: a caller holding a contract's dryRunPermissions but not its
// permissions may dry-run the tool, and reads what the real call would lack; it may not make
// the real call, whatever the dry run's arguments say, nor may a caller without them dry-run.
func TestDryRunPermissions(t *testing.T) {
	e := newPlannedEnv(t, storetest.SQLite(t))
	tool := plannedCritical.Name
	reader := &auth.Principal{Subject: "ana", ClientID: "c", Actor: "c", Kind: auth.KindAgent, Scopes: []string{"test:read"}}
	nobody := &auth.Principal{Subject: "ana", ClientID: "c", Actor: "c", Kind: auth.KindAgent, Scopes: []string{"test:write"}}
	missing := func(pr *auth.Principal) []string {
		res := e.do(pr, legacy, tool, `{"customer":"c1","dryRun":true}`)
		if res.Kind != pipeline.Complete {
			t.Fatalf("dry run by %v: %s %+v, want complete", pr.Scopes, kindName(res.Kind), res.Err)
		}
		var out struct{ MissingPermissions []string }
		if err := json.Unmarshal(res.Structured, &out); err != nil {
			t.Fatal(err)
		}
		return out.MissingPermissions
	}
	if got := missing(reader); !slices.Equal(got, []string{"test:send"}) {
		t.Errorf("missingPermissions of a reader = %v, want [test:send]", got)
	}
	if got := missing(planner); len(got) != 0 {
		t.Errorf("missingPermissions of a caller holding them all = %v, want none", got)
	}
	for _, tt := range []struct {
		name string
		pr   *auth.Principal
		args string
	}{
		{"the real call by a reader", reader, `{"customer":"c1","idempotencyKey":"k","planHash":"` + strings.Repeat("0", 64) + `"}`},
		{"dryRun false by a reader", reader, `{"customer":"c1","dryRun":false,"idempotencyKey":"k","planHash":"` + strings.Repeat("0", 64) + `"}`},
		{"two dryRun members", reader, `{"customer":"c1","dryRun":true,"dryRun":false}`},
		{"a dry run without the dry run's scopes", nobody, `{"customer":"c1","dryRun":true}`},
	} {
		if res := e.do(tt.pr, legacy, tool, tt.args); res.Kind != pipeline.Denied || !slices.Equal(res.Missing, []string{"test:send"}) {
			t.Errorf("%s: %s %v %+v, want denied lacking test:send", tt.name, kindName(res.Kind), res.Missing, res.Err)
		}
		if got := e.p.Authorize(tt.pr, tool, json.RawMessage(tt.args)); !slices.Equal(got, []string{"test:send"}) {
			t.Errorf("%s: Authorize = %v, want [test:send]", tt.name, got)
		}
	}
	if got := e.p.Authorize(reader, tool, json.RawMessage(`{"customer":"c1","dryRun":true}`)); got != nil {
		t.Errorf("Authorize(a reader's dry run) = %v, want nothing missing", got)
	}
	if e.ran[tool] != 0 {
		t.Errorf("the tool ran %d times", e.ran[tool])
	}
}

// TestDryRunNeedsNoKey: a dry run of a tool whose calls need an idempotencyKey needs none
// (the schema says so too); the real call still does.
func TestDryRunNeedsNoKey(t *testing.T) {
	e := newEnv(t, storetest.SQLite(t), envOpts{})
	if res := e.do(agent, modern, "test.medium", `{"customer":"c1","dryRun":true}`); res.Kind != pipeline.Complete {
		t.Errorf("a dry run without a key: %s %+v, want complete", kindName(res.Kind), res.Err)
	}
	for _, args := range []string{`{"customer":"c1"}`, `{"customer":"c1","dryRun":false}`} {
		res := e.do(agent, modern, "test.medium", args)
		if res.Kind != pipeline.ToolError || res.Err.Code != failure.InvalidArguments || res.Err.Field != contract.ArgIdempotencyKey {
			t.Errorf("%s: %s %+v, want invalid_arguments on idempotencyKey", args, kindName(res.Kind), res.Err)
		}
	}
	if e.effects(t) != 0 {
		t.Error("something changed")
	}
}

// TestMandatoryDryRunConfirmation: an agent's high-tier call is put to its person in-band only
// once it cites its dry run; the confirmed retry then runs on that plan.
func TestMandatoryDryRunConfirmation(t *testing.T) {
	e := newPlannedEnv(t, storetest.SQLite(t))
	tool := plannedHigh.Name
	res := e.do(planner, modern, tool, `{"customer":"c1","idempotencyKey":"k1","planHash":"`+strings.Repeat("0", 64)+`"}`)
	wantCode(t, "a call citing no dry run", res, failure.DryRunRequired, contract.ArgPlanHash)
	h := e.dryRun(t, planner, tool, `"customer":"c1"`)
	call := pipeline.Call{Principal: planner, Tool: tool, Args: json.RawMessage(`{"customer":"c1","idempotencyKey":"k1","planHash":"` + h + `"}`), Client: modern}
	res = e.p.Do(context.Background(), call)
	if res.Kind != pipeline.InputRequired || res.State == "" {
		t.Fatalf("the call citing its dry run: %s %+v, want input_required", kindName(res.Kind), res.Err)
	}
	call.State, call.Responses = res.State, confirm("accept", true)
	if res := e.p.Do(context.Background(), call); res.Kind != pipeline.Complete || e.ran[tool] != 1 {
		t.Fatalf("the confirmed retry: %s %+v, ran %d; want complete, once", kindName(res.Kind), res.Err, e.ran[tool])
	}
}

// approvalsCounted is TierLimits that refuses nothing and counts the approvals it is asked to
// spend the critical budget for.
type approvalsCounted struct {
	mu sync.Mutex
	n  int
}

func (*approvalsCounted) Tier(context.Context, string, contract.Risk) error { return nil }
func (*approvalsCounted) TierRest(context.Context, string, contract.Risk, int64) error {
	return nil
}
func (*approvalsCounted) Budgeted(contract.Risk) bool { return true }
func (a *approvalsCounted) Approval(context.Context, string) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.n++
	return nil
}

func (a *approvalsCounted) count() int { a.mu.Lock(); defer a.mu.Unlock(); return a.n }

// TestApprovalBudgetSpentOnlyWhenAsked: the critical budget counts approvals asked for; a
// critical call whose preview refuses it (its plan moved since the dry run, or it would do
// nothing) asks no one, and spends none of it.
func TestApprovalBudgetSpentOnlyWhenAsked(t *testing.T) {
	db := storetest.SQLite(t)
	lim := &approvalsCounted{}
	var refuse bool
	tool := pipelinetest.Planned(plannedCritical, nil)
	tool.Preview = func(context.Context, store.Querier, any) (string, error) {
		if refuse {
			return "", &failure.Error{Code: failure.PlanChanged, Field: contract.ArgPlanHash, Message: "the plan moved; nothing was done"}
		}
		return pipelinetest.EffectPreview(plannedCritical), nil
	}
	p, err := pipeline.New(pipelinetest.WithStore(t, db, pipeline.Options{Tools: []pipeline.Tool{tool}, Limits: lim,
		Auditor: pipelinetest.Auditor(t, db), States: pipelinetest.Ring(t)}))
	if err != nil {
		t.Fatal(err)
	}
	e := &plannedEnv{db: db, p: p}
	const args = `"customer":"c1"`
	h := e.dryRun(t, planner, plannedCritical.Name, args)
	refuse = true
	wantCode(t, "a call whose preview refuses it", e.do(planner, legacy, plannedCritical.Name, withMembers(args, `"idempotencyKey":"k1"`, plan(h))), failure.PlanChanged, contract.ArgPlanHash)
	if n := lim.count(); n != 0 {
		t.Errorf("the refused call spent the critical budget %d times; it asked no one", n)
	}
	refuse = false
	wantCode(t, "the call asking for an approval", e.do(planner, legacy, plannedCritical.Name, withMembers(args, `"idempotencyKey":"k2"`, plan(h))), failure.ApprovalRequired, "")
	if n, asked := lim.count(), storetest.Count(t, db, "approval"); n != 1 || asked != 1 {
		t.Errorf("critical budget spent %d times for %d approvals, want 1 and 1", n, asked)
	}
}
