package ledger_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/cobranca/cobranca/internal/failure"
	"github.com/cobranca/cobranca/internal/ledger"
	"github.com/cobranca/cobranca/internal/store"
	"github.com/cobranca/cobranca/internal/store/storetest"
)

// listAll walks every page of f and returns the invoices' ids.
func listAll(t *testing.T, db store.Querier, f ledger.ListFilter) []string {
	t.Helper()
	var ids []string
	for pages := 0; ; pages++ {
		page, next, err := ledger.ListInvoices(context.Background(), db, f)
		if err != nil {
			t.Fatalf("ListInvoices(%+v) = %v", f, err)
		}
		if len(page) > f.Limit || next != "" && len(page) != f.Limit {
			t.Fatalf("a page of %d with limit %d and next %q", len(page), f.Limit, next)
		}
		for _, inv := range page {
			ids = append(ids, inv.InvoiceID)
		}
		if next == "" {
			return ids
		}
		if pages > 1000 {
			t.Fatal("pages without end")
		}
		f.After = next
	}
}

// TestListInvoices: each filter chooses what it says, in due date then id
// order, across keyset pages of any size, held against a filter of the
// whole ledger written plainly.
func TestListInvoices(t *testing.T) {
	storetest.Each(t, pg, func(t *testing.T, db store.DB) {
		var recs []ledger.InvoiceRecord
		for i := range 60 {
			r := inv(fmt.Sprintf("NF-%02d", i), fmt.Sprintf("C-%d", i%4), int64(1000+i), time.Date(2026, 11, 1+i%40, 0, 0, 0, 0, time.UTC).Format(time.DateOnly))
			r.Void = i%11 == 0
			recs = append(recs, r)
		}
		must[ledger.UpsertCounts](t)(upsert(t, db, recs...))
		// NF-01 paid, NF-02 partly paid, NF-03 disputed, NF-04 promised for
		// tomorrow, NF-05 promised for yesterday (recorded then).
		p := record(t, db, payment("r1", 5000, "2026-12-01"))
		must[[]ledger.Allocation](t)(allocate(db, p.ID, ledger.Planned{InvoiceID: "NF-01", AmountCents: 1001}, ledger.Planned{InvoiceID: "NF-02", AmountCents: 10}))
		must[ledger.Dispute](t)(inTx(db, func(ctx context.Context, tx store.Tx) (ledger.Dispute, error) {
			return ledger.OpenDispute(ctx, tx, "NF-03", ledger.DisputeWrongAmount, "", ana, t0)
		}))
		promise := func(id, date string, now time.Time) {
			must[ledger.Promise](t)(inTx(db, func(ctx context.Context, tx store.Tx) (ledger.Promise, error) {
				return ledger.RecordPromise(ctx, tx, ledger.PromiseRecord{InvoiceID: id, AmountCents: 10, PromisedFor: date, Channel: "phone"}, ana, now)
			}))
		}
		promise("NF-04", "2026-12-02", t0)
		promise("NF-05", "2026-11-30", t0.AddDate(0, 0, -2))

		all := map[string]ledger.StoredInvoice{}
		ids := make([]string, len(recs))
		for i, r := range recs {
			ids[i] = r.InvoiceID
		}
		all = must[map[string]ledger.StoredInvoice](t)(ledger.GetInvoices(context.Background(), db, ids))
		yes, no := true, false
		for _, tt := range []struct {
			name string
			f    ledger.ListFilter
			keep func(ledger.StoredInvoice) bool
		}{
			{"all", ledger.ListFilter{}, func(ledger.StoredInvoice) bool { return true }},
			{"customer", ledger.ListFilter{CustomerID: "C-2"}, func(i ledger.StoredInvoice) bool { return i.CustomerID == "C-2" }},
			{"open", ledger.ListFilter{States: []ledger.State{ledger.StateOpen}}, func(i ledger.StoredInvoice) bool { return i.State == ledger.StateOpen }},
			{"paid or void", ledger.ListFilter{States: []ledger.State{ledger.StateVoid, ledger.StatePaid}},
				func(i ledger.StoredInvoice) bool { return i.State == ledger.StateVoid || i.State == ledger.StatePaid }},
			{"customer, not settled", ledger.ListFilter{CustomerID: "C-1", States: []ledger.State{ledger.StateOpen, ledger.StatePartiallyPaid}},
				func(i ledger.StoredInvoice) bool { return i.CustomerID == "C-1" && !i.State.Settled() }},
			{"10 days overdue", ledger.ListFilter{MinDaysOverdue: 10, Today: today}, func(i ledger.StoredInvoice) bool { return i.DueDate <= "2026-11-21" }},
			{"disputed", ledger.ListFilter{Disputed: &yes}, func(i ledger.StoredInvoice) bool { return i.Dispute != nil }},
			{"not disputed", ledger.ListFilter{Disputed: &no}, func(i ledger.StoredInvoice) bool { return i.Dispute == nil }},
			{"promise pending", ledger.ListFilter{PromisePending: true, Today: today}, func(i ledger.StoredInvoice) bool { return i.PromisePending(today) }},
		} {
			var want []string
			for _, id := range ids {
				if tt.keep(all[id]) {
					want = append(want, id)
				}
			}
			slices.SortFunc(want, func(a, b string) int {
				return strings.Compare(all[a].DueDate+"/"+a, all[b].DueDate+"/"+b)
			})
			for _, limit := range []int{1, 7, 500} {
				f := tt.f
				f.Limit = limit
				if got := listAll(t, db, f); !cmp.Equal(want, got) {
					t.Errorf("%s, pages of %d: got %v, want %v", tt.name, limit, got, want)
				}
			}
		}
		if got := listAll(t, db, ledger.ListFilter{PromisePending: true, Today: today, Limit: 10}); !cmp.Equal(got, []string{"NF-04"}) {
			t.Errorf("promise pending = %v, want NF-04 only", got)
		}
		page, _, err := ledger.ListInvoices(context.Background(), db, ledger.ListFilter{Disputed: &yes, Limit: 1})
		if err != nil || len(page) != 1 || page[0].Dispute == nil || page[0].Dispute.Reason != ledger.DisputeWrongAmount {
			t.Errorf("the disputed invoice's page = %+v, %v", page, err)
		}
		for _, tt := range []struct {
			f     ledger.ListFilter
			field string
		}{
			{ledger.ListFilter{}, "limit"},
			{ledger.ListFilter{Limit: 501}, "limit"},
			{ledger.ListFilter{Limit: 1, After: "garbage!"}, "after"},
			{ledger.ListFilter{Limit: 1, After: "WyJhIl0"}, "after"}, // ["a"]
			{ledger.ListFilter{Limit: 1, States: []ledger.State{"lost"}}, "states"},
			{ledger.ListFilter{Limit: 1, MinDaysOverdue: 3}, "today"},
			{ledger.ListFilter{Limit: 1, MinDaysOverdue: -1, Today: today}, "minDaysOverdue"},
			{ledger.ListFilter{Limit: 1, PromisePending: true, Today: "2026-13-01"}, "today"},
		} {
			_, _, err := ledger.ListInvoices(context.Background(), db, tt.f)
			if c, f := code(err); c != failure.InvalidArguments || f != tt.field {
				t.Errorf("ListInvoices(%+v) = %v, want invalid_arguments on %s", tt.f, err, tt.field)
			}
		}
	})
}

