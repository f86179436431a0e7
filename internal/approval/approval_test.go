package approval_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cobranca/cobranca/internal/approval"
	"github.com/cobranca/cobranca/internal/auditlog"
	"github.com/cobranca/cobranca/internal/auth"
	"github.com/cobranca/cobranca/internal/clocktest"
	"github.com/cobranca/cobranca/internal/contract"
	"github.com/cobranca/cobranca/internal/contract/contracttest"
	"github.com/cobranca/cobranca/internal/failure"
	"github.com/cobranca/cobranca/internal/idempotency"
	"github.com/cobranca/cobranca/internal/pgtest"
	"github.com/cobranca/cobranca/internal/pipeline"
	"github.com/cobranca/cobranca/internal/pipeline/pipelinetest"
	"github.com/cobranca/cobranca/internal/reqstate"
	"github.com/cobranca/cobranca/internal/store"
	"github.com/cobranca/cobranca/internal/store/storetest"
)

var pg = pgtest.New()

func TestMain(m *testing.M) { pg.Run(m) }

const (
	tool     = "test.critical"
	selfTool = "test.self_approved" // its contract lets the requester approve
	scope    = "test:critical"
	mfa      = "urn:mfa"
)

var (
	// modern is a 2026-07-28 client that opens URL elicitations; old a
	// 2025-11-25 one, which has no input rounds.
	modern = pipeline.Client{Protocol: "2026-07-28", InputRequests: true, Elicitation: true, ElicitationURL: true}
	old    = pipeline.Client{Protocol: "2025-11-25", Elicitation: true, ElicitationForm: true}
)

func criticalContract(name string) *contract.Contract {
	c := *contracttest.New(name, contract.Critical, scope)
	c.StepUpAuth.MaxAgeSeconds = 300
	return &c
}

type env struct {
	db    store.DB
	auth  *auth.Authenticator
	stale *auth.Authenticator // mints tokens signed in an hour ago, same key
	clock *clocktest.Clock
	store *approval.Store
	d     *approval.Decider
	ran   atomic.Int64
	tools []pipeline.Tool
	ring  *reqstate.Ring // every replica's (COBRANCA_REQUEST_STATE_KEYS)
}

