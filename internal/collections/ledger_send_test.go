package collections_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/cobranca/cobranca/internal/approval"
	"github.com/cobranca/cobranca/internal/auth"
	"github.com/cobranca/cobranca/internal/bankfile"
	"github.com/cobranca/cobranca/internal/collections"
	"github.com/cobranca/cobranca/internal/customers"
	"github.com/cobranca/cobranca/internal/failure"
	"github.com/cobranca/cobranca/internal/ledger"
	"github.com/cobranca/cobranca/internal/pipeline"
	"github.com/cobranca/cobranca/internal/pipeline/pipelinetest"
	"github.com/cobranca/cobranca/internal/reminders"
	"github.com/cobranca/cobranca/internal/store"
	"github.com/cobranca/cobranca/internal/store/storetest"
)

// bookkeeper is who records the ledger's bank file imports in these tests; clerkAgent the agent
// that records payments (confirmed in band by its person), promises and disputes through the
// ledger's tools.
var (
	bookkeeper = ledger.Actor{Subject: "carla"}
	clerkAgent = &auth.Principal{Subject: "ana", ClientID: "ledger-clerk", Actor: "ledger-clerk", Kind: auth.KindAgent,
		Scopes: []string{collections.PaymentsWriteScope, collections.PromisesWriteScope, collections.DisputesWriteScope}}
)

// invoices stores recs in the ledger, as an import does.
func (e *env) invoices(t testing.TB, recs ...ledger.InvoiceRecord) {
	t.Helper()
	for i := range recs {
		if fe := recs[i].Validate(); fe != nil {
			t.Fatalf("invoice %d: %v", i, fe)
		}
	}
	if err := e.db.InTx(context.Background(), func(ctx context.Context, tx store.Tx) error {
		_, err := ledger.UpsertInvoices(ctx, tx, recs, e.clock())
		return err
	}); err != nil {
		t.Fatal(err)
	}
}

// importPayments records and matches ps in one transaction, as `cobranca payments import` does.
func (e *env) importPayments(t testing.TB, ps ...ledger.PaymentRecord) ledger.ImportCounts {
	t.Helper()
	var counts ledger.ImportCounts
	if err := e.db.InTx(context.Background(), func(ctx context.Context, tx store.Tx) error {
		var err error
		counts, err = ledger.ImportPayments(ctx, tx, ps, bookkeeper, e.clock())
		return err
	}); err != nil {
		t.Fatal(err)
	}
	return counts
}

// inLedger is a ledger invoice of customer, amount and due date, paid by boleto with our number.
func inLedger(id, customer string, cents int64, due, ourNumber string) ledger.InvoiceRecord {
	return ledger.InvoiceRecord{InvoiceID: id, CustomerID: customer, CustomerName: "Cliente " + customer, AmountCents: cents,
		Currency: "BRL", IssueDate: "2026-05-01", DueDate: due, OurNumber: ourNumber}
}

