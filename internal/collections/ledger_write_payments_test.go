package collections_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/cobranca/cobranca/internal/collections"
	"github.com/cobranca/cobranca/internal/failure"
	"github.com/cobranca/cobranca/internal/ledger"
	"github.com/cobranca/cobranca/internal/pipeline"
	"github.com/cobranca/cobranca/internal/store/storetest"
)

// confirmMessage is the message of the confirmation a call asked for.
func confirmMessage(t *testing.T, ask pipeline.Result) string {
	t.Helper()
	var params struct{ Message string }
	if err := json.Unmarshal(ask.Inputs["confirm"].Params, &params); err != nil {
		t.Fatal(err)
	}
	return params.Message
}

// recordArgs is a record_payment call's arguments.
func recordArgs(key, txn string, cents int64, extra string) string {
	return fmt.Sprintf(`{"idempotencyKey":%q,"transactionId":%q,"amountCents":%d,"paidOn":"2026-06-30","method":"pix"%s}`, key, txn, cents, extra)
}

// TestRecordPaymentConfirmed: an agent's payment is confirmed by its person, shown the
// amount, date, method, references and what it pays; confirmed, it is recorded and matched by
// its reference, the invoice paid; the key again answers the first answer; the same
// transaction under another key records nothing and says so (audited unchanged); with another
// amount it is refused payment_conflict before anyone is asked.
func TestRecordPaymentConfirmed(t *testing.T) {
	eachEnv(t, func(t *testing.T, e *env) {
		e.seedLedger(t, ledgerInvoices...)
		args := recordArgs("k-1", "E2026063000001", 100000, `,"reference":"TXNF1","payer":"Padaria \"SJ\""`)
		ask, res := e.confirmed(t, ledgerAgent, collections.RecordPaymentName, args)
		want := `Confirm Record a payment: record a payment of R$` + "\u00a0" + `1.000,00 received on 2026-06-30 by pix, transaction "E2026063000001", ` +
			`reference "TXNF1", payer "Padaria \"SJ\"", and match it by its reference to invoice "NF-1" of customer "C-1": R$` + "\u00a0" + `1.000,00, leaving it paid.`
		if got := confirmMessage(t, ask); got != want {
			t.Errorf("confirmation message\n%q\nwant\n%q", got, want)
		}
		out := decode[map[string]any](t, res)
		id, _ := out["paymentId"].(string)
		wantOut := map[string]any{"paymentId": id, "created": true, "matchedBy": "reference", "amountCents": 100000.0, "currency": "BRL", "paidOn": "2026-06-30",
			"allocations": []any{map[string]any{"invoiceId": "NF-1", "amountCents": 100000.0, "rule": "reference", "invoiceState": "paid", "invoiceOpenCents": 0.0}},
			"leftCents":   0.0}
		if diff := cmp.Diff(wantOut, out); diff != "" || !strings.HasPrefix(id, "pay_") {
			t.Errorf("confirmed (-want +got):\n%s", diff)
		}
		pay, err := ledger.GetPayment(context.Background(), e.db, id)
		if err != nil {
			t.Fatal(err)
		}
		if pay.Source != collections.PaymentSourceAgent || pay.SourceRef != "E2026063000001" || pay.RecordedBy != (ledger.Actor{Subject: "ana", Actor: "ledger-bot"}) ||
			len(pay.Allocations) != 1 || pay.Allocations[0].By != (ledger.Actor{Subject: "ana", Actor: "ledger-bot"}) {
			t.Errorf("stored %+v", pay)
		}
		if inv := e.ledgerInvoice(t, "NF-1"); inv.State != ledger.StatePaid {
			t.Errorf("NF-1 %s after its payment, want paid", inv.State)
		}

		again := e.do(ledgerAgent, modern, collections.RecordPaymentName, args)
		if again.Kind != pipeline.Complete || !bytes.Equal(again.Structured, res.Structured) {
			t.Errorf("the key again = %d %v %s, want the first answer", again.Kind, again.Err, again.Structured)
		}

		ask, res = e.confirmed(t, ledgerAgent, collections.RecordPaymentName, strings.Replace(args, "k-1", "k-2", 1))
		if got := confirmMessage(t, ask); !strings.Contains(got, "record nothing: a payment of R$\u00a01.000,00 received on 2026-06-30 by pix, transaction \"E2026063000001\"") ||
			!strings.HasSuffix(got, "is already recorded as payment "+id+"; nothing would change.") {
			t.Errorf("the same transaction again: confirmation %q", got)
		}
		out = decode[map[string]any](t, res)
		wantOut["created"] = false
		delete(wantOut, "matchedBy")
		if diff := cmp.Diff(wantOut, out); diff != "" {
			t.Errorf("the same transaction again (-want +got):\n%s", diff)
		}

		conflict := e.do(ledgerAgent, modern, collections.RecordPaymentName, recordArgs("k-3", "E2026063000001", 99999, ""))
		if code, field := failed(conflict); conflict.Kind != pipeline.ToolError || code != ledger.CodePaymentConflict || field != "transactionId" {
			t.Errorf("another amount: kind %d %v, want %s on transactionId", conflict.Kind, conflict.Err, ledger.CodePaymentConflict)
		}
		if n := storetest.Count(t, e.db, "ledger_payment"); n != 1 {
			t.Errorf("%d payments stored, want 1", n)
		}
		want2 := map[string]int{"input_required " + string(failure.ConfirmationRequired): 2, "allowed": 1, "replayed": 1, "unchanged": 1,
			"rejected " + string(ledger.CodePaymentConflict): 1}
		if got := e.events(t, collections.RecordPaymentName, "ledger.payment.recorded"); !cmp.Equal(got, want2) {
			t.Errorf("audit events %v, want %v", got, want2)
		}
	})
}

