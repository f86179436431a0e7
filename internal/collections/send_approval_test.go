package collections_test

import (
	"context"
	"strings"
	"testing"

	"github.com/cobranca/cobranca/internal/approval"
	"github.com/cobranca/cobranca/internal/customers"
	"github.com/cobranca/cobranca/internal/failure"
	"github.com/cobranca/cobranca/internal/pipeline"
	"github.com/cobranca/cobranca/internal/pipeline/pipelinetest"
	"github.com/cobranca/cobranca/internal/reminders"
	"github.com/cobranca/cobranca/internal/store"
	"github.com/cobranca/cobranca/internal/store/storetest"
)

// TestSendReminderApprovalBindsDraft: send_reminder retried with the
// request state of an approved send and another draftId — another open
// draft, under the same key or another — is refused approval_mismatch:
// nothing is queued, both drafts stay drafts, and the approval stays
// approved for the draft a person saw, which it then sends.
func TestSendReminderApprovalBindsDraft(t *testing.T) {
	storetest.Each(t, pg, func(t *testing.T, db store.DB) {
		e := newSendEnv(t, db)
		e.customer(t, customers.Record{ID: "C-1", Name: "Oficina", Email: "oficina@example.com"})
		seen := e.draft(t, "C-1", "Oficina", "NF-1")
		other := e.draft(t, "C-1", "Oficina", "NF-2")
		ask := e.asked(t, urlClient, seen.ID, "k-1")
		e.approve(t, ask.ID)
		for _, key := range []string{"k-1", "k-2"} {
			res := e.sendCall(sender, urlClient, other.ID, key, ask)
			if code, field := failed(res); res.Kind != pipeline.ToolError || code != failure.ApprovalMismatch || field != "arguments" {
				t.Fatalf("the approved state with draft %s, key %s: %v %v, want the tool error approval_mismatch on arguments", other.ID, key, res.Kind, res.Err)
			}
		}
		if e.jobs(t) != 0 || e.draftNow(t, seen.ID).State != reminders.Draft || e.draftNow(t, other.ID).State != reminders.Draft {
			t.Fatal("something was queued under another draft's approval")
		}
		if st := e.approvalState(t, ask.ID); st != approval.Approved {
			t.Fatalf("the approval after the refused retries is %s, want approved", st)
		}
		if res := e.sendCall(sender, urlClient, seen.ID, "k-1", ask); res.Kind != pipeline.Complete || e.jobs(t) != 1 {
			t.Errorf("the approved send: %v %v, %d entries; want complete, one", res.Kind, res.Err, e.jobs(t))
		}
	})
}

// TestSendReminderApprovalRecheckedInTransaction: an approval set back to
// pending after the retry's approval step saw it approved, before the
// execution's transaction, is read again there: the send is refused
// approval_required, nothing is queued, the draft stays a draft.
func TestSendReminderApprovalRecheckedInTransaction(t *testing.T) {
	eachSend(t, func(t *testing.T, e *sendEnv, cl pipeline.Client) {
		armed := &pipelinetest.ArmedDB{DB: e.db}
		opts := e.opts
		opts.DB = armed
		e.p = pipelinetest.Product(t, opts)
		e.customer(t, customers.Record{ID: "C-1", Name: "Oficina", Email: "oficina@example.com"})
		d := e.draft(t, "C-1", "Oficina", "NF-1")
		ask := e.asked(t, cl, d.ID, "k-1")
		e.approve(t, ask.ID)
		// The approved retry's transactions: the key's look-up (a
		// rollback), then the execution's.
		armed.Arm(1, func() {
			if err := pipelinetest.Unapprove(context.Background(), e.db, ask.ID); err != nil {
				t.Error(err)
			}
		})
		res := e.sendCall(sender, cl, d.ID, "k-1", ask)
		if code, _ := failed(res); res.Kind != pipeline.ToolError || code != failure.ApprovalRequired || !strings.Contains(res.Err.Message, "pending again") {
			t.Fatalf("the approved send, its approval pending again: %v %v, want the tool error approval_required (pending again)", res.Kind, res.Err)
		}
		if e.jobs(t) != 0 || e.draftNow(t, d.ID).State != reminders.Draft {
			t.Fatal("the send was queued, its approval pending")
		}
		if st := e.approvalState(t, ask.ID); st != approval.Pending {
			t.Errorf("the approval after the refusal is %s, want pending", st)
		}
	})
}