// TestForAnalysis: every invoice not settled, of the customers asked for,
// ordered by customer and id, each with its open amount, its open dispute's
// reason (none once resolved) and its latest promise's date; fn's error
// stops the stream.
func TestForAnalysis(t *testing.T) {
	storetest.Each(t, pg, func(t *testing.T, db store.DB) {
		voided := inv("NF-5", "C-1", 100, "2026-12-01")
		voided.Void = true
		named := inv("NF-1", "C-2", 100, "2026-12-03")
		named.CustomerName = "Cliente Dois"
		usd := inv("NF-6", "C-3", 100, "2026-12-01")
		usd.Currency = "USD"
		must[ledger.UpsertCounts](t)(upsert(t, db, inv("NF-3", "C-2", 100, "2026-12-01"), inv("NF-2", "C-1", 100, "2026-12-01"),
			named, inv("NF-4", "C-1", 100, "2026-12-01"), voided, usd))
		p := record(t, db, payment("r1", 130, "2026-12-01"))
		must[[]ledger.Allocation](t)(allocate(db, p.ID, ledger.Planned{InvoiceID: "NF-4", AmountCents: 100}, ledger.Planned{InvoiceID: "NF-2", AmountCents: 30}))
		must[ledger.Promise](t)(inTx(db, func(ctx context.Context, tx store.Tx) (ledger.Promise, error) {
			return ledger.RecordPromise(ctx, tx, ledger.PromiseRecord{InvoiceID: "NF-1", AmountCents: 50, PromisedFor: "2026-12-09", Channel: "email"}, ana, t0)
		}))
		must[ledger.Dispute](t)(inTx(db, func(ctx context.Context, tx store.Tx) (ledger.Dispute, error) {
			return ledger.OpenDispute(ctx, tx, "NF-3", ledger.DisputeWrongAmount, "", ana, t0)
		}))
		// NF-2 was disputed once: a resolved dispute is not an open one.
		must[ledger.Dispute](t)(inTx(db, func(ctx context.Context, tx store.Tx) (ledger.Dispute, error) {
			return ledger.OpenDispute(ctx, tx, "NF-2", ledger.DisputeNotReceived, "", ana, t0)
		}))
		must[ledger.Dispute](t)(inTx(db, func(ctx context.Context, tx store.Tx) (ledger.Dispute, error) {
			return ledger.ResolveDispute(ctx, tx, "NF-2", ledger.OutcomeRejected, "", ana, t0)
		}))
		want := map[string]ledger.Unsettled{
			"NF-1": {InvoiceID: "NF-1", CustomerID: "C-2", CustomerName: "Cliente Dois", Currency: "BRL", DueDate: "2026-12-03", OpenCents: 100, PromisedFor: "2026-12-09"},
			"NF-2": {InvoiceID: "NF-2", CustomerID: "C-1", Currency: "BRL", DueDate: "2026-12-01", OpenCents: 70},
			"NF-3": {InvoiceID: "NF-3", CustomerID: "C-2", Currency: "BRL", DueDate: "2026-12-01", OpenCents: 100, DisputeReason: ledger.DisputeWrongAmount},
			"NF-6": {InvoiceID: "NF-6", CustomerID: "C-3", Currency: "USD", DueDate: "2026-12-01", OpenCents: 100},
		}
		walk := func(custs []string) ([]string, error) {
			var ids []string
			err := ledger.ForAnalysis(context.Background(), db, custs, func(inv ledger.Unsettled) error {
				ids = append(ids, inv.CustomerID+"/"+inv.InvoiceID)
				if d := cmp.Diff(want[inv.InvoiceID], inv); d != "" {
					t.Errorf("%s (-want +got):\n%s", inv.InvoiceID, d)
				}
				return nil
			})
			return ids, err
		}
		if got, err := walk(nil); err != nil || !cmp.Equal(got, []string{"C-1/NF-2", "C-2/NF-1", "C-2/NF-3", "C-3/NF-6"}) {
			t.Errorf("ForAnalysis(all) = %v, %v", got, err)
		}
		if got, err := walk([]string{"C-3", "C-1", "C-9"}); err != nil || !cmp.Equal(got, []string{"C-1/NF-2", "C-3/NF-6"}) {
			t.Errorf("ForAnalysis(C-3, C-1) = %v, %v", got, err)
		}
		stop := errors.New("enough")
		n := 0
		err := ledger.ForAnalysis(context.Background(), db, nil, func(ledger.Unsettled) error { n++; return stop })
		if !errors.Is(err, stop) || n != 1 {
			t.Errorf("a stopping fn: %v after %d", err, n)
		}
	})
}

