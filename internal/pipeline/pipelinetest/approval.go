package pipelinetest

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/cobranca/cobranca/internal/approval"
	"github.com/cobranca/cobranca/internal/failure"
	"github.com/cobranca/cobranca/internal/pipeline"
	"github.com/cobranca/cobranca/internal/store"
)

// Asked is what a critical call waiting for its approval was answered: the approval's id and
// URL, from the URL-mode elicitation or approval_required's message, and the round's request
// state (clients that take input rounds, MCP 2026-07-28).
type Asked struct{ ID, URL, State string }

// AskedOf reads res, the answer to a critical call by a client cl that a person has not yet
// approved, as WithStore's pipelines give it (approvals at PublicURL), failing the test when it
// is anything else.
func AskedOf(t testing.TB, res pipeline.Result, cl pipeline.Client) Asked {
	t.Helper()
	if !cl.InputRequests {
		if res.Kind != pipeline.ToolError || res.Err.Code != failure.ApprovalRequired {
			t.Fatalf("call = %v %v, want the tool error approval_required", res.Kind, res.Err)
		}
		i := strings.Index(res.Err.Message, PublicURL+"/approvals/a_")
		if i < 0 {
			t.Fatalf("approval_required's message %q has no approval URL", res.Err.Message)
		}
		url := res.Err.Message[i : i+len(PublicURL+"/approvals/")+28]
		id := url[len(PublicURL+"/approvals/"):]
		if !strings.Contains(res.Err.Message, "approval "+id) {
			t.Errorf("approval_required's message %q does not name approval %s", res.Err.Message, id)
		}
		return Asked{ID: id, URL: url}
	}
	in, ok := res.Inputs["approval"]
	if res.Kind != pipeline.InputRequired || !ok || in.Method != "elicitation/create" || res.State == "" {
		t.Fatalf("call = %v %v %v, want input_required with an elicitation", res.Kind, res.Err, res.Inputs)
	}
	var p struct{ Mode, URL, ElicitationID, Message string }
	if err := json.Unmarshal(in.Params, &p); err != nil {
		t.Fatal(err)
	}
	if p.Mode != "url" || p.URL != PublicURL+"/approvals/"+p.ElicitationID || !strings.HasPrefix(p.ElicitationID, "a_") || !strings.Contains(p.Message, p.ElicitationID) {
		t.Fatalf("elicitation %s, want mode url at %s/approvals/{id}", in.Params, PublicURL)
	}
	return Asked{ID: p.ElicitationID, URL: p.URL, State: res.State}
}

// Retry is c made again after the round a asked for: carrying a's request state and the
// client's answer to the URL elicitation (accept) when there is a state, unchanged otherwise.
func (a Asked) Retry(c pipeline.Call) pipeline.Call {
	if a.State != "" {
		c.State = a.State
		c.Responses = map[string]json.RawMessage{"approval": json.RawMessage(`{"action":"accept"}`)}
	}
	return c
}

// Approve records, in db, a person's approval of the pending call id (in approvals, the
// pipeline's store): what the approval page does once its checks pass.
func Approve(t testing.TB, db store.DB, approvals *approval.Store, id string) {
	t.Helper()
	err := db.InTx(context.Background(), func(ctx context.Context, tx store.Tx) error {
		_, err := approvals.Decide(ctx, tx, id, true, approval.Approver{Subject: "approver", ACR: "urn:mfa"})
		return err
	})
	if err != nil {
		t.Fatalf("approve %s: %v", id, err)
	}
}
