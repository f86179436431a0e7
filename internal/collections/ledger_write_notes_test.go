package collections_test

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/cobranca/cobranca/internal/collections"
	"github.com/cobranca/cobranca/internal/failure"
	"github.com/cobranca/cobranca/internal/ledger"
	"github.com/cobranca/cobranca/internal/store/storetest"
)

// TestRecordPromise: a promise becomes the invoice's; the same one again changes nothing
// (audited unchanged); another replaces it. Refused: a date before today, more than is open,
// a settled invoice, an unknown one, a channel not listed.
func TestRecordPromise(t *testing.T) {
	eachEnv(t, func(t *testing.T, e *env) {
		e.seedLedger(t, ledgerInvoices...)
		args := `{"idempotencyKey":"p-1","invoiceId":"NF-1","amountCents":60000,"promisedFor":"2026-07-10","channel":"phone","note":"paga dia 10"}`
		res := e.do(ledgerAgent, modern, collections.RecordPromiseName, args)
		out := decode[map[string]any](t, res)
		id, _ := out["promiseId"].(string)
		want := map[string]any{"promiseId": id, "invoiceId": "NF-1", "amountCents": 60000.0, "currency": "BRL", "promisedFor": "2026-07-10",
			"channel": "phone", "recorded": true, "recordedAt": "2026-07-01T12:00:00Z"}
		if diff := cmp.Diff(want, out); diff != "" || id == "" {
			t.Errorf("record_promise (-want +got):\n%s", diff)
		}
		inv := e.ledgerInvoice(t, "NF-1")
		if inv.Promise == nil || inv.Promise.ID != id || inv.Promise.By != (ledger.Actor{Subject: "ana", Actor: "ledger-bot"}) || inv.Promise.Note != "paga dia 10" || !inv.PromisePending("2026-07-01") {
			t.Errorf("NF-1's promise %+v", inv.Promise)
		}
		same := e.do(ledgerAgent, modern, collections.RecordPromiseName, strings.Replace(args, "p-1", "p-2", 1))
		want["recorded"] = false
		if diff := cmp.Diff(want, decode[map[string]any](t, same)); diff != "" {
			t.Errorf("the same promise again (-want +got):\n%s", diff)
		}
		newer := e.do(clerk, modern, collections.RecordPromiseName, strings.Replace(strings.Replace(args, "p-1", "p-3", 1), "2026-07-10", "2026-07-15", 1))
		if out := decode[map[string]any](t, newer); out["recorded"] != true || out["promiseId"] == id {
			t.Errorf("another promise: %v", out)
		}
		if inv := e.ledgerInvoice(t, "NF-1"); inv.Promise == nil || inv.Promise.PromisedFor != "2026-07-15" || inv.Promise.By.Actor != "" {
			t.Errorf("NF-1's promise after another %+v", inv.Promise)
		}
		if got := e.events(t, collections.RecordPromiseName, "ledger.promise.recorded"); got["allowed"] != 2 || got["unchanged"] != 1 {
			t.Errorf("audit events %v", got)
		}

		e.do(clerk, modern, collections.RecordPaymentName, recordArgs("pay", "E-3", 30000, `,"customerId":"C-2"`)) // NF-3 paid
		promise := func(key, invoice string, cents int, date, extra string) string {
			return fmt.Sprintf(`{"idempotencyKey":%q,"invoiceId":%q,"amountCents":%d,"promisedFor":%q,"channel":"email"%s}`, key, invoice, cents, date, extra)
		}
		before := e.ledgerCounts(t)
		e.refused(t, ledgerAgent, collections.RecordPromiseName, []refusal{
			{"yesterday", promise("x-1", "NF-2", 1, "2026-06-30", ""), failure.InvalidArguments, "promisedFor"},
			{"off the calendar", promise("x-2", "NF-2", 1, "2026-09-31", ""), failure.InvalidArguments, "promisedFor"},
			{"more than is open", promise("x-3", "NF-2", 50001, "2026-07-02", ""), failure.InvalidArguments, "amountCents"},
			{"a paid invoice", promise("x-4", "NF-3", 1, "2026-07-02", ""), ledger.CodeInvoiceSettled, "invoiceId"},
			{"an unknown invoice", promise("x-5", "NF-404", 1, "2026-07-02", ""), ledger.CodeInvoiceNotFound, "invoiceId"},
			{"a fax", strings.Replace(promise("x-6", "NF-2", 1, "2026-07-02", ""), "email", "fax", 1), failure.InvalidArguments, "channel"},
			{"a note with a control character", promise("x-7", "NF-2", 1, "2026-07-02", `,"note":"a\u0007b"`), failure.InvalidArguments, "note"},
			{"an invoice id with a leading space", promise("x-8", " NF-2", 1, "2026-07-02", ""), failure.InvalidArguments, "invoiceId"},
		})
		if after := e.ledgerCounts(t); !cmp.Equal(after, before) {
			t.Errorf("after the refusals: %v, want %v", after, before)
		}
	})
}

