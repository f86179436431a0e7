package ledger_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/cobranca/cobranca/internal/customers"
	"github.com/cobranca/cobranca/internal/failure"
	"github.com/cobranca/cobranca/internal/ledger"
	"github.com/cobranca/cobranca/internal/pgtest"
	"github.com/cobranca/cobranca/internal/store"
	"github.com/cobranca/cobranca/internal/store/storetest"
	"github.com/cobranca/cobranca/internal/writeoffs"
)

var pg = pgtest.New()

func TestMain(m *testing.M) { pg.Run(m) }

var (
	t0    = time.Date(2026, 12, 1, 9, 30, 0, 123456000, time.UTC)
	today = "2026-12-01"
	ana   = ledger.Actor{Subject: "ana"}
	agent = ledger.Actor{Subject: "ana", Actor: "claude"}
)

func inTx[T any](db store.DB, fn func(ctx context.Context, tx store.Tx) (T, error)) (T, error) {
	var v T
	err := db.InTx(context.Background(), func(ctx context.Context, tx store.Tx) error {
		var err error
		v, err = fn(ctx, tx)
		return err
	})
	return v, err
}

func must[T any](t testing.TB) func(T, error) T {
	return func(v T, err error) T {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
}

func upsert(t testing.TB, db store.DB, recs ...ledger.InvoiceRecord) (ledger.UpsertCounts, error) {
	t.Helper()
	for i := range recs {
		if fe := recs[i].Validate(); fe != nil {
			t.Fatalf("record %d does not validate: %v", i, fe)
		}
	}
	return inTx(db, func(ctx context.Context, tx store.Tx) (ledger.UpsertCounts, error) {
		return ledger.UpsertInvoices(ctx, tx, recs, t0)
	})
}

func inv(id, customer string, cents int64, due string) ledger.InvoiceRecord {
	return ledger.InvoiceRecord{InvoiceID: id, CustomerID: customer, AmountCents: cents, Currency: "BRL", DueDate: due}
}

func get(t testing.TB, db store.Querier, id string) ledger.StoredInvoice {
	t.Helper()
	i, err := ledger.GetInvoice(context.Background(), db, id)
	if err != nil {
		t.Fatalf("GetInvoice(%s) = %v", id, err)
	}
	return i
}

func code(err error) (failure.Code, string) {
	if fe, ok := failure.As(err); ok {
		return fe.Code, fe.Field
	}
	return "", ""
}

func payment(ref string, cents int64, paidOn string) ledger.PaymentRecord {
	return ledger.PaymentRecord{Source: "test", SourceRef: ref, AmountCents: cents, Currency: "BRL", PaidOn: paidOn, Method: ledger.MethodPIX}
}

func record(t testing.TB, db store.DB, p ledger.PaymentRecord) ledger.StoredPayment {
	t.Helper()
	return must[ledger.StoredPayment](t)(inTx(db, func(ctx context.Context, tx store.Tx) (ledger.StoredPayment, error) {
		sp, _, err := ledger.RecordPayment(ctx, tx, p, ana, t0)
		return sp, err
	}))
}

func allocate(db store.DB, paymentID string, plan ...ledger.Planned) ([]ledger.Allocation, error) {
	return inTx(db, func(ctx context.Context, tx store.Tx) ([]ledger.Allocation, error) {
		return ledger.Allocate(ctx, tx, paymentID, plan, agent, t0)
	})
}

func standing(t testing.TB, db store.Querier, id string) ledger.Standing {
	t.Helper()
	return get(t, db, id).Standing
}

// TestUpsertInvoices: an unknown invoice is created open; the same record
// again changes nothing; a changed one is updated and derived again (void,
// amount); counts say which.
func TestUpsertInvoices(t *testing.T) {
	storetest.Each(t, pg, func(t *testing.T, db store.DB) {
		a := inv("NF-1", "C-1", 10000, "2026-12-10")
		a.PixTxID, a.Reference, a.IssueDate, a.CustomerName = "TX1", "pedido 7", "2026-11-10", "Padaria"
		b := inv("NF-2", "C-1", 5000, "2026-12-20")
		got, err := upsert(t, db, a, b)
		if err != nil || got != (ledger.UpsertCounts{Created: 2}) {
			t.Fatalf("first upsert = %+v, %v; want 2 created", got, err)
		}
		want := ledger.StoredInvoice{InvoiceRecord: a, Standing: ledger.Standing{State: ledger.StateOpen, OpenCents: 10000}, CreatedAt: t0, UpdatedAt: t0}
		if diff := cmp.Diff(want, get(t, db, "NF-1")); diff != "" {
			t.Errorf("GetInvoice (-want +got):\n%s", diff)
		}
		b2 := b
		b2.Void = true
		c := inv("NF-3", "C-2", 1, "2027-01-01")
		got, err = upsert(t, db, c, a, b2)
		if err != nil || got != (ledger.UpsertCounts{Created: 1, Updated: 1, Unchanged: 1}) {
			t.Fatalf("second upsert = %+v, %v; want 1 of each", got, err)
		}
		if s := standing(t, db, "NF-2"); s.State != ledger.StateVoid || s.OpenCents != 0 {
			t.Errorf("a voided invoice is %+v", s)
		}
		a.AmountCents = 12000
		if _, err := upsert(t, db, a); err != nil {
			t.Fatal(err)
		}
		if s := standing(t, db, "NF-1"); s.OpenCents != 12000 {
			t.Errorf("after the amount changed: %+v", s)
		}
		if _, err := ledger.GetInvoice(context.Background(), db, "NF-404"); !errors.Is(err, ledger.ErrInvoiceNotFound) {
			t.Errorf("GetInvoice of an unknown invoice = %v", err)
		}
		m, err := ledger.GetInvoices(context.Background(), db, []string{"NF-1", "NF-404", "NF-3"})
		if err != nil || len(m) != 2 || m["NF-3"].AmountCents != 1 {
			t.Errorf("GetInvoices = %v, %v", m, err)
		}
	})
}

// TestUpsertRefusals: a batch that repeats an invoice, or changes the
// amount or currency of an invoice with payments, is refused whole: the
// record's index and the field are named, and nothing of the batch is
// written.
func TestUpsertRefusals(t *testing.T) {
	storetest.Each(t, pg, func(t *testing.T, db store.DB) {
		a := inv("NF-1", "C-1", 10000, "2026-12-10")
		must[ledger.UpsertCounts](t)(upsert(t, db, a))
		p := record(t, db, payment("r1", 4000, "2026-12-02"))
		must[[]ledger.Allocation](t)(allocate(db, p.ID, ledger.Planned{InvoiceID: "NF-1", AmountCents: 4000}))

		fresh := inv("NF-9", "C-1", 1, "2026-12-10")
		for _, tt := range []struct {
			name  string
			edit  func(*ledger.InvoiceRecord)
			code  failure.Code
			field string
		}{
			{"amount", func(r *ledger.InvoiceRecord) { r.AmountCents = 9000 }, ledger.CodeInvoiceHasPayments, "amountCents"},
			{"currency", func(r *ledger.InvoiceRecord) { r.Currency = "USD" }, ledger.CodeInvoiceHasPayments, "currency"},
		} {
			changed := a
			tt.edit(&changed)
			_, err := upsert(t, db, fresh, changed)
			var ie *ledger.IndexError
			if c, f := code(err); !errors.As(err, &ie) || ie.Index != 1 || c != tt.code || f != tt.field || !strings.Contains(err.Error(), "NF-1") {
				t.Errorf("%s change = %v; want %s on %s of record 1", tt.name, err, tt.code, tt.field)
			}
		}
		// Other changes of an invoice with payments are taken: its void flag.
		voided := a
		voided.Void, voided.DueDate = true, "2026-12-31"
		if _, err := upsert(t, db, voided); err != nil {
			t.Errorf("voiding an invoice with payments: %v", err)
		}
		if s := standing(t, db, "NF-1"); s.State != ledger.StateVoid || s.PaidCents != 4000 {
			t.Errorf("the voided invoice with payments is %+v", s)
		}
		_, err := upsert(t, db, fresh, inv("NF-8", "C-1", 1, "2026-12-10"), fresh)
		var ie *ledger.IndexError
		if c, f := code(err); !errors.As(err, &ie) || ie.Index != 2 || c != failure.InvalidArguments || f != "invoiceId" {
			t.Errorf("a batch repeating an invoice = %v", err)
		}
		if n := storetest.Count(t, db, "ledger_invoice"); n != 1 {
			t.Errorf("%d invoices stored after refused batches, want 1", n)
		}
	})
}

// TestUpsertLargeBatch: a batch larger than one statement's rows is
// written whole, and all of it again is unchanged.
func TestUpsertLargeBatch(t *testing.T) {
	storetest.Each(t, pg, func(t *testing.T, db store.DB) {
		recs := make([]ledger.InvoiceRecord, 4000)
		for i := range recs {
			recs[i] = inv(fmt.Sprintf("NF-%05d", len(recs)-i), fmt.Sprintf("C-%d", i%37), int64(100+i), "2026-12-10")
		}
		if got, err := upsert(t, db, recs...); err != nil || got.Created != len(recs) {
			t.Fatalf("upsert of %d = %+v, %v", len(recs), got, err)
		}
		recs[3999].AmountCents++
		if got, err := upsert(t, db, recs...); err != nil || got != (ledger.UpsertCounts{Updated: 1, Unchanged: len(recs) - 1}) {
			t.Fatalf("upsert again = %+v, %v", got, err)
		}
		if n := storetest.Count(t, db, "ledger_invoice"); n != int64(len(recs)) {
			t.Errorf("%d stored", n)
		}
	})
}

// TestRecordPayment: a payment is recorded once per (source, sourceRef);
// the same again is the stored one, not created; another amount, currency
// or date under the same identity is payment_conflict; an invalid record
// is refused naming the field.
func TestRecordPayment(t *testing.T) {
	storetest.Each(t, pg, func(t *testing.T, db store.DB) {
		p := payment("FIT-1", 5000, "2026-12-02")
		p.Reference, p.Payer, p.CustomerID = "TX1", "Padaria LTDA", "C-1"
		rec := func(p ledger.PaymentRecord) (ledger.StoredPayment, bool, error) {
			var created bool
			sp, err := inTx(db, func(ctx context.Context, tx store.Tx) (ledger.StoredPayment, error) {
				sp, c, err := ledger.RecordPayment(ctx, tx, p, agent, t0)
				created = c
				return sp, err
			})
			return sp, created, err
		}
		first, created, err := rec(p)
		if err != nil || !created || first.LeftCents != 5000 || first.RecordedBy != agent || !strings.HasPrefix(first.ID, ledger.PaymentPrefix) {
			t.Fatalf("RecordPayment = %+v, %v, %v", first, created, err)
		}
		again, created, err := rec(p)
		if err != nil || created || again.ID != first.ID {
			t.Errorf("the same payment again = %+v, created %v, %v; want the stored one", again, created, err)
		}
		got, err := ledger.GetPayment(context.Background(), db, first.ID)
		if diff := cmp.Diff(first, got); err != nil || diff != "" {
			t.Errorf("GetPayment = %v (-want +got):\n%s", err, diff)
		}
		for _, edit := range []func(*ledger.PaymentRecord){
			func(p *ledger.PaymentRecord) { p.AmountCents++ },
			func(p *ledger.PaymentRecord) { p.Currency = "USD" },
			func(p *ledger.PaymentRecord) { p.PaidOn = "2026-12-03" },
		} {
			q := p
			edit(&q)
			if _, _, err := rec(q); !is(err, ledger.CodePaymentConflict) {
				t.Errorf("a payment of the same identity changed to %+v = %v, want payment_conflict", q, err)
			}
		}
		bad := p
		bad.SourceRef = "FIT-2"
		bad.Method = "cheque"
		if _, _, err := rec(bad); !is(err, failure.InvalidArguments) {
			t.Errorf("an invalid method = %v", err)
		}
		if _, err := ledger.GetPayment(context.Background(), db, "pay_nope"); !errors.Is(err, ledger.ErrPaymentNotFound) {
			t.Errorf("GetPayment of an unknown payment = %v", err)
		}
		if n := storetest.Count(t, db, "ledger_payment"); n != 1 {
			t.Errorf("%d payments stored, want 1", n)
		}
	})
}

func is(err error, c failure.Code) bool {
	got, _ := code(err)
	return got == c
}

// TestAllocate: a person's match allocates parts of a payment to invoices,
// all or nothing: every refusal of CheckAllocation names the invoice, and
// a refused plan changes nothing.
func TestAllocate(t *testing.T) {
	storetest.Each(t, pg, func(t *testing.T, db store.DB) {
		usd := inv("NF-USD", "C-1", 1000, "2026-12-10")
		usd.Currency = "USD"
		voided := inv("NF-VOID", "C-1", 1000, "2026-12-10")
		voided.Void = true
		must[ledger.UpsertCounts](t)(upsert(t, db, inv("NF-1", "C-1", 3000, "2026-12-10"), inv("NF-2", "C-1", 2000, "2026-12-10"), usd, voided))
		p := record(t, db, payment("r1", 4500, "2026-12-02"))
		for _, tt := range []struct {
			name string
			plan []ledger.Planned
			code failure.Code
		}{
			{"over the invoice", []ledger.Planned{{"NF-1", 3001}}, ledger.CodeAllocationRefused},
			{"over the payment", []ledger.Planned{{"NF-1", 3000}, {"NF-2", 1501}}, ledger.CodeAllocationRefused},
			{"zero", []ledger.Planned{{"NF-1", 0}}, ledger.CodeAllocationRefused},
			{"another currency", []ledger.Planned{{"NF-USD", 100}}, ledger.CodeAllocationRefused},
			{"a void invoice", []ledger.Planned{{"NF-VOID", 100}}, ledger.CodeAllocationRefused},
			{"an unknown invoice", []ledger.Planned{{"NF-1", 100}, {"NF-404", 100}}, ledger.CodeInvoiceNotFound},
			{"nothing", nil, failure.InvalidArguments},
		} {
			if _, err := allocate(db, p.ID, tt.plan...); !is(err, tt.code) {
				t.Errorf("%s: Allocate = %v, want %s", tt.name, err, tt.code)
			}
		}
		if n := storetest.Count(t, db, "ledger_allocation"); n != 0 {
			t.Fatalf("%d allocations after refused plans", n)
		}
		if _, err := allocate(db, "pay_nope", ledger.Planned{InvoiceID: "NF-1", AmountCents: 1}); !is(err, ledger.CodePaymentNotFound) || !errors.Is(err, ledger.ErrPaymentNotFound) {
			t.Errorf("an unknown payment = %v", err)
		}
		got, err := allocate(db, p.ID, ledger.Planned{InvoiceID: "NF-1", AmountCents: 3000}, ledger.Planned{InvoiceID: "NF-2", AmountCents: 500})
		if err != nil || len(got) != 2 || got[0].Rule != ledger.RuleManual || got[1].By != agent {
			t.Fatalf("Allocate = %+v, %v", got, err)
		}
		if s := standing(t, db, "NF-1"); s != (ledger.Standing{State: ledger.StatePaid, PaidCents: 3000}) {
			t.Errorf("NF-1 is %+v, want paid", s)
		}
		if s := standing(t, db, "NF-2"); s != (ledger.Standing{State: ledger.StatePartiallyPaid, OpenCents: 1500, PaidCents: 500}) {
			t.Errorf("NF-2 is %+v, want partially paid", s)
		}
		sp, err := ledger.GetPayment(context.Background(), db, p.ID)
		if err != nil || sp.LeftCents != 1000 || len(sp.Allocations) != 2 {
			t.Errorf("the payment after = %+v, %v", sp, err)
		}
		if _, err := allocate(db, p.ID, ledger.Planned{InvoiceID: "NF-2", AmountCents: 100}); !is(err, ledger.CodeAllocationRefused) {
			t.Errorf("a second allocation of the payment to one invoice = %v", err)
		}
		if _, err := allocate(db, p.ID, ledger.Planned{InvoiceID: "NF-1", AmountCents: 1}); !is(err, ledger.CodeAllocationRefused) {
			t.Errorf("an allocation to a paid invoice = %v", err)
		}
		all, err := ledger.Allocations(context.Background(), db, "NF-2")
		want := []ledger.Allocation{{PaymentID: p.ID, InvoiceID: "NF-2", AmountCents: 500, Rule: ledger.RuleManual, By: agent, At: t0}}
		if diff := cmp.Diff(want, all); err != nil || diff != "" {
			t.Errorf("Allocations = %v (-want +got):\n%s", err, diff)
		}
	})
}

// TestAutoMatch: a payment carrying an invoice's reference pays the
// invoices carrying it, oldest due date first, the rest is credit; one of
// a customer's exact open amount pays that invoice; two such invoices are
// ambiguous and nothing is allocated.
func TestAutoMatch(t *testing.T) {
	storetest.Each(t, pg, func(t *testing.T, db store.DB) {
		a := inv("NF-A", "C-1", 3000, "2026-12-20")
		a.PixTxID = "TX9"
		b := inv("NF-B", "C-1", 2000, "2026-12-10")
		b.Reference = "TX9"
		c := inv("NF-C", "C-2", 7000, "2026-12-10")
		d1, d2 := inv("NF-D1", "C-3", 800, "2026-12-10"), inv("NF-D2", "C-3", 800, "2026-12-15")
		must[ledger.UpsertCounts](t)(upsert(t, db, a, b, c, d1, d2))
		match := func(p ledger.PaymentRecord) (ledger.Rule, []ledger.Allocation) {
			t.Helper()
			sp := record(t, db, p)
			var allocs []ledger.Allocation
			rule, err := inTx(db, func(ctx context.Context, tx store.Tx) (ledger.Rule, error) {
				r, as, err := ledger.AutoMatch(ctx, tx, sp.ID, ana, t0)
				allocs = as
				return r, err
			})
			if err != nil {
				t.Fatal(err)
			}
			return rule, allocs
		}
		p := payment("r1", 6000, "2026-12-05")
		p.Reference = "TX9"
		rule, allocs := match(p)
		if rule != ledger.RuleReference || len(allocs) != 2 || allocs[0].InvoiceID != "NF-B" || allocs[0].AmountCents != 2000 || allocs[1].AmountCents != 3000 {
			t.Errorf("by reference: %s %+v", rule, allocs)
		}
		if s := standing(t, db, "NF-A"); s.State != ledger.StatePaid {
			t.Errorf("NF-A %+v", s)
		}
		q := payment("r2", 7000, "2026-12-05")
		q.CustomerID = "C-2"
		if rule, allocs := match(q); rule != ledger.RuleAmount || len(allocs) != 1 || allocs[0].InvoiceID != "NF-C" {
			t.Errorf("by amount: %s %+v", rule, allocs)
		}
		r := payment("r3", 800, "2026-12-05")
		r.CustomerID = "C-3"
		if rule, allocs := match(r); rule != ledger.RuleNone || len(allocs) != 0 {
			t.Errorf("ambiguous: %s %+v", rule, allocs)
		}
		page, _, err := ledger.ListUnmatched(context.Background(), db, "", 10)
		left := map[string]int64{}
		for _, p := range page {
			left[p.SourceRef] = p.LeftCents
		}
		if err != nil || !cmp.Equal(left, map[string]int64{"r1": 1000, "r3": 800}) {
			t.Errorf("ListUnmatched = %+v, %v; want the credit of r1 and r3", page, err)
		}
	})
}

// TestWrittenOff: a write-off closes what payments left of a ledger
// invoice, in the write-off's transaction, whichever comes first: the
// invoice or its write-off.
func TestWrittenOff(t *testing.T) {
	storetest.Each(t, pg, func(t *testing.T, db store.DB) {
		must[customers.Customer](t)(inTx(db, func(ctx context.Context, tx store.Tx) (customers.Customer, error) {
			return customers.Upsert(ctx, tx, customers.Record{ID: "C-1", Name: "Padaria", Email: "f@padaria.example"}, t0)
		}))
		writeOff := func(id string, cents int64) {
			t.Helper()
			must[writeoffs.WriteOff](t)(inTx(db, func(ctx context.Context, tx store.Tx) (writeoffs.WriteOff, error) {
				return writeoffs.Record(ctx, tx, writeoffs.Request{InvoiceID: id, CustomerID: "C-1", AmountCents: cents, Reason: "prescrita"},
					writeoffs.Author{Subject: "ana"}, t0)
			}))
		}
		must[ledger.UpsertCounts](t)(upsert(t, db, inv("NF-1", "C-1", 3000, "2026-12-10")))
		p := record(t, db, payment("r1", 1000, "2026-12-02"))
		must[[]ledger.Allocation](t)(allocate(db, p.ID, ledger.Planned{InvoiceID: "NF-1", AmountCents: 1000}))
		writeOff("NF-1", 2000)
		if got := get(t, db, "NF-1"); got.Standing != (ledger.Standing{State: ledger.StateWrittenOff, PaidCents: 1000}) || got.WrittenOffCents != 2000 {
			t.Errorf("after its write-off NF-1 is %+v, %d written off", got.Standing, got.WrittenOffCents)
		}
		writeOff("NF-2", 500) // before the ledger knows it
		must[ledger.UpsertCounts](t)(upsert(t, db, inv("NF-2", "C-1", 3000, "2026-12-10")))
		if got := get(t, db, "NF-2"); got.Standing != (ledger.Standing{State: ledger.StateOpen, OpenCents: 2500}) || got.WrittenOffCents != 500 {
			t.Errorf("NF-2 imported after its write-off is %+v, %d written off", got.Standing, got.WrittenOffCents)
		}
	})
}

// TestCheckContactBasics: the verdicts of a draft's invoices, in the
// draft's order, an unknown one not known.
func TestCheckContactBasics(t *testing.T) {
	storetest.Each(t, pg, func(t *testing.T, db store.DB) {
		must[ledger.UpsertCounts](t)(upsert(t, db, inv("NF-1", "C-1", 3000, "2026-12-10"), inv("NF-2", "C-1", 2000, "2026-12-10")))
		p := record(t, db, payment("r1", 2000, "2026-12-02"))
		must[[]ledger.Allocation](t)(allocate(db, p.ID, ledger.Planned{InvoiceID: "NF-2", AmountCents: 2000}))
		got := must[[]ledger.Verdict](t)(inTx(db, func(ctx context.Context, tx store.Tx) ([]ledger.Verdict, error) {
			return ledger.CheckContact(ctx, tx, today, []ledger.Expected{{"NF-404", 1}, {"NF-2", 2000}, {"NF-1", 3000}})
		}))
		type short struct {
			ID    string
			Known bool
			Code  failure.Code
			Why   string
		}
		var gotShort []short
		for _, v := range got {
			gotShort = append(gotShort, short{v.InvoiceID, v.Known, v.Code, v.Why})
		}
		want := []short{{"NF-404", false, "", ""}, {"NF-2", true, ledger.CodeInvoiceSettled, "paid"}, {"NF-1", true, "", ""}}
		if diff := cmp.Diff(want, gotShort, cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("CheckContact (-want +got):\n%s", diff)
		}
	})
}
