package collections_test

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/cobranca/cobranca/internal/collections"
	"github.com/cobranca/cobranca/internal/customers"
	"github.com/cobranca/cobranca/internal/failure"
	"github.com/cobranca/cobranca/internal/ledger"
	"github.com/cobranca/cobranca/internal/pipeline"
	"github.com/cobranca/cobranca/internal/reminders"
	"github.com/cobranca/cobranca/internal/store"
	"github.com/cobranca/cobranca/internal/store/storetest"
	"github.com/cobranca/cobranca/internal/writeoffs"
)

// ledgerOps writes a ledger's records, as the write tools and the imports do, in one
// transaction; any failure fails the test.
type ledgerOps struct {
	t   testing.TB
	ctx context.Context
	tx  store.Tx
	now time.Time
	n   *int // payments recorded, for their source references
}

var ledgerClerk = ledger.Actor{Subject: "ana"}

// ledgerTx runs fn with a ledgerOps in one transaction of db, at now.
func ledgerTx(t testing.TB, db store.DB, now time.Time, fn func(o ledgerOps)) {
	t.Helper()
	n := 0
	if err := db.InTx(context.Background(), func(ctx context.Context, tx store.Tx) error {
		fn(ledgerOps{t: t, ctx: ctx, tx: tx, now: now, n: &n})
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

func (o ledgerOps) must(err error) {
	o.t.Helper()
	if err != nil {
		o.t.Fatal(err)
	}
}

func (o ledgerOps) customer(id, name string) {
	o.t.Helper()
	_, err := customers.Upsert(o.ctx, o.tx, customers.Record{ID: id, Name: name, Email: strings.ToLower(strings.ReplaceAll(id, " ", "")) + "@example.com"}, o.now)
	o.must(err)
}

func (o ledgerOps) doNotContact(id string) {
	o.t.Helper()
	_, err := customers.SetStatus(o.ctx, o.tx, id, customers.Change{Status: customers.DoNotContact, Reason: "asked", SetBy: "ana"}, o.now)
	o.must(err)
}

func (o ledgerOps) invoices(recs ...ledger.InvoiceRecord) {
	o.t.Helper()
	for i := range recs {
		if fe := recs[i].Validate(); fe != nil {
			o.t.Fatalf("invoice %s: %v", recs[i].InvoiceID, fe)
		}
	}
	_, err := ledger.UpsertInvoices(o.ctx, o.tx, recs, o.now)
	o.must(err)
}

// pay records a payment of cents in currency and allocates plan of it; it returns its id.
func (o ledgerOps) pay(cents int64, currency string, plan ...ledger.Planned) string {
	o.t.Helper()
	*o.n++
	p, _, err := ledger.RecordPayment(o.ctx, o.tx, ledger.PaymentRecord{Source: "agent", SourceRef: "ref-" + rand.Text(), AmountCents: cents,
		Currency: currency, PaidOn: o.now.Format(time.DateOnly), Method: ledger.MethodPIX}, ledgerClerk, o.now)
	o.must(err)
	if len(plan) > 0 {
		_, err = ledger.Allocate(o.ctx, o.tx, p.ID, plan, ledgerClerk, o.now)
		o.must(err)
	}
	return p.ID
}

func (o ledgerOps) writeOff(invoiceID, customerID string, cents int64) {
	o.t.Helper()
	_, err := writeoffs.Record(o.ctx, o.tx, writeoffs.Request{InvoiceID: invoiceID, CustomerID: customerID, AmountCents: cents, Reason: "uncollectable"},
		writeoffs.Author{Subject: "ana"}, o.now)
	o.must(err)
}

func (o ledgerOps) promise(invoiceID string, cents int64, date string) {
	o.t.Helper()
	_, err := ledger.RecordPromise(o.ctx, o.tx, ledger.PromiseRecord{InvoiceID: invoiceID, AmountCents: cents, PromisedFor: date, Channel: "phone"}, ledgerClerk, o.now)
	o.must(err)
}

func (o ledgerOps) dispute(invoiceID string) {
	o.t.Helper()
	_, err := ledger.OpenDispute(o.ctx, o.tx, invoiceID, ledger.DisputeWrongAmount, "the amount is not what was agreed", ledgerClerk, o.now)
	o.must(err)
}

func (o ledgerOps) resolve(invoiceID string) {
	o.t.Helper()
	_, err := ledger.ResolveDispute(o.ctx, o.tx, invoiceID, ledger.OutcomeRejected, "", ledgerClerk, o.now)
	o.must(err)
}

// sent writes a reminder to the customer listing the invoices, and queues it unless open.
func (o ledgerOps) sent(customerID string, open bool, invoiceIDs ...string) string {
	o.t.Helper()
	tpl, err := reminders.ParseTemplates()
	o.must(err)
	var invs []reminders.Invoice
	for _, id := range invoiceIDs {
		invs = append(invs, reminders.Invoice{ID: id, DueDate: "2026-06-01", AmountCents: 1000})
	}
	*o.n++
	r, _, err := reminders.Prepare(o.ctx, o.tx, tpl, reminders.Request{CustomerID: customerID, To: reminders.Recipient{Name: "Acme", Email: "acme@example.com"},
		Tone: reminders.Friendly, Language: reminders.PortugueseBR, Invoices: invs, CreatedBy: "ana"}, o.now)
	o.must(err)
	if !open {
		o.must(reminders.MarkQueued(o.ctx, o.tx, r.ID, reminders.Queue{OutboxID: int64(*o.n), MessageID: fmt.Sprintf("<%d.outbox@x>", *o.n), By: "ana"}, o.now))
	}
	return r.ID
}

// ledgerFixture is a small ledger in every state, as of the env's day (2026-07-01).
type ledgerFixture struct {
	p1, p3 string // the payment with a credit left, the unmatched one
	sent   string // the reminder sent naming INV-1
}

func seedLedger(t *testing.T, e *env) ledgerFixture {
	t.Helper()
	var f ledgerFixture
	ledgerTx(t, e.db, e.clock().Add(-time.Hour), func(o ledgerOps) {
		o.customer("c1", "Acme")
		o.customer("c2", "Beta")
		inv := func(id, cust string, cents int64, due string) ledger.InvoiceRecord {
			return ledger.InvoiceRecord{InvoiceID: id, CustomerID: cust, CustomerName: map[string]string{"c1": "Acme Ltda"}[cust], AmountCents: cents, DueDate: due}
		}
		one := inv("INV-1", "c1", 100000, "2026-06-01")
		one.PixTxID = "TX1"
		void := inv("INV-4", "c2", 10000, "2026-06-05")
		void.Void = true
		usd := inv("INV-8", "c2", 5000, "2026-06-01")
		usd.Currency = "USD"
		o.invoices(one, inv("INV-2", "c1", 50000, "2026-06-15"), inv("INV-3", "c2", 20000, "2026-06-20"), void,
			inv("INV-5", "c2", 40000, "2026-05-01"), inv("INV-6", "c1", 70000, "2026-06-25"), inv("INV-7", "c2", 60000, "2026-06-10"), usd)
		f.p1 = o.pay(30000, "BRL", ledger.Planned{InvoiceID: "INV-2", AmountCents: 20000})
		o.pay(20000, "BRL", ledger.Planned{InvoiceID: "INV-3", AmountCents: 20000})
		o.writeOff("INV-5", "c2", 40000)
		o.dispute("INV-6")
		o.promise("INV-7", 60000, "2026-07-10")
		f.sent = o.sent("c1", false, "INV-1", "INV-2")
		o.sent("c1", false, "INV-9")
		o.sent("c1", true, "INV-1")
	})
	ledgerTx(t, e.db, e.clock().Add(-time.Minute), func(o ledgerOps) { f.p3 = o.pay(9999, "BRL") })
	return f
}

type invoiceOut struct {
	InvoiceID       string `json:"invoiceId"`
	CustomerID      string `json:"customerId"`
	CustomerName    string `json:"customerName"`
	AmountCents     int64  `json:"amountCents"`
	Currency        string `json:"currency"`
	DueDate         string `json:"dueDate"`
	PixTxID         string `json:"pixTxid"`
	State           string `json:"state"`
	OpenAmountCents int64  `json:"openAmountCents"`
	PaidAmountCents int64  `json:"paidAmountCents"`
	WrittenOffCents int64  `json:"writtenOffCents"`
	Allocations     []struct {
		PaymentID   string `json:"paymentId"`
		AmountCents int64  `json:"amountCents"`
		Rule        string `json:"rule"`
		AllocatedBy string `json:"allocatedBy"`
	} `json:"allocations"`
	AllocationCount int `json:"allocationCount"`
	Promise         *struct {
		AmountCents int64  `json:"amountCents"`
		PromisedFor string `json:"promisedFor"`
		Channel     string `json:"channel"`
		Pending     bool   `json:"pending"`
	} `json:"promise"`
	Dispute *struct {
		Reason   string `json:"reason"`
		Note     string `json:"note"`
		OpenedBy string `json:"openedBy"`
	} `json:"dispute"`
	Contacts []struct {
		DraftID string `json:"draftId"`
		State   string `json:"state"`
	} `json:"contacts"`
	PaymentReferences []struct {
		Reference  string `json:"reference"`
		Source     string `json:"source"`
		DraftID    string `json:"draftId"`
		RecordedAt string `json:"recordedAt"`
	} `json:"paymentReferences"`
	PaymentReferenceCount int `json:"paymentReferenceCount"`
}

// TestGetInvoice: an invoice's derived state, its allocations, promise, dispute, the
// reminders sent naming it (not an open draft, not a send naming another invoice), and the
// payment references recorded on it, the latest first, at most 50 of them, counted.
func TestGetInvoice(t *testing.T) {
	eachEnv(t, func(t *testing.T, e *env) {
		f := seedLedger(t, e)
		get := func(id string) invoiceOut {
			t.Helper()
			return decode[invoiceOut](t, e.call(reader, collections.GetInvoiceName, map[string]any{"invoiceId": id}))
		}
		one := get("INV-1")
		if one.State != "open" || one.OpenAmountCents != 100000 || one.PixTxID != "TX1" || one.CustomerName != "Acme Ltda" || one.Currency != "BRL" {
			t.Errorf("INV-1 = %+v, want open, 100000 open, its txid, name and BRL", one)
		}
		if len(one.Contacts) != 1 || one.Contacts[0].DraftID != f.sent || one.Contacts[0].State != "queued" {
			t.Errorf("INV-1 contacts = %+v, want only the queued reminder %s", one.Contacts, f.sent)
		}
		two := get("INV-2")
		if two.State != "partially_paid" || two.OpenAmountCents != 30000 || two.PaidAmountCents != 20000 || two.AllocationCount != 1 ||
			len(two.Allocations) != 1 || two.Allocations[0].PaymentID != f.p1 || two.Allocations[0].AmountCents != 20000 ||
			two.Allocations[0].Rule != "manual" || two.Allocations[0].AllocatedBy != "ana" {
			t.Errorf("INV-2 = %+v, want partially paid by %s: 20000 manual", two, f.p1)
		}
		for id, want := range map[string]string{"INV-3": "paid", "INV-4": "void", "INV-5": "written_off"} {
			if got := get(id); got.State != want || got.OpenAmountCents != 0 || len(got.Contacts) != 0 {
				t.Errorf("%s = %+v, want %s, nothing open, no contact", id, got, want)
			}
		}
		if five := get("INV-5"); five.WrittenOffCents != 40000 {
			t.Errorf("INV-5 writtenOffCents = %d, want 40000", five.WrittenOffCents)
		}
		if six := get("INV-6"); six.Dispute == nil || six.Dispute.Reason != "wrong_amount" || six.Dispute.OpenedBy != "ana" || six.Dispute.Note == "" || six.Promise != nil {
			t.Errorf("INV-6 dispute = %+v, promise %+v; want the open wrong_amount dispute, no promise", six.Dispute, six.Promise)
		}
		if seven := get("INV-7"); seven.Promise == nil || !seven.Promise.Pending || seven.Promise.PromisedFor != "2026-07-10" || seven.Dispute != nil {
			t.Errorf("INV-7 promise = %+v, want pending for 2026-07-10", seven.Promise)
		}
		e.advance(10 * 24 * time.Hour) // 2026-07-11: the promise's day is past
		if seven := get("INV-7"); seven.Promise == nil || seven.Promise.Pending {
			t.Errorf("INV-7 promise on 2026-07-11 = %+v, want no longer pending", seven.Promise)
		}

		if one.PaymentReferences == nil || len(one.PaymentReferences) != 0 || one.PaymentReferenceCount != 0 {
			t.Errorf("INV-1 paymentReferences = %+v (%d), want an empty list before any is recorded", one.PaymentReferences, one.PaymentReferenceCount)
		}
		// 52 reminders' txids on INV-1, a minute apart: the latest 50 are listed, newest first.
		start := e.clock()
		for i := range 52 {
			at := start.Add(time.Duration(i) * time.Minute)
			if err := e.db.InTx(context.Background(), func(ctx context.Context, tx store.Tx) error {
				return ledger.AddReference(ctx, tx, []string{"INV-1"}, fmt.Sprintf("TXREF%02d", i), ledger.SourceReminder, fmt.Sprintf("d_%02d", i), at)
			}); err != nil {
				t.Fatal(err)
			}
		}
		one = get("INV-1")
		if one.PaymentReferenceCount != 52 || len(one.PaymentReferences) != 50 {
			t.Fatalf("INV-1: %d payment references listed, count %d; want 50 of 52", len(one.PaymentReferences), one.PaymentReferenceCount)
		}
		for i, r := range one.PaymentReferences {
			n := 51 - i
			if want := fmt.Sprintf("TXREF%02d", n); r.Reference != want || r.Source != "reminder" || r.DraftID != fmt.Sprintf("d_%02d", n) ||
				r.RecordedAt != start.Add(time.Duration(n)*time.Minute).UTC().Format(time.RFC3339Nano) {
				t.Errorf("INV-1 paymentReferences[%d] = %+v, want %s of d_%02d, recorded then", i, r, want, n)
			}
		}
		if two := get("INV-2"); len(two.PaymentReferences) != 0 || two.PaymentReferenceCount != 0 {
			t.Errorf("INV-2 paymentReferences = %+v: another invoice's references", two.PaymentReferences)
		}

		res := e.call(reader, collections.GetInvoiceName, map[string]any{"invoiceId": "INV-404"})
		if code, field := failed(res); code != ledger.CodeInvoiceNotFound || field != "invoiceId" {
			t.Errorf("unknown invoice: %s %s, want %s invoiceId", code, field, ledger.CodeInvoiceNotFound)
		}
	})
}

// TestLedgerReadsRefuseArguments: every argument the schema or the checks refuse is
// refused, naming the field, before anything is read.
func TestLedgerReadsRefuseArguments(t *testing.T) {
	e := newEnv(t, storetest.SQLite(t))
	long := strings.Repeat("x", 256)
	for _, c := range []struct {
		tool, args, field string
	}{
		{collections.GetInvoiceName, `{}`, "invoiceId"},
		{collections.GetInvoiceName, `{"invoiceId": " INV-1"}`, "invoiceId"},
		{collections.GetInvoiceName, `{"invoiceId": "` + long + `"}`, "invoiceId"},
		{collections.GetInvoiceName, `{"invoiceId": "INV-1", "x": 1}`, "x"},
		{collections.ListInvoicesName, `{"states": []}`, "states"},
		{collections.ListInvoicesName, `{"states": ["open", "open"]}`, "states"},
		{collections.ListInvoicesName, `{"states": ["late"]}`, "states[0]"},
		{collections.ListInvoicesName, `{"minDaysOverdue": 0}`, "minDaysOverdue"},
		{collections.ListInvoicesName, `{"promisePending": false}`, "promisePending"},
		{collections.ListInvoicesName, `{"limit": 201}`, "limit"},
		{collections.ListInvoicesName, `{"customerId": "c1 "}`, "customerId"},
		{collections.ListInvoicesName, `{"cursor": "AAAAAAAAAAAAAAAA"}`, "cursor"},
		{collections.ListUnmatchedPaymentsName, `{"limit": 0}`, "limit"},
		{collections.ListUnmatchedPaymentsName, `{"cursor": "not a cursor"}`, "cursor"},
		{collections.AnalyzeLedgerName, `{"asOf": "2026-02-30"}`, "asOf"},
		{collections.AnalyzeLedgerName, `{"asOf": "1999-12-31"}`, "asOf"},
		{collections.AnalyzeLedgerName, `{"customerIds": []}`, "customerIds"},
		{collections.AnalyzeLedgerName, `{"customerIds": ["c1", "c1"]}`, "customerIds"},
		{collections.AnalyzeLedgerName, `{"customerIds": ["\u200b"]}`, "customerIds[0]"},
		{collections.AnalyzeLedgerName, `{"currency": "XXX"}`, "currency"},
		{collections.AnalyzeLedgerName, `{"currency": null}`, "currency"},
		{collections.AnalyzeLedgerName, `{"maxAccounts": 0}`, "maxAccounts"},
		{collections.AnalyzeLedgerName, `{"maxAccounts": 501}`, "maxAccounts"},
	} {
		res := e.do(reader, modern, c.tool, c.args)
		if code, field := failed(res); code != failure.InvalidArguments || !strings.HasPrefix(field, c.field) {
			t.Errorf("%s %s: %s %q, want %s naming %s", c.tool, c.args, code, field, failure.InvalidArguments, c.field)
		}
	}
}

type invoicePage struct {
	Invoices []struct {
		InvoiceID      string `json:"invoiceId"`
		State          string `json:"state"`
		DaysOverdue    int    `json:"daysOverdue"`
		Disputed       bool   `json:"disputed"`
		PromisePending bool   `json:"promisePending"`
	} `json:"invoices"`
	NextCursor string `json:"nextCursor"`
}

func (p invoicePage) ids() []string {
	var ids []string
	for _, inv := range p.Invoices {
		ids = append(ids, inv.InvoiceID)
	}
	return ids
}

// TestListInvoices: each filter selects what it says, in due date order; walking the pages
// lists every invoice once; a cursor continues only the listing it came from.
func TestListInvoices(t *testing.T) {
	eachEnv(t, func(t *testing.T, e *env) {
		seedLedger(t, e)
		list := func(args map[string]any) invoicePage {
			t.Helper()
			return decode[invoicePage](t, e.call(reader, collections.ListInvoicesName, args))
		}
		for _, c := range []struct {
			args map[string]any
			want []string
		}{
			{map[string]any{}, []string{"INV-5", "INV-1", "INV-8", "INV-4", "INV-7", "INV-2", "INV-3", "INV-6"}},
			{map[string]any{"states": []string{"open", "partially_paid"}}, []string{"INV-1", "INV-8", "INV-7", "INV-2", "INV-6"}},
			{map[string]any{"states": []string{"written_off"}}, []string{"INV-5"}},
			{map[string]any{"customerId": "c1"}, []string{"INV-1", "INV-2", "INV-6"}},
			{map[string]any{"disputed": true}, []string{"INV-6"}},
			{map[string]any{"disputed": false, "customerId": "c1"}, []string{"INV-1", "INV-2"}},
			{map[string]any{"promisePending": true}, []string{"INV-7"}},
			{map[string]any{"minDaysOverdue": 26}, []string{"INV-5", "INV-1", "INV-8", "INV-4"}},
			{map[string]any{"minDaysOverdue": 26, "states": []string{"open"}}, []string{"INV-1", "INV-8"}},
		} {
			if got := list(c.args).ids(); !slices.Equal(got, c.want) {
				t.Errorf("list_invoices %v = %v, want %v", c.args, got, c.want)
			}
		}
		page := list(map[string]any{"states": []string{"open"}})
		for _, inv := range page.Invoices {
			if inv.InvoiceID == "INV-1" && inv.DaysOverdue != 30 {
				t.Errorf("INV-1 daysOverdue = %d on 2026-07-01, want 30", inv.DaysOverdue)
			}
			if inv.InvoiceID == "INV-7" && !inv.PromisePending {
				t.Errorf("INV-7 promisePending = false, want true")
			}
		}

		var walked []string
		args := map[string]any{"limit": 3}
		for pages := 0; ; pages++ {
			p := list(args)
			walked = append(walked, p.ids()...)
			if p.NextCursor == "" {
				if pages != 2 {
					t.Errorf("8 invoices by 3 took %d pages, want 3", pages+1)
				}
				break
			}
			// Another listing's cursor is refused, naming the cursor.
			res := e.call(reader, collections.ListInvoicesName, map[string]any{"limit": 3, "customerId": "c1", "cursor": p.NextCursor})
			if code, field := failed(res); code != failure.InvalidArguments || field != "cursor" {
				t.Fatalf("a cursor with other filters: %s %s, want invalid_arguments cursor", code, field)
			}
			args = map[string]any{"limit": 3, "cursor": p.NextCursor}
		}
		if want := list(map[string]any{}).ids(); !slices.Equal(walked, want) {
			t.Errorf("pages = %v, want %v", walked, want)
		}
	})
}

// TestListUnmatchedPayments: the payments with something left, oldest first, a page at a time.
func TestListUnmatchedPayments(t *testing.T) {
	eachEnv(t, func(t *testing.T, e *env) {
		f := seedLedger(t, e)
		type page struct {
			Payments []struct {
				PaymentID      string `json:"paymentId"`
				LeftCents      int64  `json:"leftCents"`
				AllocatedCents int64  `json:"allocatedCents"`
			} `json:"payments"`
			NextCursor string `json:"nextCursor"`
		}
		first := decode[page](t, e.call(reader, collections.ListUnmatchedPaymentsName, map[string]any{"limit": 1}))
		if len(first.Payments) != 1 || first.Payments[0].PaymentID != f.p1 || first.Payments[0].LeftCents != 10000 ||
			first.Payments[0].AllocatedCents != 20000 || first.NextCursor == "" {
			t.Fatalf("first page = %+v, want %s with 10000 left of 30000, and a cursor", first, f.p1)
		}
		second := decode[page](t, e.call(reader, collections.ListUnmatchedPaymentsName, map[string]any{"limit": 1, "cursor": first.NextCursor}))
		if len(second.Payments) != 1 || second.Payments[0].PaymentID != f.p3 || second.Payments[0].LeftCents != 9999 || second.NextCursor != "" {
			t.Errorf("second page = %+v, want %s with all 9999 left, and no cursor", second, f.p3)
		}
		res := e.call(reader, collections.ListInvoicesName, map[string]any{"cursor": first.NextCursor})
		if code, field := failed(res); code != failure.InvalidArguments || field != "cursor" {
			t.Errorf("list_unmatched_payments' cursor given to list_invoices: %s %s, want invalid_arguments cursor", code, field)
		}
	})
}

type ledgerAnalysis struct {
	AsOf                  string          `json:"asOf"`
	Currency              string          `json:"currency"`
	InvoiceCount          int             `json:"invoiceCount"`
	OtherCurrencyInvoices int             `json:"otherCurrencyInvoices"`
	AccountsOmitted       int             `json:"accountsOmitted"`
	Analysis              json.RawMessage `json:"analysis"`
}

// TestAnalyzeLedger: the fixture's analysis, worked out by hand, and equal to
// analyze_portfolio's of the invoices an operator would supply.
func TestAnalyzeLedger(t *testing.T) {
	eachEnv(t, func(t *testing.T, e *env) {
		seedLedger(t, e)
		got := decode[ledgerAnalysis](t, e.call(reader, collections.AnalyzeLedgerName, map[string]any{}))
		if got.AsOf != "2026-07-01" || got.Currency != "BRL" || got.InvoiceCount != 4 || got.OtherCurrencyInvoices != 1 {
			t.Errorf("analyze_ledger = %+v, want as of today, BRL, 4 invoices and 1 in USD", got)
		}
		// As an operator supplies them: open amounts, customer then id order; INV-7's
		// customer has no name in the ledger: its id stands in.
		supplied := `{"asOf": "2026-07-01", "invoices": [
{"id": "INV-1", "customerId": "c1", "customerName": "Acme Ltda", "dueDate": "2026-06-01", "amountCents": 100000, "status": "open", "doNotContact": false},
{"id": "INV-2", "customerId": "c1", "customerName": "Acme Ltda", "dueDate": "2026-06-15", "amountCents": 30000, "status": "open", "doNotContact": false},
{"id": "INV-6", "customerId": "c1", "customerName": "Acme Ltda", "dueDate": "2026-06-25", "amountCents": 70000, "status": "open", "doNotContact": false, "disputed": true, "disputeReason": "wrong_amount"},
{"id": "INV-7", "customerId": "c2", "customerName": "c2", "dueDate": "2026-06-10", "amountCents": 60000, "status": "open", "doNotContact": false, "promiseToPayDate": "2026-07-10"}]}`
		want := e.do(reader, modern, collections.AnalyzeName, supplied)
		if diff := cmp.Diff(jsonOf(t, want.Structured), jsonOf(t, got.Analysis)); want.Kind != pipeline.Complete || diff != "" {
			t.Errorf("analysis differs from analyze_portfolio's (%v) (-want +got):\n%s", want.Err, diff)
		}
		var a struct {
			TotalOpenCents int64 `json:"totalOpenCents"`
			Accounts       []struct {
				CustomerID  string `json:"customerId"`
				AmountCents int64  `json:"amountCents"`
				DaysOverdue int    `json:"daysOverdue"`
			} `json:"accounts"`
		}
		if err := json.Unmarshal(got.Analysis, &a); err != nil {
			t.Fatal(err)
		}
		if a.TotalOpenCents != 260000 || len(a.Accounts) != 1 || a.Accounts[0].CustomerID != "c1" || a.Accounts[0].AmountCents != 130000 || a.Accounts[0].DaysOverdue != 30 {
			t.Errorf("analysis = %+v, want 260000 open, one account c1 of 130000, 30 days (c2 paused by its promise)", a)
		}

		usd := decode[ledgerAnalysis](t, e.call(reader, collections.AnalyzeLedgerName, map[string]any{"currency": "USD", "asOf": "2026-06-02"}))
		if usd.InvoiceCount != 1 || usd.OtherCurrencyInvoices != 4 || !strings.Contains(string(usd.Analysis), `"baseCurrency":"USD"`) {
			t.Errorf("in USD: %+v, want INV-8 alone, in USD", usd)
		}
		c2 := decode[ledgerAnalysis](t, e.call(reader, collections.AnalyzeLedgerName, map[string]any{"customerIds": []string{"c2", "nobody"}}))
		if c2.InvoiceCount != 1 || c2.OtherCurrencyInvoices != 1 {
			t.Errorf("of c2: %+v, want INV-7 and INV-8 in USD", c2)
		}

		// On 2026-07-11 c2's promise is broken: two accounts, c1 (40 days) first; maxAccounts 1
		// lists c1 and counts c2.
		top := decode[ledgerAnalysis](t, e.call(reader, collections.AnalyzeLedgerName, map[string]any{"asOf": "2026-07-11", "maxAccounts": 1}))
		if top.AccountsOmitted != 1 || !strings.Contains(string(top.Analysis), `"accounts":[{"customerId":"c1"`) ||
			!strings.Contains(string(top.Analysis), `"accountsByPriority":{"high":2,"medium":0}`) {
			t.Errorf("maxAccounts 1 on 2026-07-11: omitted %d, %s; want c1 listed, c2 counted", top.AccountsOmitted, top.Analysis)
		}

		ledgerTx(t, e.db, e.clock(), func(o ledgerOps) { o.doNotContact("c1") })
		dnc := decode[ledgerAnalysis](t, e.call(reader, collections.AnalyzeLedgerName, map[string]any{}))
		if !strings.Contains(string(dnc.Analysis), `"doNotContact":{"invoices":3,"customers":1}`) || !strings.Contains(string(dnc.Analysis), `"accounts":[]`) {
			t.Errorf("with c1 do_not_contact: %s, want its 3 invoices left out and no account", dnc.Analysis)
		}
	})
}

// jsonOf reads a JSON text as a value, to compare JSON values rather than bytes.
func jsonOf(t testing.TB, b []byte) any {
	t.Helper()
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("%v: %s", err, b)
	}
	return v
}
