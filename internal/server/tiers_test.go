package server_test

// End-to-end tests of the Tool Contract's tiers (issue 11): test-only tools
// of every tier served by the real route table (auth middleware with real
// signed JWTs, limits, the MCP endpoint, the pipeline on a real PostgreSQL),
// called over HTTP by real go-sdk clients on both protocol revisions. The
// pipeline's own tests (internal/pipeline) prove each rule on Do; these
// prove the same promises survive the whole stack.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/cobranca/cobranca/internal/auditlog"
	"github.com/cobranca/cobranca/internal/auth"
	"github.com/cobranca/cobranca/internal/contract"
	"github.com/cobranca/cobranca/internal/contract/contracttest"
	"github.com/cobranca/cobranca/internal/failure"
	"github.com/cobranca/cobranca/internal/limits"
	limitspg "github.com/cobranca/cobranca/internal/limits/postgres"
	"github.com/cobranca/cobranca/internal/mcpapi"
	"github.com/cobranca/cobranca/internal/pgtest"
	"github.com/cobranca/cobranca/internal/pipeline"
	"github.com/cobranca/cobranca/internal/pipeline/pipelinetest"
	"github.com/cobranca/cobranca/internal/reqstate"
	"github.com/cobranca/cobranca/internal/server"
	"github.com/cobranca/cobranca/internal/store/postgres"
	"github.com/cobranca/cobranca/internal/store/storetest"
)

// pg is a cluster of this package's own, never the run's shared server: the tests verify
// the audit chain, and on PostgreSQL the sealer seals only events older than the server's
// oldest running transaction (pg_snapshot_xmin), which is server-wide. Another package's
// transaction held open on a shared server would leave their events unsealed.
var pg = pgtest.Private()

func TestMain(m *testing.M) { pg.Run(m) }

var tiers = []contract.Risk{contract.Low, contract.Medium, contract.High, contract.Critical, contract.Forbidden}

func tierTool(r contract.Risk) string  { return "test." + string(r) }
func tierScope(r contract.Risk) string { return "test:" + string(r) }
func tierScopes(rs ...contract.Risk) []string {
	var s []string
	for _, r := range rs {
		s = append(s, tierScope(r))
	}
	return s
}

// tierCount counts what one test tool did: arguments decoded, calls run.
type tierCount struct{ decoded, ran atomic.Int64 }

// tierEnv is one PostgreSQL database, one request-state key ring and one
// development signing key, shared by every server (replica) of a test.
type tierEnv struct {
	db   *postgres.DB
	ring *reqstate.Ring
	// auth knows agents by their act claim only; listed also by client id
	// (COBRANCA_AGENT_CLIENT_IDS = the development client id). Both accept
	// the same tokens.
	auth, listed *auth.Authenticator
	tools        []pipeline.Tool
	counts       map[string]*tierCount
}

