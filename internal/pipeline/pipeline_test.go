package pipeline_test

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
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
	"github.com/cobranca/cobranca/internal/outbox"
	"github.com/cobranca/cobranca/internal/outbox/outboxtest"
	"github.com/cobranca/cobranca/internal/pgtest"
	"github.com/cobranca/cobranca/internal/pipeline"
	"github.com/cobranca/cobranca/internal/pipeline/pipelinetest"
	"github.com/cobranca/cobranca/internal/reqstate"
	"github.com/cobranca/cobranca/internal/store"
	"github.com/cobranca/cobranca/internal/store/storetest"
	"github.com/google/jsonschema-go/jsonschema"
)

var pg = pgtest.New()

func TestMain(m *testing.M) { pg.Run(m) }

// The test tools: one per tier, each writing a row of test_effect when it
// has side effects, so that a test counts effects in the real store.

type markArgs struct {
	Customer string `json:"customer"`
	Note     string `json:"note,omitempty"`
	Amount   int64  `json:"amount,omitempty"`
}

const effectTable = `CREATE TABLE test_effect (tool TEXT NOT NULL, customer TEXT NOT NULL)`

func tierContract(name string, risk contract.Risk) *contract.Contract {
	minLen := 1
	c := contract.Contract{
		Name: name, Title: "Test " + name, Description: "test tool of tier " + string(risk), Category: "test",
		ContractVersion: "1.0.0",
		RiskLevel:       risk,
		InputSchema: &jsonschema.Schema{Type: "object", Required: []string{"customer"}, Properties: map[string]*jsonschema.Schema{
			"customer": {Type: "string", MinLength: &minLen}, "note": {Type: "string"}, "amount": {Type: "integer"},
		}},
		OutputSchema: &jsonschema.Schema{Type: "object", Required: []string{"ok", "customer"}, Properties: map[string]*jsonschema.Schema{
			"ok": {Type: "boolean"}, "customer": {Type: "string"}, "dryRun": {Type: "boolean"},
		}},
		Permissions:  []string{"test:" + string(risk)},
		SideEffects:  contract.SideEffects{Changes: []string{"adds a test_effect row"}, OnRepeat: "the same key answers the first call"},
		AuditEvent:   "test." + string(risk),
		FailureModes: []contract.FailureMode{{Code: "test_refused", Meaning: "the customer is \"refuse\""}, {Code: failure.InvalidArguments, Meaning: "bad arguments"}},
		Idempotency:  contract.Idempotency{Kind: "key", Description: "by idempotencyKey"},
		DryRun:       contract.ModeOptional,
	}
	if risk == contract.Critical || risk == contract.Forbidden {
		c.StepUpAuth = contract.StepUp{MaxAgeSeconds: 300, When: "always"}
	}
	if risk == contract.Critical {
		c.ApproverRoles = []string{contracttest.ApproverRole}
	}
	if risk == contract.Forbidden {
		c.AdminRoles = []string{contracttest.AdminRole}
	}
	if risk == contract.Low {
		c.SideEffects = contract.SideEffects{Changes: []string{}, OnRepeat: "nothing changes"}
		c.Idempotency = contract.Idempotency{Kind: "inherent", Description: "a read"}
		c.DryRun = contract.ModeNone
	}
	fc, err := contract.Finish(c)
	if err != nil {
		panic(err)
	}
	return fc
}

// counters count what the tools did, to prove what never ran.
type counters struct {
	mu               sync.Mutex
	decoded, started int
}

func (c *counters) add(p *int) { c.mu.Lock(); *p++; c.mu.Unlock() }

func tierTool(risk contract.Risk, n *counters, slow time.Duration) pipeline.Tool {
	name := "test." + string(risk)
	strict := pipeline.Strict[markArgs]()
	decode := func(b []byte) (any, int, error) { n.add(&n.decoded); return strict(b) }
	result := func(a *markArgs, dry bool) pipeline.Effect {
		return pipeline.Effect{Structured: map[string]any{"ok": true, "customer": a.Customer, "dryRun": dry}, Summary: "done for " + a.Customer}
	}
	t := pipeline.Tool{Contract: tierContract(name, risk), Decode: decode}
	if risk == contract.Low {
		t.Run = func(_ context.Context, v any) (pipeline.Effect, error) {
			n.add(&n.started)
			return result(v.(*markArgs), false), nil
		}
		return t
	}
	t.Execute = func(ctx context.Context, tx store.Tx, v any) (pipeline.Effect, error) {
		n.add(&n.started)
		a := v.(*markArgs)
		if a.Customer == "refuse" {
			return pipeline.Effect{}, &failure.Error{Code: "test_refused", Field: "customer", Message: "refused"}
		}
		if _, err := tx.Exec(ctx, `INSERT INTO test_effect (tool, customer) VALUES ($1, $2)`, name, a.Customer); err != nil {
			return pipeline.Effect{}, err
		}
		time.Sleep(slow)
		return result(a, false), nil
	}
	t.Preview = func(_ context.Context, _ store.Querier, v any) (string, error) {
		return "add one test_effect row for customer " + v.(*markArgs).Customer, nil
	}
	t.DryRun = func(_ context.Context, _ store.Querier, v any) (pipeline.Effect, error) {
		return result(v.(*markArgs), true), nil
	}
	return t
}

var tiers = []contract.Risk{contract.Low, contract.Medium, contract.High, contract.Critical, contract.Forbidden}

func allScopes() []string {
	var s []string
	for _, r := range tiers {
		s = append(s, "test:"+string(r))
	}
	return s
}

var (
	agent = &auth.Principal{Subject: "ana", ClientID: "collector-bot", Actor: "collector-bot", Kind: auth.KindAgent, Scopes: allScopes()}
	human = &auth.Principal{Subject: "ana", ClientID: "ops-console", Kind: auth.KindHuman, Scopes: allScopes(), ACR: "urn:mfa", AuthTime: time.Now()}
	// modern is a 2026-07-28 client that answers form elicitations.
	modern = pipeline.Client{Protocol: "2026-07-28", InputRequests: true, Elicitation: true, ElicitationForm: true, ElicitationURL: true}
	legacy = pipeline.Client{Protocol: "2025-11-25"}
)

type env struct {
	db        store.DB
	p         *pipeline.Pipeline
	approvals *approval.Store
	ring      *reqstate.Ring
	count     *counters
}

type envOpts struct {
	limits pipeline.TierLimits
	slow   time.Duration
	ring   *reqstate.Ring
	now    func() time.Time
}

func newEnv(t testing.TB, db store.DB, o envOpts) *env {
	t.Helper()
	if _, err := db.Exec(context.Background(), effectTable); err != nil && !strings.Contains(err.Error(), "exists") {
		t.Fatal(err)
	}
	return newEnvOn(t, db, o)
}