// TestRecordPaymentMatching: the preview says what each rule would do, and the call does it:
// by amount, customer and date; by a free reference with the rest left as credit; nothing
// matched. A person's own call runs at once.
func TestRecordPaymentMatching(t *testing.T) {
	eachEnv(t, func(t *testing.T, e *env) {
		e.seedLedger(t, ledgerInvoices...)
		for _, tc := range []struct {
			name, args, preview string
			matchedBy           string
			allocations         []any
			left                float64
		}{
			{"by amount", recordArgs("a-1", "E-A", 30000, `,"customerId":"C-2","currency":"BRL"`),
				`record a payment of R$` + "\u00a0" + `300,00 received on 2026-06-30 by pix, transaction "E-A", from customer "C-2", and match it by its amount, customer and date to invoice "NF-3" of customer "C-2": R$` + "\u00a0" + `300,00, leaving it paid.`,
				"amount", []any{map[string]any{"invoiceId": "NF-3", "amountCents": 30000.0, "rule": "amount", "invoiceState": "paid", "invoiceOpenCents": 0.0}}, 0},
			{"by reference, with credit", recordArgs("a-2", "E-B", 60000, `,"reference":"PEDIDO-77"`),
				`record a payment of R$` + "\u00a0" + `600,00 received on 2026-06-30 by pix, transaction "E-B", reference "PEDIDO-77", and match it by its reference to invoice "NF-2" of customer "C-1": R$` + "\u00a0" + `500,00, leaving it paid; R$` + "\u00a0" + `100,00 left unallocated, as the customer's credit.`,
				"reference", []any{map[string]any{"invoiceId": "NF-2", "amountCents": 50000.0, "rule": "reference", "invoiceState": "paid", "invoiceOpenCents": 0.0}}, 10000},
			{"nothing matches, in dollars", recordArgs("a-3", "E-C", 500, `,"currency":"USD","customerId":"C-2","reference":"NF-4"`),
				`record a payment of US$` + "\u00a0" + `5,00 received on 2026-06-30 by pix, transaction "E-C", reference "NF-4", from customer "C-2", and leave it unmatched: no open invoice carries its reference, and its customer has no single open invoice of exactly this amount due near its date; a person matches it later (match_payment).`,
				"unmatched", []any{}, 500},
		} {
			ask, res := e.confirmed(t, ledgerAgent, collections.RecordPaymentName, tc.args)
			if got := confirmMessage(t, ask); got != "Confirm Record a payment: "+tc.preview {
				t.Errorf("%s: confirmation\n%q\nwant\n%q", tc.name, got, tc.preview)
			}
			out := decode[map[string]any](t, res)
			if out["matchedBy"] != tc.matchedBy || !cmp.Equal(out["allocations"], tc.allocations) || out["leftCents"] != tc.left {
				t.Errorf("%s: %v", tc.name, out)
			}
		}
		// A person records a payment themselves: no confirmation.
		res := e.do(clerk, modern, collections.RecordPaymentName, recordArgs("h-1", "E-D", 100000, `,"reference":"TXNF1"`))
		if out := decode[map[string]any](t, res); out["matchedBy"] != "reference" {
			t.Errorf("a person's call: %v", out)
		}
		if pay := e.ledgerInvoice(t, "NF-1"); pay.State != ledger.StatePaid {
			t.Errorf("NF-1 is %s", pay.State)
		}
	})
}