// newTierEnv serves a tool per tier: low is a read; the others write a row
// in the pipeline's transaction (pipelinetest.Effectful), each run taking
// at least slow. Tool test.<tier> requires scope test:<tier>.
func newTierEnv(t *testing.T, slow time.Duration) *tierEnv {
	t.Helper()
	ctx := context.Background()
	db, err := postgres.Open(ctx, storetest.MigratedPostgres(t, pg), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	e := &tierEnv{db: db, ring: pipelinetest.Ring(t), counts: map[string]*tierCount{}}
	base := auth.Config{DataDir: t.TempDir(), BaseURL: "http://127.0.0.1:8080"}
	if e.auth, err = auth.New(ctx, base); err != nil {
		t.Fatal(err)
	}
	base.AgentClientIDs = []string{auth.DevClientID}
	if e.listed, err = auth.New(ctx, base); err != nil {
		t.Fatal(err)
	}
	for _, r := range tiers {
		c := contracttest.New(tierTool(r), r, tierScope(r))
		n := &tierCount{}
		e.counts[c.Name] = n
		if r == contract.Low { // a read decodes its arguments itself
			e.tools = append(e.tools, pipeline.Tool{Contract: c, Logic: func(context.Context, json.RawMessage) (pipeline.Effect, error) {
				n.decoded.Add(1)
				n.ran.Add(1)
				return pipeline.Effect{Structured: map[string]any{"ok": true}, Summary: "read"}, nil
			}})
			continue
		}
		tool := pipelinetest.Effectful(c, func() { n.ran.Add(1); time.Sleep(slow) })
		decode := tool.Decode
		tool.Decode = func(b []byte) (any, int, error) { n.decoded.Add(1); return decode(b) }
		e.tools = append(e.tools, tool)
	}
	return e
}

// tierServer configures one server process of a tierEnv.
type tierServer struct {
	auth   *auth.Authenticator // default: the env's auth
	limits *limits.Limiter     // nil: no limits
	now    func() time.Time    // the pipeline's clock; nil: time.Now
	slow   bool                // go-sdk only, no fast path
}

// server starts a new server process on the env's database: its own audit
// log, pipeline, MCP endpoint and HTTP server, the env's key ring.
func (e *tierEnv) server(t *testing.T, o tierServer) *httptest.Server {
	t.Helper()
	if o.auth == nil {
		o.auth = e.auth
	}
	log := slog.New(slog.DiscardHandler)
	alog, digest := newAuditLog(t, e.db, auditlog.Options{})
	popts := pipelinetest.WithStore(t, e.db, pipeline.Options{
		Tools: e.tools, Auditor: pipeline.NewAuditor(alog, digest), States: e.ring, Now: o.now,
	})
	deps := server.Deps{Logger: log, MaxBodyBytes: maxBody, Auth: o.auth}
	if o.limits != nil {
		popts.Limits, deps.Limits = o.limits, o.limits
	}
	deps.MCP = newMCP(t, mcpapi.Options{Logger: log, MaxBodyBytes: maxBody, DisableFastPath: o.slow, Scopes: o.auth}, popts)
	ts := httptest.NewServer(server.Routes(deps))
	t.Cleanup(ts.Close)
	return ts
}

// mint signs a token for subject with scopes: an agent's (act claim) when
// agent is set, else one of the development client's.
func (e *tierEnv) mint(t *testing.T, subject, agent string, scopes ...string) string {
	return mint(t, e.auth, auth.MintOptions{Subject: subject, Agent: agent, Scopes: scopes})
}

func (e *tierEnv) effects(t *testing.T, r contract.Risk) int {
	return pipelinetest.Effects(t, e.db, tierTool(r))
}

func (e *tierEnv) count(r contract.Risk) *tierCount { return e.counts[tierTool(r)] }

// contract is the contract of r's tool.
func (e *tierEnv) contract(r contract.Risk) *contract.Contract {
	i := slices.IndexFunc(e.tools, func(t pipeline.Tool) bool { return t.Contract.Name == tierTool(r) })
	return e.tools[i].Contract
}

// audited counts the audit events of r's tool with outcome.
func (e *tierEnv) audited(t *testing.T, r contract.Risk, outcome auditlog.Outcome) int {
	t.Helper()
	var n int
	if err := e.db.QueryRow(context.Background(), `SELECT count(*) FROM audit_event WHERE tool = $1 AND outcome = $2`, tierTool(r), string(outcome)).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// clientOpts are the go-sdk client's options: manual multi-round trips
// (the client hands input-required results back instead of answering them)
// and the elicitation capability when elicit is set.
func clientOpts(manual bool, elicit func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error)) *mcp.ClientOptions {
	o := &mcp.ClientOptions{ElicitationHandler: elicit}
	if manual {
		o.MultiRoundTrip = &mcp.MultiRoundTripOptions{Disabled: true}
	}
	return o
}

// connectAs connects a go-sdk client to url's /mcp on version, sending tok.
func connectAs(t *testing.T, url, tok, version string, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, opts)
	sess, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{
		Endpoint: url + "/mcp", HTTPClient: &http.Client{Transport: bearerTransport(tok)},
	}, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatalf("connect %s: %v", version, err)
	}
	t.Cleanup(func() { sess.Close() })
	return sess
}

// neverElicit declares the elicitation capability and fails the test if
// the client is ever asked.
func neverElicit(t *testing.T) func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
	return func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		t.Error("the client was asked to elicit")
		return &mcp.ElicitResult{Action: "decline"}, nil
	}
}

// rpcErr is the JSON-RPC error of a failed call, or nil.
func rpcErr(err error) *jsonrpc.Error {
	var e *jsonrpc.Error
	if errors.As(err, &e) {
		return e
	}
	return nil
}

// dataCode is the failure code a JSON-RPC error carries in data.error.code.
func dataCode(e *jsonrpc.Error) failure.Code {
	var d struct {
		Error failure.Detail `json:"error"`
	}
	_ = json.Unmarshal(e.Data, &d)
	return d.Error.Code
}

// outcome names how a go-sdk call ended: complete, input_required, a tool
// error's code, or a JSON-RPC error's code and data code (or message).
func outcome(t *testing.T, res *mcp.CallToolResult, err error) string {
	t.Helper()
	if e := rpcErr(err); e != nil {
		if c := dataCode(e); c != "" {
			return fmt.Sprintf("rpc %d %s", e.Code, c)
		}
		return fmt.Sprintf("rpc %d %s", e.Code, e.Message)
	}
	switch {
	case err != nil:
		return "error: " + err.Error()
	case res.NeedsInput():
		return "input_required"
	case res.IsError:
		return "tool_error " + string(errorOf(t, res).Code)
	}
	return "complete"
}