// newEnvOn builds a pipeline (a "replica") on db, whose tables exist.
func newEnvOn(t testing.TB, db store.DB, o envOpts) *env {
	t.Helper()
	keys, err := idempotency.New(db.Dialect(), time.Hour, o.now)
	if err != nil {
		t.Fatal(err)
	}
	if o.ring == nil {
		o.ring = newRing(t)
	}
	e := &env{db: db, ring: o.ring, count: &counters{}}
	var tools []pipeline.Tool
	for _, r := range tiers {
		tools = append(tools, tierTool(r, e.count, o.slow))
	}
	e.approvals, err = approval.New(15*time.Minute, o.now)
	if err != nil {
		t.Fatal(err)
	}
	e.p, err = pipeline.New(pipeline.Options{Tools: tools, Auditor: pipelinetest.Auditor(t, db), Limits: o.limits,
		DB: db, Keys: keys, States: o.ring, StepUp: []string{"urn:mfa"}, Now: o.now,
		Approvals: e.approvals, PublicURL: pipelinetest.PublicURL})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func newRing(t testing.TB) *reqstate.Ring { return pipelinetest.Ring(t) }

func (e *env) do(pr *auth.Principal, cl pipeline.Client, tool, args string) pipeline.Result {
	return e.p.Do(context.Background(), pipeline.Call{Principal: pr, RequestID: "r1", Tool: tool, Args: json.RawMessage(args), Client: cl})
}

func (e *env) effects(t *testing.T) int {
	t.Helper()
	var n int64
	if err := e.db.QueryRow(context.Background(), `SELECT count(*) FROM test_effect`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return int(n)
}

func code(res pipeline.Result) failure.Code {
	if res.Err == nil {
		return ""
	}
	return res.Err.Code
}

func kindName(k pipeline.Kind) string {
	return [...]string{"complete", "input_required", "tool_error", "protocol_error", "denied"}[k]
}

func both(t *testing.T, fn func(t *testing.T, db store.DB)) {
	for _, f := range storetest.Fixtures(pg) {
		t.Run(string(f.Dialect), func(t *testing.T) { fn(t, f.Migrated(t)) })
	}
}

// TestTiers: exactly what an agent token and a human token get from each
// tier, on a 2026-07-28 client, with a key and valid arguments: nothing runs
// that the tier does not allow, and a forbidden tool does not exist.
func TestTiers(t *testing.T) {
	both(t, func(t *testing.T, db store.DB) {
		e := newEnv(t, db, envOpts{})
		tests := []struct {
			risk contract.Risk
			who  *auth.Principal
			kind pipeline.Kind
			code failure.Code
			runs bool
		}{
			{contract.Low, agent, pipeline.Complete, "", true},
			{contract.Low, human, pipeline.Complete, "", true},
			{contract.Medium, agent, pipeline.Complete, "", true},
			{contract.Medium, human, pipeline.Complete, "", true},
			{contract.High, agent, pipeline.InputRequired, "", false},
			{contract.High, human, pipeline.Complete, "", true},
			{contract.Critical, agent, pipeline.InputRequired, "", false},
			{contract.Critical, human, pipeline.InputRequired, "", false},
			{contract.Forbidden, agent, pipeline.ProtocolError, pipeline.CodeUnknownTool, false},
			{contract.Forbidden, human, pipeline.ProtocolError, pipeline.CodeUnknownTool, false},
		}
		for i, tt := range tests {
			before := e.count.started
			args := fmt.Sprintf(`{"customer":"c%d","idempotencyKey":"k-%d"}`, i, i)
			if tt.risk == contract.Low {
				args = fmt.Sprintf(`{"customer":"c%d"}`, i) // a read takes no key
			}
			res := e.do(tt.who, modern, "test."+string(tt.risk), args)
			if res.Kind != tt.kind || code(res) != tt.code {
				t.Errorf("%s by %s: %s %q (%v), want %s %q", tt.risk, tt.who.Kind, kindName(res.Kind), code(res), res.Err, kindName(tt.kind), tt.code)
			}
			if ran := e.count.started > before; ran != tt.runs {
				t.Errorf("%s by %s: ran = %v, want %v", tt.risk, tt.who.Kind, ran, tt.runs)
			}
		}
		if got := e.effects(t); got != 3 { // medium ×2, high by the human
			t.Errorf("effects = %d, want 3", got)
		}
		for _, c := range e.p.Contracts() {
			if c.RiskLevel == contract.Forbidden {
				t.Errorf("forbidden tool %s is served", c.Name)
			}
		}
	})
}

// TestAgentByClientID: an agent known only by its client id (no act claim;
// auth sets Actor to the client id and Kind agent) is treated exactly like
// one with an act claim, and audited with its actor.
func TestAgentByClientID(t *testing.T) {
	db := storetest.SQLite(t)
	e := newEnv(t, db, envOpts{})
	listed := &auth.Principal{Subject: "svc", ClientID: "ledger-bot", Actor: "ledger-bot", Kind: auth.KindAgent, Scopes: allScopes()}
	res := e.do(listed, modern, "test.high", `{"customer":"c1","idempotencyKey":"k"}`)
	if res.Kind != pipeline.InputRequired {
		t.Fatalf("high-tier call by a listed agent client: %s %v, want input_required", kindName(res.Kind), res.Err)
	}
	var actor string
	if err := db.QueryRow(context.Background(), `SELECT actor FROM audit_event WHERE tool = 'test.high'`).Scan(&actor); err != nil || actor != "ledger-bot" {
		t.Errorf("audited actor = %q, %v; want ledger-bot", actor, err)
	}
}

// TestScopeBeforeValidation: a caller without the tool's scope gets the
// scope refusal, never the validation error of its invalid arguments, and
// nothing is decoded.
func TestScopeBeforeValidation(t *testing.T) {
	e := newEnv(t, storetest.SQLite(t), envOpts{})
	noScope := &auth.Principal{Subject: "ana", ClientID: "bot", Kind: auth.KindAgent, Scopes: []string{"test:low"}}
	for _, tool := range []string{"test.medium", "test.high"} {
		res := e.do(noScope, modern, tool, `{"customer":42,"bogus":true}`)
		if res.Kind != pipeline.Denied || code(res) != failure.InsufficientScope || len(res.Missing) != 1 || res.Missing[0] != "test:"+strings.TrimPrefix(tool, "test.") {
			t.Errorf("%s without its scope: %s %q missing %v", tool, kindName(res.Kind), code(res), res.Missing)
		}
	}
	if e.count.decoded != 0 {
		t.Errorf("arguments decoded %d times for callers without the scope", e.count.decoded)
	}
	if res := e.do(nil, modern, "test.low", `{"customer":"c"}`); res.Kind != pipeline.Denied {
		t.Errorf("call with no principal: %s, want denied", kindName(res.Kind))
	}
	if got := pipelinetest.Audited(t, e.db, "test.medium"); got["denied"] != 1 {
		t.Errorf("denied call audited %v, want one denied event", got)
	}
}

// budgetSpent refuses every budgeted tier.
type budgetSpent struct{}

func (budgetSpent) Tier(context.Context, string, contract.Risk) error {
	return &failure.Error{Code: failure.RateLimited, Message: "slow down", RetryAfter: 3 * time.Second}
}
func (budgetSpent) TierRest(ctx context.Context, _ string, risk contract.Risk, _ int64) error {
	return budgetSpent{}.Tier(ctx, "", risk)
}
func (budgetSpent) Budgeted(contract.Risk) bool { return true }
func (b budgetSpent) Approval(ctx context.Context, _ string) error {
	return b.Tier(ctx, "", contract.Critical)
}

// TestRateLimitedNeverValidated: a call over its tier budget is refused
// before its arguments are decoded, and never runs.
func TestRateLimitedNeverValidated(t *testing.T) {
	e := newEnv(t, storetest.SQLite(t), envOpts{limits: budgetSpent{}})
	res := e.do(agent, modern, "test.medium", `{"customer":"c","idempotencyKey":"k"}`)
	if res.Kind != pipeline.ToolError || code(res) != failure.RateLimited || res.Err.RetryAfter != 3*time.Second {
		t.Fatalf("over budget: %s %v", kindName(res.Kind), res.Err)
	}
	if e.count.decoded != 0 || e.count.started != 0 || e.effects(t) != 0 {
		t.Errorf("decoded %d, ran %d, effects %d; want nothing", e.count.decoded, e.count.started, e.effects(t))
	}
	if got := pipelinetest.Audited(t, e.db, "test.medium"); got["rate_limited"] != 1 {
		t.Errorf("audit %v, want one rate_limited event", got)
	}
}

// confirm answers the pipeline's confirmation request like a client whose
// user pressed accept (or decline).
func confirm(action string, ok bool) map[string]json.RawMessage {
	b, _ := json.Marshal(map[string]any{"action": action, "content": map[string]any{"confirm": ok}})
	return map[string]json.RawMessage{"confirm": b}
}

// TestConfirmation: a high-tier call by an agent runs only after a person
// accepted exactly it: input_required with the preview, then the retry
// with the accepted answer executes once, on another replica sharing the
// store and keys; declined changes nothing; old clients get
// confirmation_required with the same preview; a 2026-07-28 client without
// the elicitation capability gets missing_client_capability.
func TestConfirmation(t *testing.T) {
	both(t, func(t *testing.T, db store.DB) {
		ring := newRing(t)
		e := newEnv(t, db, envOpts{ring: ring})
		other := newEnvOn(t, db, envOpts{ring: ring}) // a second replica
		args := `{"customer":"c-77","idempotencyKey":"conf-1"}`
		first := e.do(agent, modern, "test.high", args)
		if first.Kind != pipeline.InputRequired || first.State == "" {
			t.Fatalf("first call: %s %v", kindName(first.Kind), first.Err)
		}
		in := first.Inputs["confirm"]
		if in.Method != "elicitation/create" || !strings.Contains(string(in.Params), "customer c-77") || !strings.Contains(string(in.Params), `"mode":"form"`) {
			t.Errorf("confirmation request %s %s", in.Method, in.Params)
		}
		if e.effects(t) != 0 || e.count.started != 0 {
			t.Fatal("the call ran before its confirmation")
		}
		retry := pipeline.Call{Principal: agent, Tool: "test.high", Args: json.RawMessage(args), Client: modern, State: first.State, Responses: confirm("accept", true)}
		res := other.p.Do(context.Background(), retry)
		if res.Kind != pipeline.Complete || !strings.Contains(string(res.Structured), `"customer":"c-77"`) {
			t.Fatalf("accepted retry on another replica: %s %v", kindName(res.Kind), res.Err)
		}
		if e.effects(t) != 1 {
			t.Errorf("effects = %d, want 1", e.effects(t))
		}
		// The same retry again (a client that lost the answer): the key's
		// stored answer, byte for byte, and no second effect.
		if again := other.p.Do(context.Background(), retry); again.Kind != pipeline.Complete || string(again.Structured) != string(res.Structured) {
			t.Errorf("the retry resent: %s %q, want the stored answer", kindName(again.Kind), code(again))
		}
		// Declined: nothing changes.
		first = e.do(agent, modern, "test.high", `{"customer":"c-78","idempotencyKey":"conf-2"}`)
		res = e.p.Do(context.Background(), pipeline.Call{Principal: agent, Tool: "test.high", Args: json.RawMessage(`{"customer":"c-78","idempotencyKey":"conf-2"}`), Client: modern, State: first.State, Responses: confirm("decline", false)})
		if res.Kind != pipeline.ToolError || code(res) != failure.ConfirmationDeclined {
			t.Errorf("declined: %s %q", kindName(res.Kind), code(res))
		}
		// Accepted with the box unchecked is no.
		first = e.do(agent, modern, "test.high", `{"customer":"c-79","idempotencyKey":"conf-3"}`)
		res = e.p.Do(context.Background(), pipeline.Call{Principal: agent, Tool: "test.high", Args: json.RawMessage(`{"customer":"c-79","idempotencyKey":"conf-3"}`), Client: modern, State: first.State, Responses: confirm("accept", false)})
		if code(res) != failure.ConfirmationDeclined {
			t.Errorf("accepted unchecked: %s %q", kindName(res.Kind), code(res))
		}
		if e.effects(t) != 1 {
			t.Errorf("effects = %d after declines, want 1", e.effects(t))
		}
		// Old client: a tool error with the same preview.
		res = e.do(agent, legacy, "test.high", `{"customer":"c-80","idempotencyKey":"conf-4"}`)
		if res.Kind != pipeline.ToolError || code(res) != failure.ConfirmationRequired || !strings.Contains(res.Err.Message, "customer c-80") {
			t.Errorf("2025-11-25 client: %s %v", kindName(res.Kind), res.Err)
		}
		// A 2026-07-28 client that cannot elicit.
		res = e.do(agent, pipeline.Client{Protocol: "2026-07-28", InputRequests: true}, "test.high", `{"customer":"c-81","idempotencyKey":"conf-5"}`)
		if res.Kind != pipeline.ProtocolError || code(res) != failure.MissingClientCapability || res.RequiredCapabilities["elicitation"] == nil {
			t.Errorf("no elicitation capability: %s %v %v", kindName(res.Kind), res.Err, res.RequiredCapabilities)
		}
		// One that elicits by URL only, and cannot show the form.
		res = e.do(agent, pipeline.Client{Protocol: "2026-07-28", InputRequests: true, Elicitation: true}, "test.high", `{"customer":"c-82","idempotencyKey":"conf-6"}`)
		if res.Kind != pipeline.ProtocolError || code(res) != failure.MissingClientCapability || res.RequiredCapabilities["elicitation"] == nil {
			t.Errorf("URL-mode elicitation only: %s %v %v", kindName(res.Kind), res.Err, res.RequiredCapabilities)
		}
		if e.effects(t) != 1 || e.count.started+other.count.started != 1 {
			t.Errorf("effects %d, runs %d; want 1, 1", e.effects(t), e.count.started+other.count.started)
		}
		ev := pipelinetest.Audited(t, db, "test.high")
		if ev["allowed"] != 1 || ev["input_required"] != 3 {
			t.Errorf("audit %v, want 1 allowed, 3 input_required", ev)
		}
	})
}

// TestAnswersWithoutStateAskAfresh: answers sent without the request state
// of their round answer no round the server asked: the call is a first
// one, asked afresh under a new state, and nothing runs — whatever the
// answers say (SEP-2322's re-request of what is missing).
func TestAnswersWithoutStateAskAfresh(t *testing.T) {
	db := storetest.SQLite(t)
	e := newEnv(t, db, envOpts{ring: newRing(t)})
	args := `{"customer":"c1","idempotencyKey":"k1"}`
	for _, answers := range []map[string]json.RawMessage{
		confirm("accept", true),
		{"confirm": json.RawMessage(`12345`), "unknown_extra_key": json.RawMessage(`{"action":"accept"}`)},
	} {
		res := e.p.Do(context.Background(), pipeline.Call{Principal: agent, Tool: "test.high", Args: json.RawMessage(args), Client: modern, Responses: answers})
		if res.Kind != pipeline.InputRequired || res.State == "" || res.Inputs["confirm"].Method != "elicitation/create" {
			t.Errorf("answers %s without a state: %s %v, want input required (the confirmation asked afresh)", answers, kindName(res.Kind), res.Err)
		}
	}
	if e.effects(t) != 0 || e.count.started != 0 {
		t.Errorf("effects %d, runs %d; want none", e.effects(t), e.count.started)
	}
	// An older revision has no input rounds: answers are still refused.
	res := e.p.Do(context.Background(), pipeline.Call{Principal: agent, Tool: "test.high", Args: json.RawMessage(args), Client: legacy, Responses: confirm("accept", true)})
	if res.Kind != pipeline.ProtocolError || code(res) != failure.RequestStateInvalid {
		t.Errorf("a 2025-11-25 call with answers: %s %v, want the protocol error request_state_invalid", kindName(res.Kind), res.Err)
	}
}

// TestRequestStateRefused: a forged, expired, other caller's, other
// arguments' or other tool's request state is a protocol error, and the
// call never runs.
func TestRequestStateRefused(t *testing.T) {
	db := storetest.SQLite(t)
	now := time.Now()
	at := now
	clock := &at
	ring := newRing(t)
	e := newEnv(t, db, envOpts{ring: ring, now: func() time.Time { return *clock }})
	args := `{"customer":"c1","idempotencyKey":"k1"}`
	first := e.do(agent, modern, "test.high", args)
	if first.Kind != pipeline.InputRequired {
		t.Fatalf("first: %s", kindName(first.Kind))
	}
	otherAgent := &auth.Principal{Subject: "bob", ClientID: "collector-bot", Actor: "collector-bot", Kind: auth.KindAgent, Scopes: allScopes()}
	forged := []byte(first.State)
	forged[len(forged)/2] ^= 1
	if forged[len(forged)/2] == '_' || forged[len(forged)/2] == '-' {
		forged[len(forged)/2] = 'A'
	}
	cases := []struct {
		name  string
		who   *auth.Principal
		args  string
		state string
		later time.Duration
	}{
		{"forged", agent, args, string(forged), 0},
		{"tampered suffix", agent, args, first.State + "-TAMPERED", 0},
		{"other caller", otherAgent, args, first.State, 0},
		{"other arguments", agent, `{"customer":"c2","idempotencyKey":"k1"}`, first.State, 0},
		{"other key", agent, `{"customer":"c1","idempotencyKey":"k2"}`, first.State, 0},
		{"expired", agent, args, first.State, time.Hour},
	}
	for _, tt := range cases {
		*clock = now.Add(tt.later)
		res := e.p.Do(context.Background(), pipeline.Call{Principal: tt.who, Tool: "test.high", Args: json.RawMessage(tt.args), Client: modern, State: tt.state, Responses: confirm("accept", true)})
		if res.Kind != pipeline.ProtocolError || code(res) != failure.RequestStateInvalid || res.Err.Field == "" {
			t.Errorf("%s: %s %v, want a protocol error request_state_invalid naming the field", tt.name, kindName(res.Kind), res.Err)
		}
	}
	*clock = now
	// Another tool's state: the low tool asks nothing; a state of test.high
	// does not open test.medium.
	res := e.p.Do(context.Background(), pipeline.Call{Principal: agent, Tool: "test.medium", Args: json.RawMessage(args), Client: modern, State: first.State, Responses: confirm("accept", true)})
	if code(res) != failure.RequestStateInvalid {
		t.Errorf("other tool's state: %s %q", kindName(res.Kind), code(res))
	}
	if e.count.started != 0 || e.effects(t) != 0 {
		t.Errorf("ran %d times with a refused state", e.count.started)
	}
	// The genuine state still works: refusals spent nothing.
	if res := e.p.Do(context.Background(), pipeline.Call{Principal: agent, Tool: "test.high", Args: json.RawMessage(args), Client: modern, State: first.State, Responses: confirm("accept", true)}); res.Kind != pipeline.Complete {
		t.Errorf("genuine state after refusals: %s %v", kindName(res.Kind), res.Err)
	}
}

// TestIdempotency: a repeat answers the stored response byte for byte with
// no new effect, also from a pipeline started afterwards (a restart);
// other arguments under the key conflict; a key is per caller and tool.
func TestIdempotency(t *testing.T) {
	both(t, func(t *testing.T, db store.DB) {
		e := newEnv(t, db, envOpts{})
		first := e.do(agent, modern, "test.medium", `{"customer":"c1","note":"x","idempotencyKey":"idem-1"}`)
		if first.Kind != pipeline.Complete {
			t.Fatalf("first: %s %v", kindName(first.Kind), first.Err)
		}
		// Same arguments, spelled otherwise (RFC 8785: one canonical form).
		again := e.do(agent, modern, "test.medium", `{ "note" : "x", "idempotencyKey":"idem-1", "customer":"c\u0031" }`)
		if again.Kind != pipeline.Complete || string(again.Structured) != string(first.Structured) || again.Summary != first.Summary {
			t.Errorf("repeat: %s %s %q, want %s %q", kindName(again.Kind), again.Structured, again.Summary, first.Structured, first.Summary)
		}
		restarted := newEnvOn(t, db, envOpts{})
		if r := restarted.do(agent, modern, "test.medium", `{"customer":"c1","note":"x","idempotencyKey":"idem-1"}`); r.Kind != pipeline.Complete || string(r.Structured) != string(first.Structured) {
			t.Errorf("repeat after a restart: %s %s", kindName(r.Kind), r.Structured)
		}
		if c := e.do(agent, modern, "test.medium", `{"customer":"c2","idempotencyKey":"idem-1"}`); c.Kind != pipeline.ToolError || code(c) != failure.IdempotencyConflict {
			t.Errorf("other arguments: %s %q", kindName(c.Kind), code(c))
		}
		// Another caller's key of the same name is another key.
		bob := &auth.Principal{Subject: "bob", ClientID: "collector-bot", Actor: "collector-bot", Kind: auth.KindAgent, Scopes: allScopes()}
		if r := e.do(bob, modern, "test.medium", `{"customer":"c2","idempotencyKey":"idem-1"}`); r.Kind != pipeline.Complete {
			t.Errorf("another caller's key: %s %v", kindName(r.Kind), r.Err)
		}
		if e.effects(t) != 2 || e.count.started+restarted.count.started != 2 {
			t.Errorf("effects %d, runs %d; want 2, 2", e.effects(t), e.count.started+restarted.count.started)
		}
		ev := pipelinetest.Audited(t, db, "test.medium")
		if ev["allowed"] != 2 || ev["replayed"] != 2 || ev["rejected"] != 1 {
			t.Errorf("audit %v, want 2 allowed, 2 replayed, 1 rejected", ev)
		}
		// A key is required where the contract says so, and checked.
		for args, field := range map[string]string{
			`{"customer":"c3"}`:                                                     "idempotencyKey",
			`{"customer":"c3","idempotencyKey":""}`:                                 "idempotencyKey",
			`{"customer":"c3","idempotencyKey":7}`:                                  "idempotencyKey",
			`{"customer":"c3","idempotencyKey":"a\tb"}`:                             "idempotencyKey",
			`{"customer":"c3","idempotencyKey":"` + strings.Repeat("k", 256) + `"}`: "idempotencyKey",
			`{"customer":"c3","idempotencyKey":"k","dryRun":"yes"}`:                 "dryRun",
			`{"customer":"c3","idempotencyKey":"k","extra":1}`:                      "",
		} {
			r := e.do(agent, modern, "test.medium", args)
			if r.Kind != pipeline.ToolError || code(r) != failure.InvalidArguments || (field != "" && r.Err.Field != field) {
				t.Errorf("%s: %s %v, want invalid_arguments on %q", args, kindName(r.Kind), r.Err, field)
			}
		}
	})
}

// TestConcurrentKey: 50 concurrent identical calls with one key make one
// effect and one executed audit event; every other answer is the same
// response or request_in_progress.
func TestConcurrentKey(t *testing.T) {
	both(t, func(t *testing.T, db store.DB) {
		e := newEnv(t, db, envOpts{slow: 20 * time.Millisecond})
		pipelinetest.Race(t, 50, func() pipeline.Result {
			return e.do(agent, modern, "test.medium", `{"customer":"c1","idempotencyKey":"race"}`)
		})
		if e.effects(t) != 1 || e.count.started != 1 {
			t.Errorf("effects %d, runs %d; want 1, 1", e.effects(t), e.count.started)
		}
		if ev := pipelinetest.Audited(t, db, "test.medium"); ev["allowed"] != 1 {
			t.Errorf("audit %v, want exactly one allowed (executed) event", ev)
		}
	})
}

// TestDryRun: a dry run runs every check, answers what would happen and
// changes nothing, without confirmation or key.
func TestDryRun(t *testing.T) {
	e := newEnv(t, storetest.SQLite(t), envOpts{})
	res := e.do(agent, modern, "test.high", `{"customer":"c1","dryRun":true,"idempotencyKey":"dry-1"}`)
	if res.Kind != pipeline.Complete || !strings.Contains(string(res.Structured), `"dryRun":true`) {
		t.Fatalf("dry run: %s %v %s", kindName(res.Kind), res.Err, res.Structured)
	}
	if e.effects(t) != 0 {
		t.Error("a dry run changed something")
	}
	if ev := pipelinetest.Audited(t, e.db, "test.high"); ev["dry_run"] != 1 {
		t.Errorf("audit %v, want one dry_run", ev)
	}
}

// TestStepUp: where a contract asks for step-up, a human whose sign-in is
// too weak or too old is refused with insufficient_user_authentication,
// naming acr_values and max_age.
func TestStepUp(t *testing.T) {
	e := newEnv(t, storetest.SQLite(t), envOpts{})
	weak := *human
	weak.ACR = "urn:password"
	old := *human
	old.AuthTime = time.Now().Add(-time.Hour)
	for name, pr := range map[string]*auth.Principal{"weak acr": &weak, "old sign-in": &old} {
		res := e.do(pr, modern, "test.critical", `{"customer":"c1","idempotencyKey":"k"}`)
		if code(res) != failure.InsufficientUserAuthentication || !strings.Contains(res.Err.Message, `acr_values="urn:mfa"`) || !strings.Contains(res.Err.Message, "max_age=300") {
			t.Errorf("%s: %s %v", name, kindName(res.Kind), res.Err)
		}
	}
	// A stepped-up human still waits for a person's approval.
	if res := e.do(human, modern, "test.critical", `{"customer":"c1","idempotencyKey":"k"}`); res.Kind != pipeline.InputRequired {
		t.Errorf("stepped-up human: %s %v", kindName(res.Kind), res.Err)
	}
	if e.count.started != 0 {
		t.Error("a critical tool ran")
	}
}

// TestFailClosedAtStart: the pipeline refuses to start with a tool whose
// contract asks for something no check implements.
func TestFailClosedAtStart(t *testing.T) {
	db := storetest.SQLite(t)
	keys, err := idempotency.New(db.Dialect(), time.Hour, nil)
	if err != nil {
		t.Fatal(err)
	}
	n := &counters{}
	high := tierTool(contract.High, n, 0)
	noPreview := high
	noPreview.Preview = nil
	noDry := tierTool(contract.Medium, n, 0)
	noDry.DryRun = nil
	mandatory := tierTool(contract.Medium, n, 0)
	mandatory.Contract = contracttest.WithMandatoryDryRun(mandatory.Contract)
	mandatory.DryRun = nil
	readAndRun := storeRead(nil)
	readAndRun.Run = func(context.Context, any) (pipeline.Effect, error) { return pipeline.Effect{}, nil }
	logicWrite := tierTool(contract.Medium, n, 0)
	logicWrite.Execute = nil
	logicWrite.Logic = func(context.Context, json.RawMessage) (pipeline.Effect, error) { return pipeline.Effect{}, nil }
	// An external effect (mail) leaves only through an outbox, which a tool
	// without external effects has no use for.
	external := tierTool(contract.Medium, n, 0)
	ec := *external.Contract
	ec.SideEffects.External = true
	external.Contract = &ec
	mail, err := outbox.New(db, outbox.Config{Driver: outboxtest.Driver(t, db), Sender: outbox.Dir{Path: t.TempDir()}, From: "cobranca@cobranca.test"})
	if err != nil {
		t.Fatal(err)
	}
	internalMail := tierTool(contract.Medium, n, 0)
	internalMail.Outbox = mail
	// A result view: the contract names it and the tool gives its HTML,
	// both or neither; one tool each.
	withView := func(name string, html []byte) pipeline.Tool {
		tool := tierTool(contract.Low, n, 0)
		vc := *tierContract(name, contract.Low)
		vc.View = "ui://test/view.html"
		tool.Contract, tool.View = &vc, html
		return tool
	}
	viewless := tierTool(contract.Low, n, 0)
	viewless.View = []byte("<!DOCTYPE html>")
	cases := []struct {
		name string
		opts pipeline.Options
		want string
	}{
		{"side effects without a store", pipeline.Options{Tools: []pipeline.Tool{tierTool(contract.Medium, n, 0)}}, "no store"},
		{"in-band confirmation without a preview", pipeline.Options{Tools: []pipeline.Tool{noPreview}, DB: db, Keys: keys, States: newRing(t)}, "Preview"},
		{"in-band confirmation without request-state keys", pipeline.Options{Tools: []pipeline.Tool{high}, DB: db, Keys: keys}, "request-state keys"},
		{"dry run offered, none given", pipeline.Options{Tools: []pipeline.Tool{noDry}, DB: db, Keys: keys}, "DryRun"},
		{"mandatory dry run, none given", pipeline.Options{Tools: []pipeline.Tool{mandatory}, DB: db, Keys: keys}, "mandatory"},
		{"a write given as Logic", pipeline.Options{Tools: []pipeline.Tool{logicWrite}, DB: db, Keys: keys}, "Execute"},
		{"twice", pipeline.Options{Tools: []pipeline.Tool{tierTool(contract.Low, n, 0), tierTool(contract.Low, n, 0)}}, "twice"},
		{"a read of the store without a store", pipeline.Options{Tools: []pipeline.Tool{storeRead(nil)}}, "no store"},
		{"a read given both Run and Read", pipeline.Options{Tools: []pipeline.Tool{readAndRun}, DB: db, Keys: keys}, "one of"},
		{"external side effects without an outbox", pipeline.Options{Tools: []pipeline.Tool{external}, DB: db, Keys: keys}, "no outbox"},
		{"an outbox for no external side effects", pipeline.Options{Tools: []pipeline.Tool{internalMail}, DB: db, Keys: keys}, "no external side effects"},
		{"a view without its HTML", pipeline.Options{Tools: []pipeline.Tool{withView("test.viewed", nil)}}, "give its HTML (Tool.View)"},
		{"HTML without a view", pipeline.Options{Tools: []pipeline.Tool{viewless}}, "names no view"},
		{"one view, two tools", pipeline.Options{Tools: []pipeline.Tool{withView("test.one", []byte("<!DOCTYPE html>")), withView("test.two", []byte("<!DOCTYPE html>"))}}, "its view ui://test/view.html is another tool's"},
	}
	for _, tt := range cases {
		_, err := pipeline.New(tt.opts)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: New = %v, want an error about %q", tt.name, err, tt.want)
		}
	}
	// A read with its view is served, and listed among the views.
	p, err := pipeline.New(pipeline.Options{Tools: []pipeline.Tool{tierTool(contract.Low, n, 0), withView("test.viewed", []byte("<!DOCTYPE html>"))}})
	if err != nil {
		t.Fatalf("a read with its view: New = %v", err)
	}
	if v := p.Views(); len(v) != 1 || v[0].Contract.Name != "test.viewed" || string(v[0].HTML) != "<!DOCTYPE html>" {
		t.Errorf("Views() = %+v, want test.viewed's", v)
	}
	// The external tool that enqueues through the outbox is served.
	external.Outbox = mail
	if _, err := pipeline.New(pipeline.Options{Tools: []pipeline.Tool{external}, DB: db, Keys: keys}); err != nil {
		t.Errorf("an external tool with an outbox: New = %v, want it served", err)
	}
}

// TestAuditFailureLeavesNoEffect: when the call's audit event cannot be
// written (the serving role lost its INSERT on audit_event), the effect
// written in the same transaction is rolled back, and the answer says
// nothing was done.
func TestAuditFailureLeavesNoEffect(t *testing.T) {
	app, owner := storetest.AppRoleAndOwner(t, pg)
	ctx := context.Background()
	for _, sql := range []string{effectTable, `GRANT SELECT, INSERT ON test_effect TO cobranca_app`} {
		if _, err := owner.Exec(ctx, sql); err != nil {
			t.Fatal(err)
		}
	}
	e := newEnvOn(t, app, envOpts{})
	if res := e.do(agent, modern, "test.medium", `{"customer":"c1","idempotencyKey":"before"}`); res.Kind != pipeline.Complete {
		t.Fatalf("with the grant: %s %v", kindName(res.Kind), res.Err)
	}
	if _, err := owner.Exec(ctx, `REVOKE INSERT ON audit_event FROM cobranca_app`); err != nil {
		t.Fatal(err)
	}
	res := e.do(agent, modern, "test.medium", `{"customer":"c2","idempotencyKey":"after"}`)
	if res.Kind != pipeline.ToolError || code(res) != failure.Unavailable || !strings.Contains(res.Err.Message, "the audit log is unavailable, nothing was done") {
		t.Fatalf("audit refused: %s %v", kindName(res.Kind), res.Err)
	}
	if n := e.effects(t); n != 1 {
		t.Errorf("effects = %d, want 1: the effect of the unaudited call stayed", n)
	}
	// The key was not kept either: once the grant is back the call runs.
	if _, err := owner.Exec(ctx, `GRANT INSERT ON audit_event TO cobranca_app`); err != nil {
		t.Fatal(err)
	}
	if res := e.do(agent, modern, "test.medium", `{"customer":"c2","idempotencyKey":"after"}`); res.Kind != pipeline.Complete || e.effects(t) != 2 {
		t.Errorf("after the grant: %s %v, effects %d", kindName(res.Kind), res.Err, e.effects(t))
	}
}

// TestAuditRefusedAtCommit: the call's audit event is written in its
// transaction's last round trip, with the stored answer and the COMMIT; when
// the store refuses that event (here a trigger refuses executed events, and
// only those), the whole call rolls back, its key stays free, and the
// answer is the audit failure's, not a generic store failure.
func TestAuditRefusedAtCommit(t *testing.T) {
	db := storetest.Fixtures(pg)[1].Migrated(t)
	ctx := context.Background()
	for _, sql := range []string{
		`CREATE FUNCTION refuse_allowed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	IF NEW.outcome = 'allowed' AND NEW.tool = 'test.medium' THEN
		RAISE EXCEPTION 'refused by the test';
	END IF;
	RETURN NEW;
END $$`,
		`CREATE TRIGGER refuse_allowed BEFORE INSERT ON audit_event FOR EACH ROW EXECUTE FUNCTION refuse_allowed()`,
	} {
		if _, err := db.Exec(ctx, sql); err != nil {
			t.Fatal(err)
		}
	}
	e := newEnv(t, db, envOpts{})
	res := e.do(agent, modern, "test.medium", `{"customer":"c1","idempotencyKey":"k1"}`)
	if res.Kind != pipeline.ToolError || code(res) != failure.Unavailable || !strings.Contains(res.Err.Message, "the audit log is unavailable, nothing was done") {
		t.Fatalf("audit refused at commit: %s %v", kindName(res.Kind), res.Err)
	}
	if n := e.effects(t); n != 0 {
		t.Errorf("effects = %d, want 0", n)
	}
	if _, err := db.Exec(ctx, `DROP TRIGGER refuse_allowed ON audit_event`); err != nil {
		t.Fatal(err)
	}
	if res := e.do(agent, modern, "test.medium", `{"customer":"c1","idempotencyKey":"k1"}`); res.Kind != pipeline.Complete || e.effects(t) != 1 {
		t.Errorf("after the trigger is gone: %s %v, effects %d: the key was kept", kindName(res.Kind), res.Err, e.effects(t))
	}
}

// storeRead is a low-tier tool that reads the store: how many test effects
// it holds, and the pipeline's time; seen receives the Querier it was given.
func storeRead(seen func(store.Querier)) pipeline.Tool {
	c := tierContract("test.read_store", contract.Low)
	c.InputSchema = &jsonschema.Schema{Type: "object"}
	c.OutputSchema = &jsonschema.Schema{Type: "object", Required: []string{"effects", "at"}, Properties: map[string]*jsonschema.Schema{
		"effects": {Type: "integer"}, "at": {Type: "string"},
	}}
	return pipeline.Tool{
		Contract: c,
		Decode:   pipeline.Strict[map[string]any](),
		Read: func(ctx context.Context, q store.Querier, _ any) (pipeline.Effect, error) {
			if seen != nil {
				seen(q)
			}
			var n int64
			if err := q.QueryRow(ctx, `SELECT count(*) FROM test_effect`).Scan(&n); err != nil {
				return pipeline.Effect{}, err
			}
			if pr := pipeline.PrincipalFrom(ctx); pr == nil || pr.Subject != "alice" {
				return pipeline.Effect{}, fmt.Errorf("the call's principal is %+v, want alice", pr)
			}
			return pipeline.Effect{Structured: map[string]any{"effects": n, "at": pipeline.Now(ctx).UTC().Format(time.RFC3339)}, Summary: "read"}, nil
		},
	}
}

// TestReadAndUnchanged: a Read runs on the pipeline's store and clock; an
// Execute that finds its effect already made (Unchanged) commits, keeps its
// answer under the key, and is audited unchanged, not allowed.
func TestReadAndUnchanged(t *testing.T) {
	both(t, func(t *testing.T, db store.DB) {
		if _, err := db.Exec(context.Background(), effectTable); err != nil {
			t.Fatal(err)
		}
		at := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
		now := func() time.Time { return at }
		keys, err := idempotency.New(db.Dialect(), time.Hour, now)
		if err != nil {
			t.Fatal(err)
		}
		var got store.Querier
		read := storeRead(func(q store.Querier) { got = q })
		// The same write is made once: a second call finds it and says so.
		once := pipeline.Tool{
			Contract: tierContract("test.once", contract.Medium),
			Decode:   pipeline.Strict[map[string]any](),
			Execute: func(ctx context.Context, tx store.Tx, _ any) (pipeline.Effect, error) {
				var n int64
				if err := tx.QueryRow(ctx, `SELECT count(*) FROM test_effect WHERE tool = 'once'`).Scan(&n); err != nil {
					return pipeline.Effect{}, err
				}
				if n > 0 {
					return pipeline.Effect{Structured: map[string]any{"ok": true, "customer": "c1"}, Summary: "already made", Unchanged: true}, nil
				}
				_, err := tx.Exec(ctx, `INSERT INTO test_effect (tool, customer) VALUES ('once', 'c1')`)
				return pipeline.Effect{Structured: map[string]any{"ok": true, "customer": "c1"}, Summary: "made"}, err
			},
		}
		once.DryRun = func(context.Context, store.Querier, any) (pipeline.Effect, error) {
			return pipeline.Effect{Structured: map[string]any{"ok": true, "customer": "c1"}}, nil
		}
		p, err := pipeline.New(pipeline.Options{Tools: []pipeline.Tool{read, once}, Auditor: pipelinetest.Auditor(t, db),
			DB: db, Keys: keys, Now: now})
		if err != nil {
			t.Fatal(err)
		}
		pr := &auth.Principal{Subject: "alice", Scopes: allScopes()}
		do := func(tool, args string) pipeline.Result {
			return p.Do(context.Background(), pipeline.Call{Principal: pr, RequestID: "r1", Tool: tool, Args: json.RawMessage(args)})
		}
		res := do("test.read_store", `{}`)
		if res.Kind != pipeline.Complete || string(res.Structured) != `{"at":"2026-12-01T10:00:00Z","effects":0}` || got != db {
			t.Fatalf("read: %s %s (querier %T), want complete at the pipeline's time, on its DB", kindName(res.Kind), res.Structured, got)
		}
		for i, k := range []string{"k1", "k2", "k2"} {
			if res := do("test.once", `{"customer":"c1","idempotencyKey":"`+k+`"}`); res.Kind != pipeline.Complete {
				t.Fatalf("call %d: %s %v", i+1, kindName(res.Kind), res.Err)
			}
		}
		var n int64
		if err := db.QueryRow(context.Background(), `SELECT count(*) FROM test_effect WHERE tool = 'once'`).Scan(&n); err != nil || n != 1 {
			t.Errorf("%d rows (%v), want 1", n, err)
		}
		want := map[string]int{"allowed": 1, "unchanged": 1, "replayed": 1}
		if got := pipelinetest.Audited(t, db, "test.once"); !maps.Equal(got, want) {
			t.Errorf("audit outcomes %v, want %v (k1 made it, k2 found it made, k2 again replayed)", got, want)
		}
	})
}

// orderAuditor records the calls it audits in order.
type orderAuditor struct{ log *[]string }

func (a orderAuditor) RecordCall(_ context.Context, rec pipeline.CallRecord) error {
	if rec.AppendCanonicalArgs != nil {
		*a.log = append(*a.log, "audit "+string(rec.AppendCanonicalArgs(nil)))
	} else {
		*a.log = append(*a.log, "audit")
	}
	return nil
}

func (a orderAuditor) AppendCall(context.Context, store.Tx, pipeline.CallRecord) error {
	panic("a read is not audited in a transaction")
}

// TestEffectDone: a read's Effect.Done runs once the pipeline is done with
// the effect and its arguments — after the output check and after the
// audit, which still reads the arguments — whether the call is answered,
// its result breaks the output schema, or the tool fails; exactly once.
func TestEffectDone(t *testing.T) {
	for _, tc := range []struct {
		name   string
		result any
		err    error
		kind   pipeline.Kind
	}{
		{"answered", map[string]any{"ok": true, "customer": "c"}, nil, pipeline.Complete},
		{"result breaks the schema", map[string]any{"ok": "yes"}, nil, pipeline.ToolError},
		{"tool fails", nil, &failure.Error{Code: "test_refused", Message: "refused"}, pipeline.ToolError},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var log []string
			tool := pipeline.Tool{Contract: tierContract("test.low", contract.Low), Decode: pipeline.Strict[markArgs]()}
			tool.Run = func(_ context.Context, v any) (pipeline.Effect, error) {
				a := v.(*markArgs)
				log = append(log, "run")
				return pipeline.Effect{Structured: tc.result, Summary: "s",
					AppendCanonicalArgs: func(b []byte) []byte { return append(b, a.Customer...) },
					Done:                func() { log = append(log, "done"); a.Customer = "released" },
				}, tc.err
			}
			p, err := pipeline.New(pipeline.Options{Tools: []pipeline.Tool{tool}, Auditor: orderAuditor{&log}})
			if err != nil {
				t.Fatal(err)
			}
			res := p.Do(context.Background(), pipeline.Call{Principal: agent, RequestID: "r1", Tool: "test.low", Args: json.RawMessage(`{"customer":"c"}`), Client: modern})
			if res.Kind != tc.kind {
				t.Errorf("kind %s (%v), want %s", kindName(res.Kind), res.Err, kindName(tc.kind))
			}
			want := []string{"run", "audit c", "done"}
			if tc.err != nil || tc.kind != pipeline.Complete {
				want = []string{"run", "audit", "done"} // a failed call's event digests the raw arguments
			}
			if !slices.Equal(log, want) {
				t.Errorf("order %q, want %q", log, want)
			}
		})
	}
}