// TestRecordPaymentRefusals: bad arguments are refused naming the field before anyone is
// asked; an agent on an old client is told what it would do and nothing is recorded; a
// declined confirmation records nothing.
func TestRecordPaymentRefusals(t *testing.T) {
	eachEnv(t, func(t *testing.T, e *env) {
		e.seedLedger(t, ledgerInvoices...)
		before := e.ledgerCounts(t)
		e.refused(t, ledgerAgent, collections.RecordPaymentName, []refusal{
			{"paid tomorrow", strings.Replace(recordArgs("r-1", "E-1", 1, ""), "2026-06-30", "2026-07-02", 1), failure.InvalidArguments, "paidOn"},
			{"a date off the calendar", strings.Replace(recordArgs("r-2", "E-1", 1, ""), "2026-06-30", "2026-06-31", 1), failure.InvalidArguments, "paidOn"},
			{"cash", strings.Replace(recordArgs("r-3", "E-1", 1, ""), `"pix"`, `"cash"`, 1), failure.InvalidArguments, "method"},
			{"a lower-case currency", recordArgs("r-4", "E-1", 1, `,"currency":"brl"`), failure.InvalidArguments, "currency"},
			{"an inactive currency", recordArgs("r-5", "E-1", 1, `,"currency":"XTS"`), failure.InvalidArguments, "currency"},
			{"a transaction id with a leading space", recordArgs("r-6", " E-1", 1, ""), failure.InvalidArguments, "transactionId"},
			{"a customer id with a trailing space", recordArgs("r-7", "E-1", 1, `,"customerId":"C-1 "`), failure.InvalidArguments, "customerId"},
			{"a reference with a zero-width space", recordArgs("r-8", "E-1", 1, `,"reference":"\u200b"`), failure.InvalidArguments, "reference"},
			{"amount zero", recordArgs("r-9", "E-1", 0, ""), failure.InvalidArguments, "amountCents"},
			{"an unknown argument", recordArgs("r-10", "E-1", 1, `,"invoiceId":"NF-1"`), failure.InvalidArguments, "invoiceId"},
		})
		legacyRes := e.do(ledgerAgent, legacy, collections.RecordPaymentName, recordArgs("l-1", "E-L", 100000, `,"reference":"TXNF1"`))
		if code, _ := failed(legacyRes); code != failure.ConfirmationRequired ||
			!strings.Contains(legacyRes.Err.Message, `record a payment of R$`+"\u00a0"+`1.000,00 received on 2026-06-30 by pix, transaction "E-L", reference "TXNF1", and match it by its reference to invoice "NF-1"`) {
			t.Errorf("an agent on 2025-11-25: %v, want confirmation_required with the preview", legacyRes.Err)
		}
		args := recordArgs("d-1", "E-D", 100000, `,"reference":"TXNF1"`)
		ask := e.do(ledgerAgent, modern, collections.RecordPaymentName, args)
		decline, _ := json.Marshal(map[string]any{"action": "decline"})
		res := e.p.Do(context.Background(), pipeline.Call{Principal: ledgerAgent, RequestID: "r-2", Tool: collections.RecordPaymentName, Args: json.RawMessage(args),
			Client: modern, State: ask.State, Responses: map[string]json.RawMessage{"confirm": decline}})
		if code, _ := failed(res); code != failure.ConfirmationDeclined {
			t.Errorf("declined: %d %v, want confirmation_declined", res.Kind, res.Err)
		}
		if after := e.ledgerCounts(t); !cmp.Equal(after, before) {
			t.Errorf("after the refusals: %v, want %v (nothing recorded)", after, before)
		}
		if inv := e.ledgerInvoice(t, "NF-1"); inv.State != ledger.StateOpen {
			t.Errorf("NF-1 %s after the refusals, want open", inv.State)
		}
	})
}