// TestDisputes: a dispute opened on an invoice is its open dispute; a second is refused
// dispute_open; resolving it closes it with its outcome; resolving again is refused
// dispute_not_found; each refusal names the field and changes nothing.
func TestDisputes(t *testing.T) {
	eachEnv(t, func(t *testing.T, e *env) {
		e.seedLedger(t, ledgerInvoices...)
		open := `{"idempotencyKey":"d-1","invoiceId":"NF-2","reason":"damaged_or_defective","note":"chegou quebrado"}`
		res := e.do(ledgerAgent, modern, collections.OpenDisputeName, open)
		out := decode[map[string]any](t, res)
		id, _ := out["disputeId"].(string)
		if diff := cmp.Diff(map[string]any{"disputeId": id, "invoiceId": "NF-2", "reason": "damaged_or_defective", "openedAt": "2026-07-01T12:00:00Z"}, out); diff != "" || id == "" {
			t.Errorf("open_dispute (-want +got):\n%s", diff)
		}
		if inv := e.ledgerInvoice(t, "NF-2"); inv.Dispute == nil || inv.Dispute.ID != id || inv.Dispute.Note != "chegou quebrado" || inv.Dispute.OpenedBy.Actor != "ledger-bot" {
			t.Errorf("NF-2's dispute %+v", inv.Dispute)
		}
		again := e.do(ledgerAgent, modern, collections.OpenDisputeName, open)
		if !bytes.Equal(again.Structured, res.Structured) {
			t.Errorf("the key again: %s, want the first answer", again.Structured)
		}
		resolve := `{"idempotencyKey":"d-2","invoiceId":"NF-2","outcome":"rejected","note":"foto mostra produto inteiro"}`
		e.refused(t, ledgerAgent, collections.OpenDisputeName, []refusal{
			{"a second dispute", strings.Replace(open, "d-1", "d-9", 1), ledger.CodeDisputeOpen, "invoiceId"},
			{"an unknown invoice", `{"idempotencyKey":"d-10","invoiceId":"NF-404","reason":"other","note":"x"}`, ledger.CodeInvoiceNotFound, "invoiceId"},
			{"a reason not listed", `{"idempotencyKey":"d-11","invoiceId":"NF-1","reason":"too_expensive","note":"x"}`, failure.InvalidArguments, "reason"},
			{"no note", `{"idempotencyKey":"d-12","invoiceId":"NF-1","reason":"other"}`, failure.InvalidArguments, "note"},
			{"a blank note", `{"idempotencyKey":"d-13","invoiceId":"NF-1","reason":"other","note":"\u00a0"}`, failure.InvalidArguments, "note"},
		})
		e.refused(t, ledgerAgent, collections.ResolveDisputeName, []refusal{
			{"an outcome not listed", strings.Replace(resolve, "rejected", "dropped", 1), failure.InvalidArguments, "outcome"},
			{"no open dispute", `{"idempotencyKey":"d-14","invoiceId":"NF-1","outcome":"upheld","note":"x"}`, ledger.CodeNoOpenDispute, "invoiceId"},
			{"an unknown invoice", `{"idempotencyKey":"d-15","invoiceId":"NF-404","outcome":"upheld","note":"x"}`, ledger.CodeInvoiceNotFound, "invoiceId"},
		})
		res = e.do(clerk, modern, collections.ResolveDisputeName, resolve)
		out = decode[map[string]any](t, res)
		if diff := cmp.Diff(map[string]any{"disputeId": id, "invoiceId": "NF-2", "reason": "damaged_or_defective", "openedAt": "2026-07-01T12:00:00Z",
			"outcome": "rejected", "resolvedAt": "2026-07-01T12:00:00Z"}, out); diff != "" {
			t.Errorf("resolve_dispute (-want +got):\n%s", diff)
		}
		if inv := e.ledgerInvoice(t, "NF-2"); inv.Dispute != nil {
			t.Errorf("NF-2 still has an open dispute: %+v", inv.Dispute)
		}
		e.refused(t, ledgerAgent, collections.ResolveDisputeName, []refusal{
			{"resolved already", strings.Replace(resolve, "d-2", "d-3", 1), ledger.CodeNoOpenDispute, "invoiceId"},
		})
		if got := e.events(t, collections.OpenDisputeName, "ledger.dispute.opened"); got["allowed"] != 1 || got["replayed"] != 1 || got["rejected "+string(ledger.CodeDisputeOpen)] != 1 {
			t.Errorf("open_dispute audit events %v", got)
		}
		if got := e.events(t, collections.ResolveDisputeName, "ledger.dispute.resolved"); got["allowed"] != 1 || got["rejected "+string(ledger.CodeNoOpenDispute)] != 2 {
			t.Errorf("resolve_dispute audit events %v", got)
		}
		if n := storetest.Count(t, e.db, "ledger_dispute"); n != 1 {
			t.Errorf("%d disputes stored, want 1", n)
		}
	})
}
