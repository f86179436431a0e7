package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/cobranca/cobranca/internal/collections"
	"github.com/cobranca/cobranca/internal/config"
	"github.com/cobranca/cobranca/internal/failure"
	"github.com/cobranca/cobranca/internal/mcpapi"
	"github.com/cobranca/cobranca/internal/outbox"
)

// TestServeSendReminder: `cobranca serve` in development, on SQLite, serves
// collections.send_reminder with its outbox and delivery worker. An agent
// (a `cobranca token`) prepares a draft and asks to send it; the answer is
// approval_required with the approval's URL on this server; another person
// approves it with `cobranca approvals approve` and a token of their own;
// the agent's retry queues the draft, the worker writes the message into
// COBRANCA_DATA_DIR/outbox/ (no SMTP configured), and reports it delivered:
// get_customer shows the reminder sent, with the file's Message-ID.
func TestServeSendReminder(t *testing.T) {
	dir := t.TempDir()
	addr := freeAddr(t)
	environ := []string{"COBRANCA_DATA_DIR=" + dir, "COBRANCA_ADDR=" + addr, "COBRANCA_METRICS_ADDR=off"}
	cli := func(args ...string) string {
		t.Helper()
		return mustRun(t, environ, args...)
	}
	cli("migrate")
	_, stop := startServe(t, environ...)
	defer func() {
		if err := stop(); err != nil {
			t.Error(err)
		}
	}()
	agent := strings.TrimSpace(cli("token", "--sub", "alice", "--scope", "reminders:write reminders:send collections:read", "--agent", "ledger-copilot"))
	person := strings.TrimSpace(cli("token", "--sub", "bruno", "--acr", "urn:mfa", "--role", collections.ApproverRole))

	agentSess := connectAgent(t, addr, agent)
	call, fields := agentSess.call, agentSess.fields
	draft := fields("prepare_reminder", call(collections.PrepareReminderName, map[string]any{
		"customer": map[string]any{"id": "c-1", "name": "Ana Ltda", "email": "ana@cliente.example"},
		"invoices": []any{map[string]any{"id": "inv-1", "dueDate": "2026-11-01", "amountCents": 150000}},
		"tone":     "friendly", "idempotencyKey": "prepare-1",
	}))["draftId"].(string)
	send := map[string]any{"draftId": draft, "idempotencyKey": "send-1"}

	res := call(collections.SendReminderName, send)
	var detail failure.Detail
	raw, _ := json.Marshal(res.Meta[mcpapi.ErrorMetaKey])
	if err := json.Unmarshal(raw, &detail); err != nil || !res.IsError || detail.Code != failure.ApprovalRequired {
		t.Fatalf("send_reminder = %+v, want approval_required", res)
	}
	url := regexp.MustCompile(`http://` + regexp.QuoteMeta(addr) + `/approvals/(a_[a-z2-7]{26})`).FindStringSubmatch(detail.Message)
	if url == nil {
		t.Fatalf("approval_required's message %q carries no approval URL on this server", detail.Message)
	}
	if out := cli("approvals", "show", url[1]); !strings.Contains(out, `"Ana Ltda"`) || !strings.Contains(out, `"ana@cliente.example"`) {
		t.Errorf("approvals show %s:\n%s\nwant the recipient", url[1], out)
	}
	mustRunIn(t, environ, person, "approvals", "approve", url[1], "--token", "-")

	queued := fields("send_reminder after the approval", call(collections.SendReminderName, send))
	messageID, _ := queued["messageId"].(string)
	if queued["state"] != "queued" || queued["to"] != "ana@cliente.example" || !strings.HasSuffix(messageID, ".outbox@localhost>") {
		t.Fatalf("send_reminder = %v, want queued to ana@cliente.example", queued)
	}
	eml := filepath.Join(dir, "outbox", strings.Trim(messageID, "<>")+".eml")
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(500 * time.Millisecond) { // within the read budget
		sends, _ := fields("get_customer", call(collections.GetCustomerName, map[string]any{"customerId": "c-1"}))["recentSends"].([]any)
		if len(sends) == 1 && sends[0].(map[string]any)["state"] == "sent" && sends[0].(map[string]any)["messageId"] == messageID {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("get_customer's recentSends = %v, want the draft sent", sends)
		}
	}
	if b, err := os.ReadFile(eml); err != nil || !bytes.Contains(b, []byte("Message-ID: "+messageID)) && !bytes.Contains(b, []byte("Message-Id: "+messageID)) {
		t.Errorf("%s: %v, %.300s; want the message with its Message-ID", eml, err, b)
	}
}

// TestMailWorkersDefault: serve's default COBRANCA_MAIL_WORKERS is the outbox's own default, the
// concurrency docs/benchmarks.md measured.
func TestMailWorkersDefault(t *testing.T) {
	c, err := config.Load(nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.MailWorkers != outbox.DefaultWorkers {
		t.Errorf("COBRANCA_MAIL_WORKERS defaults to %d, the outbox to %d", c.MailWorkers, outbox.DefaultWorkers)
	}
}
