package main

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/cobranca/cobranca/internal/collections"
	"github.com/cobranca/cobranca/internal/outbox/outboxtest"
	"github.com/cobranca/cobranca/internal/reminders/reminderstest"
	"github.com/cobranca/cobranca/internal/smtptest"
	"github.com/cobranca/cobranca/internal/tier"
)

// killedBulk is how many drafts TestBulkDeliveryKilled sends.
const killedBulk = 1000

// bulkWriteBudget is COBRANCA_RATE_WRITE for the tests of delivery that send one big bulk: its
// three calls spend one unit per 50 drafts each (60 units for killedBulk), more than the
// default burst of 10, and those tests are about delivery, not budgets.
const bulkWriteBudget = "COBRANCA_RATE_WRITE=600/1m,burst=100"

// TestBulkDeliveryKilled: an agent sends 1 000 reminder drafts in one call of
// collections.bulk_send_reminders (dry run, the call with its planHash, a stepped-up approver's
// approval, the retry) to `cobranca serve` — a process of its own, SMTP to an in-process
// server — which is killed with SIGKILL twice while it delivers (once a quarter, then half, of
// the messages are accepted) and started again each time. Every draft ends sent and
// get_bulk_send says so; the server received every draft's message, each under its own
// Message-ID and only that one: a message sent again (accepted, then killed before the worker
// recorded it, or taken and never finished) carries its first Message-ID. Those copies are
// counted and logged: at least once, by design.
func TestBulkDeliveryKilled(t *testing.T) {
	tier.EndToEnd(t)
	eachStoreAtOnce(t, testBulkDeliveryKilled)
}

func testBulkDeliveryKilled(t *testing.T, db []string) {
	start := time.Now()
	// Each DATA takes 5 ms, as a nearby relay's: the kills find messages in flight.
	mail := smtptest.Start(t, smtptest.Options{Latency: 5 * time.Millisecond})
	addr := freeAddr(t)
	environ := append([]string{"COBRANCA_DATA_DIR=" + t.TempDir(), "COBRANCA_ADDR=" + addr, "COBRANCA_METRICS_ADDR=off",
		"COBRANCA_SMTP_URL=" + mail.URL(), "COBRANCA_MAIL_FROM=" + mailFrom, "COBRANCA_LOG_LEVEL=warn",
		// A message taken by a killed process is sent again 2 s later, not an hour.
		"COBRANCA_MAIL_RESCUE_AFTER=2s",
		// On a loaded machine the store can take longer than 200 ms to answer the limiter,
		// which then fails the critical call closed (unavailable): this test is about delivery.
		"COBRANCA_RATE_STORE_TIMEOUT=5s", bulkWriteBudget}, db...)
	st := migratedStore(t, environ)
	drafts := reminderstest.Bulk(t, st, killedBulk)

	server := startServeProcess(t, environ, addr)
	bulkID := sendBulk(t, environ, addr, len(drafts))

	// Killed twice while it delivers, started again each time.
	for _, at := range []int{killedBulk / 4, killedBulk / 2} {
		mail.Wait(t, at, 60*time.Second)
		server.kill()
		if got := len(mail.Messages()); got >= killedBulk {
			t.Fatalf("the server had accepted %d messages at the kill: the bulk was no longer being delivered", got)
		}
		server = startServeProcess(t, environ, addr)
	}

	reminderstest.WaitSent(t, st, len(drafts), 90*time.Second)
	got := mail.Messages()
	want := map[string]string{} // Message-ID → recipient
	for _, e := range outboxtest.Entries(t, st) {
		want[e.MessageID(mailFrom)] = e.Args.To
	}
	if len(want) != len(drafts) {
		t.Fatalf("the outbox holds %d entries, want one per draft (%d)", len(want), len(drafts))
	}
	rows, err := st.Query(t.Context(), `SELECT message_id FROM reminder_draft`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			t.Fatal(err)
		}
		if _, ok := want[id]; !ok {
			t.Fatalf("a draft was queued under %s, which no outbox entry has", id)
		}
	}
	rows.Close()
	copies := map[string]int{}
	idOf := map[string]string{} // recipient → the one Message-ID it received
	for _, m := range got {
		to, ok := want[m.MessageID]
		if !ok || len(m.To) != 1 || m.To[0] != to {
			t.Fatalf("received a message to %q under %s, which no entry has for that recipient", m.To, m.MessageID)
		}
		if first, seen := idOf[to]; seen && first != m.MessageID {
			t.Fatalf("%s received two Message-IDs, %s and %s", to, first, m.MessageID)
		}
		idOf[to] = m.MessageID
		copies[m.MessageID]++
	}
	if len(copies) != len(drafts) {
		t.Errorf("received %d distinct messages, want every draft's (%d): %d lost", len(copies), len(drafts), len(drafts)-len(copies))
	}
	progress := bulkProgress(t, addr, strings.TrimSpace(mustRun(t, environ, "token", "--sub", "carla", "--scope", "collections:read")), bulkID)
	if progress["sent"] != float64(len(drafts)) || progress["queued"] != 0.0 || progress["failed"] != 0.0 || progress["done"] != true {
		t.Errorf("get_bulk_send = %v, want all %d sent", progress, len(drafts))
	}
	again := len(got) - len(copies)
	t.Logf("%d drafts, 2 kills: %d messages received, %d of them again under their own Message-ID; %v", len(drafts), len(got), again, time.Since(start).Round(time.Millisecond))
}