// keyed returns arguments with an idempotency key for a tool with side
// effects (a read takes none).
func keyed(r contract.Risk, key string) map[string]any {
	if r == contract.Low {
		return map[string]any{}
	}
	return map[string]any{"idempotencyKey": key}
}

// rawCall posts one tools/call to url's /mcp as tok, spelled as a client
// of version spells it: on 2026-07-28 with the request's _meta (declaring
// caps) and the Mcp-Method and Mcp-Name headers. extra are more params
// (requestState, inputResponses).
func rawCall(t *testing.T, url, tok, version string, id any, name string, args any, caps, extra map[string]any) (*http.Response, []byte) {
	t.Helper()
	resp, body, err := postCall(url, tok, version, id, name, args, caps, extra)
	if err != nil {
		t.Fatal(err)
	}
	return resp, body
}

// postCall is rawCall for any goroutine.
func postCall(url, tok, version string, id any, name string, args any, caps, extra map[string]any) (*http.Response, []byte, error) {
	params := map[string]any{"name": name, "arguments": args}
	for k, v := range extra {
		params[k] = v
	}
	if version == "2026-07-28" {
		if caps == nil {
			caps = map[string]any{}
		}
		params["_meta"] = map[string]any{
			"io.modelcontextprotocol/protocolVersion":    version,
			"io.modelcontextprotocol/clientInfo":         map[string]any{"name": "test", "version": "1"},
			"io.modelcontextprotocol/clientCapabilities": caps,
		}
	}
	b, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params})
	if err != nil {
		return nil, nil, err
	}
	return postBody(url, tok, version, name, b)
}

