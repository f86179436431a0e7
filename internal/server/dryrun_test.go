package server_test

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/cobranca/cobranca/internal/approval"
	"github.com/cobranca/cobranca/internal/contract"
	"github.com/cobranca/cobranca/internal/contract/contracttest"
	"github.com/cobranca/cobranca/internal/failure"
	"github.com/cobranca/cobranca/internal/limits"
	limitspg "github.com/cobranca/cobranca/internal/limits/postgres"
	"github.com/cobranca/cobranca/internal/pipeline"
	"github.com/cobranca/cobranca/internal/pipeline/pipelinetest"
	"github.com/cobranca/cobranca/internal/store/storetest"
)

// plannedTool is a critical test tool whose dry run is mandatory and needs only test:read.
const plannedTool = "test.planned"

// withPlanned adds plannedTool to e's tools (call it before e.server).
func withPlanned(e *tierEnv) {
	c := contracttest.WithMandatoryDryRun(contracttest.New(plannedTool, contract.Critical, "test:send"), "test:read")
	e.tools = append(e.tools, pipelinetest.Planned(c, nil))
}

// TestDryRunPermissionsOverHTTP: a token holding a tool's dryRunPermissions but not its
// permissions is not refused 403 for a dry run: the tool answers it, saying which scopes the
// real call would lack; the real call by the same token is the 403 insufficient_scope
// challenge, before its arguments are looked at, on both revisions and both paths.
func TestDryRunPermissionsOverHTTP(t *testing.T) {
	e := newTierEnv(t, 0)
	withPlanned(e)
	s := e.server(t, tierServer{})
	reader := e.mint(t, "alice", "collector-bot", "test:read")
	dry := map[string]any{"customer": "c1", "dryRun": true}
	real := map[string]any{"customer": "c1", "idempotencyKey": "k1", "planHash": strings.Repeat("0", 64)}
	for _, version := range protocolVersions {
		sess := connectAs(t, s.URL, reader, version, clientOpts(true, neverElicit(t)))
		res, err := sess.CallTool(context.Background(), &mcp.CallToolParams{Name: plannedTool, Arguments: dry})
		if o := outcome(t, res, err); o != "complete" {
			t.Fatalf("%s: a reader's dry run: %s, want complete", version, o)
		}
		var out struct{ MissingPermissions []string }
		b, _ := json.Marshal(res.StructuredContent)
		if err := json.Unmarshal(b, &out); err != nil || !slices.Equal(out.MissingPermissions, []string{"test:send"}) {
			t.Errorf("%s: a reader's dry run answered %s, want missingPermissions [test:send]", version, b)
		}
		resp, body := rawCall(t, s.URL, reader, version, 1, plannedTool, real, nil, nil)
		challenge := resp.Header.Get("WWW-Authenticate")
		if resp.StatusCode != http.StatusForbidden || !strings.Contains(challenge, `error="insufficient_scope"`) || !strings.Contains(challenge, `scope="test:send"`) {
			t.Errorf("%s: a reader's real call: %d %q %s, want 403 insufficient_scope naming test:send", version, resp.StatusCode, challenge, body)
		}
		// A real call disguised as a dry run by a second dryRun member is refused as well.
		resp, body = rawCallBody(t, s.URL, reader, version, plannedTool,
			`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"`+plannedTool+`","arguments":{"customer":"c1","dryRun":true,"dryRun":false}}}`)
		if resp.StatusCode != http.StatusForbidden {
			t.Errorf("%s: two dryRun members: %d %s, want 403", version, resp.StatusCode, body)
		}
	}
	if n := pipelinetest.Effects(t, e.db, plannedTool); n != 0 {
		t.Errorf("%d effects", n)
	}
	// Without the dry run's scope, the dry run is the 403 too.
	other := e.mint(t, "alice", "collector-bot", "test:low")
	resp, body := rawCall(t, s.URL, other, "2025-11-25", 1, plannedTool, dry, nil, nil)
	if resp.StatusCode != http.StatusForbidden || strings.Contains(string(body), string(failure.DryRunRequired)) {
		t.Errorf("a dry run without test:read: %d %s, want 403", resp.StatusCode, body)
	}
}

