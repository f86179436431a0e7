package server_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/cobranca/cobranca/internal/approval"
	"github.com/cobranca/cobranca/internal/auth"
	"github.com/cobranca/cobranca/internal/contract"
	"github.com/cobranca/cobranca/internal/contract/contracttest"
	"github.com/cobranca/cobranca/internal/failure"
	"github.com/cobranca/cobranca/internal/pipeline/pipelinetest"
)

// TestApprovalOverHTTP: the critical round trip through the whole stack,
// with real go-sdk clients on both revisions and real JWTs. An agent calls
// the critical test tool; the answer carries the approval's URL (a
// URL-mode elicitation the 2026-07-28 client opens, or approval_required's
// message on 2025-11-25); a stepped-up person approves it with their token
// (approval.Decider, what `cobranca approvals approve` runs); the agent's
// retry, on another replica, runs the call once; a repeat gets the stored
// answer and changes nothing.
func TestApprovalOverHTTP(t *testing.T) {
	e := newTierEnv(t, 0)
	one, two := e.server(t, tierServer{}), e.server(t, tierServer{slow: true})
	store, err := approval.New(15*time.Minute, nil)
	if err != nil {
		t.Fatal(err)
	}
	alog, _ := pipelinetest.AuditLog(t, e.db)
	d := &approval.Decider{Store: store, DB: e.db, Verifier: e.auth, Audit: alog, StepUpACR: []string{"urn:mfa"},
		Contract: func(name string) *contract.Contract {
			if name == tierTool(contract.Critical) {
				return e.contract(contract.Critical)
			}
			return nil
		}}
	agent := e.mint(t, "alice", "collector-bot", tierScope(contract.Critical))
	approver := []string{contracttest.ApproverRole}
	person := mint(t, e.auth, auth.MintOptions{Subject: "bruno", ACR: "urn:mfa", Scopes: []string{}, Roles: approver})
	weak := mint(t, e.auth, auth.MintOptions{Subject: "bruno", ACR: "urn:password", Scopes: []string{}, Roles: approver})
	ctx := context.Background()
	prefix := pipelinetest.PublicURL + "/approvals/"
	critical := contract.Critical
	var runs int64

	t.Run("2026-07-28", func(t *testing.T) {
		var asked atomic.Int64
		var url string
		elicit := func(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			asked.Add(1)
			url = req.Params.URL
			id, ok := strings.CutPrefix(url, prefix)
			if req.Params.Mode != "url" || !ok || req.Params.ElicitationID != id {
				t.Errorf("elicitation %+v, want mode url at %s{id}", req.Params, prefix)
				return &mcp.ElicitResult{Action: "cancel"}, nil
			}
			// The person opens the URL: a weak sign-in is refused, a
			// stepped-up one approves.
			if _, err := d.Decide(ctx, id, weak, true); err == nil || !strings.Contains(err.Error(), string(failure.InsufficientUserAuthentication)) {
				t.Errorf("approving with a weak sign-in: %v, want %s", err, failure.InsufficientUserAuthentication)
			}
			if _, err := d.Decide(ctx, id, person, true); err != nil {
				t.Errorf("approving: %v", err)
			}
			return &mcp.ElicitResult{Action: "accept"}, nil
		}
		opts := &mcp.ClientOptions{ElicitationHandler: elicit, Capabilities: &mcp.ClientCapabilities{
			Elicitation: &mcp.ElicitationCapabilities{URL: &mcp.URLElicitationCapabilities{}}}}
		args := keyed(critical, "k-2026")
		res, err := connectAs(t, one.URL, agent, "2026-07-28", opts).CallTool(ctx, &mcp.CallToolParams{Name: tierTool(critical), Arguments: args})
		if o := outcome(t, res, err); o != "complete" || asked.Load() != 1 {
			t.Fatalf("critical call: %s after %d elicitations, want complete after 1", o, asked.Load())
		}
		runs++
		if n := e.count(critical).ran.Load(); n != runs {
			t.Fatalf("ran %d times, want %d", n, runs)
		}
		// The same call again, on the other replica: its stored answer.
		again, err := connectAs(t, two.URL, agent, "2026-07-28", opts).CallTool(ctx, &mcp.CallToolParams{Name: tierTool(critical), Arguments: args})
		if o := outcome(t, again, err); o != "complete" || asked.Load() != 1 || e.count(critical).ran.Load() != runs {
			t.Errorf("repeat: %s, %d elicitations, ran %d; want the stored answer, no new run", o, asked.Load(), e.count(critical).ran.Load())
		}
		id := strings.TrimPrefix(url, prefix)
		if a, err := store.Get(ctx, e.db, id); err != nil || a.State != approval.Executed {
			t.Errorf("approval %s: %v %v, want executed", id, a, err)
		}
	})

	t.Run("2025-11-25", func(t *testing.T) {
		sess := connectAs(t, one.URL, agent, "2025-11-25", clientOpts(false, neverElicit(t)))
		args := keyed(critical, "k-2025")
		call := func() (*mcp.CallToolResult, string) {
			t.Helper()
			res, err := sess.CallTool(ctx, &mcp.CallToolParams{Name: tierTool(critical), Arguments: args})
			return res, outcome(t, res, err)
		}
		res, o := call()
		if o != "tool_error "+string(failure.ApprovalRequired) {
			t.Fatalf("critical call: %s, want approval_required", o)
		}
		msg := errorOf(t, res).Message
		i := strings.Index(msg, prefix)
		if i < 0 {
			t.Fatalf("approval_required's message %q carries no approval URL", msg)
		}
		id := msg[i+len(prefix) : i+len(prefix)+28]
		if !strings.Contains(msg, "approval "+id) {
			t.Errorf("approval_required's message %q does not name approval %s", msg, id)
		}
		agentOwn := e.mint(t, "bruno", "other-bot")
		if _, err := d.Decide(ctx, id, agentOwn, true); err == nil || !strings.Contains(err.Error(), string(approval.CodeApproverIsAgent)) {
			t.Errorf("an agent approving: %v, want %s", err, approval.CodeApproverIsAgent)
		}
		if _, err := d.Decide(ctx, id, person, true); err != nil {
			t.Fatal(err)
		}
		// The retry on the other replica runs it; a repeat gets its answer.
		other := connectAs(t, two.URL, agent, "2025-11-25", clientOpts(false, neverElicit(t)))
		res, err := other.CallTool(ctx, &mcp.CallToolParams{Name: tierTool(critical), Arguments: args})
		if o := outcome(t, res, err); o != "complete" {
			t.Fatalf("retry after approval: %s", o)
		}
		runs++
		if _, o := call(); o != "complete" || e.count(critical).ran.Load() != runs {
			t.Errorf("repeat: %s, ran %d; want the stored answer, ran %d", o, e.count(critical).ran.Load(), runs)
		}
	})
	if n := e.effects(t, critical); int64(n) != runs {
		t.Errorf("%d effects committed, want %d", n, runs)
	}
}
