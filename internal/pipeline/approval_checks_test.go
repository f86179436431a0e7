package pipeline_test

import (
	"context"
	"strings"
	"testing"

	"github.com/cobranca/cobranca/internal/approval"
	"github.com/cobranca/cobranca/internal/failure"
	"github.com/cobranca/cobranca/internal/pipeline"
	"github.com/cobranca/cobranca/internal/pipeline/pipelinetest"
	"github.com/cobranca/cobranca/internal/store"
)

// TestApprovedStateOtherArguments: an approved call's request state
// replayed with other arguments — another customer, another key, and a
// valid plan of their own (their own dry run, recorded) — is refused
// approval_mismatch: the approval holds the digest of the call a person
// approved, and nothing else runs under it. The approved call then runs,
// once: the refusal used nothing up.
func TestApprovedStateOtherArguments(t *testing.T) {
	both(t, func(t *testing.T, db store.DB) {
		e := newPlannedEnv(t, db)
		tool := plannedCritical.Name
		approved := `"customer":"approved-customer","idempotencyKey":"k-approved"`
		call := pipeline.Call{Principal: planner, Tool: tool, Client: modern,
			Args: []byte(withMembers(approved, plan(e.dryRun(t, planner, tool, `"customer":"approved-customer"`))))}
		asked := pipelinetest.AskedOf(t, e.p.Do(context.Background(), call), modern)
		pipelinetest.Approve(t, db, e.approvals, asked.ID)

		other := call
		other.Args = []byte(withMembers(`"customer":"someone-else","idempotencyKey":"k-other"`,
			plan(e.dryRun(t, planner, tool, `"customer":"someone-else"`))))
		wantCode(t, "the approved state with other arguments and their own plan", e.p.Do(context.Background(), asked.Retry(other)), failure.ApprovalMismatch, "arguments")
		if e.ran[tool] != 0 {
			t.Fatalf("ran %d times under another call's approval, want never", e.ran[tool])
		}
		if a, err := e.approvals.Get(context.Background(), db, asked.ID); err != nil || a.State != approval.Approved {
			t.Fatalf("the approval after the refused replay: %v, %v; want approved", a, err)
		}
		if res := e.p.Do(context.Background(), asked.Retry(call)); res.Kind != pipeline.Complete || e.ran[tool] != 1 {
			t.Errorf("the approved call: %s %+v, ran %d; want complete, once", kindName(res.Kind), res.Err, e.ran[tool])
		}
	})
}

// TestApprovalRecheckedInTransaction: an approval set back to pending after
// the call's approval step saw it approved, before the execution's
// transaction, is read again, locked, in that transaction: the call is
// refused approval_required, nothing runs, and the approval is not used.
func TestApprovalRecheckedInTransaction(t *testing.T) {
	both(t, func(t *testing.T, db store.DB) {
		armed := &pipelinetest.ArmedDB{DB: db}
		e := newPlannedEnv(t, armed)
		tool := plannedCritical.Name
		for _, cl := range []pipeline.Client{legacy, modern} {
			args := `"customer":"` + cl.Protocol + `","idempotencyKey":"k-` + cl.Protocol + `"`
			call := pipeline.Call{Principal: planner, Tool: tool, Client: cl,
				Args: []byte(withMembers(args, plan(e.dryRun(t, planner, tool, `"customer":"`+cl.Protocol+`"`))))}
			asked := pipelinetest.AskedOf(t, e.p.Do(context.Background(), call), cl)
			pipelinetest.Approve(t, db, e.approvals, asked.ID)
			// The approved retry's transactions: the key's look-up (a
			// rollback), then the execution's.
			armed.Arm(1, func() {
				if err := pipelinetest.Unapprove(context.Background(), db, asked.ID); err != nil {
					t.Error(err)
				}
			})
			res := e.p.Do(context.Background(), asked.Retry(call))
			if res.Kind != pipeline.ToolError || res.Err.Code != failure.ApprovalRequired || !strings.Contains(res.Err.Message, "pending again") {
				t.Fatalf("%s: the approved call, its approval pending again: %s %+v, want the tool error approval_required (pending again)", cl.Protocol, kindName(res.Kind), res.Err)
			}
			if e.ran[tool] != 0 {
				t.Fatalf("%s: ran %d times, its approval pending, want never", cl.Protocol, e.ran[tool])
			}
			if a, err := e.approvals.Get(context.Background(), db, asked.ID); err != nil || a.State != approval.Pending {
				t.Errorf("%s: the approval after the refusal: %v, %v; want pending", cl.Protocol, a, err)
			}
		}
	})
}
