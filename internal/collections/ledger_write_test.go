package collections_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/cobranca/cobranca/internal/auth"
	"github.com/cobranca/cobranca/internal/collections"
	"github.com/cobranca/cobranca/internal/failure"
	"github.com/cobranca/cobranca/internal/ledger"
	"github.com/cobranca/cobranca/internal/pipeline"
	"github.com/cobranca/cobranca/internal/store"
	"github.com/cobranca/cobranca/internal/store/storetest"
)

// The ledger's writers: an agent keeping the books for ana, and ana herself.
var (
	ledgerScopes = []string{"collections:read", collections.InvoicesWriteScope, collections.PaymentsWriteScope,
		collections.PromisesWriteScope, collections.DisputesWriteScope}
	ledgerAgent = &auth.Principal{Subject: "ana", ClientID: "assistant", Actor: "ledger-bot", Kind: auth.KindAgent, Scopes: ledgerScopes}
	clerk       = &auth.Principal{Subject: "ana", ClientID: "ops-console", Kind: auth.KindHuman, Scopes: ledgerScopes}
)

// The ledger every test starts from (the clock is 2026-07-01): two invoices of C-1, one
// carrying a PIX txid, the other a free reference; one BRL and one USD invoice of C-2.
var ledgerInvoices = []ledger.InvoiceRecord{
	{InvoiceID: "NF-1", CustomerID: "C-1", CustomerName: "Padaria", AmountCents: 100000, DueDate: "2026-06-20", PixTxID: "TXNF1"},
	{InvoiceID: "NF-2", CustomerID: "C-1", CustomerName: "Padaria", AmountCents: 50000, DueDate: "2026-06-25", Reference: "PEDIDO-77"},
	{InvoiceID: "NF-3", CustomerID: "C-2", CustomerName: "Oficina", AmountCents: 30000, DueDate: "2026-07-10"},
	{InvoiceID: "NF-4", CustomerID: "C-2", CustomerName: "Oficina", AmountCents: 2000, Currency: "USD", DueDate: "2026-07-10"},
}

