package pipeline_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/cobranca/cobranca/internal/auth"
	"github.com/cobranca/cobranca/internal/canonical"
	"github.com/cobranca/cobranca/internal/contract"
	"github.com/cobranca/cobranca/internal/contract/contracttest"
	"github.com/cobranca/cobranca/internal/failure"
	"github.com/cobranca/cobranca/internal/pipeline"
	"github.com/cobranca/cobranca/internal/pipeline/pipelinetest"
	"github.com/cobranca/cobranca/internal/request"
	"github.com/cobranca/cobranca/internal/store"
	"github.com/cobranca/cobranca/internal/store/storetest"
)

// Hardening: each test holds a rule an independent review found broken.

// A declined confirmation's request state stays open: the same state,
// resent with an accepting answer, executes the call.
func TestDeclinedStateSpent(t *testing.T) {
	both(t, func(t *testing.T, db store.DB) {
		e := newEnv(t, db, envOpts{})
		args := `{"customer":"c-1","idempotencyKey":"rv-1"}`
		first := e.do(agent, modern, "test.high", args)
		call := pipeline.Call{Principal: agent, Tool: "test.high", Args: json.RawMessage(args), Client: modern, State: first.State, Responses: confirm("decline", false)}
		if res := e.p.Do(context.Background(), call); code(res) != failure.ConfirmationDeclined {
			t.Fatalf("decline: %s %v", kindName(res.Kind), res.Err)
		}
		call.Responses = confirm("accept", true)
		res := e.p.Do(context.Background(), call)
		if res.Kind != pipeline.ProtocolError || code(res) != failure.RequestStateInvalid || e.effects(t) != 0 {
			t.Errorf("the declined round's state, resent accepted: %s %v, %d effects; want request_state_invalid and none", kindName(res.Kind), res.Err, e.effects(t))
		}
	})
}

// A confirmed call whose execution failed leaves its state unspent (the
// nonce rolls back with the effect): the one confirmation runs the tool
// again, and again, until the state expires.
func TestFailedExecutionStateSpent(t *testing.T) {
	e := newEnv(t, storetest.SQLite(t), envOpts{})
	args := `{"customer":"refuse","idempotencyKey":"rv-2"}`
	first := e.do(agent, modern, "test.high", args)
	call := pipeline.Call{Principal: agent, Tool: "test.high", Args: json.RawMessage(args), Client: modern, State: first.State, Responses: confirm("accept", true)}
	for range 3 {
		_ = e.p.Do(context.Background(), call)
	}
	if e.count.started != 1 {
		t.Errorf("one accepted confirmation ran the tool %d times", e.count.started)
	}
}

// TestActorBound: a request state and an idempotency key are the acting
// agent's, not only (subject, client)'s: two agents (act.sub) acting for one
// user through one client open neither each other's confirmations nor each
// other's stored answers.
func TestActorBound(t *testing.T) {
	e := newEnv(t, storetest.SQLite(t), envOpts{})
	botA := &auth.Principal{Subject: "ana", ClientID: "platform", Actor: "bot-a", Kind: auth.KindAgent, Scopes: allScopes()}
	botB := &auth.Principal{Subject: "ana", ClientID: "platform", Actor: "bot-b", Kind: auth.KindAgent, Scopes: allScopes()}
	args := `{"customer":"c-3","idempotencyKey":"rv-3"}`
	first := e.do(botA, modern, "test.high", args)
	res := e.p.Do(context.Background(), pipeline.Call{Principal: botB, Tool: "test.high", Args: json.RawMessage(args), Client: modern, State: first.State, Responses: confirm("accept", true)})
	if res.Kind != pipeline.ProtocolError || code(res) != failure.RequestStateInvalid {
		t.Errorf("bot-b with bot-a's request state: %s %v, want request_state_invalid", kindName(res.Kind), res.Err)
	}
	a := e.do(botA, modern, "test.medium", `{"customer":"c-4","idempotencyKey":"rv-4"}`)
	b := e.do(botB, modern, "test.medium", `{"customer":"c-4","idempotencyKey":"rv-4"}`)
	if a.Kind != pipeline.Complete || b.Kind != pipeline.Complete || e.effects(t) != 2 || e.count.started != 2 {
		t.Errorf("two agents, one key name: %s, %s, %d effects, %d runs; want both complete, each its own effect", kindName(a.Kind), kindName(b.Kind), e.effects(t), e.count.started)
	}
}

