package server_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/cobranca/cobranca/internal/auth"
	"github.com/cobranca/cobranca/internal/collections"
	"github.com/cobranca/cobranca/internal/customers"
	"github.com/cobranca/cobranca/internal/failure"
	"github.com/cobranca/cobranca/internal/outbox"
	"github.com/cobranca/cobranca/internal/pipeline/pipelinetest"
	"github.com/cobranca/cobranca/internal/reminders"
	"github.com/cobranca/cobranca/internal/store"
	"github.com/cobranca/cobranca/internal/store/storetest"
)

// TestBulkSendOverHTTP: collections.bulk_send_reminders through the whole stack, with real
// go-sdk clients on both revisions, real JWTs, the outbox delivering to a real SMTP server, on
// both dialects. The agent dry-runs a filter (the preview, with its planHash), makes the real
// call citing it, a stepped-up person approves it, and the approved call — made with a
// progress token — reports its progress to the client while it enqueues (100, 200, 250 of 250),
// then answers how many it queued; get_bulk_send's counts reach sent, and the SMTP server
// received each message once.
func TestBulkSendOverHTTP(t *testing.T) {
	t.Parallel() // waits on SMTP and PostgreSQL; seals no audit chain
	storetest.Each(t, pg, func(t *testing.T, db store.DB) {
		ctx := context.Background()
		s := newSendServer(t, db, outbox.Config{Workers: 8, PollInterval: 10 * time.Millisecond})
		authn, smtpd, d := s.authn, s.smtpd, s.d
		agent := mint(t, authn, auth.MintOptions{Subject: "ana", Agent: "collector-bot", Scopes: []string{"collections:read", "reminders:send"}})
		person := mint(t, authn, auth.MintOptions{Subject: "bruno", ACR: stepUpACR, Scopes: []string{}, Roles: []string{collections.ApproverRole}})
		prefix := pipelinetest.PublicURL + "/approvals/"
		tpl, err := reminders.ParseTemplates()
		if err != nil {
			t.Fatal(err)
		}
		const n = 250
		received := 0
		for _, version := range protocolVersions {
			t.Run(version, func(t *testing.T) {
				// n open drafts of this run's customers, one each.
				err := db.InTx(ctx, func(ctx context.Context, tx store.Tx) error {
					for i := range n {
						id := fmt.Sprintf("%s-%03d", version, i)
						to := reminders.Recipient{Name: "Cliente " + id, Email: fmt.Sprintf("c%03d@%s.example", i, version)}
						if _, err := customers.Upsert(ctx, tx, customers.Record{ID: id, Name: to.Name, Email: to.Email}, time.Now()); err != nil {
							return err
						}
						if _, _, err := reminders.Prepare(ctx, tx, tpl, reminders.Request{CustomerID: id, To: to, Tone: reminders.Firm,
							Language: reminders.English, CreatedBy: "ana", Invoices: []reminders.Invoice{{ID: "NF-" + id, DueDate: "2026-01-05", AmountCents: 990}}}, time.Now()); err != nil {
							return err
						}
					}
					return nil
				})
				if err != nil {
					t.Fatal(err)
				}
				approve := func(id string) {
					if _, err := d.Decide(ctx, id, person, true); err != nil {
						t.Errorf("approving %s: %v", id, err)
					}
				}
				opts := &mcp.ClientOptions{}
				if version == "2026-07-28" {
					opts.Capabilities = &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{URL: &mcp.URLElicitationCapabilities{}}}
					opts.ElicitationHandler = func(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
						approve(strings.TrimPrefix(req.Params.URL, prefix))
						return &mcp.ElicitResult{Action: "accept"}, nil
					}
				}
				h := &heard{first: make(chan struct{})}
				opts.ProgressNotificationHandler = h.handle
				sess := connectAs(t, s.url, agent, version, opts)
				sel := map[string]any{"filter": map[string]any{"tone": "firm", "customerIds": customerIDs(version, n)}}
				dry := map[string]any{"dryRun": true}
				for k, v := range sel {
					dry[k] = v
				}
				res, err := sess.CallTool(ctx, &mcp.CallToolParams{Name: collections.BulkSendName, Arguments: dry})
				if o := outcome(t, res, err); o != "complete" {
					t.Fatalf("dry run: %s", o)
				}
				preview := res.StructuredContent.(map[string]any)
				if preview["dryRun"] != true || preview["recipientCount"] != float64(n) || len(preview["sampleMessages"].([]any)) != 3 ||
					preview["estimatedDurationMs"].(float64) <= 0 || len(preview["missingPermissions"].([]any)) != 0 {
					t.Fatalf("dry run = %v", preview)
				}
				args := map[string]any{"planHash": preview["planHash"], "idempotencyKey": "bulk-" + version}
				for k, v := range sel {
					args[k] = v
				}
				call := &mcp.CallToolParams{Name: collections.BulkSendName, Arguments: args}
				call.SetProgressToken("bulk-" + version)
				if version == "2025-11-25" {
					res, err = sess.CallTool(ctx, call)
					if o := outcome(t, res, err); o != "tool_error "+string(failure.ApprovalRequired) {
						t.Fatalf("the real call: %s, want approval_required", o)
					}
					msg := errorOf(t, res).Message
					i := strings.Index(msg, prefix)
					if i < 0 || len(msg) < i+len(prefix)+28 {
						t.Fatalf("approval_required's message %q carries no approval URL", msg)
					}
					approve(msg[i+len(prefix) : i+len(prefix)+28])
				}
				res, err = sess.CallTool(ctx, call)
				if o := outcome(t, res, err); o != "complete" {
					t.Fatalf("the approved call: %s", o)
				}
				got := res.StructuredContent.(map[string]any)
				if got["dryRun"] != false || got["queued"] != float64(n) || got["planHash"] != preview["planHash"] {
					t.Fatalf("the approved call = %v", got)
				}
				var heardAll []mcp.ProgressNotificationParams
				for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
					if heardAll = h.all(); len(heardAll) == 3 {
						break
					}
				}
				if len(heardAll) != 3 {
					t.Fatalf("%d progress notifications, want 3: %+v", len(heardAll), heardAll)
				}
				for i, p := range heardAll {
					done := min(100*(i+1), n)
					if p.ProgressToken != "bulk-"+version || p.Progress != float64(done) || p.Total != n || p.Message != fmt.Sprintf("%d of %d messages queued", done, n) {
						t.Errorf("notification %d = %+v, want %d of %d", i, p, done, n)
					}
				}
				received += n
				smtpd.Wait(t, received, 60*time.Second)
				var progress map[string]any
				for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
					res, err := sess.CallTool(ctx, &mcp.CallToolParams{Name: collections.GetBulkSendName, Arguments: map[string]any{"bulkId": got["bulkId"]}})
					if o := outcome(t, res, err); o != "complete" {
						t.Fatalf("get_bulk_send: %s", o)
					}
					progress = res.StructuredContent.(map[string]any)
					if progress["sent"] == float64(n) || time.Now().After(deadline) {
						break
					}
				}
				if progress["total"] != float64(n) || progress["sent"] != float64(n) || progress["queued"] != 0.0 || progress["failed"] != 0.0 || progress["done"] != true {
					t.Errorf("get_bulk_send = %v, want all %d sent", progress, n)
				}
			})
		}
		msgIDs := map[string]bool{}
		for _, m := range smtpd.Messages() {
			msgIDs[m.MessageID] = true
		}
		if len(smtpd.Messages()) != received || len(msgIDs) != received {
			t.Errorf("the SMTP server received %d messages, %d distinct; want %d each", len(smtpd.Messages()), len(msgIDs), received)
		}
	})
}

// customerIDs are the n customer ids of one run.
func customerIDs(version string, n int) []string {
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("%s-%03d", version, i)
	}
	return ids
}