// matchArgs is a match_payment call's arguments.
func matchArgs(key, paymentID, allocations string) string {
	return `{"idempotencyKey":"` + key + `","paymentId":"` + paymentID + `","allocations":` + allocations + `}`
}

// TestMatchPayment: an agent's allocation of an unmatched payment is confirmed by its person,
// shown the payment and each invoice's amount and standing after it; then made (rule manual).
// The key again answers the first answer. Each refusal names the allocation or the payment,
// before anyone is asked, and allocates nothing.
func TestMatchPayment(t *testing.T) {
	eachEnv(t, func(t *testing.T, e *env) {
		e.seedLedger(t, ledgerInvoices...)
		pay := e.seedPayment(t, ledger.PaymentRecord{Source: "ofx:341/1234", SourceRef: "FIT-9", AmountCents: 80000, PaidOn: "2026-06-30", Method: ledger.MethodTransfer})
		args := matchArgs("m-1", pay.ID, `[{"invoiceId":"NF-1","amountCents":50000},{"invoiceId":"NF-2","amountCents":30000}]`)
		ask, res := e.confirmed(t, ledgerAgent, collections.MatchPaymentName, args)
		want := "Confirm Match a payment to invoices: allocate payment " + pay.ID + ` (a payment of R$` + "\u00a0" + `800,00 received on 2026-06-30 by transfer, transaction "FIT-9", R$` + "\u00a0" + `800,00 unallocated) to ` +
			`invoice "NF-1" of customer "C-1": R$` + "\u00a0" + `500,00, leaving it partially paid with R$` + "\u00a0" + `500,00 open; ` +
			`invoice "NF-2" of customer "C-1": R$` + "\u00a0" + `300,00, leaving it partially paid with R$` + "\u00a0" + `200,00 open.`
		if got := confirmMessage(t, ask); got != want {
			t.Errorf("confirmation\n%q\nwant\n%q", got, want)
		}
		wantOut := map[string]any{"paymentId": pay.ID, "amountCents": 80000.0, "currency": "BRL", "paidOn": "2026-06-30", "leftCents": 0.0,
			"allocations": []any{
				map[string]any{"invoiceId": "NF-1", "amountCents": 50000.0, "rule": "manual", "invoiceState": "partially_paid", "invoiceOpenCents": 50000.0},
				map[string]any{"invoiceId": "NF-2", "amountCents": 30000.0, "rule": "manual", "invoiceState": "partially_paid", "invoiceOpenCents": 20000.0},
			}}
		if diff := cmp.Diff(wantOut, decode[map[string]any](t, res)); diff != "" {
			t.Errorf("confirmed (-want +got):\n%s", diff)
		}
		again := e.do(ledgerAgent, modern, collections.MatchPaymentName, args)
		if again.Kind != pipeline.Complete || !bytes.Equal(again.Structured, res.Structured) {
			t.Errorf("the key again = %d %v %s, want the first answer", again.Kind, again.Err, again.Structured)
		}

		other := e.seedPayment(t, ledger.PaymentRecord{Source: "ofx:341/1234", SourceRef: "FIT-10", AmountCents: 40000, PaidOn: "2026-06-30", Method: ledger.MethodPIX})
		before := e.ledgerCounts(t)
		unknown := "pay_" + strings.Repeat("a", len(pay.ID)-len("pay_"))
		e.refused(t, ledgerAgent, collections.MatchPaymentName, []refusal{
			{"an unknown payment", matchArgs("x-1", unknown, `[{"invoiceId":"NF-3","amountCents":1}]`), ledger.CodePaymentNotFound, "paymentId"},
			{"not a payment id", matchArgs("x-2", "NF-3", `[{"invoiceId":"NF-3","amountCents":1}]`), failure.InvalidArguments, "paymentId"},
			{"an unknown invoice", matchArgs("x-3", other.ID, `[{"invoiceId":"NF-3","amountCents":1},{"invoiceId":"NF-404","amountCents":1}]`), ledger.CodeInvoiceNotFound, "allocations[1].invoiceId"},
			{"more than the invoice has open", matchArgs("x-4", other.ID, `[{"invoiceId":"NF-2","amountCents":20001}]`), ledger.CodeAllocationRefused, "allocations"},
			{"more than the payment has left", matchArgs("x-5", other.ID, `[{"invoiceId":"NF-1","amountCents":40001}]`), ledger.CodeAllocationRefused, "allocations"},
			{"another currency", matchArgs("x-6", other.ID, `[{"invoiceId":"NF-4","amountCents":100}]`), ledger.CodeAllocationRefused, "allocations"},
			{"one invoice twice", matchArgs("x-8", other.ID, `[{"invoiceId":"NF-3","amountCents":100},{"invoiceId":"NF-3","amountCents":100}]`), failure.InvalidArguments, "allocations[1].invoiceId"},
			{"no allocations", matchArgs("x-9", other.ID, `[]`), failure.InvalidArguments, "allocations"},
			{"amount zero", matchArgs("x-10", other.ID, `[{"invoiceId":"NF-3","amountCents":0}]`), failure.InvalidArguments, "allocations[0].amountCents"},
		})
		if after := e.ledgerCounts(t); !cmp.Equal(after, before) {
			t.Errorf("after the refusals: %v, want %v (nothing allocated)", after, before)
		}
		if got := e.events(t, collections.MatchPaymentName, "ledger.payment.matched"); got["allowed"] != 1 || got["replayed"] != 1 || got["rejected "+string(ledger.CodeAllocationRefused)] != 3 {
			t.Errorf("audit events %v", got)
		}
	})
}