// postBody posts b, a tools/call of the tool name, to url's /mcp as tok, with the headers of a
// client of version.
func postBody(url, tok, version, name string, b []byte) (*http.Response, []byte, error) {
	req, err := http.NewRequest(http.MethodPost, url+"/mcp", bytes.NewReader(b))
	if err != nil {
		return nil, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", version)
	req.Header.Set("Authorization", "Bearer "+tok)
	if version == "2026-07-28" {
		req.Header.Set("Mcp-Method", "tools/call")
		req.Header.Set("Mcp-Name", name)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	return resp, out, err
}

// TestTiersOverHTTP: what an agent token (act claim), an agent known only
// by COBRANCA_AGENT_CLIENT_IDS and a human token get from each tier, on
// both protocol revisions and both paths: nothing runs that the tier does
// not allow; the listed agent gets exactly what the act-claim agent gets
// and is audited with its actor; a critical call is refused with
// approval_required (TestApprovalOverHTTP follows it through), or needs the
// URL elicitation capability; a forbidden tool is listed to no one and answers
// exactly like a tool that does not exist.
func TestTiersOverHTTP(t *testing.T) {
	e := newTierEnv(t, 0)
	all := tierScopes(tiers...)
	who := []struct {
		name  string
		agent bool
		tok   string
		auth  *auth.Authenticator
	}{
		{"agent", true, e.mint(t, "alice", "collector-bot", all...), e.auth},
		{"listed agent", true, e.mint(t, "dave", "", all...), e.listed},
		{"human", false, e.mint(t, "carol", "", all...), e.auth},
	}
	want := func(r contract.Risk, agent bool, version string) string {
		switch {
		case r == contract.Low, r == contract.Medium, r == contract.High && !agent:
			return "complete"
		case r == contract.High && version == "2026-07-28":
			return "input_required"
		case r == contract.High:
			return "tool_error " + string(failure.ConfirmationRequired)
		case r == contract.Critical && version == "2026-07-28": // a form-only client cannot open the approval's URL
			return "rpc -32021 " + string(failure.MissingClientCapability)
		case r == contract.Critical:
			return "tool_error " + string(failure.ApprovalRequired)
		}
		return "rpc -32602 unknown tool"
	}
	wantRuns := map[contract.Risk]int64{}
	got := map[string]string{} // path/version/tier/who → outcome
	for _, p := range bothPaths {
		for _, w := range who {
			s := e.server(t, tierServer{auth: w.auth, slow: p.slow})
			for _, version := range protocolVersions {
				sess := connectAs(t, s.URL, w.tok, version, clientOpts(true, neverElicit(t)))
				list, err := sess.ListTools(context.Background(), nil)
				if err != nil {
					t.Fatal(err)
				}
				listed := toolNames(list.Tools)
				slices.Sort(listed)
				if wantList := append(productToolNames(t), "test.critical", "test.high", "test.low", "test.medium"); !slices.Equal(listed, slices.Sorted(slices.Values(wantList))) {
					t.Errorf("%s %s %s: tools/list = %v, want %v", p.name, w.name, version, listed, wantList)
				}
				for _, r := range tiers {
					before := e.count(r).ran.Load()
					key := fmt.Sprintf("%s-%s-%s", p.name, w.name, version)
					res, err := sess.CallTool(context.Background(), &mcp.CallToolParams{Name: tierTool(r), Arguments: keyed(r, key)})
					o := outcome(t, res, err)
					got[p.name+"/"+version+"/"+string(r)+"/"+w.name] = o
					if wo := want(r, w.agent, version); o != wo {
						t.Errorf("%s %s: %s by %s: %s, want %s", p.name, version, r, w.name, o, wo)
					}
					if runs := e.count(r).ran.Load() - before; o == "complete" && runs != 1 || o != "complete" && runs != 0 {
						t.Errorf("%s %s: %s by %s (%s) ran %d times", p.name, version, r, w.name, o, runs)
					}
					if o == "complete" {
						wantRuns[r]++
					}
				}
				// Calling the forbidden tool is calling a tool that does not exist.
				_, errForbidden := sess.CallTool(context.Background(), &mcp.CallToolParams{Name: tierTool(contract.Forbidden), Arguments: map[string]any{}})
				_, errUnknown := sess.CallTool(context.Background(), &mcp.CallToolParams{Name: "test.no_such_tool", Arguments: map[string]any{}})
				if f, u := rpcErr(errForbidden), rpcErr(errUnknown); f == nil || u == nil || f.Code != u.Code || f.Message != u.Message || !bytes.Equal(f.Data, u.Data) {
					t.Errorf("%s %s %s: the forbidden tool answers %v, an unknown tool %v", p.name, w.name, version, errForbidden, errUnknown)
				}
			}
		}
	}
	// The agent known only by its client id gets exactly what the act-claim agent gets.
	for k, o := range got {
		if base, ok := strings.CutSuffix(k, "/listed agent"); ok && got[base+"/agent"] != o {
			t.Errorf("%s: the listed agent got %s, the act-claim agent %s", base, o, got[base+"/agent"])
		}
	}
	for _, r := range tiers {
		if n := e.count(r).ran.Load(); n != wantRuns[r] {
			t.Errorf("%s ran %d times, want %d", r, n, wantRuns[r])
		}
		if r != contract.Low {
			if n := e.effects(t, r); int64(n) != wantRuns[r] {
				t.Errorf("%s: %d effects committed, want %d", r, n, wantRuns[r])
			}
		}
	}
	// Each caller's events name it as the token does: an agent by its
	// actor, whether named by an act claim or listed by client id.
	for subject, wantActor := range map[string]string{"alice": "collector-bot", "dave": auth.DevClientID, "carol": ""} {
		rows, err := e.db.Query(context.Background(), `SELECT DISTINCT actor FROM audit_event WHERE subject = $1`, subject)
		if err != nil {
			t.Fatal(err)
		}
		var actors []string
		for rows.Next() {
			var a string
			if err := rows.Scan(&a); err != nil {
				t.Fatal(err)
			}
			actors = append(actors, a)
		}
		rows.Close()
		if len(actors) != 1 || actors[0] != wantActor {
			t.Errorf("audit events of %s carry actors %q, want only %q", subject, actors, wantActor)
		}
	}
}

// TestScopeBeforeValidationOverHTTP: an invalid call by a token without
// the tool's scope is answered 403 insufficient_scope, never with the
// validation error, its arguments are never decoded, and it is audited as
// denied; with the scope, the same call gets its validation error.
func TestScopeBeforeValidationOverHTTP(t *testing.T) {
	e := newTierEnv(t, 0)
	s := e.server(t, tierServer{})
	lowOnly := e.mint(t, "alice", "collector-bot", tierScope(contract.Low))
	invalid := map[string]any{"idempotencyKey": 7}
	for _, version := range protocolVersions {
		for _, r := range []contract.Risk{contract.Medium, contract.High, contract.Critical} {
			// A session per call: the client's transport fails for good on a 403.
			sess := connectAs(t, s.URL, lowOnly, version, clientOpts(true, neverElicit(t)))
			res, err := sess.CallTool(context.Background(), &mcp.CallToolParams{Name: tierTool(r), Arguments: invalid})
			if err == nil || !strings.Contains(err.Error(), http.StatusText(http.StatusForbidden)) {
				t.Errorf("%s %s without its scope: answered %s, want the HTTP 403", version, r, outcome(t, res, err))
			}
			resp, body := rawCall(t, s.URL, lowOnly, version, 1, tierTool(r), invalid, nil, nil)
			challenge := resp.Header.Get("WWW-Authenticate")
			if resp.StatusCode != http.StatusForbidden || !strings.Contains(challenge, `error="insufficient_scope"`) || !strings.Contains(challenge, `scope="`+tierScope(r)+`"`) {
				t.Errorf("%s %s without its scope: %d %q %s, want 403 insufficient_scope naming %s", version, r, resp.StatusCode, challenge, body, tierScope(r))
			}
			if bytes.Contains(body, []byte(failure.InvalidArguments)) {
				t.Errorf("%s %s without its scope: the answer carries the validation error: %s", version, r, body)
			}
		}
	}
	for _, r := range []contract.Risk{contract.Medium, contract.High, contract.Critical} {
		if n := e.count(r); n.decoded.Load() != 0 || n.ran.Load() != 0 {
			t.Errorf("%s: decoded %d, ran %d times for a caller without its scope", r, n.decoded.Load(), n.ran.Load())
		}
		if n := e.audited(t, r, auditlog.Denied); n != 4 {
			t.Errorf("%s: %d denied events, want 4 (two calls on each revision)", r, n)
		}
	}
	// With the scope, the same call is validated and refused for what it is.
	full := connectAs(t, s.URL, e.mint(t, "alice", "collector-bot", tierScopes(contract.Medium)...), "2025-11-25", nil)
	res, err := full.CallTool(context.Background(), &mcp.CallToolParams{Name: tierTool(contract.Medium), Arguments: invalid})
	if o := outcome(t, res, err); o != "tool_error "+string(failure.InvalidArguments) || errorOf(t, res).Field != contract.ArgIdempotencyKey {
		t.Errorf("the invalid call with its scope: %s, want invalid_arguments on idempotencyKey", o)
	}
}

// TestRateLimitedNeverValidatedOverHTTP: once a caller's write budget is
// spent (one medium- or high-tier call an hour), its next call of either
// tier is answered rate_limited before its arguments are decoded, valid or
// not, never runs, and is audited so; another caller's budget is its own.
func TestRateLimitedNeverValidatedOverHTTP(t *testing.T) {
	e := newTierEnv(t, 0)
	hourly := limits.Limit{Rate: 1, Period: time.Hour, Burst: 1}
	lim := limits.New(limitspg.New(e.db.Pool()), limits.Options{Policies: limits.Policies{Write: hourly}, StoreTimeout: 10 * time.Second})
	s := e.server(t, tierServer{limits: lim})
	all := tierScopes(tiers...)
	for i, version := range protocolVersions {
		sess := connectAs(t, s.URL, e.mint(t, fmt.Sprintf("caller-%d", i), "collector-bot", all...), version, clientOpts(true, neverElicit(t)))
		call := func(r contract.Risk, args map[string]any) string {
			res, err := sess.CallTool(context.Background(), &mcp.CallToolParams{Name: tierTool(r), Arguments: args})
			return outcome(t, res, err)
		}
		if o := call(contract.Medium, keyed(contract.Medium, "first-"+version)); o != "complete" {
			t.Fatalf("%s: the first write: %s", version, o)
		}
		for _, r := range []contract.Risk{contract.Medium, contract.High} {
			decoded := e.count(r).decoded.Load()
			for _, args := range []map[string]any{keyed(r, "over-"+version), {"idempotencyKey": 7}} {
				if o := call(r, args); o != "tool_error "+string(failure.RateLimited) {
					t.Errorf("%s: %s call %v over the budget: %s, want rate_limited", version, r, args, o)
				}
			}
			if n := e.count(r).decoded.Load(); n != decoded {
				t.Errorf("%s: %s arguments decoded %d times over the budget", version, r, n-decoded)
			}
		}
		if o := call(contract.Low, map[string]any{}); o != "complete" {
			t.Errorf("%s: a read is held by no tier budget: %s", version, o)
		}
	}
	if m, h := e.count(contract.Medium).ran.Load(), e.count(contract.High).ran.Load(); m != 2 || h != 0 || e.effects(t, contract.Medium) != 2 {
		t.Errorf("medium ran %d times, high %d, %d effects; want 2, 0, 2 (the first write of each caller)", m, h, e.effects(t, contract.Medium))
	}
	for _, r := range []contract.Risk{contract.Medium, contract.High} {
		if n := e.audited(t, r, auditlog.RateLimited); n != 4 {
			t.Errorf("%s: %d rate_limited events, want 4", r, n)
		}
	}
}

// confirmAnswer is a person's answer to the confirmation form.
func confirmAnswer(action string) *mcp.ElicitResult {
	return &mcp.ElicitResult{Action: action, Content: map[string]any{"confirm": action == "accept"}}
}

// TestConfirmationOverHTTP: a high-tier call by an agent runs only once a
// person accepted it. The go-sdk client's own loop answers the elicitation
// (accept runs the call once; decline changes nothing); with the loop off,
// the client's retry carries the answer and the request state to a second
// server on the same database and key ring. A 2025-11-25 client gets
// confirmation_required with the same preview; a 2026-07-28 client
// without the elicitation capability gets -32021 with HTTP 400.
func TestConfirmationOverHTTP(t *testing.T) {
	e := newTierEnv(t, 0)
	first, second := e.server(t, tierServer{}), e.server(t, tierServer{})
	tok := e.mint(t, "alice", "collector-bot", tierScopes(contract.High)...)
	high := e.count(contract.High)
	preview := pipelinetest.EffectPreview(e.contract(contract.High))
	call := func(sess *mcp.ClientSession, p *mcp.CallToolParams) (*mcp.CallToolResult, string) {
		if p.Name == "" {
			p.Name = tierTool(contract.High)
		}
		res, err := sess.CallTool(context.Background(), p)
		return res, outcome(t, res, err)
	}
	check := func(what string, o, wantOutcome string, wantRuns int64) {
		t.Helper()
		if o != wantOutcome {
			t.Errorf("%s: %s, want %s", what, o, wantOutcome)
		}
		if n, effects := high.ran.Load(), e.effects(t, contract.High); n != wantRuns || int64(effects) != wantRuns {
			t.Errorf("%s: ran %d times, %d effects; want %d", what, n, effects, wantRuns)
		}
	}

	// The go-sdk client's loop, on one server.
	for _, tt := range []struct {
		action, want string
		runs         int64
	}{{"accept", "complete", 1}, {"decline", "tool_error " + string(failure.ConfirmationDeclined), 1}} {
		var asked []string
		sess := connectAs(t, first.URL, tok, "2026-07-28", clientOpts(false, func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			asked = append(asked, req.Params.Message)
			return confirmAnswer(tt.action), nil
		}))
		_, o := call(sess, &mcp.CallToolParams{Arguments: keyed(contract.High, "auto-"+tt.action)})
		check("the client's loop, "+tt.action, o, tt.want, tt.runs)
		if len(asked) != 1 || !strings.Contains(asked[0], preview) {
			t.Errorf("the client's loop, %s: the person was asked %q, want once, with the preview %q", tt.action, asked, preview)
		}
	}

	// The loop off: the first round on one server, the retry on the other.
	start := connectAs(t, first.URL, tok, "2026-07-28", clientOpts(true, neverElicit(t)))
	retry := connectAs(t, second.URL, tok, "2026-07-28", clientOpts(true, neverElicit(t)))
	for _, tt := range []struct {
		action, want string
		runs         int64
	}{{"accept", "complete", 2}, {"decline", "tool_error " + string(failure.ConfirmationDeclined), 2}} {
		args := keyed(contract.High, "manual-"+tt.action)
		before := high.ran.Load()
		res, o := call(start, &mcp.CallToolParams{Arguments: args})
		check("the first round, "+tt.action, o, "input_required", before)
		if o != "input_required" {
			continue
		}
		ep, ok := res.InputRequests["confirm"].(*mcp.ElicitParams)
		if !ok || res.RequestState == "" || !strings.Contains(ep.Message, preview) {
			t.Errorf("the first round asks %#v with state %q, want a form with the preview", res.InputRequests, res.RequestState)
		}
		_, o = call(retry, &mcp.CallToolParams{Arguments: args, RequestState: res.RequestState,
			InputResponses: mcp.InputResponseMap{"confirm": confirmAnswer(tt.action)}})
		check("the retry on the second server, "+tt.action, o, tt.want, tt.runs)
	}

	// A 2025-11-25 client cannot be asked in-band: confirmation_required,
	// with the preview.
	old := connectAs(t, first.URL, tok, "2025-11-25", clientOpts(false, neverElicit(t)))
	res, o := call(old, &mcp.CallToolParams{Arguments: keyed(contract.High, "old")})
	check("a 2025-11-25 client", o, "tool_error "+string(failure.ConfirmationRequired), 2)
	if res != nil && !strings.Contains(textOf(res), preview) {
		t.Errorf("confirmation_required says %q, without the preview %q", textOf(res), preview)
	}

	// A 2026-07-28 client that declared no elicitation capability.
	mute := connectAs(t, first.URL, tok, "2026-07-28", nil)
	_, err := mute.CallTool(context.Background(), &mcp.CallToolParams{Name: tierTool(contract.High), Arguments: keyed(contract.High, "mute")})
	re := rpcErr(err)
	var data struct {
		RequiredCapabilities map[string]any `json:"requiredCapabilities"`
	}
	if re != nil {
		_ = json.Unmarshal(re.Data, &data)
	}
	if re == nil || re.Code != mcp.CodeMissingRequiredClientCapabilities || dataCode(re) != failure.MissingClientCapability || data.RequiredCapabilities["elicitation"] == nil {
		t.Errorf("a 2026-07-28 client without elicitation: %v, want -32021 naming the elicitation capability", err)
	}
	resp, body := rawCall(t, first.URL, tok, "2026-07-28", 9, tierTool(contract.High), keyed(contract.High, "mute-raw"), nil, nil)
	if resp.StatusCode != http.StatusBadRequest || !bytes.Contains(body, []byte(`"code":-32021`)) {
		t.Errorf("raw 2026-07-28 call without elicitation: %d %s, want 400 with -32021", resp.StatusCode, body)
	}
	check("after the refusals", "", "", 2)
	if n := e.audited(t, contract.High, auditlog.Allowed); n != 2 {
		t.Errorf("%d allowed events, want 2 (the two accepted calls)", n)
	}
}

// TestRequestStateRefusedOverHTTP: the retry of a confirmation with a
// forged request state, another caller's, an expired one (opened by a
// replica whose clock is an hour on) or one already used is the JSON-RPC
// error -32602 with data.error.code request_state_invalid (HTTP 400), and
// nothing runs; the genuine state, refused nothing before, runs the call
// once.
func TestRequestStateRefusedOverHTTP(t *testing.T) {
	e := newTierEnv(t, 0)
	first := e.server(t, tierServer{})
	second := e.server(t, tierServer{})
	later := e.server(t, tierServer{now: func() time.Time { return time.Now().Add(time.Hour) }})
	scopes := tierScopes(contract.High)
	tok := e.mint(t, "alice", "collector-bot", scopes...)
	const version = "2026-07-28"
	manual := func(url, tok string) *mcp.ClientSession {
		return connectAs(t, url, tok, version, clientOpts(true, neverElicit(t)))
	}
	sess := manual(first.URL, tok)
	args := keyed(contract.High, "rs-1")
	res, err := sess.CallTool(context.Background(), &mcp.CallToolParams{Name: tierTool(contract.High), Arguments: args})
	if o := outcome(t, res, err); o != "input_required" {
		t.Fatalf("first round: %s", o)
	}
	state := res.RequestState
	forged := []byte(state)
	if i := len(forged) / 2; forged[i] == 'A' {
		forged[i] = 'B'
	} else {
		forged[i] = 'A'
	}
	high := e.count(contract.High)
	retry := func(sess *mcp.ClientSession, state string) string {
		res, err := sess.CallTool(context.Background(), &mcp.CallToolParams{Name: tierTool(contract.High), Arguments: args,
			RequestState: state, InputResponses: mcp.InputResponseMap{"confirm": confirmAnswer("accept")}})
		return outcome(t, res, err)
	}
	refused := "rpc -32602 " + string(failure.RequestStateInvalid)
	for _, tt := range []struct {
		name  string
		sess  *mcp.ClientSession
		state string
	}{
		{"forged", sess, string(forged)},
		{"other caller", manual(first.URL, e.mint(t, "bob", "collector-bot", scopes...)), state},
		{"expired", manual(later.URL, tok), state},
	} {
		if o := retry(tt.sess, tt.state); o != refused {
			t.Errorf("%s state: %s, want %s", tt.name, o, refused)
		}
	}
	// The same refusal as the wire carries it.
	resp, body := rawCall(t, first.URL, tok, version, 3, tierTool(contract.High), args, map[string]any{"elicitation": map[string]any{}},
		map[string]any{"requestState": string(forged), "inputResponses": map[string]any{"confirm": confirmAnswer("accept")}})
	if resp.StatusCode != http.StatusBadRequest || !bytes.Contains(body, []byte(`"code":-32602`)) || !bytes.Contains(body, []byte(`"code":"`+failure.RequestStateInvalid+`"`)) {
		t.Errorf("forged state, raw: %d %s, want 400 with -32602 and request_state_invalid", resp.StatusCode, body)
	}
	if n := high.ran.Load(); n != 0 || e.effects(t, contract.High) != 0 {
		t.Fatalf("ran %d times with refused states", n)
	}
	if o := retry(sess, state); o != "complete" {
		t.Fatalf("the genuine state after the refusals: %s, want complete", o)
	}
	// Resent as it was, on another replica (a client that lost the answer):
	// the key's stored answer, and no second run.
	if o := retry(manual(second.URL, tok), state); o != "complete" {
		t.Errorf("the confirmed retry resent, on another replica: %s, want complete (the stored answer)", o)
	}
	if n := high.ran.Load(); n != 1 || e.effects(t, contract.High) != 1 {
		t.Errorf("ran %d times, %d effects; want 1", n, e.effects(t, contract.High))
	}
}

// rawAnswer reads a tools/call answer: whether it is a complete result,
// and a tool error's detail.
func rawAnswer(body []byte) (complete bool, d failure.Detail, err error) {
	var msg struct {
		Result *struct {
			IsError bool                      `json:"isError"`
			Meta    map[string]failure.Detail `json:"_meta"`
		} `json:"result"`
	}
	if err := json.Unmarshal(body, &msg); err != nil || msg.Result == nil {
		return false, d, fmt.Errorf("not a result: %s", body)
	}
	return !msg.Result.IsError, msg.Result.Meta[mcpapi.ErrorMetaKey], nil
}

// TestConcurrentKeyOverHTTP: 50 concurrent identical calls with one
// idempotency key make one effect and one executed (allowed) audit event;
// every other answer is byte for byte the first one's, or
// request_in_progress with retryAfterMs. The key with other arguments is
// idempotency_conflict; after a restart (a new server process on the same
// database) the call replays the same bytes and changes nothing.
func TestConcurrentKeyOverHTTP(t *testing.T) {
	e := newTierEnv(t, 20*time.Millisecond)
	s := e.server(t, tierServer{})
	tok := e.mint(t, "alice", "collector-bot", tierScopes(contract.Medium)...)
	medium := e.count(contract.Medium)
	name := tierTool(contract.Medium)
	for i, version := range protocolVersions {
		want := int64(i + 1)
		args := keyed(contract.Medium, "race-"+version)
		const n = 50
		type answer struct {
			status int
			body   []byte
			err    error
		}
		answers := make([]answer, n)
		start := make(chan struct{})
		var wg sync.WaitGroup
		for j := range n {
			wg.Go(func() {
				<-start
				resp, body, err := postCall(s.URL, tok, version, 1, name, args, nil, nil)
				if err == nil {
					answers[j] = answer{status: resp.StatusCode, body: body}
				} else {
					answers[j] = answer{err: err}
				}
			})
		}
		close(start)
		wg.Wait()
		var first []byte
		var complete, inProgress int
		for _, a := range answers {
			if a.err != nil || a.status != http.StatusOK {
				t.Errorf("%s: %d %v %s", version, a.status, a.err, a.body)
				continue
			}
			ok, d, err := rawAnswer(a.body)
			switch {
			case err != nil:
				t.Errorf("%s: %v", version, err)
			case ok && first == nil:
				first = a.body
				complete++
			case ok && bytes.Equal(a.body, first):
				complete++
			case ok:
				t.Errorf("%s: answers differ:\n%s\n%s", version, a.body, first)
			case d.Code == failure.RequestInProgress && d.RetryAfterMs > 0:
				inProgress++
			default:
				t.Errorf("%s: answer %s", version, a.body)
			}
		}
		t.Logf("%s: %d complete, %d request_in_progress", version, complete, inProgress)
		if m, effects, allowed := medium.ran.Load(), e.effects(t, contract.Medium), e.audited(t, contract.Medium, auditlog.Allowed); m != want || int64(effects) != want || int64(allowed) != want {
			t.Errorf("%s: ran %d times, %d effects, %d allowed events in all; want %d of each", version, m, effects, allowed, want)
		}

		other := keyed(contract.Medium, "race-"+version)
		other["note"] = "other arguments"
		res, err := connectAs(t, s.URL, tok, version, nil).CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: other})
		if o := outcome(t, res, err); o != "tool_error "+string(failure.IdempotencyConflict) {
			t.Errorf("%s: the key with other arguments: %s, want idempotency_conflict", version, o)
		}

		restarted := e.server(t, tierServer{})
		resp, body := rawCall(t, restarted.URL, tok, version, 1, name, args, nil, nil)
		if resp.StatusCode != http.StatusOK || !bytes.Equal(body, first) {
			t.Errorf("%s: after a restart the call answers %d\n%s\nwant the first answer\n%s", version, resp.StatusCode, body, first)
		}
		if m := medium.ran.Load(); m != want || int64(e.effects(t, contract.Medium)) != want {
			t.Errorf("%s: the replay after a restart ran the tool (%d runs)", version, m)
		}
	}
}