// TestExactIntegers: RFC 8785 writes numbers as doubles, so two integers
// beyond 2^53 that the tool tells apart would share one fingerprint and
// one request-state binding; the pipeline refuses them (I-JSON).
func TestExactIntegers(t *testing.T) {
	x, _ := canonical.Transform([]byte(`{"amount":9007199254740993}`))
	y, _ := canonical.Transform([]byte(`{"amount":9007199254740992}`))
	if string(x) != string(y) {
		t.Fatalf("canonical forms differ (%s, %s): the premise of this test no longer holds", x, y)
	}
	e := newEnv(t, storetest.SQLite(t), envOpts{})
	for amount, want := range map[string]failure.Code{"9007199254740992": "", "-9007199254740992": "", "9007199254740993": failure.InvalidArguments, "-9007199254740993": failure.InvalidArguments, "18446744073709551616": failure.InvalidArguments} {
		res := e.do(agent, modern, "test.medium", `{"customer":"c","amount":`+amount+`,"idempotencyKey":"int-`+amount+`"}`)
		if code(res) != want {
			t.Errorf("amount %s: %s %v, want %q", amount, kindName(res.Kind), res.Err, want)
		}
	}
}

// Do names the requested tool in the access log's record before it knows
// the tool exists: an unknown name (a customer's, pasted by an agent) is
// logged as sent. MCP's front refuses unknown names before Do today; the
// CLI and admin API will not have that front.
func TestUnknownToolNameNotLogged(t *testing.T) {
	e := newEnv(t, storetest.SQLite(t), envOpts{})
	info := &request.Info{}
	ctx := request.With(context.Background(), info)
	res := e.p.Do(ctx, pipeline.Call{Principal: agent, Tool: "Maria Silva Comercio Ltda", Args: json.RawMessage(`{}`)})
	if res.Kind != pipeline.ProtocolError {
		t.Fatalf("unknown tool: %s", kindName(res.Kind))
	}
	if info.Tool != "" {
		t.Errorf("the access log's tool is %q, a name no tool has", info.Tool)
	}
}

// TestArgumentsHaveOneReading (probe findings): the pipeline's own
// arguments are refused when a reader could take them two ways — a member
// named twice, a dryRun a tool does not offer, a null where a boolean
// goes, a key holding an unpaired surrogate — and nothing runs.
func TestArgumentsHaveOneReading(t *testing.T) {
	db := storetest.SQLite(t)
	noDry := pipelinetest.Effectful(contracttest.New("test.nodry", contract.Medium, "test:medium"), func() {})
	p, err := pipeline.New(pipelinetest.WithStore(t, db, pipeline.Options{Tools: []pipeline.Tool{noDry}, States: pipelinetest.Ring(t)}))
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, db, envOpts{})
	cases := []struct{ tool, args, field string }{
		{"test.medium", `{"customer":"c","idempotencyKey":"A","idempotencyKey":"B"}`, "arguments"},
		{"test.medium", `{"customer":"c","dryRun":true,"dryRun":false,"idempotencyKey":"A"}`, "arguments"},
		{"test.medium", `{"customer":"c","note":{"x":1,"x":2},"idempotencyKey":"A"}`, "arguments"},
		{"test.medium", `{"customer":"c","dryRun":null,"idempotencyKey":"A"}`, "dryRun"},
		{"test.medium", `{"customer":"c","idempotencyKey":null}`, "idempotencyKey"},
		{"test.medium", `{"customer":"c","idempotencyKey":"zz\ud800X"}`, "arguments"},
		{"test.medium", `{"customer":"c","idempotencyKey":"zz\udfffX"}`, "arguments"},
	}
	for _, tt := range cases {
		res := e.do(agent, modern, tt.tool, tt.args)
		if code(res) != failure.InvalidArguments || res.Err.Field != tt.field || strings.Contains(res.Err.Message, "reflect") {
			t.Errorf("%s: %s %v, want invalid_arguments on %s", tt.args, kindName(res.Kind), res.Err, tt.field)
		}
	}
	if e.effects(t) != 0 || e.count.started != 0 {
		t.Errorf("%d effects, %d runs of refused calls", e.effects(t), e.count.started)
	}
	res := p.Do(context.Background(), pipeline.Call{Principal: agent, Tool: "test.nodry", Args: json.RawMessage(`{"dryRun":true,"idempotencyKey":"k"}`)})
	if code(res) != failure.InvalidArguments || res.Err.Field != "dryRun" || pipelinetest.Effects(t, db, "test.nodry") != 0 {
		t.Errorf("dryRun on a tool without one: %s %v, %d effects; want invalid_arguments on dryRun and none", kindName(res.Kind), res.Err, pipelinetest.Effects(t, db, "test.nodry"))
	}
}