func newEnv(t *testing.T, db store.DB) *env {
	t.Helper()
	ctx := context.Background()
	e := &env{db: db, clock: &clocktest.Clock{}, ring: pipelinetest.Ring(t)}
	dir := t.TempDir()
	cfg := auth.Config{DataDir: dir, BaseURL: "http://127.0.0.1:8080", StepUpACR: []string{mfa}}
	var err error
	if e.auth, err = auth.New(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	cfg.Now = func() time.Time { return time.Now().Add(-time.Hour) }
	if e.stale, err = auth.New(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	if e.store, err = approval.New(15*time.Minute, e.clock.Now); err != nil {
		t.Fatal(err)
	}
	self := criticalContract(selfTool)
	self.RequesterMayApprove = true
	for _, c := range []*contract.Contract{criticalContract(tool), self} {
		e.tools = append(e.tools, pipelinetest.Effectful(c, func() { e.ran.Add(1) }))
	}
	alog, _ := pipelinetest.AuditLog(t, db)
	contracts := map[string]*contract.Contract{}
	for _, tl := range e.tools {
		contracts[tl.Contract.Name] = tl.Contract
	}
	e.d = &approval.Decider{Store: e.store, DB: db, Verifier: e.auth, Audit: alog, StepUpACR: []string{mfa}, Now: e.clock.Now,
		Contract: func(name string) *contract.Contract { return contracts[name] }}
	return e
}

// replica is one server process's pipeline on the env's store.
func (e *env) replica(t *testing.T) *pipeline.Pipeline {
	t.Helper()
	keys, err := idempotency.New(e.db.Dialect(), time.Hour, e.clock.Now)
	if err != nil {
		t.Fatal(err)
	}
	p, err := pipeline.New(pipeline.Options{Tools: e.tools, Auditor: pipelinetest.Auditor(t, e.db), DB: e.db, Keys: keys,
		States: e.ring, StepUp: []string{mfa}, Now: e.clock.Now, Approvals: e.store, PublicURL: pipelinetest.PublicURL})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// token mints a real development token and returns it with its principal,
// as the authenticator verifies it.
func (e *env) token(t *testing.T, a *auth.Authenticator, o auth.MintOptions) (string, *auth.Principal) {
	t.Helper()
	if o.TTL == 0 {
		o.TTL = 3 * time.Hour
	}
	tok, err := a.Mint(o)
	if err != nil {
		t.Fatal(err)
	}
	pr, err := e.auth.Verify(context.Background(), tok)
	if err != nil {
		t.Fatal(err)
	}
	return tok, pr
}

func (e *env) agent(t *testing.T) *auth.Principal {
	_, pr := e.token(t, e.auth, auth.MintOptions{Subject: "ana", Agent: "collector-bot", Scopes: []string{scope}})
	return pr
}

// person is a stepped-up person's token, an approver's (contracttest.ApproverRole).
func (e *env) person(t *testing.T, subject string) string {
	tok, _ := e.token(t, e.auth, auth.MintOptions{Subject: subject, ACR: mfa, Scopes: []string{scope}, Roles: []string{contracttest.ApproverRole}})
	return tok
}

func (e *env) effects(t *testing.T, name string) int { return pipelinetest.Effects(t, e.db, name) }

// asked is what a call waiting for its approval was answered: the
// approval's id and URL, from the URL elicitation or approval_required's
// message, and the round's state (modern clients).
type asked struct{ id, url, state string }

func askedOf(t *testing.T, res pipeline.Result, cl pipeline.Client) asked {
	t.Helper()
	a := pipelinetest.AskedOf(t, res, cl)
	return asked{id: a.ID, url: a.URL, state: a.State}
}

// call makes the agent's call; retry carries the previous round's state.
func call(p *pipeline.Pipeline, pr *auth.Principal, cl pipeline.Client, name, args string, retry asked) pipeline.Result {
	c := pipeline.Call{Principal: pr, RequestID: "r1", Tool: name, Args: json.RawMessage(args), Client: cl}
	if retry.state != "" {
		c.State = retry.state
		c.Responses = map[string]json.RawMessage{"approval": json.RawMessage(`{"action":"accept"}`)}
	}
	return p.Do(context.Background(), c)
}

// databases runs fn on a fresh store of each dialect, as the server works
// on it: on PostgreSQL as the serving role (its grants are tested), with
// the test tools' table made by the owner.
func databases(t *testing.T, fn func(t *testing.T, db store.DB)) {
	t.Run("sqlite", func(t *testing.T) {
		t.Parallel()
		db := storetest.SQLite(t)
		if _, err := db.Exec(context.Background(), effectsTable); err != nil {
			t.Fatal(err)
		}
		fn(t, db)
	})
	t.Run("postgres", func(t *testing.T) {
		t.Parallel()
		app, owner := storetest.AppRoleAndOwner(t, pg)
		for _, sql := range []string{effectsTable, `GRANT SELECT, INSERT ON pipelinetest_effect TO cobranca_app`} {
			if _, err := owner.Exec(context.Background(), sql); err != nil {
				t.Fatal(err)
			}
		}
		fn(t, app)
	})
}

// effectsTable is pipelinetest's table of Effectful's rows.
const effectsTable = `CREATE TABLE pipelinetest_effect (tool TEXT NOT NULL)`

// each runs fn on a fresh store of each dialect, for a client of each
// revision.
func each(t *testing.T, fn func(t *testing.T, e *env, cl pipeline.Client)) {
	for name, cl := range map[string]pipeline.Client{"2026-07-28": modern, "2025-11-25": old} {
		t.Run(name, func(t *testing.T) {
			databases(t, func(t *testing.T, db store.DB) { fn(t, newEnv(t, db), cl) })
		})
	}
}

// TestRoundTrip: an agent's critical call is recorded and answered with
// the approval's URL; asking again before anyone decides is the same
// approval; a stepped-up person approves it with their token; the agent's
// retry, on another replica, runs the call once; its repeat gets the stored
// answer and changes nothing.
func TestRoundTrip(t *testing.T) {
	each(t, func(t *testing.T, e *env, cl pipeline.Client) {
		ctx := context.Background()
		one, two := e.replica(t), e.replica(t)
		agent := e.agent(t)
		args := `{"customer":"c1","idempotencyKey":"k-round"}`
		first := askedOf(t, call(one, agent, cl, tool, args, asked{}), cl)
		if again := askedOf(t, call(two, agent, cl, tool, args, asked{}), cl); again.id != first.id {
			t.Errorf("asked again before a decision: approval %s, want the pending %s", again.id, first.id)
		}
		a, err := e.store.Get(ctx, e.db, first.id)
		if err != nil {
			t.Fatal(err)
		}
		if a.State != approval.Pending || a.Tool != tool || a.Preview != pipelinetest.EffectPreview(e.tools[0].Contract) ||
			a.Requester != (approval.Requester{Subject: "ana", Client: "collector-bot", Actor: "collector-bot"}) ||
			len(a.SideEffects) != 1 || a.Expires.Sub(a.Created) != 15*time.Minute {
			t.Errorf("pending action = %+v", a)
		}
		if e.ran.Load() != 0 {
			t.Fatal("the call ran before its approval")
		}
		decided, err := e.d.Decide(ctx, first.id, e.person(t, "bruno"), true)
		if err != nil {
			t.Fatalf("Decide: %v", err)
		}
		if decided.State != approval.Approved || decided.Approver == nil || decided.Approver.Subject != "bruno" || decided.Approver.ACR != mfa || decided.Approver.AuthTime.IsZero() {
			t.Errorf("approved action = %+v", decided)
		}
		done := call(two, agent, cl, tool, args, first)
		if done.Kind != pipeline.Complete || e.ran.Load() != 1 || e.effects(t, tool) != 1 {
			t.Fatalf("retry after approval = %v %v, ran %d, effects %d; want complete, once", done.Kind, done.Err, e.ran.Load(), e.effects(t, tool))
		}
		if a, _ := e.store.Get(ctx, e.db, first.id); a.State != approval.Executed || a.ExecutedAt.IsZero() {
			t.Errorf("after the retry the approval is %s, want executed", a.State)
		}
		repeat := call(one, agent, cl, tool, args, first)
		if repeat.Kind != pipeline.Complete || !bytes.Equal(repeat.Structured, done.Structured) || e.ran.Load() != 1 || e.effects(t, tool) != 1 {
			t.Errorf("repeat = %v %v %s, ran %d; want the stored answer %s, no new effect", repeat.Kind, repeat.Err, repeat.Structured, e.ran.Load(), done.Structured)
		}
		if n := audited(t, e.db, approval.EventApproved, auditlog.Allowed); n != 1 {
			t.Errorf("%d approval.approved events, want 1", n)
		}
	})
}

func audited(t *testing.T, db store.Querier, name string, outcome auditlog.Outcome) int {
	t.Helper()
	var n int64
	if err := db.QueryRow(context.Background(), `SELECT COUNT(*) FROM audit_event WHERE event = $1 AND outcome = $2`, name, string(outcome)).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return int(n)
}

// auditedCode counts the refused audit events named name with the failure code.
func auditedCode(t *testing.T, db store.Querier, name string, code failure.Code) int {
	t.Helper()
	var n int64
	if err := db.QueryRow(context.Background(), `SELECT COUNT(*) FROM audit_event WHERE event = $1 AND outcome = 'rejected' AND failure_code = $2`, name, string(code)).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return int(n)
}

// TestApproverRefused: only a person other than the requester, stepped up,
// approves; every refusal is audited, changes nothing, and the call still
// waits.
func TestApproverRefused(t *testing.T) {
	databases(t, func(t *testing.T, db store.DB) {
		ctx := context.Background()
		e := newEnv(t, db)
		p := e.replica(t)
		agent := e.agent(t)
		first := askedOf(t, call(p, agent, modern, tool, `{"customer":"c1","idempotencyKey":"k1"}`, asked{}), modern)
		approver := []string{contracttest.ApproverRole}
		agentToken, _ := e.token(t, e.auth, auth.MintOptions{Subject: "bruno", Agent: "other-bot", ACR: mfa, Roles: approver})
		oldToken, _ := e.token(t, e.stale, auth.MintOptions{Subject: "bruno", ACR: mfa, Roles: approver})
		weakToken, _ := e.token(t, e.auth, auth.MintOptions{Subject: "bruno", ACR: "urn:password", Roles: approver})
		noRole, _ := e.token(t, e.auth, auth.MintOptions{Subject: "bruno", ACR: mfa})
		otherRole, _ := e.token(t, e.auth, auth.MintOptions{Subject: "bruno", ACR: mfa, Roles: []string{"collections.viewer", "test.approver.not"}})
		for _, tt := range []struct {
			name, token string
			code        failure.Code
		}{
			{"an agent", agentToken, approval.CodeApproverIsAgent},
			{"a person without a role", noRole, approval.CodeApproverLacksRole},
			{"a person with other roles", otherRole, approval.CodeApproverLacksRole},
			{"auth_time too old", oldToken, failure.InsufficientUserAuthentication},
			{"acr not allowed", weakToken, failure.InsufficientUserAuthentication},
			{"the requester", e.person(t, "ana"), approval.CodeApproverIsRequester},
			{"a forged token", e.person(t, "bruno") + "x", approval.CodeInvalidToken},
		} {
			_, err := e.d.Decide(ctx, first.id, tt.token, true)
			if fe, ok := failure.As(err); !ok || fe.Code != tt.code {
				t.Errorf("%s approves: %v, want %s", tt.name, err, tt.code)
			}
			if fe, ok := failure.As(err); ok && fe.Code == approval.CodeApproverLacksRole && !strings.Contains(fe.Message, contracttest.ApproverRole) {
				t.Errorf("%s: message %q does not name the role deciding needs", tt.name, fe.Message)
			}
			if fe, ok := failure.As(err); ok && fe.Code == failure.InsufficientUserAuthentication && (!strings.Contains(fe.Message, `acr_values="urn:mfa"`) || !strings.Contains(fe.Message, "max_age=300")) {
				t.Errorf("%s: message %q does not say what step-up is needed", tt.name, fe.Message)
			}
			// What the approval page asks the issuer for: the refusal carries StepUpFor's requirement.
			if tt.code == failure.InsufficientUserAuthentication {
				want, ok := e.d.StepUpFor(tool)
				sue, isStepUp := errors.AsType[*auth.StepUpError](err)
				if !ok || !isStepUp || !slices.Equal(sue.Required.ACRValues, want.ACRValues) || sue.Required.MaxAge != want.MaxAge || want.MaxAge != 300*time.Second {
					t.Errorf("%s: refusal %v carries no step-up requirement equal to StepUpFor's %v (%v)", tt.name, err, want, ok)
				}
			}
		}
		if a, _ := e.store.Get(ctx, db, first.id); a.State != approval.Pending || a.Approver != nil {
			t.Errorf("after refused approvers the approval is %s by %v, want pending", a.State, a.Approver)
		}
		if res := call(p, agent, modern, tool, `{"customer":"c1","idempotencyKey":"k1"}`, first); res.Kind != pipeline.InputRequired || e.ran.Load() != 0 {
			t.Errorf("retry after refused approvers: %v %v, ran %d; want still waiting", res.Kind, res.Err, e.ran.Load())
		}
		if n := audited(t, db, approval.EventApproved, auditlog.Rejected); n != 6 { // the forged token names nobody
			t.Errorf("%d refused approval events, want 6", n)
		}
		if n := auditedCode(t, db, approval.EventApproved, approval.CodeApproverLacksRole); n != 2 {
			t.Errorf("%d refused approval events with %s, want 2", n, approval.CodeApproverLacksRole)
		}
		if got := e.d.RolesFor(tool); !slices.Equal(got, []string{contracttest.ApproverRole}) {
			t.Errorf("RolesFor(%s) = %v, want [%s]", tool, got, contracttest.ApproverRole)
		}
		if su, ok := e.d.StepUpFor("no.such_tool"); ok {
			t.Errorf("StepUpFor(an unserved tool) = %v, true; want none", su)
		}
		if _, err := e.d.Decide(ctx, "a_"+strings.Repeat("a", 26), e.person(t, "bruno"), true); !isCode(err, approval.CodeNotFound) {
			t.Errorf("an unknown approval: %v, want %s", err, approval.CodeNotFound)
		}

		// Where the contract allows it, the requester approves their own
		// agent's call.
		self := askedOf(t, call(p, agent, modern, selfTool, `{"idempotencyKey":"k1"}`, asked{}), modern)
		if _, err := e.d.Decide(ctx, self.id, e.person(t, "ana"), true); err != nil {
			t.Fatalf("the requester approves a call its contract lets them: %v", err)
		}
		if res := call(p, agent, modern, selfTool, `{"idempotencyKey":"k1"}`, self); res.Kind != pipeline.Complete || e.effects(t, selfTool) != 1 {
			t.Errorf("self-approved retry: %v %v", res.Kind, res.Err)
		}
	})
}

func isCode(err error, code failure.Code) bool {
	fe, ok := failure.As(err)
	return ok && fe.Code == code
}

// TestCallRefused: a retry runs only the call approved, approved, and
// live: other arguments, a rejection, an expiry and a reuse are refused
// with their codes, and nothing runs.
func TestCallRefused(t *testing.T) {
	each(t, func(t *testing.T, e *env, cl pipeline.Client) {
		ctx := context.Background()
		p := e.replica(t)
		agent := e.agent(t)
		approved := func(args string) asked {
			t.Helper()
			a := askedOf(t, call(p, agent, cl, tool, args, asked{}), cl)
			if _, err := e.d.Decide(ctx, a.id, e.person(t, "bruno"), true); err != nil {
				t.Fatal(err)
			}
			return a
		}

		// Arguments changed (the key is part of the call).
		a := approved(`{"customer":"c1","idempotencyKey":"k1"}`)
		for _, other := range []string{`{"customer":"c2","idempotencyKey":"k1"}`, `{"customer":"c1","idempotencyKey":"k2"}`} {
			res := call(p, agent, cl, tool, other, a)
			if cl.InputRequests {
				if res.Kind != pipeline.ToolError || res.Err.Code != failure.ApprovalMismatch {
					t.Errorf("retry with %s: %v %v, want approval_mismatch", other, res.Kind, res.Err)
				}
			} else if b := askedOf(t, res, cl); b.id == a.id { // no state: another call, its own approval
				t.Errorf("retry with %s used approval %s of other arguments", other, a.id)
			}
		}
		if e.ran.Load() != 0 {
			t.Fatal("a call of other arguments ran")
		}

		// Rejected.
		r := askedOf(t, call(p, agent, cl, tool, `{"customer":"c3","idempotencyKey":"k3"}`, asked{}), cl)
		if _, err := e.d.Decide(ctx, r.id, e.person(t, "bruno"), false); err != nil {
			t.Fatal(err)
		}
		if res := call(p, agent, cl, tool, `{"customer":"c3","idempotencyKey":"k3"}`, r); res.Kind != pipeline.ToolError || res.Err.Code != failure.ApprovalRejected {
			t.Errorf("retry of a rejected call: %v %v, want approval_rejected", res.Kind, res.Err)
		}
		if _, err := e.d.Decide(ctx, r.id, e.person(t, "carla"), true); !isCode(err, approval.CodeDecided) {
			t.Errorf("approving a rejected call: %v, want %s", err, approval.CodeDecided)
		}
		if n := audited(t, e.db, approval.EventRejected, auditlog.Allowed); n != 1 {
			t.Errorf("%d approval.rejected events, want 1", n)
		}

		// Replayed: the approval runs its call once; deciding it again
		// changes nothing.
		if res := call(p, agent, cl, tool, `{"customer":"c1","idempotencyKey":"k1"}`, a); res.Kind != pipeline.Complete || e.ran.Load() != 1 {
			t.Fatalf("approved retry: %v %v", res.Kind, res.Err)
		}
		if _, err := e.d.Decide(ctx, a.id, e.person(t, "carla"), true); !isCode(err, approval.CodeDecided) {
			t.Errorf("approving an executed call: %v, want %s", err, approval.CodeDecided)
		}
		if res := call(p, agent, cl, tool, `{"customer":"c1","idempotencyKey":"k1"}`, a); res.Kind != pipeline.Complete || e.ran.Load() != 1 || e.effects(t, tool) != 1 {
			t.Errorf("replayed retry: %v %v, ran %d; want the stored answer", res.Kind, res.Err, e.ran.Load())
		}

		// Expired: approved, but retried too late; and pending past expiry.
		x := approved(`{"customer":"c4","idempotencyKey":"k4"}`)
		y := askedOf(t, call(p, agent, cl, tool, `{"customer":"c5","idempotencyKey":"k5"}`, asked{}), cl)
		e.clock.Advance(16 * time.Minute)
		if res := call(p, agent, cl, tool, `{"customer":"c4","idempotencyKey":"k4"}`, x); res.Kind != pipeline.ToolError || res.Err.Code != failure.ApprovalExpired {
			t.Errorf("retry after expiry: %v %v, want approval_expired", res.Kind, res.Err)
		}
		if _, err := e.d.Decide(ctx, y.id, e.person(t, "bruno"), true); !isCode(err, approval.CodeDecided) {
			t.Errorf("approving an expired call: %v, want %s", err, approval.CodeDecided)
		}
		if a, _ := e.store.Get(ctx, e.db, y.id); a.State != approval.Expired {
			t.Errorf("a pending approval past its expiry reads %s, want expired", a.State)
		}
		if e.ran.Load() != 1 || e.effects(t, tool) != 1 {
			t.Errorf("ran %d, effects %d; want only the approved call, once", e.ran.Load(), e.effects(t, tool))
		}
	})
}

// TestConcurrentRetries: replicas retrying one approved call at once run it
// once; the others get its answer, request_in_progress, or nothing new.
func TestConcurrentRetries(t *testing.T) {
	each(t, func(t *testing.T, e *env, cl pipeline.Client) {
		agent := e.agent(t)
		args := `{"customer":"c1","idempotencyKey":"k-race"}`
		a := askedOf(t, call(e.replica(t), agent, cl, tool, args, asked{}), cl)
		if _, err := e.d.Decide(context.Background(), a.id, e.person(t, "bruno"), true); err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		var complete atomic.Int64
		for range 4 {
			p := e.replica(t)
			wg.Go(func() {
				res := call(p, agent, cl, tool, args, a)
				switch {
				case res.Kind == pipeline.Complete:
					complete.Add(1)
				case res.Err != nil && res.Err.Code == failure.RequestInProgress:
				default:
					t.Errorf("concurrent retry: %v %v", res.Kind, res.Err)
				}
			})
		}
		wg.Wait()
		if e.ran.Load() != 1 || e.effects(t, tool) != 1 || complete.Load() == 0 {
			t.Errorf("ran %d, effects %d, complete answers %d; want one run", e.ran.Load(), e.effects(t, tool), complete.Load())
		}
	})
}