// TestAbsentArguments: MCP makes a call's arguments optional. A tool whose
// input schema requires no property reads absent (or null) arguments as
// {} — the same call, audited the same; a tool that requires one refuses
// them, naming arguments, and never runs.
func TestAbsentArguments(t *testing.T) {
	both(t, func(t *testing.T, db store.DB) {
		e := newEnv(t, db, envOpts{})
		keys, err := idempotency.New(db.Dialect(), time.Hour, nil)
		if err != nil {
			t.Fatal(err)
		}
		p, err := pipeline.New(pipeline.Options{Tools: []pipeline.Tool{storeRead(nil), tierTool(contract.Low, e.count, 0)},
			Auditor: pipelinetest.Auditor(t, db), DB: db, Keys: keys})
		if err != nil {
			t.Fatal(err)
		}
		pr := &auth.Principal{Subject: "alice", Scopes: allScopes()}
		for _, args := range []json.RawMessage{nil, json.RawMessage(" null "), json.RawMessage(`{}`)} {
			res := p.Do(context.Background(), pipeline.Call{Principal: pr, RequestID: "r1", Tool: "test.read_store", Args: args})
			if res.Kind != pipeline.Complete {
				t.Errorf("read_store with arguments %q: %s %v, want complete", args, kindName(res.Kind), res.Err)
			}
			res = p.Do(context.Background(), pipeline.Call{Principal: pr, RequestID: "r1", Tool: "test.low", Args: args})
			if res.Kind != pipeline.ToolError || code(res) != failure.InvalidArguments {
				t.Errorf("test.low with arguments %q: %s %v, want invalid_arguments", args, kindName(res.Kind), res.Err)
			}
		}
		if e.count.started != 0 {
			t.Errorf("test.low ran %d times without its required customer", e.count.started)
		}
	})
}

// TestMediaOnlyFromTextReads: a read with a structured result that answers
// media is a server bug: the caller gets an internal error, never the media.
func TestMediaOnlyFromTextReads(t *testing.T) {
	tool := pipeline.Tool{Contract: tierContract("test.low", contract.Low), Decode: pipeline.Strict[markArgs]()}
	tool.Run = func(context.Context, any) (pipeline.Effect, error) {
		return pipeline.Effect{Structured: map[string]any{"ok": true, "customer": "c"}, Summary: "s",
			Media: []pipeline.Media{{Kind: pipeline.Image, MIMEType: "image/png", Data: []byte{1}}}}, nil
	}
	p, err := pipeline.New(pipeline.Options{Tools: []pipeline.Tool{tool}})
	if err != nil {
		t.Fatal(err)
	}
	res := p.Do(context.Background(), pipeline.Call{Principal: agent, RequestID: "r1", Tool: "test.low", Args: json.RawMessage(`{"customer":"c"}`)})
	if res.Kind != pipeline.ToolError || code(res) != failure.Internal || res.Media != nil || res.Structured != nil {
		t.Errorf("%s %v (media %v), want an internal error and no media", kindName(res.Kind), res.Err, res.Media)
	}
}
