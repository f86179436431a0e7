package clients_test

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/cobranca/cobranca/internal/collections"
	"github.com/cobranca/cobranca/internal/ledger"
	"github.com/cobranca/cobranca/internal/pix/qrtest"
	"github.com/cobranca/cobranca/internal/reminders"
	"github.com/cobranca/cobranca/internal/smtptest"
)

// The journey's ledger leg (issue 26): an invoice recorded in the ledger,
// analyzed from it, two drafts prepared citing it by id (friendly and firm),
// the friendly one sent (critical: a person approves it), then a payment
// recorded by the agent (high: its person confirms in band) that the ledger
// matches to the invoice by its PIX txid; the firm draft's send is then
// refused, invoice_settled, before anyone is asked to approve it: the paid
// invoice is not chased.
const (
	ledgerCustomerID = "c-5"
	ledgerInvoiceID  = "inv-L1"
	ledgerTxID       = "JOURNEYL1"
	ledgerCents      = 77000
)

var ledgerCustomer = map[string]any{"id": ledgerCustomerID, "name": "Eva Equipamentos Ltda", "email": "eva@example.com"}

// ledgerSteps fills the ledger leg's steps into steps.
func ledgerSteps(t *testing.T, steps []journeyStep) {
	t.Helper()
	invoices := []map[string]any{{"invoiceId": ledgerInvoiceID, "customerId": ledgerCustomerID, "amountCents": ledgerCents,
		"dueDate": "2026-11-05", "pixTxid": ledgerTxID}}
	steps[jLedgerRecord] = journeyStep{Tool: "collections.record_invoices",
		Args: jsonOf(t, map[string]any{"invoices": invoices, "idempotencyKey": "journey-ledger"})}
	steps[jLedgerAnalyze] = journeyStep{Tool: "collections.analyze_ledger",
		Args: jsonOf(t, map[string]any{"customerIds": []string{ledgerCustomerID}})}
	prepare := func(tone, key string) json.RawMessage {
		return jsonOf(t, map[string]any{"customer": ledgerCustomer, "invoiceIds": []string{ledgerInvoiceID}, "tone": tone, "idempotencyKey": key})
	}
	steps[jLedgerPrepare] = journeyStep{Tool: "collections.prepare_reminder", Args: prepare("friendly", "journey-ledger-1")}
	steps[jLedgerPrepareFirm] = journeyStep{Tool: "collections.prepare_reminder", Args: prepare("firm", "journey-ledger-2")}
	steps[jLedgerSend] = journeyStep{Tool: collections.SendReminderName, Critical: true, Answer: &journeyAnswer{Action: "accept"},
		Args: jsonOf(t, map[string]any{"idempotencyKey": "journey-ledger-send"}),
		From: map[string]journeyFrom{"draftId": {Step: jLedgerPrepare, Field: "draftId"}}}
	steps[jLedgerPay] = journeyStep{Tool: "collections.record_payment", High: true,
		Args: jsonOf(t, map[string]any{"transactionId": "journey-pix-1", "amountCents": ledgerCents, "paidOn": "2026-11-20",
			"method": "pix", "reference": ledgerTxID, "customerId": ledgerCustomerID, "idempotencyKey": "journey-pay"}),
		Answer: &journeyAnswer{Action: "accept", Content: map[string]any{"confirm": true}}}
	// Run only once the payment is recorded: its id is the call's key.
	steps[jLedgerSendAfter] = journeyStep{Tool: collections.SendReminderName, Critical: true, Answer: &journeyAnswer{Action: "accept"},
		Args: jsonOf(t, map[string]any{}),
		From: map[string]journeyFrom{"draftId": {Step: jLedgerPrepareFirm, Field: "draftId"}, "idempotencyKey": {Step: jLedgerPay, Field: "paymentId"}}}
}