// TestKeyAnswersBeforeConfirmation (probe finding): a key already used is
// answered before anyone is asked: a repeat gets the stored response and a
// conflict its error, on every revision, with no new confirmation round.
func TestKeyAnswersBeforeConfirmation(t *testing.T) {
	e := newEnv(t, storetest.SQLite(t), envOpts{})
	args := `{"customer":"c-9","idempotencyKey":"done"}`
	first := e.do(agent, modern, "test.high", args)
	done := e.p.Do(context.Background(), pipeline.Call{Principal: agent, Tool: "test.high", Args: json.RawMessage(args), Client: modern, State: first.State, Responses: confirm("accept", true)})
	if done.Kind != pipeline.Complete {
		t.Fatalf("confirmed: %s %v", kindName(done.Kind), done.Err)
	}
	for _, cl := range []pipeline.Client{modern, legacy} {
		if r := e.do(agent, cl, "test.high", args); r.Kind != pipeline.Complete || string(r.Structured) != string(done.Structured) {
			t.Errorf("%s repeat: %s %v, want the stored response", cl.Protocol, kindName(r.Kind), r.Err)
		}
		if r := e.do(agent, cl, "test.high", `{"customer":"c-10","idempotencyKey":"done"}`); code(r) != failure.IdempotencyConflict {
			t.Errorf("%s conflict: %s %v, want idempotency_conflict", cl.Protocol, kindName(r.Kind), r.Err)
		}
		if r := e.do(agent, cl, "test.high", `{"customer":"c-10","idempotencyKey":"done","dryRun":true}`); code(r) != failure.IdempotencyConflict {
			t.Errorf("%s dry run under a used key: %s %v, want idempotency_conflict", cl.Protocol, kindName(r.Kind), r.Err)
		}
	}
	if e.count.started != 1 || e.effects(t) != 1 {
		t.Errorf("%d runs, %d effects; want 1, 1", e.count.started, e.effects(t))
	}
}

// TestRoundsAreMCP20260728 (probe finding): a request of an older revision
// carrying a request state or input responses is refused; nothing runs.
func TestRoundsAreMCP20260728(t *testing.T) {
	e := newEnv(t, storetest.SQLite(t), envOpts{})
	args := `{"customer":"c-11","idempotencyKey":"old"}`
	first := e.do(agent, modern, "test.high", args)
	res := e.p.Do(context.Background(), pipeline.Call{Principal: agent, Tool: "test.high", Args: json.RawMessage(args), Client: legacy, State: first.State, Responses: confirm("accept", true)})
	if res.Kind != pipeline.ProtocolError || code(res) != failure.RequestStateInvalid || e.count.started != 0 {
		t.Errorf("2025-11-25 with a round: %s %v, %d runs", kindName(res.Kind), res.Err, e.count.started)
	}
}

// TestMalformedAcceptIsNoAnswer (probe finding): an accept without a
// boolean confirm is no answer at all (a protocol error naming it), never
// a person's decline.
func TestMalformedAcceptIsNoAnswer(t *testing.T) {
	e := newEnv(t, storetest.SQLite(t), envOpts{})
	for i, content := range []string{`null`, `{}`, `{"confirm":"true"}`, `{"confirm":1}`} {
		args := fmt.Sprintf(`{"customer":"c","idempotencyKey":"m-%d"}`, i)
		first := e.do(agent, modern, "test.high", args)
		res := e.p.Do(context.Background(), pipeline.Call{Principal: agent, Tool: "test.high", Args: json.RawMessage(args), Client: modern, State: first.State,
			Responses: map[string]json.RawMessage{"confirm": json.RawMessage(`{"action":"accept","content":` + content + `}`)}})
		if res.Kind != pipeline.ProtocolError || res.Err.Field != "inputResponses.confirm" {
			t.Errorf("accept with content %s: %s %v", content, kindName(res.Kind), res.Err)
		}
	}
	if e.count.started != 0 {
		t.Errorf("%d runs", e.count.started)
	}
}

// TestForbiddenCallAudited (probe finding): a call of a forbidden tool is
// answered exactly like an unknown tool's, and audited.
func TestForbiddenCallAudited(t *testing.T) {
	e := newEnv(t, storetest.SQLite(t), envOpts{})
	forbidden := e.do(human, modern, "test.forbidden", `{"customer":"c","idempotencyKey":"f"}`)
	unknown := e.do(human, modern, "test.nosuch", `{"customer":"c","idempotencyKey":"f"}`)
	if forbidden.Kind != unknown.Kind || *forbidden.Err != *unknown.Err {
		t.Errorf("forbidden %+v, unknown %+v: want the same answer", forbidden.Err, unknown.Err)
	}
	if got := pipelinetest.Audited(t, e.db, "test.forbidden"); got["rejected"] != 1 {
		t.Errorf("audit of the forbidden call %v, want one rejected", got)
	}
}
