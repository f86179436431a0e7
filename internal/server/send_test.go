package server_test

import (
	"context"
	"log/slog"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/cobranca/cobranca/internal/approval"
	"github.com/cobranca/cobranca/internal/auditlog"
	"github.com/cobranca/cobranca/internal/auth"
	"github.com/cobranca/cobranca/internal/collections"
	"github.com/cobranca/cobranca/internal/contract"
	"github.com/cobranca/cobranca/internal/failure"
	"github.com/cobranca/cobranca/internal/idempotency"
	"github.com/cobranca/cobranca/internal/mcpapi"
	"github.com/cobranca/cobranca/internal/outbox"
	"github.com/cobranca/cobranca/internal/outbox/outboxtest"
	"github.com/cobranca/cobranca/internal/pipeline"
	"github.com/cobranca/cobranca/internal/pipeline/pipelinetest"
	"github.com/cobranca/cobranca/internal/reminders"
	"github.com/cobranca/cobranca/internal/server"
	"github.com/cobranca/cobranca/internal/smtptest"
	"github.com/cobranca/cobranca/internal/store"
	"github.com/cobranca/cobranca/internal/store/storetest"
)

// TestSendReminderOverHTTP: collections.send_reminder through the whole stack, with real
// go-sdk clients on both revisions, real JWTs, the outbox delivering to a real SMTP server, on
// both dialects. The agent prepares a draft and asks to send it; the answer carries the
// approval's URL (a URL-mode elicitation the 2026-07-28 client opens, or approval_required's
// message on 2025-11-25); a stepped-up person approves it with their token (approval.Decider);
// the retry queues it; the SMTP server receives exactly one message, with the Message-ID the
// answer gave; the draft becomes sent; email.external.sent is audited once; a repeat gets the
// stored answer and sends nothing.
func TestSendReminderOverHTTP(t *testing.T) {
	t.Parallel() // waits on SMTP and PostgreSQL; seals no audit chain
	storetest.Each(t, pg, func(t *testing.T, db store.DB) {
		ctx := context.Background()
		s := newSendServer(t, db, outbox.Config{})
		authn, smtpd, d := s.authn, s.smtpd, s.d
		agent := mint(t, authn, auth.MintOptions{Subject: "ana", Agent: "collector-bot", Scopes: []string{"reminders:write", "reminders:send"}})
		person := mint(t, authn, auth.MintOptions{Subject: "bruno", ACR: stepUpACR, Scopes: []string{}, Roles: []string{collections.ApproverRole}})
		prefix := pipelinetest.PublicURL + "/approvals/"

		// prepare writes a draft through the agent's session and returns its id.
		prepare := func(t *testing.T, sess *mcp.ClientSession, invoice string) string {
			t.Helper()
			res, err := sess.CallTool(ctx, &mcp.CallToolParams{Name: collections.PrepareReminderName, Arguments: map[string]any{
				"customer": map[string]any{"id": "c-" + invoice, "name": "Oficina " + invoice, "email": "contas-" + invoice + "@oficina.example"},
				"invoices": []any{map[string]any{"id": invoice, "dueDate": "2026-11-01", "amountCents": 150000}},
				"tone":     "friendly", "idempotencyKey": "prepare-" + invoice,
			}})
			if o := outcome(t, res, err); o != "complete" {
				t.Fatalf("prepare_reminder: %s", o)
			}
			return res.StructuredContent.(map[string]any)["draftId"].(string)
		}
		// delivered checks the answer of the send: queued, then exactly one more message with its
		// Message-ID, to the draft's recipient, and the draft sent.
		received := 0
		delivered := func(t *testing.T, res *mcp.CallToolResult, draft string) {
			t.Helper()
			got := res.StructuredContent.(map[string]any)
			if got["draftId"] != draft || got["state"] != "queued" {
				t.Fatalf("send_reminder = %v, want draft %s queued", got, draft)
			}
			received++
			msgs := smtpd.Wait(t, received, 15*time.Second)
			if m := msgs[received-1]; m.MessageID != got["messageId"] || len(m.To) != 1 || m.To[0] != got["to"] {
				t.Errorf("received %+v, want Message-ID %v to %v", m, got["messageId"], got["to"])
			}
			for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(20 * time.Millisecond) {
				r, err := reminders.Get(ctx, db, draft)
				if err != nil {
					t.Fatal(err)
				}
				if r.State == reminders.Sent {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("draft %s is %s, want sent", draft, r.State)
				}
			}
		}
		// repeated calls again: the stored answer, nothing sent again.
		repeated := func(t *testing.T, sess *mcp.ClientSession, args map[string]any, first *mcp.CallToolResult) {
			t.Helper()
			res, err := sess.CallTool(ctx, &mcp.CallToolParams{Name: collections.SendReminderName, Arguments: args})
			if o := outcome(t, res, err); o != "complete" || !reflect.DeepEqual(res.StructuredContent, first.StructuredContent) {
				t.Errorf("repeat: %s %v, want the stored answer %v", o, res.StructuredContent, first.StructuredContent)
			}
			time.Sleep(300 * time.Millisecond)
			if n := len(smtpd.Messages()); n != received {
				t.Errorf("after the repeat the server has %d messages, want %d", n, received)
			}
		}

		t.Run("2026-07-28", func(t *testing.T) {
			var asked atomic.Int64
			elicit := func(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
				asked.Add(1)
				id, ok := strings.CutPrefix(req.Params.URL, prefix)
				if req.Params.Mode != "url" || !ok || req.Params.ElicitationID != id {
					t.Errorf("elicitation %+v, want mode url at %s{id}", req.Params, prefix)
					return &mcp.ElicitResult{Action: "cancel"}, nil
				}
				// The person opens the URL and approves.
				if _, err := d.Decide(ctx, id, person, true); err != nil {
					t.Errorf("approving: %v", err)
				}
				return &mcp.ElicitResult{Action: "accept"}, nil
			}
			sess := connectAs(t, s.url, agent, "2026-07-28", &mcp.ClientOptions{ElicitationHandler: elicit,
				Capabilities: &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{URL: &mcp.URLElicitationCapabilities{}}}})
			draft := prepare(t, sess, "NF-2026")
			args := map[string]any{"draftId": draft, "idempotencyKey": "send-2026"}
			res, err := sess.CallTool(ctx, &mcp.CallToolParams{Name: collections.SendReminderName, Arguments: args})
			if o := outcome(t, res, err); o != "complete" || asked.Load() != 1 {
				t.Fatalf("send_reminder: %s after %d elicitations, want complete after 1", o, asked.Load())
			}
			delivered(t, res, draft)
			repeated(t, sess, args, res)
			if asked.Load() != 1 {
				t.Errorf("%d elicitations, want 1", asked.Load())
			}
		})

		t.Run("2025-11-25", func(t *testing.T) {
			sess := connectAs(t, s.url, agent, "2025-11-25", nil)
			draft := prepare(t, sess, "NF-2025")
			args := map[string]any{"draftId": draft, "idempotencyKey": "send-2025"}
			res, err := sess.CallTool(ctx, &mcp.CallToolParams{Name: collections.SendReminderName, Arguments: args})
			if o := outcome(t, res, err); o != "tool_error "+string(failure.ApprovalRequired) {
				t.Fatalf("send_reminder: %s, want approval_required", o)
			}
			msg := errorOf(t, res).Message
			i := strings.Index(msg, prefix)
			if i < 0 || len(msg) < i+len(prefix)+28 {
				t.Fatalf("approval_required's message %q carries no approval URL", msg)
			}
			if _, err := d.Decide(ctx, msg[i+len(prefix):i+len(prefix)+28], person, true); err != nil {
				t.Fatal(err)
			}
			res, err = sess.CallTool(ctx, &mcp.CallToolParams{Name: collections.SendReminderName, Arguments: args})
			if o := outcome(t, res, err); o != "complete" {
				t.Fatalf("retry after approval: %s", o)
			}
			delivered(t, res, draft)
			repeated(t, sess, args, res)
		})

		var events int64
		if err := db.QueryRow(ctx, `SELECT COUNT(*) FROM audit_event WHERE event = 'email.external.sent' AND outcome = 'allowed'`).Scan(&events); err != nil {
			t.Fatal(err)
		}
		if events != 2 {
			t.Errorf("%d email.external.sent events, want 2 (one per send)", events)
		}
	})
}