// checkLedgerJourney holds the ledger leg to what the client could do:
// confirmed, it recorded the payment and the second send was refused;
// otherwise the payment step was refused (or left out) and the second send
// not run.
func (s *compatServer) checkLedgerJourney(t *testing.T, rep report, revision string, confirmed, ranHigh bool, forms []json.RawMessage) {
	t.Helper()
	rec := fields(t, "record_invoices", rep.Journey[jLedgerRecord])
	if rec["created"] != 1.0 || rec["updated"] != 0.0 || rec["unchanged"] != 0.0 {
		t.Errorf("record_invoices: %v; want the invoice created", rec)
	}
	an := fields(t, "analyze_ledger", rep.Journey[jLedgerAnalyze])
	if an["invoiceCount"] != 1.0 || !strings.Contains(string(jsonOf(t, an["analysis"])), ledgerCustomerID) {
		t.Errorf("analyze_ledger: %v; want the one invoice of %s analyzed", an, ledgerCustomerID)
	}
	friendly := fields(t, "prepare_reminder from the ledger", rep.Journey[jLedgerPrepare])
	firm := fields(t, "prepare_reminder from the ledger, firm", rep.Journey[jLedgerPrepareFirm])
	if friendly["created"] != true || firm["created"] != true || friendly["draftId"] == firm["draftId"] {
		t.Fatalf("prepare_reminder from the ledger: %v and %v; want two new drafts", friendly, firm)
	}
	firmID := str(firm["draftId"])
	d, err := reminders.Get(context.Background(), s.db, str(friendly["draftId"]))
	if err != nil {
		t.Fatal(err)
	}
	if d.TotalCents != ledgerCents {
		t.Errorf("the draft from the ledger states %d cents, want the ledger's open amount %d", d.TotalCents, ledgerCents)
	}
	if s.checkApproval(t, rep, revision, ranHigh, jLedgerSend, "send_reminder from the ledger") {
		got := fields(t, "send_reminder from the ledger, approved", rep.Journey[jLedgerSend])
		if got != nil && (got["state"] != "queued" || got["draftId"] != d.ID) {
			t.Errorf("send_reminder from the ledger: %v; want draft %s queued", got, d.ID)
		}
		if msgs := s.received(t, "eva@example.com"); len(msgs) != 1 || msgs[0].Subject != d.Subject {
			t.Errorf("the SMTP server received %+v for eva@example.com; want the friendly draft once", msgs)
		} else {
			checkPixMessage(t, msgs[0], d)
		}
	}

	inv, err := ledger.GetInvoice(context.Background(), s.db, ledgerInvoiceID)
	if err != nil {
		t.Fatal(err)
	}
	switch {
	case confirmed:
		pay := fields(t, "record_payment", rep.Journey[jLedgerPay])
		allocs, _ := pay["allocations"].([]any)
		if !strings.HasPrefix(str(pay["paymentId"]), "pay_") || pay["leftCents"] != 0.0 || len(allocs) != 1 ||
			allocs[0].(map[string]any)["invoiceId"] != ledgerInvoiceID || allocs[0].(map[string]any)["rule"] != string(ledger.RuleReference) {
			t.Errorf("record_payment: %v; want a payment matched whole to %s by its reference", pay, ledgerInvoiceID)
		}
		if len(forms) < 2 || !strings.Contains(string(forms[1]), ledgerTxID) {
			t.Errorf("record_payment: confirmations shown %s; want a second one, naming the reference %s", forms, ledgerTxID)
		}
		if inv.State != ledger.StatePaid {
			t.Errorf("the invoice is %s after the payment, want paid", inv.State)
		}
		wantToolError(t, "send_reminder after the payment", *rep.Journey[jLedgerSendAfter], ledger.CodeInvoiceSettled, "draftId")
		if _, asked := rep.JourneyApprovals[jLedgerSendAfter]; asked {
			t.Errorf("send_reminder after the payment: a person was asked to approve it; want it refused first")
		}
	case ranHigh:
		wantToolError(t, "record_payment on 2025-11-25", *rep.Journey[jLedgerPay], "confirmation_required", "")
		fallthrough
	default:
		if rep.Journey[jLedgerSendAfter] != nil {
			t.Errorf("send_reminder after a payment the client could not record: run, want left out")
		}
		if inv.State != ledger.StateOpen {
			t.Errorf("the invoice is %s without a payment, want open", inv.State)
		}
	}
	if now, err := reminders.Get(context.Background(), s.db, firmID); err != nil || now.State != reminders.Draft {
		t.Errorf("the firm draft: %v %v, want still a draft", now.State, err)
	}
	var toEva int
	for _, m := range s.smtp.Messages() {
		if slices.Equal(m.To, []string{"eva@example.com"}) {
			toEva++
		}
	}
	if toEva > 1 {
		t.Errorf("the SMTP server received %d messages for eva@example.com, want at most the friendly one", toEva)
	}
}

// journeyPixKey is the compatibility server's PIX key: an e-mail key.
const journeyPixKey = "pix@cobranca.example"

// checkPixMessage holds a sent reminder to its PIX code: the QR image its HTML shows decodes
// to the draft's code, which asks for the draft's amount (the ledger's open amount), carries
// the draft's txid and pays the server's key; the text part carries the same code.
func checkPixMessage(t *testing.T, m smtptest.Message, d reminders.Record) {
	t.Helper()
	if d.Pix == nil {
		t.Fatalf("draft %s carries no PIX code; want one (the server has a PIX key)", d.ID)
	}
	img, ok := m.Inline[reminders.QRContentID]
	if !ok || !strings.Contains(m.HTML, "cid:"+reminders.QRContentID) {
		t.Fatalf("the message's HTML part shows no inline QR image (parts %v)", slices.Collect(maps.Keys(m.Inline)))
	}
	got := qrtest.Decode(t, img.Data)
	amount := fmt.Sprintf("%d.%02d", ledgerCents/100, ledgerCents%100)
	if got != d.Pix.Code || !strings.Contains(m.Body, got) || d.Pix.AmountCents != ledgerCents ||
		!strings.Contains(got, fmt.Sprintf("54%02d%s", len(amount), amount)) || !strings.Contains(got, fmt.Sprintf("05%02d%s", len(d.Pix.TxID), d.Pix.TxID)) ||
		!strings.Contains(got, journeyPixKey) {
		t.Errorf("the QR image decodes to %q; want the draft's code %q, in the text part too, for %s with txid %s", got, d.Pix.Code, amount, d.Pix.TxID)
	}
}