// TestImportPayments: a file's payments are recorded and matched in its
// order; importing it again changes nothing; a payment repeated inside
// the file counts once; a conflicting one refuses the whole file.
func TestImportPayments(t *testing.T) {
	storetest.Each(t, pg, func(t *testing.T, db store.DB) {
		a := inv("NF-A", "C-1", 3000, "2026-12-10")
		a.OurNumber = "000123"
		b := inv("NF-B", "C-2", 700, "2026-12-10")
		must[ledger.UpsertCounts](t)(upsert(t, db, a, b))
		byRef := payment("L1", 5000, "2026-12-02") // pays NF-A, 2000 left as credit
		byRef.Reference, byRef.Method = "000123", ledger.MethodBoleto
		byAmount := payment("L2", 700, "2026-12-02")
		byAmount.CustomerID = "C-2"
		second := payment("L3", 100, "2026-12-02") // NF-A is paid by L1 before
		second.Reference = "000123"
		none := payment("L4", 123, "2026-12-02")
		file := []ledger.PaymentRecord{byRef, byAmount, second, none, byRef}
		imp := func(ps []ledger.PaymentRecord) (ledger.ImportCounts, error) {
			return inTx(db, func(ctx context.Context, tx store.Tx) (ledger.ImportCounts, error) {
				return ledger.ImportPayments(ctx, tx, ps, ana, t0)
			})
		}
		got, err := imp(file)
		want := ledger.ImportCounts{Read: 5, New: 4, Duplicate: 1, MatchedReference: 1, MatchedAmount: 1, Unmatched: 2, AllocatedCents: 3700, CreditCents: 2000}
		if err != nil || got != want {
			t.Fatalf("ImportPayments = %+v, %v; want %+v", got, err, want)
		}
		if s := standing(t, db, "NF-A"); s.State != ledger.StatePaid {
			t.Errorf("NF-A is %+v", s)
		}
		if s := standing(t, db, "NF-B"); s.State != ledger.StatePaid {
			t.Errorf("NF-B is %+v", s)
		}
		got, err = imp(file)
		if want := (ledger.ImportCounts{Read: 5, Duplicate: 5}); err != nil || got != want {
			t.Errorf("the same file again = %+v, %v; want %+v", got, err, want)
		}
		changed := byAmount
		changed.AmountCents = 701
		_, err = imp([]ledger.PaymentRecord{payment("L9", 1, "2026-12-02"), changed})
		var ie *ledger.IndexError
		if !errors.As(err, &ie) || ie.Index != 1 || ie.Err.Code != ledger.CodePaymentConflict {
			t.Errorf("a file with a conflicting payment = %v", err)
		}
		bad := payment("L10", 1, "2026-02-30")
		if _, err := imp([]ledger.PaymentRecord{bad}); !errors.As(err, &ie) || ie.Index != 0 || ie.Err.Field != "paidOn" {
			t.Errorf("a file with an invalid payment = %v", err)
		}
		if n := storetest.Count(t, db, "ledger_payment"); n != 4 {
			t.Errorf("%d payments stored, want 4", n)
		}
		if n := storetest.Count(t, db, "ledger_allocation"); n != 2 {
			t.Errorf("%d allocations stored, want 2", n)
		}
	})
}