// sendBulk is the agent's bulk send of every open draft through the server at addr, as a
// 2026-07-28 client: the dry run, the call citing its planHash, answered with a URL-mode
// elicitation that a stepped-up approver settles with `cobranca approvals approve`, and the
// client's retry, which queues them. It returns the bulk send's id.
func sendBulk(t *testing.T, environ []string, addr string, n int) string {
	t.Helper()
	sent, _ := bulk{environ: environ, addr: addr, base: "http://" + addr,
		agent:    strings.TrimSpace(mustRun(t, environ, "token", "--sub", "alice", "--agent", "collector-bot", "--scope", "reminders:send collections:read")),
		approver: strings.TrimSpace(mustRun(t, environ, "token", "--sub", "bruno", "--acr", "urn:mfa", "--role", collections.ApproverRole)),
		key:      "bulk-1"}.send(t, n)
	return sent["bulkId"].(string)
}

// bulk is a bulk send: who asks for it and who approves it, where.
type bulk struct {
	environ         []string // of the `cobranca approvals approve` that approves it
	addr            string   // the server the agent calls
	base            string   // the public URL the approval's link is on
	agent, approver string   // their access tokens
	key             string   // the call's idempotencyKey
}

// send sends every open draft, n of them, and returns the answer that queued them and the
// arguments of the call that got it (a replay's).
func (b bulk) send(t *testing.T, n int) (answer, args map[string]any) {
	t.Helper()
	environ, addr, person := b.environ, b.addr, b.approver
	approvals := 0
	sess := connect(t, addr, b.agent, &mcp.ClientOptions{
		Capabilities: &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{URL: &mcp.URLElicitationCapabilities{}}},
		ElicitationHandler: func(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			id := req.Params.ElicitationID
			if req.Params.Mode != "url" || req.Params.URL != b.base+"/approvals/"+id {
				return nil, fmt.Errorf("elicitation %+v, want an approval's URL on %s", req.Params, b.base)
			}
			var out, errOut bytes.Buffer
			if err := run(ctx, []string{"approvals", "approve", id, "--token", "-"}, environ, strings.NewReader(person), &out, &errOut); err != nil {
				return nil, fmt.Errorf("approvals approve %s: %v: %s", id, err, errOut.String())
			}
			approvals++
			return &mcp.ElicitResult{Action: "accept"}, nil
		}})
	call := func(args map[string]any) map[string]any {
		t.Helper()
		res, err := sess.CallTool(t.Context(), &mcp.CallToolParams{Name: collections.BulkSendName, Arguments: args})
		if err != nil || res.IsError {
			t.Fatalf("bulk_send_reminders %v: %v %s", args, err, resultText(res))
		}
		return res.StructuredContent.(map[string]any)
	}
	all := map[string]any{}
	dry := call(map[string]any{"filter": all, "dryRun": true})
	if dry["recipientCount"] != float64(n) {
		t.Fatalf("the dry run counts %v recipients, want %d", dry["recipientCount"], n)
	}
	args = map[string]any{"filter": all, "planHash": dry["planHash"], "idempotencyKey": b.key}
	sent := call(args)
	if bulkID, _ := sent["bulkId"].(string); sent["queued"] != float64(n) || bulkID == "" || approvals != 1 {
		t.Fatalf("bulk_send_reminders = %v after %d approvals, want %d queued after 1", sent, approvals, n)
	}
	return sent, args
}

// bulkProgress is get_bulk_send's answer for bulkID from the server at addr, read with reader,
// a token of collections:read.
func bulkProgress(t *testing.T, addr, reader, bulkID string) map[string]any {
	t.Helper()
	res, err := connect(t, addr, reader, nil).CallTool(t.Context(), &mcp.CallToolParams{Name: collections.GetBulkSendName,
		Arguments: map[string]any{"bulkId": bulkID}})
	if err != nil || res.IsError {
		t.Fatalf("get_bulk_send: %v %s", err, resultText(res))
	}
	return res.StructuredContent.(map[string]any)
}