// rawCallBody posts body, a tools/call of tool, to url's /mcp as tok on version.
func rawCallBody(t *testing.T, url, tok, version, tool, body string) (*http.Response, []byte) {
	t.Helper()
	resp, out, err := postBody(url, tok, version, tool, []byte(body))
	if err != nil {
		t.Fatal(err)
	}
	return resp, out
}

// TestCriticalBudgetCountsApprovals: a critical call spends the write budget; the critical
// budget (one an hour here) is spent only when a pending approval is created. A dry run, the
// call asking for the approval, polls of it, the approved retry and a repeat of its key leave
// it spent once: the next approval asked for is refused rate_limited, and nothing else is.
func TestCriticalBudgetCountsApprovals(t *testing.T) {
	e := newTierEnv(t, 0)
	withPlanned(e)
	lim := limits.New(limitspg.New(e.db.Pool()), limits.Options{Policies: limits.Policies{
		Write:    limits.Limit{Rate: 100, Period: time.Hour, Burst: 100},
		Critical: limits.Limit{Rate: 1, Period: time.Hour, Burst: 1},
	}, StoreTimeout: 10 * time.Second})
	s := e.server(t, tierServer{limits: lim})
	approvals, err := approval.New(15*time.Minute, nil)
	if err != nil {
		t.Fatal(err)
	}
	sess := connectAs(t, s.URL, e.mint(t, "alice", "collector-bot", "test:read", "test:send"), "2025-11-25", clientOpts(true, neverElicit(t)))
	call := func(args map[string]any) *mcp.CallToolResult {
		t.Helper()
		res, err := sess.CallTool(context.Background(), &mcp.CallToolParams{Name: plannedTool, Arguments: args})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	dryRun := func(customer string) string {
		t.Helper()
		res := call(map[string]any{"customer": customer, "dryRun": true})
		var out struct{ PlanHash string }
		b, _ := json.Marshal(res.StructuredContent)
		if err := json.Unmarshal(b, &out); err != nil || res.IsError || out.PlanHash == "" {
			t.Fatalf("dry run: %s", b)
		}
		return out.PlanHash
	}
	args := map[string]any{"customer": "c1", "idempotencyKey": "k1", "planHash": dryRun("c1")}
	res := call(args)
	d := errorOf(t, res)
	asked := pipelinetest.AskedOf(t, pipeline.Result{Kind: pipeline.ToolError, Err: &failure.Error{Code: d.Code, Message: d.Message}}, pipeline.Client{})
	if o := outcome(t, call(args), nil); o != "tool_error "+string(failure.ApprovalRequired) { // a poll of the pending approval
		t.Fatalf("polling the pending approval: %s", o)
	}
	pipelinetest.Approve(t, e.db, approvals, asked.ID)
	for i := range 2 { // the approved retry, then a repeat of its key
		if o := outcome(t, call(args), nil); o != "complete" {
			t.Fatalf("call %d after the approval: %s, want complete", i+1, o)
		}
	}
	if n := pipelinetest.Effects(t, e.db, plannedTool); n != 1 {
		t.Fatalf("%d effects, want 1", n)
	}
	// The critical budget was spent once, by the one approval: the next one asked for is refused.
	res = call(map[string]any{"customer": "c2", "idempotencyKey": "k2", "planHash": dryRun("c2")})
	if d := errorOf(t, res); d.Code != failure.RateLimited || !strings.Contains(d.Message, "approvals") {
		t.Errorf("a second approval within the hour: %+v, want rate_limited about approvals", d)
	}
	if n := storetest.Count(t, e.db, "approval"); n != 1 {
		t.Errorf("%d approvals, want 1", n)
	}
}