// TestListUnmatched: keyset pages of the payments with something left,
// oldest first.
func TestListUnmatched(t *testing.T) {
	storetest.Each(t, pg, func(t *testing.T, db store.DB) {
		must[ledger.UpsertCounts](t)(upsert(t, db, inv("NF-1", "C-1", 100, "2026-12-10")))
		var want []string
		for i := range 9 {
			p := payment(fmt.Sprintf("r%d", i), 100, "2026-12-02")
			must[ledger.StoredPayment](t)(inTx(db, func(ctx context.Context, tx store.Tx) (ledger.StoredPayment, error) {
				sp, _, err := ledger.RecordPayment(ctx, tx, p, ana, t0.Add(time.Duration(i%3)*time.Minute))
				return sp, err
			}))
			if i != 4 {
				want = append(want, p.SourceRef)
			}
		}
		sp := must[[]ledger.StoredPayment](t)(func() ([]ledger.StoredPayment, error) {
			page, _, err := ledger.ListUnmatched(context.Background(), db, "", 500)
			return page, err
		}())
		for _, p := range sp {
			if p.SourceRef == "r4" {
				must[[]ledger.Allocation](t)(allocate(db, p.ID, ledger.Planned{InvoiceID: "NF-1", AmountCents: 100}))
			}
		}
		var got []ledger.StoredPayment
		after := ""
		for {
			page, next, err := ledger.ListUnmatched(context.Background(), db, after, 2)
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, page...)
			if next == "" {
				break
			}
			after = next
		}
		var refs []string
		for i, p := range got {
			refs = append(refs, p.SourceRef)
			if i > 0 && (p.CreatedAt.Before(got[i-1].CreatedAt) || p.CreatedAt.Equal(got[i-1].CreatedAt) && p.ID < got[i-1].ID) {
				t.Errorf("not oldest first at %d", i)
			}
		}
		slices.Sort(refs)
		if !cmp.Equal(refs, want) {
			t.Errorf("ListUnmatched = %v, want %v", refs, want)
		}
		if _, _, err := ledger.ListUnmatched(context.Background(), db, "WyJ4IiwieSJd", 2); !is(err, failure.InvalidArguments) {
			t.Errorf("a cursor of another list = %v", err)
		}
	})
}