// cnabPayments are the payments of internal/cnab's CNAB 240 return file (Itaú, 341), read as
// `cobranca payments import` reads it (internal/bankfile): its settled titles, the bank's nosso
// número the reference.
func cnabPayments(t testing.TB) []ledger.PaymentRecord {
	t.Helper()
	f, err := os.Open("../cnab/testdata/retorno-341.ret")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	file, err := bankfile.Read(f, bankfile.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if file.Format != bankfile.CNAB240 || len(file.Payments) == 0 {
		t.Fatalf("the CNAB file read as %s with %d payments, want CNAB 240 settling titles", file.Format, len(file.Payments))
	}
	return file.Payments
}

// prepareFromLedger is the agent's prepare_reminder citing ledger invoices by id.
func (e *env) prepareFromLedger(t testing.TB, key, customer, email string, ids ...string) preparedLedger {
	t.Helper()
	args := map[string]any{"customer": map[string]any{"id": customer, "name": "Cliente " + customer, "email": email},
		"invoiceIds": ids, "tone": "friendly", "idempotencyKey": key}
	return decode[preparedLedger](t, e.call(writer, collections.PrepareReminderName, args))
}

// refusedSends counts the audited refusals of send_reminder, by failure code.
func (e *env) refusedSends(t testing.TB) map[string]int {
	t.Helper()
	rows, err := e.db.Query(context.Background(), `SELECT failure_code, COUNT(*) FROM audit_event
WHERE event = 'email.external.sent' AND outcome = 'rejected' GROUP BY failure_code`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[string]int{}
	for rows.Next() {
		var code string
		var n int64
		if err := rows.Scan(&code, &n); err != nil {
			t.Fatal(err)
		}
		out[code] = int(n)
	}
	return out
}

// TestPaidInvoiceNeverChased: a reminder prepared from the ledger waits for its approval;
// meanwhile the ledger changes — a CNAB 240 return file paying it is imported; an agent records
// the payment (collections.record_payment, confirmed in band by its person, matched by its
// reference); an agent opens a dispute (open_dispute); an agent records a promise to pay
// (record_promise). The approved retry is refused (invoice_settled, or draft_stale naming the
// invoice and why), the outbox holds nothing, the draft stays a draft, and the refusal is
// audited. Without a change, the same flow sends.
func TestPaidInvoiceNeverChased(t *testing.T) {
	storetest.Each(t, pg, func(t *testing.T, db store.DB) {
		e := newSendEnv(t, db)
		ctx := context.Background()
		for i, tc := range []struct {
			name   string
			change func(inv ledger.InvoiceRecord)
			code   failure.Code
			why    string
		}{
			{"unchanged", nil, "", ""},
			{"cnab 240 payment imported", func(inv ledger.InvoiceRecord) {
				if c := e.importPayments(t, cnabPayments(t)...); c.MatchedReference != 1 {
					t.Fatalf("import = %+v, want the invoice's title matched by reference", c)
				}
			}, ledger.CodeInvoiceSettled, "paid"},
			{"agent payment confirmed in band", func(inv ledger.InvoiceRecord) {
				args := fmt.Sprintf(`{"idempotencyKey":"rp-%s","transactionId":"E-%s","amountCents":%d,"paidOn":"2026-07-01","method":"pix","reference":%q}`,
					inv.InvoiceID, inv.InvoiceID, inv.AmountCents, inv.OurNumber)
				if _, done := e.confirmed(t, clerkAgent, collections.RecordPaymentName, args); done.Kind != pipeline.Complete {
					t.Fatalf("record_payment, confirmed: %v %v", done.Kind, done.Err)
				}
			}, ledger.CodeInvoiceSettled, "paid"},
			{"dispute opened", func(inv ledger.InvoiceRecord) {
				args := fmt.Sprintf(`{"idempotencyKey":"od-%s","invoiceId":%q,"reason":"not_received","note":"não recebeu"}`, inv.InvoiceID, inv.InvoiceID)
				if res := e.do(clerkAgent, modern, collections.OpenDisputeName, args); res.Kind != pipeline.Complete {
					t.Fatalf("open_dispute: %v %v", res.Kind, res.Err)
				}
			}, ledger.CodeDraftStale, "disputed"},
			{"promise recorded", func(inv ledger.InvoiceRecord) {
				args := fmt.Sprintf(`{"idempotencyKey":"pr-%s","invoiceId":%q,"amountCents":%d,"promisedFor":"2026-07-10","channel":"phone"}`,
					inv.InvoiceID, inv.InvoiceID, inv.AmountCents)
				if res := e.do(clerkAgent, modern, collections.RecordPromiseName, args); res.Kind != pipeline.Complete {
					t.Fatalf("record_promise: %v %v", res.Kind, res.Err)
				}
			}, ledger.CodeDraftStale, "promise to pay on 2026-07-10"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				cust := fmt.Sprintf("C-%d", i)
				inv := inLedger(fmt.Sprintf("NF-%d", i), cust, 150000, "2026-11-20", fmt.Sprintf("9900%d", i))
				if tc.name == "cnab 240 payment imported" {
					// The CNAB file's first settled title: nosso número 00012345, R$ 1.500,00 due
					// 2026-11-20, paid with interest (the rest is credit).
					inv = inLedger("NF-1001", cust, 150000, "2026-11-20", "00012345")
				}
				e.invoices(t, inv)
				p := e.prepareFromLedger(t, "p-"+tc.name, cust, fmt.Sprintf("c%d@example.com", i), inv.InvoiceID)
				jobs, refused := e.jobs(t), e.refusedSends(t)
				ask := e.asked(t, urlClient, p.DraftID, "k-"+tc.name)
				a, err := e.approvals.Get(ctx, e.db, ask.ID)
				if err != nil {
					t.Fatal(err)
				}
				if want := `- "` + inv.InvoiceID + `" due 2026-11-20, R$` + "\u00a0" + `1.500,00 — ledger: open, R$` + "\u00a0" + `1.500,00 open`; !strings.Contains(a.Preview, want) {
					t.Errorf("the approval's preview lacks %q:\n%s", want, a.Preview)
				}
				e.approve(t, ask.ID)
				if tc.change != nil {
					tc.change(inv)
				}
				res := e.sendCall(sender, urlClient, p.DraftID, "k-"+tc.name, ask)
				if tc.code == "" {
					if res.Kind != pipeline.Complete || e.jobs(t) != jobs+1 {
						t.Fatalf("the unchanged invoice's send = %v %v, %d new entries; want it queued", res.Kind, res.Err, e.jobs(t)-jobs)
					}
					return
				}
				if code, field := failed(res); code != tc.code || field != "draftId" || !strings.Contains(res.Err.Message, `invoice "`+inv.InvoiceID+`": `+tc.why) {
					t.Fatalf("the approved send after the change = %v %v, want %s naming the invoice, %q", res.Kind, res.Err, tc.code, tc.why)
				}
				if e.jobs(t) != jobs || e.draftNow(t, p.DraftID).State != reminders.Draft {
					t.Errorf("refused, yet %d new outbox entries, draft %s; want none, draft", e.jobs(t)-jobs, e.draftNow(t, p.DraftID).State)
				}
				if got := e.refusedSends(t); got[string(tc.code)] != refused[string(tc.code)]+1 {
					t.Errorf("audited refusals %v, before %v: want one more %s", got, refused, tc.code)
				}
				if st := e.approvalState(t, ask.ID); st != approval.Approved {
					t.Errorf("the refused call's approval is %s, want approved (not used)", st)
				}
			})
		}
	})
}

// TestBulkSkipsPaidInvoices: 200 drafts, each about one invoice of the ledger; a bulk send of
// all of them is dry-run and approved; meanwhile 37 of the invoices are paid (a bank file
// import). The approved call is refused plan_changed — nothing queued, the refusal audited —;
// the new dry run skips exactly those 37 (skipped.settled, a warning), and its approved call
// queues the other 163: no draft of a paid invoice leaves, all of them stay drafts.
func TestBulkSkipsPaidInvoices(t *testing.T) {
	storetest.Each(t, pg, func(t *testing.T, db store.DB) {
		e := newSendEnv(t, db)
		const n, paid = 200, 37
		var recs []ledger.InvoiceRecord
		var ids []string
		byInvoice := map[string]string{} // invoice → draft
		for c := range 20 {
			id := fmt.Sprintf("B-%02d", c)
			e.customer(t, customers.Record{ID: id, Name: "Cliente " + id, Email: fmt.Sprintf("b%02d@clientes.example", c)})
			for k := range n / 20 {
				inv := fmt.Sprintf("NF-%03d", c*10+k)
				recs = append(recs, inLedger(inv, id, 123456, "2026-06-01", fmt.Sprintf("77%06d", c*10+k)))
				d := e.bulkDraft(t, id, inv, "2026-06-01", reminders.Friendly)
				ids = append(ids, d.ID)
				byInvoice[inv] = d.ID
			}
		}
		e.invoices(t, recs...)
		sel := map[string]any{"draftIds": ids}
		dr := e.dry(t, sender, sel)
		if dr.RecipientCount != n || dr.Skipped["settled"] != 0 {
			t.Fatalf("dry run: %d recipients, skipped %v; want %d, none", dr.RecipientCount, dr.Skipped, n)
		}
		ask := pipelinetest.AskedOf(t, e.bulkCall(urlClient, sel, dr.PlanHash, "k-1", pipelinetest.Asked{}), urlClient)
		e.approve(t, ask.ID)
		// Every 5th invoice and then some: 37 of them, paid by reference.
		var payments []ledger.PaymentRecord
		paidDrafts := map[string]bool{}
		for i := 0; len(payments) < paid; i += 5 {
			r := recs[(i*7)%n]
			if paidDrafts[byInvoice[r.InvoiceID]] {
				continue
			}
			paidDrafts[byInvoice[r.InvoiceID]] = true
			payments = append(payments, ledger.PaymentRecord{Source: "cnab240:341", SourceRef: r.OurNumber + "/2026-06-30", AmountCents: r.AmountCents,
				Currency: "BRL", PaidOn: "2026-06-30", Method: ledger.MethodBoleto, Reference: r.OurNumber})
		}
		if c := e.importPayments(t, payments...); c.MatchedReference != paid {
			t.Fatalf("import = %+v, want %d matched by reference", c, paid)
		}
		res := e.bulkCall(urlClient, sel, dr.PlanHash, "k-1", ask)
		if code, field := failed(res); code != failure.PlanChanged || field != "planHash" || !strings.Contains(res.Err.Message, "ledger") {
			t.Fatalf("the approved bulk after the payments = %v %v, want plan_changed", res.Kind, res.Err)
		}
		if e.jobs(t) != 0 || e.draftStates(t)["draft"] != n {
			t.Fatalf("refused, yet %d entries, drafts %v", e.jobs(t), e.draftStates(t))
		}
		var audited int64
		if err := e.db.QueryRow(context.Background(), `SELECT COUNT(*) FROM audit_event
WHERE event = 'email.external.bulk_sent' AND outcome = 'rejected' AND failure_code = 'plan_changed'`).Scan(&audited); err != nil || audited != 1 {
			t.Errorf("%d audited plan_changed refusals (%v), want 1", audited, err)
		}
		again := e.dry(t, sender, sel)
		if again.RecipientCount != n-paid || again.Skipped["settled"] != paid || !slices.ContainsFunc(again.Warnings, func(w string) bool {
			return strings.Contains(w, fmt.Sprintf("%d drafts name an invoice the ledger says is paid, void or written off", paid))
		}) {
			t.Fatalf("the new dry run: %d recipients, skipped %v, warnings %q; want %d, %d settled, a warning", again.RecipientCount, again.Skipped, again.Warnings, n-paid, paid)
		}
		ask2 := pipelinetest.AskedOf(t, e.bulkCall(urlClient, sel, again.PlanHash, "k-2", pipelinetest.Asked{}), urlClient)
		e.approve(t, ask2.ID)
		got := decode[bulkSent](t, e.bulkCall(urlClient, sel, again.PlanHash, "k-2", ask2))
		if got.Queued != n-paid || got.Skipped["settled"] != paid {
			t.Fatalf("the bulk send = %+v, want %d queued, %d settled skipped", got, n-paid, paid)
		}
		if e.jobs(t) != n-paid {
			t.Errorf("%d outbox entries, want %d", e.jobs(t), n-paid)
		}
		for _, id := range ids {
			d := e.draftNow(t, id)
			if paidDrafts[id] != (d.State == reminders.Draft) {
				t.Errorf("draft %s (paid %v) is %s", id, paidDrafts[id], d.State)
			}
		}
	})
}

// preparedLedger is prepare_reminder's answer, with the invoices the ledger does not know.
type preparedLedger struct {
	DraftID     string   `json:"draftId"`
	Created     bool     `json:"created"`
	NotInLedger []string `json:"notInLedger"`
}

// TestPrepareReminderFromLedger: invoiceIds takes each invoice's due date and open amount from
// the ledger (a partly paid one, what is left); an id the ledger does not know is refused
// invoice_not_found, a paid or void one invoice_settled, another customer's invalid_arguments,
// each naming invoiceIds[i], and nothing is written. Supplied invoices are checked too: a
// settled one is refused; one the ledger does not know is answered in notInLedger.
func TestPrepareReminderFromLedger(t *testing.T) {
	eachEnv(t, func(t *testing.T, e *env) {
		e.invoices(t, inLedger("NF-1", "C-1", 100000, "2026-06-10", "1"), inLedger("NF-2", "C-1", 50000, "2026-05-20", "2"),
			inLedger("NF-3", "C-1", 70000, "2026-06-01", "3"), inLedger("NF-9", "C-9", 70000, "2026-06-01", "9"))
		void := inLedger("NF-4", "C-1", 70000, "2026-06-01", "4")
		void.Void = true
		e.invoices(t, void)
		e.importPayments(t, ledger.PaymentRecord{Source: "csv:test", SourceRef: "1", AmountCents: 30000, Currency: "BRL", PaidOn: "2026-06-05",
			Method: ledger.MethodPIX, Reference: "1"}, ledger.PaymentRecord{Source: "csv:test", SourceRef: "3", AmountCents: 70000, Currency: "BRL",
			PaidOn: "2026-06-05", Method: ledger.MethodPIX, Reference: "3"})
		p := e.prepareFromLedger(t, "k-1", "C-1", "c1@example.com", "NF-1", "NF-2")
		d, err := reminders.Get(context.Background(), e.db, p.DraftID)
		if err != nil {
			t.Fatal(err)
		}
		want := []reminders.Invoice{{ID: "NF-1", DueDate: "2026-06-10", AmountCents: 70000}, {ID: "NF-2", DueDate: "2026-05-20", AmountCents: 50000}}
		if diff := cmp.Diff(want, d.Invoices); diff != "" || d.TotalCents != 120000 {
			t.Errorf("the draft's invoices (-want +got):\n%s total %d", diff, d.TotalCents)
		}
		before := drafts(t, e.db)
		for _, tc := range []struct {
			ids   []string
			code  failure.Code
			field string
		}{
			{[]string{"NF-1", "NF-404"}, ledger.CodeInvoiceNotFound, "invoiceIds[1]"},
			{[]string{"NF-3"}, ledger.CodeInvoiceSettled, "invoiceIds[0]"},
			{[]string{"NF-2", "NF-4"}, ledger.CodeInvoiceSettled, "invoiceIds[1]"},
			{[]string{"NF-9"}, failure.InvalidArguments, "invoiceIds[0]"},
			{[]string{"NF-1", "NF-1"}, failure.InvalidArguments, "invoiceIds"},
			{[]string{" NF-1"}, failure.InvalidArguments, "invoiceIds[0]"},
		} {
			args := map[string]any{"customer": map[string]any{"id": "C-1", "name": "Cliente C-1", "email": "c1@example.com"},
				"invoiceIds": tc.ids, "tone": "firm", "idempotencyKey": "k-" + strings.Join(tc.ids, ",")}
			res := e.call(writer, collections.PrepareReminderName, args)
			if code, field := failed(res); code != tc.code || field != tc.field {
				t.Errorf("invoiceIds %q: %v %v, want %s on %s", tc.ids, res.Kind, res.Err, tc.code, tc.field)
			}
		}
		both := map[string]any{"customer": map[string]any{"id": "C-1", "name": "Cliente C-1", "email": "c1@example.com"}, "invoiceIds": []string{"NF-1"},
			"invoices": []any{map[string]any{"id": "NF-1", "dueDate": "2026-06-10", "amountCents": 70000}}, "tone": "firm", "idempotencyKey": "k-both"}
		if code, _ := failed(e.call(writer, collections.PrepareReminderName, both)); code != failure.InvalidArguments {
			t.Errorf("invoices and invoiceIds both: %s, want invalid_arguments", code)
		}
		supplied := func(key string, invs ...map[string]any) pipeline.Result {
			return e.call(writer, collections.PrepareReminderName, map[string]any{"customer": map[string]any{"id": "C-1", "name": "Cliente C-1", "email": "c1@example.com"},
				"invoices": invs, "tone": "firm", "idempotencyKey": key})
		}
		if code, field := failed(supplied("k-s1", map[string]any{"id": "NF-3", "dueDate": "2026-06-01", "amountCents": 70000})); code != ledger.CodeInvoiceSettled || field != "invoices[0].id" {
			t.Errorf("a supplied paid invoice: %s on %s, want invoice_settled on invoices[0].id", code, field)
		}
		if drafts(t, e.db) != before {
			t.Errorf("%d drafts after the refusals, want %d", drafts(t, e.db), before)
		}
		got := decode[preparedLedger](t, supplied("k-s2", map[string]any{"id": "NF-2", "dueDate": "2026-05-20", "amountCents": 50000},
			map[string]any{"id": "X-77", "dueDate": "2026-05-20", "amountCents": 990}))
		if !got.Created || !slices.Equal(got.NotInLedger, []string{"X-77"}) {
			t.Errorf("supplied invoices, one unknown to the ledger: %+v, want created, notInLedger [X-77]", got)
		}
	})
}

// requireLedger serves e's tools again as COBRANCA_LEDGER_REQUIRED=true does.
func (e *sendEnv) requireLedger(t *testing.T) {
	t.Helper()
	e.serve(t, collections.Settings{LedgerRequired: true})
}

// serve serves e's tools again under the settings set.
func (e *sendEnv) serve(t *testing.T, set collections.Settings) {
	t.Helper()
	tools, err := collections.Tools(set)
	if err != nil {
		t.Fatal(err)
	}
	send, err := collections.SendTools(set, e.mail)
	if err != nil {
		t.Fatal(err)
	}
	opts := e.opts
	opts.Tools = append(tools, send...)
	if e.p, err = pipeline.New(opts); err != nil {
		t.Fatal(err)
	}
}

// TestLedgerRequired: an invoice the ledger does not know is marked "not in the ledger —
// payment cannot be checked" in the send's preview and sent unchecked; with
// COBRANCA_LEDGER_REQUIRED=true, prepare_reminder refuses it (invoice_not_found on
// invoices[i].id), send_reminder refuses a draft naming it before anyone is asked, and a bulk
// send skips such a draft (skipped.notInLedger, a warning).
func TestLedgerRequired(t *testing.T) {
	storetest.Each(t, pg, func(t *testing.T, db store.DB) {
		e := newSendEnv(t, db)
		ctx := context.Background()
		e.customer(t, customers.Record{ID: "C-1", Name: "Oficina", Email: "oficina@example.com"})
		e.invoices(t, inLedger("NF-2", "C-1", 123456, "2026-11-01", "2"))
		d := e.draft(t, "C-1", "Oficina", "NF-1") // not in the ledger
		known := e.draft(t, "C-1", "Oficina", "NF-2")
		ask := e.asked(t, urlClient, d.ID, "k-1")
		a, err := e.approvals.Get(ctx, e.db, ask.ID)
		if err != nil {
			t.Fatal(err)
		}
		if want := `- "NF-1" due 2026-11-01, R$` + "\u00a0" + `1.234,56 — ledger: not in the ledger — payment cannot be checked`; !strings.Contains(a.Preview, want) {
			t.Errorf("the preview lacks %q:\n%s", want, a.Preview)
		}
		sel := map[string]any{"draftIds": []string{d.ID, known.ID}}
		if dr := e.dry(t, sender, sel); dr.RecipientCount != 2 || !slices.ContainsFunc(dr.Warnings, func(w string) bool {
			return strings.Contains(w, "1 draft names an invoice that is not in the ledger — payment cannot be checked — and is sent all the same")
		}) {
			t.Errorf("dry run without the rule: %d recipients, warnings %q", dr.RecipientCount, dr.Warnings)
		}

		e.requireLedger(t)
		res := e.sendCall(sender, urlClient, d.ID, "k-2", pipelinetest.Asked{})
		if code, field := failed(res); code != ledger.CodeInvoiceNotFound || field != "draftId" || !strings.Contains(res.Err.Message, `invoice "NF-1"`) {
			t.Errorf("send with the rule = %v %v, want invoice_not_found naming NF-1", res.Kind, res.Err)
		}
		if list, err := e.approvals.List(ctx, e.db, time.Time{}, 10); err != nil || len(list) != 1 {
			t.Errorf("approvals = %d (%v), want only the one asked before the rule", len(list), err)
		}
		// The approval asked before the rule: its approved retry is refused all the same.
		e.approve(t, ask.ID)
		if code, _ := failed(e.sendCall(sender, urlClient, d.ID, "k-1", ask)); code != ledger.CodeInvoiceNotFound || e.jobs(t) != 0 {
			t.Errorf("the approved send with the rule: %s, %d entries; want invoice_not_found, none", code, e.jobs(t))
		}
		dr := e.dry(t, sender, sel)
		if dr.RecipientCount != 1 || dr.Skipped["notInLedger"] != 1 {
			t.Errorf("dry run with the rule: %d recipients, skipped %v; want 1, notInLedger 1", dr.RecipientCount, dr.Skipped)
		}
		args := map[string]any{"customer": map[string]any{"id": "C-1", "name": "Oficina", "email": "oficina@example.com"}, "tone": "firm",
			"invoices":       []any{map[string]any{"id": "NF-2", "dueDate": "2026-11-01", "amountCents": 123456}, map[string]any{"id": "NF-7", "dueDate": "2026-11-01", "amountCents": 5}},
			"idempotencyKey": "p-1"}
		if code, field := failed(e.call(writer, collections.PrepareReminderName, args)); code != ledger.CodeInvoiceNotFound || field != "invoices[1].id" {
			t.Errorf("prepare with an unknown invoice, with the rule: %s on %s, want invoice_not_found on invoices[1].id", code, field)
		}
	})
}

// TestApprovalLedgerNow: what the approval page shows of a pending send's invoices is the
// ledger as it is when the page is viewed — open when asked, paid once a payment is imported,
// "not in the ledger" for an invoice it does not know — while the approval's stored preview
// keeps what it was; another tool's approval shows nothing.
func TestApprovalLedgerNow(t *testing.T) {
	storetest.Each(t, pg, func(t *testing.T, db store.DB) {
		e := newSendEnv(t, db)
		ctx := context.Background()
		e.customer(t, customers.Record{ID: "C-1", Name: "Oficina", Email: "oficina@example.com"})
		e.invoices(t, inLedger("NF-1", "C-1", 123456, "2026-11-01", "881"))
		d := e.draft(t, "C-1", "Oficina", "NF-1")
		ask := e.asked(t, urlClient, d.ID, "k-1")
		a, err := e.approvals.Get(ctx, e.db, ask.ID)
		if err != nil {
			t.Fatal(err)
		}
		now := func() string {
			t.Helper()
			s, err := collections.ApprovalLedger(ctx, e.db, a.Tool, a.Preview, e.clock())
			if err != nil {
				t.Fatal(err)
			}
			return s
		}
		open := `- "NF-1" due 2026-11-01, R$` + "\u00a0" + `1.234,56 — ledger: open, R$` + "\u00a0" + `1.234,56 open`
		if got := now(); !strings.Contains(got, open) {
			t.Errorf("before the payment: %q, want %q", got, open)
		}
		e.importPayments(t, ledger.PaymentRecord{Source: "cnab240:341", SourceRef: "881/2026-07-01", AmountCents: 123456, Currency: "BRL",
			PaidOn: "2026-07-01", Method: ledger.MethodBoleto, Reference: "881"})
		if got := now(); !strings.Contains(got, "ledger: paid, R$\u00a00,00 open — paid") {
			t.Errorf("after the payment: %q, want it paid", got)
		}
		if !strings.Contains(a.Preview, open) {
			t.Errorf("the stored preview changed: %q", a.Preview)
		}
		unknown := e.draft(t, "C-1", "Oficina", "NF-2")
		ask2 := e.asked(t, urlClient, unknown.ID, "k-2")
		a2, err := e.approvals.Get(ctx, e.db, ask2.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got, err := collections.ApprovalLedger(ctx, e.db, a2.Tool, a2.Preview, e.clock()); err != nil || !strings.Contains(got, "ledger: not in the ledger — payment cannot be checked") {
			t.Errorf("an invoice the ledger does not know: %q, %v", got, err)
		}
		if got, err := collections.ApprovalLedger(ctx, e.db, collections.BulkSendName, a.Preview, e.clock()); got != "" || err != nil {
			t.Errorf("another tool: %q, %v; want nothing", got, err)
		}
	})
}
