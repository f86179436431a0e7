package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/cobranca/cobranca/internal/collections"
	"github.com/cobranca/cobranca/internal/failure"
	"github.com/cobranca/cobranca/internal/ledger"
	"github.com/cobranca/cobranca/internal/mcpapi"
	"github.com/cobranca/cobranca/internal/pix/qrtest"
	"github.com/cobranca/cobranca/internal/smtptest"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestServePixRoundTrip is issue 28's journey end to end, through `cobranca serve` on SQLite
// with a PIX key: an invoice imported with its boleto line; two reminders prepared from its
// ledger id (friendly and firm), each with a PIX code for the open amount; the friendly one
// approved by a person and sent; the .eml it becomes, read as MIME with the standard
// library (smtptest.Parse), carries the copia-e-cola string in its text part and, in its HTML part, a QR
// image that decodes (gozxing) to that very string, whose amount and txid are the draft's;
// the bank's CSV of payments, one PIX payment carrying that txid, imported with `cobranca
// payments import`, pays the invoice by reference; the firm draft's send is refused
// (invoice_settled) before anyone is asked.
func TestServePixRoundTrip(t *testing.T) {
	dir := t.TempDir()
	addr := freeAddr(t)
	environ := []string{"COBRANCA_DATA_DIR=" + dir, "COBRANCA_ADDR=" + addr, "COBRANCA_METRICS_ADDR=off",
		"COBRANCA_PIX_KEY=12.ABC.345/01DE-35", "COBRANCA_PIX_MERCHANT_NAME=Cobranca Exemplo Ltda", "COBRANCA_PIX_MERCHANT_CITY=SAO PAULO"}
	cli := func(args ...string) string {
		t.Helper()
		return mustRun(t, environ, args...)
	}
	file := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	cli("migrate")
	const boletoLine = "00190.50095 40144.816069 06809.350314 3 37370000000100" // Banco do Brasil's example
	cli("invoices", "import", file("invoices.csv", "invoiceId,customerId,customerName,amountCents,dueDate,boletoLine\n"+
		"NF-28,c-28,Ana Ltda,123456,2026-11-01,"+boletoLine+"\n"))
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
	refusal := func(res *mcp.CallToolResult) failure.Detail {
		t.Helper()
		var d failure.Detail
		raw, _ := json.Marshal(res.Meta[mcpapi.ErrorMetaKey])
		if err := json.Unmarshal(raw, &d); err != nil || !res.IsError {
			t.Fatalf("%+v, want a refusal", res)
		}
		return d
	}
	prepare := func(tone string) (string, map[string]any) {
		t.Helper()
		got := fields("prepare_reminder "+tone, call(collections.PrepareReminderName, map[string]any{
			"customer":   map[string]any{"id": "c-28", "name": "Ana Ltda", "email": "ana@cliente.example"},
			"invoiceIds": []string{"NF-28"}, "tone": tone, "idempotencyKey": "prepare-" + tone,
		}))
		p, _ := got["pix"].(map[string]any)
		if p == nil || p["amountCents"] != float64(123456) {
			t.Fatalf("prepare_reminder %s = %v, want a PIX code for R$ 1.234,56", tone, got)
		}
		return got["draftId"].(string), p
	}
	friendly, pix := prepare("friendly")
	firm, _ := prepare("firm")
	code, txid := pix["code"].(string), pix["txid"].(string)

	send := map[string]any{"draftId": friendly, "idempotencyKey": "send-1"}
	d := refusal(call(collections.SendReminderName, send))
	approvalURL := regexp.MustCompile(`/approvals/(a_[a-z2-7]{26})`).FindStringSubmatch(d.Message)
	if d.Code != failure.ApprovalRequired || approvalURL == nil {
		t.Fatalf("send_reminder = %+v, want approval_required with the approval's URL", d)
	}
	if out := cli("approvals", "show", approvalURL[1]); !strings.Contains(out, code) || !strings.Contains(out, txid) || !strings.Contains(out, "1.234,56") {
		t.Errorf("approvals show %s:\n%s\nwant the PIX code, its txid and amount", approvalURL[1], out)
	}
	mustRunIn(t, environ, person, "approvals", "approve", approvalURL[1], "--token", "-")
	messageID, _ := fields("send_reminder after the approval", call(collections.SendReminderName, send))["messageId"].(string)

	eml := filepath.Join(dir, "outbox", strings.Trim(messageID, "<>")+".eml")
	var raw []byte
	var err error
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		if raw, err = os.ReadFile(eml); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no message at %s: %v", eml, err)
		}
	}
	msg, err := smtptest.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	text, html, img := msg.Body, msg.HTML, msg.Inline["pix-qr@cobranca"]
	if img.ContentType != "image/png" {
		t.Fatalf("the message carries no QR image by its Content-ID; its parts: %+v", msg.Inline)
	}
	if !strings.Contains(text, code) || !strings.Contains(text, boletoLine) {
		t.Errorf("the text part lacks the copia-e-cola string or the boleto line:\n%s", text)
	}
	if !strings.Contains(html, `src="cid:pix-qr@cobranca"`) || !strings.Contains(html, "00190.50095 40144.816069 06809.350314 3 37370000000100") {
		t.Errorf("the HTML part does not show the inline QR image or the boleto line:\n%s", html)
	}
	if got := qrtest.Decode(t, img.Data); got != code {
		t.Errorf("the QR image decodes to %q, want the draft's code %q", got, code)
	}
	if !strings.Contains(code, "54071234.56") || !strings.Contains(code, "05"+twoDigits(len(txid))+txid) || !strings.Contains(code, "br.gov.bcb.pix0114"+"12ABC34501DE35") {
		t.Errorf("code %q does not carry the amount 1234.56, the txid %s and the key", code, txid)
	}

	cli("payments", "import", file("payments.csv", "id,amountCents,paidOn,method,reference\nE2E-PIX-1,123456,2026-11-25,pix,"+txid+"\n"))
	if got := refusal(call(collections.SendReminderName, map[string]any{"draftId": firm, "idempotencyKey": "send-2"})); got.Code != ledger.CodeInvoiceSettled {
		t.Errorf("send of the firm draft after the payment = %+v, want invoice_settled", got)
	}
	inv := fields("get_invoice", call(collections.GetInvoiceName, map[string]any{"invoiceId": "NF-28"}))
	if inv["state"] != "paid" {
		t.Errorf("get_invoice after the import = %v, want paid", inv)
	}
}

func twoDigits(n int) string { return string([]byte{byte('0' + n/10), byte('0' + n%10)}) }