// TestPromisesAndDisputes: a promise is the invoice's latest; a settled
// invoice takes none; a dispute is open until resolved, one at a time.
func TestPromisesAndDisputes(t *testing.T) {
	storetest.Each(t, pg, func(t *testing.T, db store.DB) {
		must[ledger.UpsertCounts](t)(upsert(t, db, inv("NF-1", "C-1", 1000, "2026-12-10"), inv("NF-2", "C-1", 100, "2026-12-10")))
		prom := func(r ledger.PromiseRecord, now time.Time) (ledger.Promise, error) {
			return inTx(db, func(ctx context.Context, tx store.Tx) (ledger.Promise, error) {
				return ledger.RecordPromise(ctx, tx, r, agent, now)
			})
		}
		first := must[ledger.Promise](t)(prom(ledger.PromiseRecord{InvoiceID: "NF-1", AmountCents: 500, PromisedFor: "2026-12-05", Channel: "phone", Note: "vai pagar metade"}, t0))
		second := must[ledger.Promise](t)(prom(ledger.PromiseRecord{InvoiceID: "NF-1", AmountCents: 1000, PromisedFor: "2026-12-08", Channel: "chat"}, t0.Add(time.Hour)))
		got := get(t, db, "NF-1")
		if diff := cmp.Diff(&second, got.Promise); diff != "" || first.ID == second.ID {
			t.Errorf("the latest promise (-want +got):\n%s", diff)
		}
		if !got.PromisePending("2026-12-08") || got.PromisePending("2026-12-09") {
			t.Errorf("PromisePending around its date is wrong")
		}
		for _, tt := range []struct {
			r     ledger.PromiseRecord
			code  failure.Code
			field string
		}{
			{ledger.PromiseRecord{InvoiceID: "NF-404", AmountCents: 1, PromisedFor: today, Channel: "phone"}, ledger.CodeInvoiceNotFound, "invoiceId"},
			{ledger.PromiseRecord{InvoiceID: "NF-1", AmountCents: 0, PromisedFor: today, Channel: "phone"}, failure.InvalidArguments, "amountCents"},
			{ledger.PromiseRecord{InvoiceID: "NF-1", AmountCents: 1, PromisedFor: "2026-11-30", Channel: "phone"}, failure.InvalidArguments, "promisedFor"},
			{ledger.PromiseRecord{InvoiceID: "NF-1", AmountCents: 1, PromisedFor: "2026-12-32", Channel: "phone"}, failure.InvalidArguments, "promisedFor"},
			{ledger.PromiseRecord{InvoiceID: "NF-1", AmountCents: 1, PromisedFor: today, Channel: "pigeon"}, failure.InvalidArguments, "channel"},
			{ledger.PromiseRecord{InvoiceID: "NF-1", AmountCents: 1, PromisedFor: today, Channel: "phone", Note: "\u202e"}, failure.InvalidArguments, "note"},
			{ledger.PromiseRecord{InvoiceID: " NF-1", AmountCents: 1, PromisedFor: today, Channel: "phone"}, failure.InvalidArguments, "invoiceId"},
		} {
			if _, err := prom(tt.r, t0); !is(err, tt.code) || func() string { _, f := code(err); return f }() != tt.field {
				t.Errorf("RecordPromise(%+v) = %v, want %s on %s", tt.r, err, tt.code, tt.field)
			}
		}
		p := record(t, db, payment("r1", 100, "2026-12-02"))
		must[[]ledger.Allocation](t)(allocate(db, p.ID, ledger.Planned{InvoiceID: "NF-2", AmountCents: 100}))
		if _, err := prom(ledger.PromiseRecord{InvoiceID: "NF-2", AmountCents: 1, PromisedFor: today, Channel: "phone"}, t0); !is(err, ledger.CodeInvoiceSettled) {
			t.Errorf("a promise on a paid invoice = %v", err)
		}
		if n := storetest.Count(t, db, "ledger_promise"); n != 2 {
			t.Errorf("%d promises stored, want 2", n)
		}

		open := func(id string, reason ledger.DisputeReason, note string) (ledger.Dispute, error) {
			return inTx(db, func(ctx context.Context, tx store.Tx) (ledger.Dispute, error) {
				return ledger.OpenDispute(ctx, tx, id, reason, note, agent, t0)
			})
		}
		resolve := func(id, outcome, note string) (ledger.Dispute, error) {
			return inTx(db, func(ctx context.Context, tx store.Tx) (ledger.Dispute, error) {
				return ledger.ResolveDispute(ctx, tx, id, outcome, note, ana, t0.Add(time.Hour))
			})
		}
		if _, err := resolve("NF-1", ledger.OutcomeRejected, ""); !is(err, ledger.CodeNoOpenDispute) {
			t.Errorf("resolving without a dispute = %v", err)
		}
		d := must[ledger.Dispute](t)(open("NF-1", ledger.DisputeNotReceived, "diz que não recebeu"))
		if got := get(t, db, "NF-1").Dispute; got == nil || got.ID != d.ID || got.Note != "diz que não recebeu" || got.OpenedBy != agent {
			t.Errorf("the open dispute = %+v", got)
		}
		if _, err := open("NF-1", ledger.DisputePricing, ""); !is(err, ledger.CodeDisputeOpen) || !strings.Contains(err.Error(), d.ID) {
			t.Errorf("a second open dispute = %v", err)
		}
		for _, tt := range []struct {
			err   error
			field string
		}{
			{func() error { _, err := open("NF-1", "grumpy", ""); return err }(), "reason"},
			{func() error { _, err := open("NF-1", ledger.DisputeOtherReason, "\x00"); return err }(), "note"},
			{func() error { _, err := resolve("NF-1", "maybe", ""); return err }(), "outcome"},
		} {
			if c, f := code(tt.err); c != failure.InvalidArguments || f != tt.field {
				t.Errorf("%v, want invalid_arguments on %s", tt.err, tt.field)
			}
		}
		if _, err := open("NF-404", ledger.DisputeOtherReason, ""); !is(err, ledger.CodeInvoiceNotFound) {
			t.Errorf("a dispute of an unknown invoice = %v", err)
		}
		r := must[ledger.Dispute](t)(resolve("NF-1", ledger.OutcomeRejected, "entrega comprovada"))
		if r.ID != d.ID || r.Outcome != ledger.OutcomeRejected || r.ResolvedBy != ana || !r.ResolvedAt.Equal(t0.Add(time.Hour)) {
			t.Errorf("ResolveDispute = %+v", r)
		}
		if got := get(t, db, "NF-1").Dispute; got != nil {
			t.Errorf("a resolved dispute is still open: %+v", got)
		}
		if _, err := open("NF-1", ledger.DisputeDuplicate, ""); err != nil {
			t.Errorf("a new dispute after the first was resolved: %v", err)
		}
		if n := storetest.Count(t, db, "ledger_dispute"); n != 2 {
			t.Errorf("%d disputes stored, want 2", n)
		}
	})
}