// seedLedger writes recs (validated) straight into the ledger.
func (e *env) seedLedger(t testing.TB, recs ...ledger.InvoiceRecord) {
	t.Helper()
	for i := range recs {
		if fe := recs[i].Validate(); fe != nil {
			t.Fatalf("fixture %d: %v", i, fe)
		}
	}
	err := e.db.InTx(context.Background(), func(ctx context.Context, tx store.Tx) error {
		_, err := ledger.UpsertInvoices(ctx, tx, recs, e.clock())
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// seedPayment records p, unmatched, as a bank file's import would before matching.
func (e *env) seedPayment(t testing.TB, p ledger.PaymentRecord) ledger.StoredPayment {
	t.Helper()
	var pay ledger.StoredPayment
	err := e.db.InTx(context.Background(), func(ctx context.Context, tx store.Tx) (err error) {
		pay, _, err = ledger.RecordPayment(ctx, tx, p, ledger.Actor{Subject: "importer"}, e.clock())
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return pay
}

func (e *env) ledgerInvoice(t testing.TB, id string) ledger.StoredInvoice {
	t.Helper()
	inv, err := ledger.GetInvoice(context.Background(), e.db, id)
	if err != nil {
		t.Fatalf("invoice %s: %v", id, err)
	}
	return inv
}

// ledgerCounts are the rows of the ledger's tables.
func (e *env) ledgerCounts(t testing.TB) map[string]int64 {
	t.Helper()
	out := map[string]int64{}
	for _, table := range []string{"ledger_invoice", "ledger_payment", "ledger_allocation", "ledger_promise", "ledger_dispute", "ledger_reference"} {
		out[table] = storetest.Count(t, e.db, table)
	}
	return out
}

// events counts the audit events named event of tool by "outcome failure_code".
func (e *env) events(t testing.TB, tool, event string) map[string]int {
	t.Helper()
	rows, err := e.db.Query(context.Background(), `SELECT outcome, failure_code FROM audit_event WHERE tool = $1 AND event = $2`, tool, event)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[string]int{}
	for rows.Next() {
		var o, c string
		if err := rows.Scan(&o, &c); err != nil {
			t.Fatal(err)
		}
		out[strings.TrimSuffix(o+" "+c, " ")]++
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// refusal is a call refused with a code on a field.
type refusal struct {
	name, args string
	code       failure.Code
	field      string
}

// refused holds each call of tool by pr to its refusal.
func (e *env) refused(t *testing.T, pr *auth.Principal, tool string, cases []refusal) {
	t.Helper()
	for _, tc := range cases {
		res := e.do(pr, modern, tool, tc.args)
		if code, field := failed(res); res.Kind != pipeline.ToolError || code != tc.code || field != tc.field {
			t.Errorf("%s %s: kind %d %v, want %s on %s", tool, tc.name, res.Kind, res.Err, tc.code, tc.field)
		}
	}
}

// TestRecordInvoices: the upsert through the tool answers its counts, is audited (unchanged
// when nothing changed), and a repeat of the key answers the first answer; a changed amount
// is written; every bad invoice is refused naming invoices[i].field, all or nothing.
func TestRecordInvoices(t *testing.T) {
	eachEnv(t, func(t *testing.T, e *env) {
		args := func(key string, invs ...string) string {
			return `{"idempotencyKey":"` + key + `","invoices":[` + strings.Join(invs, ",") + `]}`
		}
		nf1 := `{"invoiceId":"NF-1","customerId":"C-1","customerName":"Padaria","amountCents":100000,"dueDate":"2026-06-20","pixTxid":"TXNF1"}`
		nf2 := `{"invoiceId":"NF-2","customerId":"C-1","amountCents":50000,"currency":"USD","issueDate":"2026-06-01","dueDate":"2026-06-25","boletoLine":"00190.50095 40144.816069 06809.350314 3 37370000000100"}`
		nf2Amount := strings.Replace(nf2, "50000,", "50001,", 1)
		res := e.do(ledgerAgent, modern, collections.RecordInvoicesName, args("k-1", nf1, nf2))
		first := decode[map[string]any](t, res)
		if diff := cmp.Diff(map[string]any{"created": 2.0, "updated": 0.0, "unchanged": 0.0}, first); diff != "" {
			t.Errorf("first upsert (-want +got):\n%s", diff)
		}
		if inv := e.ledgerInvoice(t, "NF-2"); inv.AmountCents != 50000 || inv.Currency != "USD" || inv.State != ledger.StateOpen || inv.OpenCents != 50000 {
			t.Errorf("NF-2 stored %+v", inv)
		}
		again := e.do(ledgerAgent, modern, collections.RecordInvoicesName, args("k-1", nf1, nf2))
		if again.Kind != pipeline.Complete || !bytes.Equal(again.Structured, res.Structured) {
			t.Errorf("the key again = %d %v %s, want the first answer", again.Kind, again.Err, again.Structured)
		}
		same := e.do(ledgerAgent, modern, collections.RecordInvoicesName, args("k-2", nf1, nf2))
		if diff := cmp.Diff(map[string]any{"created": 0.0, "updated": 0.0, "unchanged": 2.0}, decode[map[string]any](t, same)); diff != "" {
			t.Errorf("the same invoices under another key (-want +got):\n%s", diff)
		}
		changed := e.do(clerk, modern, collections.RecordInvoicesName, args("k-3", nf1, nf2Amount))
		if diff := cmp.Diff(map[string]any{"created": 0.0, "updated": 1.0, "unchanged": 1.0}, decode[map[string]any](t, changed)); diff != "" {
			t.Errorf("a new amount (-want +got):\n%s", diff)
		}
		if inv := e.ledgerInvoice(t, "NF-2"); inv.AmountCents != 50001 || inv.OpenCents != 50001 {
			t.Errorf("NF-2 after the new amount: %+v", inv)
		}
		if got, want := e.events(t, collections.RecordInvoicesName, "ledger.invoices.recorded"), map[string]int{"allowed": 2, "replayed": 1, "unchanged": 1}; !cmp.Equal(got, want) {
			t.Errorf("audit events %v, want %v", got, want)
		}

		before := e.ledgerCounts(t)
		nf9 := `{"invoiceId":"NF-9","customerId":"C-9","amountCents":1,"dueDate":"2026-06-20"}`
		e.refused(t, ledgerAgent, collections.RecordInvoicesName, []refusal{
			{"a date off the calendar", args("r-1", nf9, `{"invoiceId":"NF-8","customerId":"C-9","amountCents":1,"dueDate":"2026-02-30"}`), failure.InvalidArguments, "invoices[1].dueDate"},
			{"an id with a trailing space", args("r-2", nf9, `{"invoiceId":"NF-8 ","customerId":"C-9","amountCents":1,"dueDate":"2026-06-20"}`), failure.InvalidArguments, "invoices[1].invoiceId"},
			{"a customer id with a bidi control", args("r-3", `{"invoiceId":"NF-8","customerId":"C\u202e9","amountCents":1,"dueDate":"2026-06-20"}`), failure.InvalidArguments, "invoices[0].customerId"},
			{"an invoice id twice", args("r-4", nf9, nf9), failure.InvalidArguments, "invoices[1].invoiceId"},
			{"an inactive currency", args("r-5", `{"invoiceId":"NF-8","customerId":"C-9","amountCents":1,"currency":"XTS","dueDate":"2026-06-20"}`), failure.InvalidArguments, "invoices[0].currency"},
			{"a lower-case currency", args("r-6", `{"invoiceId":"NF-8","customerId":"C-9","amountCents":1,"currency":"brl","dueDate":"2026-06-20"}`), failure.InvalidArguments, "invoices[0].currency"},
			{"issued after it is due", args("r-7", `{"invoiceId":"NF-8","customerId":"C-9","amountCents":1,"issueDate":"2026-06-21","dueDate":"2026-06-20"}`), failure.InvalidArguments, "invoices[0].issueDate"},
			{"a boleto line whose check digit fails", args("r-8", strings.Replace(nf2, "37370000000100", "37370000000101", 1)), failure.InvalidArguments, "invoices[0].boletoLine"},
			{"a txid with a dash", args("r-9", strings.Replace(nf1, "TXNF1", "TX-NF1", 1)), failure.InvalidArguments, "invoices[0].pixTxid"},
			{"amount zero", args("r-10", strings.Replace(nf9, `"amountCents":1`, `"amountCents":0`, 1)), failure.InvalidArguments, "invoices[0].amountCents"},
			{"no due date", args("r-11", `{"invoiceId":"NF-8","customerId":"C-9","amountCents":1}`), failure.InvalidArguments, "invoices[0].dueDate"},
			{"a state typed in", args("r-12", `{"invoiceId":"NF-8","customerId":"C-9","amountCents":1,"dueDate":"2026-06-20","state":"paid"}`), failure.InvalidArguments, "invoices[0].state"},
			{"no invoices", args("r-13"), failure.InvalidArguments, "invoices"},
			{"no key", `{"invoices":[` + nf9 + `]}`, failure.InvalidArguments, "idempotencyKey"},
		})
		if after := e.ledgerCounts(t); !cmp.Equal(after, before) {
			t.Errorf("after the refusals: %v, want %v (nothing written)", after, before)
		}
	})
}

// TestRecordInvoicesHasPayments: an invoice that payments were allocated to keeps its amount
// and currency: a call changing either is refused naming invoices[i] and writes nothing, not
// even the call's other invoices; its other fields may change.
func TestRecordInvoicesHasPayments(t *testing.T) {
	eachEnv(t, func(t *testing.T, e *env) {
		e.seedLedger(t, ledgerInvoices...)
		pay := e.seedPayment(t, ledger.PaymentRecord{Source: "ofx:341/1234", SourceRef: "FIT-1", AmountCents: 40000, PaidOn: "2026-06-30", Method: ledger.MethodPIX})
		err := e.db.InTx(context.Background(), func(ctx context.Context, tx store.Tx) error {
			_, err := ledger.Allocate(ctx, tx, pay.ID, []ledger.Planned{{InvoiceID: "NF-1", AmountCents: 40000}}, ledger.Actor{Subject: "ana"}, e.clock())
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		nf1 := `{"invoiceId":"NF-1","customerId":"C-1","customerName":"Padaria Nova","amountCents":100000,"dueDate":"2026-06-20","pixTxid":"TXNF1"}`
		nf5 := `{"invoiceId":"NF-5","customerId":"C-1","amountCents":700,"dueDate":"2026-06-20"}`
		for _, tc := range []struct{ name, nf1, field string }{
			{"a new amount", strings.Replace(nf1, "100000", "90000", 1), "invoices[1].amountCents"},
			{"a new currency", strings.Replace(nf1, `"dueDate"`, `"currency":"EUR","dueDate"`, 1), "invoices[1].currency"},
		} {
			res := e.do(ledgerAgent, modern, collections.RecordInvoicesName, `{"idempotencyKey":"`+tc.name+`","invoices":[`+nf5+`,`+tc.nf1+`]}`)
			if code, field := failed(res); res.Kind != pipeline.ToolError || code != ledger.CodeInvoiceHasPayments || field != tc.field {
				t.Errorf("%s: kind %d %v, want %s on %s", tc.name, res.Kind, res.Err, ledger.CodeInvoiceHasPayments, tc.field)
			}
		}
		if _, err := ledger.GetInvoice(context.Background(), e.db, "NF-5"); err == nil {
			t.Error("NF-5 was written by a refused call")
		}
		res := e.do(ledgerAgent, modern, collections.RecordInvoicesName, `{"idempotencyKey":"name","invoices":[`+nf1+`]}`)
		if diff := cmp.Diff(map[string]any{"created": 0.0, "updated": 1.0, "unchanged": 0.0}, decode[map[string]any](t, res)); diff != "" {
			t.Errorf("a new customer name (-want +got):\n%s", diff)
		}
		if inv := e.ledgerInvoice(t, "NF-1"); inv.CustomerName != "Padaria Nova" || inv.State != ledger.StatePartiallyPaid || inv.OpenCents != 60000 {
			t.Errorf("NF-1 after its new name: %+v", inv)
		}
		if got := e.events(t, collections.RecordInvoicesName, "ledger.invoices.recorded"); got["rejected "+string(ledger.CodeInvoiceHasPayments)] != 2 {
			t.Errorf("audit events %v, want the two refusals", got)
		}
	})
}

// TestRecordInvoicesMax: a call of MaxRecordInvoices invoices is taken and each of them
// checked — the last one's bad date is refused naming invoices[9999] —, one more is refused by
// the schema, naming invoices; neither writes anything. The arguments are refused before the
// store is reached, so the fast tier checks them on SQLite only; the full tier on both, and
// writes the largest call whole.
func TestRecordInvoicesMax(t *testing.T) {
	eachEnv(t, func(t *testing.T, e *env) {
		if testing.Short() && e.db.Dialect() == store.Postgres {
			t.Skip("short: the arguments' limits are checked on SQLite (go test without -short runs both)")
		}
		invoices := func(n int) string {
			var b strings.Builder
			b.WriteString(`{"idempotencyKey":"max-` + fmt.Sprint(n) + `","invoices":[`)
			for i := range n {
				if i > 0 {
					b.WriteByte(',')
				}
				due := "2026-06-20"
				if i == collections.MaxRecordInvoices-1 {
					due = "2026-06-31"
				}
				fmt.Fprintf(&b, `{"invoiceId":"N%d","customerId":"C-%d","amountCents":%d,"dueDate":%q}`, i, i%50, 100+i, due)
			}
			return b.String() + `]}`
		}
		for _, tc := range []struct {
			n     int
			field string
		}{
			{collections.MaxRecordInvoices, fmt.Sprintf("invoices[%d].dueDate", collections.MaxRecordInvoices-1)},
			{collections.MaxRecordInvoices + 1, "invoices"},
		} {
			res := e.do(ledgerAgent, modern, collections.RecordInvoicesName, invoices(tc.n))
			if code, field := failed(res); code != failure.InvalidArguments || field != tc.field {
				t.Errorf("%d invoices: %v, want invalid_arguments on %s", tc.n, res.Err, tc.field)
			}
		}
		if n := storetest.Count(t, e.db, "ledger_invoice"); n != 0 {
			t.Errorf("%d invoices stored", n)
		}
		// The most a call may carry is written, whole, within the pipeline's
		// transaction timeout (a quadratic upsert once overran it on SQLite).
		if testing.Short() {
			return
		}
		full := strings.Replace(invoices(collections.MaxRecordInvoices), `"2026-06-31"`, `"2026-06-30"`, 1)
		full = strings.Replace(full, `"max-`, `"full-`, 1)
		res := e.do(ledgerAgent, modern, collections.RecordInvoicesName, full)
		var out struct{ Created, Updated, Unchanged int }
		if res.Kind != pipeline.Complete || json.Unmarshal(res.Structured, &out) != nil || out.Created != collections.MaxRecordInvoices {
			t.Fatalf("%d invoices: %d %v %s, want all created", collections.MaxRecordInvoices, res.Kind, res.Err, res.Structured)
		}
		if n := storetest.Count(t, e.db, "ledger_invoice"); n != int64(collections.MaxRecordInvoices) {
			t.Errorf("%d invoices stored, want %d", n, collections.MaxRecordInvoices)
		}
	})
}