// TestRecordPaymentStaleConfirmation: the person confirmed that the payment pays NF-1; before
// the confirmed call runs, another payment paid NF-1. The call does not run on what the person
// no longer sees: they are asked again, shown that it would now be left unmatched, and nothing
// of the first preview is recorded.
func TestRecordPaymentStaleConfirmation(t *testing.T) {
	eachEnv(t, func(t *testing.T, e *env) {
		e.seedLedger(t, ledgerInvoices...)
		args := recordArgs("k-1", "E-1", 100000, `,"reference":"TXNF1"`)
		ask := e.do(ledgerAgent, modern, collections.RecordPaymentName, args)
		if ask.Kind != pipeline.InputRequired || !strings.Contains(confirmMessage(t, ask), `to invoice "NF-1"`) {
			t.Fatalf("first call: %d %v, want a confirmation naming NF-1", ask.Kind, ask.Err)
		}
		if res := e.do(clerk, modern, collections.RecordPaymentName, recordArgs("k-2", "E-2", 100000, `,"reference":"TXNF1"`)); res.Kind != pipeline.Complete {
			t.Fatalf("the other payment: %d %v", res.Kind, res.Err)
		}
		accept, _ := json.Marshal(map[string]any{"action": "accept", "content": map[string]any{"confirm": true}})
		res := e.p.Do(context.Background(), pipeline.Call{Principal: ledgerAgent, RequestID: "r-2", Tool: collections.RecordPaymentName, Args: json.RawMessage(args),
			Client: modern, State: ask.State, Responses: map[string]json.RawMessage{"confirm": accept}})
		if res.Kind != pipeline.InputRequired || !strings.Contains(confirmMessage(t, res), "and leave it unmatched") {
			t.Fatalf("a stale confirmation: %d %v; want to be asked again, shown it unmatched", res.Kind, res.Err)
		}
		if n := storetest.Count(t, e.db, "ledger_payment"); n != 1 {
			t.Errorf("%d payments stored, want only the other one", n)
		}
	})
}