// stepUpACR is the acr a step-up asks for in the tests of the tools that send.
const stepUpACR = "urn:mfa"

// sendServer is the whole stack serving the tools that send (collections.SendTools, besides
// collections.Tools): a development authenticator whose step-up asks for stepUpACR, the outbox
// of cfg delivering to a real SMTP server, approvals at pipelinetest.PublicURL, and the Decider a
// person approves through.
type sendServer struct {
	url   string
	authn *auth.Authenticator
	smtpd *smtptest.Server
	d     *approval.Decider
}

func newSendServer(t *testing.T, db store.DB, cfg outbox.Config) *sendServer {
	t.Helper()
	authn, err := auth.New(context.Background(), auth.Config{DataDir: t.TempDir(), BaseURL: "http://127.0.0.1:8080", StepUpACR: []string{stepUpACR}})
	if err != nil {
		t.Fatal(err)
	}
	smtpd := smtptest.New(t)
	cfg.Owner = reminders.Delivery{}
	sendTools, err := collections.SendTools(collections.Settings{}, outboxtest.Deliver(t, db, smtpd, cfg))
	if err != nil {
		t.Fatal(err)
	}
	keys, err := idempotency.New(db.Dialect(), time.Hour, nil)
	if err != nil {
		t.Fatal(err)
	}
	approvals, err := approval.New(15*time.Minute, nil)
	if err != nil {
		t.Fatal(err)
	}
	alog, digest := newAuditLog(t, db, auditlog.Options{})
	log := slog.New(slog.DiscardHandler)
	h := newMCP(t, mcpapi.Options{Logger: log, MaxBodyBytes: maxBody, Scopes: authn}, pipeline.Options{
		Tools: sendTools, Auditor: pipeline.NewAuditor(alog, digest), DB: db, Keys: keys, States: pipelinetest.Ring(t),
		StepUp: []string{stepUpACR}, Approvals: approvals, PublicURL: pipelinetest.PublicURL,
	})
	ts := httptest.NewServer(server.Routes(server.Deps{Logger: log, MaxBodyBytes: maxBody, Auth: authn, MCP: h}))
	t.Cleanup(ts.Close)
	d := &approval.Decider{Store: approvals, DB: db, Verifier: authn, Audit: alog, StepUpACR: []string{stepUpACR},
		Contract: func(name string) *contract.Contract {
			for _, t := range sendTools {
				if t.Contract.Name == name {
					return t.Contract
				}
			}
			return nil
		}}
	return &sendServer{url: ts.URL, authn: authn, smtpd: smtpd, d: d}
}
