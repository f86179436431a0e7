package writeoffs_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/cobranca/cobranca/internal/customers"
	"github.com/cobranca/cobranca/internal/deptest"
	"github.com/cobranca/cobranca/internal/failure"
	"github.com/cobranca/cobranca/internal/ident"
	"github.com/cobranca/cobranca/internal/pgtest"
	"github.com/cobranca/cobranca/internal/store"
	"github.com/cobranca/cobranca/internal/store/storetest"
	"github.com/cobranca/cobranca/internal/writeoffs"
)

var pg = pgtest.New()

func TestMain(m *testing.M) { pg.Run(m) }

var (
	t0  = time.Date(2026, 12, 1, 9, 30, 0, 123456789, time.UTC)
	ana = writeoffs.Author{Subject: "ana", ClientID: "cobranca-web", ACR: "urn:mfa", AuthTime: t0.Add(-time.Minute)}
)

func record(db store.DB, r writeoffs.Request, a writeoffs.Author, now time.Time) (writeoffs.WriteOff, error) {
	var w writeoffs.WriteOff
	err := db.InTx(context.Background(), func(ctx context.Context, tx store.Tx) error {
		var err error
		w, err = writeoffs.Record(ctx, tx, r, a, now)
		return err
	})
	return w, err
}

func customer(t *testing.T, db store.DB, id string) {
	t.Helper()
	err := db.InTx(context.Background(), func(ctx context.Context, tx store.Tx) error {
		_, err := customers.Upsert(ctx, tx, customers.Record{ID: id, Name: "Padaria São João", Email: "financeiro@padaria.example"}, t0)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

func code(err error) (failure.Code, string) {
	if fe, ok := failure.As(err); ok {
		return fe.Code, fe.Field
	}
	return "", ""
}

// TestRecord: a write-off of a stored customer's invoice is kept with who made it and how they
// signed in; the same invoice again — for any customer, amount or person — is refused with
// invoice_already_written_off naming the first, and changes nothing; an unknown customer is
// refused with customer_not_found.
func TestRecord(t *testing.T) {
	storetest.Each(t, pg, func(t *testing.T, db store.DB) {
		customer(t, db, "C-1")
		customer(t, db, "C-2")
		r := writeoffs.Request{InvoiceID: "NF-1001", CustomerID: "C-1", AmountCents: 123456, Reason: "cliente em recuperação judicial"}
		w, err := record(db, r, ana, t0)
		if err != nil {
			t.Fatal(err)
		}
		if !ident.Valid(writeoffs.Prefix, w.ID) {
			t.Errorf("id %q is not a write-off id", w.ID)
		}
		want := writeoffs.WriteOff{ID: w.ID, Request: r, By: writeoffs.Author{Subject: "ana", ClientID: "cobranca-web", ACR: "urn:mfa",
			AuthTime: time.UnixMicro(ana.AuthTime.UnixMicro()).UTC()}, CreatedAt: time.UnixMicro(t0.UnixMicro()).UTC()}
		if diff := cmp.Diff(want, w); diff != "" {
			t.Errorf("Record (-want +got):\n%s", diff)
		}
		got, err := writeoffs.ForInvoice(context.Background(), db, "NF-1001")
		if diff := cmp.Diff(want, got); err != nil || diff != "" {
			t.Errorf("ForInvoice = %v (-want +got):\n%s", err, diff)
		}
		for _, again := range []writeoffs.Request{r, {InvoiceID: "NF-1001", CustomerID: "C-2", AmountCents: 1, Reason: "outro motivo"}} {
			_, err := record(db, again, writeoffs.Author{Subject: "bruno"}, t0.Add(time.Hour))
			if c, f := code(err); c != writeoffs.CodeAlreadyWrittenOff || f != writeoffs.FieldInvoiceID || !strings.Contains(err.Error(), w.ID) {
				t.Errorf("a second write-off of the invoice = %v; want %s naming %s", err, writeoffs.CodeAlreadyWrittenOff, w.ID)
			}
		}
		if n := storetest.Count(t, db, "write_off"); n != 1 {
			t.Errorf("%d write-offs stored, want 1", n)
		}
		_, err = record(db, writeoffs.Request{InvoiceID: "NF-2", CustomerID: "C-404", AmountCents: 1, Reason: "x"}, ana, t0)
		if c, f := code(err); c != customers.CodeNotFound || f != writeoffs.FieldCustomerID {
			t.Errorf("unknown customer = %v; want %s on %s", err, customers.CodeNotFound, writeoffs.FieldCustomerID)
		}
		if _, err := writeoffs.ForInvoice(context.Background(), db, "NF-2"); !errors.Is(err, writeoffs.ErrNotFound) {
			t.Errorf("ForInvoice of an invoice never written off = %v, want ErrNotFound", err)
		}
	})
}

// TestRecordConcurrently: of several transactions writing one invoice off at once, exactly one
// succeeds and the others are refused with invoice_already_written_off.
func TestRecordConcurrently(t *testing.T) {
	storetest.Each(t, pg, func(t *testing.T, db store.DB) {
		customer(t, db, "C-1")
		const n = 6
		errs := make([]error, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				_, errs[i] = record(db, writeoffs.Request{InvoiceID: "NF-9", CustomerID: "C-1", AmountCents: int64(100 + i), Reason: "prescrita"}, ana, t0)
			})
		}
		wg.Wait()
		ok := 0
		for _, err := range errs {
			switch c, _ := code(err); {
			case err == nil:
				ok++
			case c != writeoffs.CodeAlreadyWrittenOff:
				t.Errorf("a concurrent write-off failed with %v", err)
			}
		}
		if ok != 1 || storetest.Count(t, db, "write_off") != 1 {
			t.Errorf("%d of %d concurrent write-offs succeeded, want 1", ok, n)
		}
	})
}

// TestValidate: every rule names its field; the value never reaches the message.
func TestValidate(t *testing.T) {
	ok := writeoffs.Request{InvoiceID: "NF-1", CustomerID: "C-1", AmountCents: 1, Reason: "r"}
	if fe := ok.Validate(); fe != nil {
		t.Fatalf("Validate(%+v) = %v", ok, fe)
	}
	secret := "S3CR3T\u202e"
	for _, tt := range []struct {
		name  string
		edit  func(*writeoffs.Request)
		field string
	}{
		{"empty invoice", func(r *writeoffs.Request) { r.InvoiceID = "" }, "invoiceId"},
		{"invoice with a bidi control", func(r *writeoffs.Request) { r.InvoiceID = secret }, "invoiceId"},
		{"invoice with a trailing space", func(r *writeoffs.Request) { r.InvoiceID = "NF-1 " }, "invoiceId"},
		{"invoice too long", func(r *writeoffs.Request) { r.InvoiceID = strings.Repeat("9", 256) }, "invoiceId"},
		{"empty customer", func(r *writeoffs.Request) { r.CustomerID = "" }, "customerId"},
		{"customer with a leading space", func(r *writeoffs.Request) { r.CustomerID = " C-1" }, "customerId"},
		{"zero amount", func(r *writeoffs.Request) { r.AmountCents = 0 }, "amountCents"},
		{"negative amount", func(r *writeoffs.Request) { r.AmountCents = -5 }, "amountCents"},
		{"amount over R$ 10 billion", func(r *writeoffs.Request) { r.AmountCents = writeoffs.MaxAmountCents + 1 }, "amountCents"},
		{"empty reason", func(r *writeoffs.Request) { r.Reason = "" }, "reason"},
		{"blank reason", func(r *writeoffs.Request) { r.Reason = "   " }, "reason"},
		{"reason with a control character", func(r *writeoffs.Request) { r.Reason = secret + "\x00" }, "reason"},
		{"reason too long", func(r *writeoffs.Request) { r.Reason = strings.Repeat("é", 256) }, "reason"},
	} {
		r := ok
		tt.edit(&r)
		fe := r.Validate()
		if fe == nil || fe.Code != failure.InvalidArguments || fe.Field != tt.field || strings.Contains(fe.Message, "S3CR3T") {
			t.Errorf("%s: Validate = %v, want invalid_arguments on %s, without the value", tt.name, fe, tt.field)
		}
	}
	max := ok
	max.AmountCents = writeoffs.MaxAmountCents
	if fe := max.Validate(); fe != nil {
		t.Errorf("the largest amount: %v", fe)
	}
}

// TestRecordRefusesInvalid: Record validates, and an invalid request writes nothing.
func TestRecordRefusesInvalid(t *testing.T) {
	db := storetest.SQLite(t)
	customer(t, db, "C-1")
	_, err := record(db, writeoffs.Request{InvoiceID: "NF-1", CustomerID: "C-1", AmountCents: 0, Reason: "r"}, ana, t0)
	if c, f := code(err); c != failure.InvalidArguments || f != "amountCents" {
		t.Errorf("Record of amount 0 = %v", err)
	}
	if _, err := record(db, writeoffs.Request{InvoiceID: "NF-1", CustomerID: "C-1", AmountCents: 1, Reason: "r"}, writeoffs.Author{}, t0); err == nil {
		t.Error("Record without an author succeeded")
	}
	if n := storetest.Count(t, db, "write_off"); n != 0 {
		t.Errorf("%d write-offs stored, want 0", n)
	}
}

// TestEditsRefused: a write-off is never changed or removed by the server: on PostgreSQL the
// serving role may insert and read write-offs only (no grant), and triggers refuse even the
// owner (a server run as the owner); on SQLite, where no role stands between the server and a
// table, the table itself refuses, as the audit log's does.
func TestEditsRefused(t *testing.T) {
	for _, tt := range []struct {
		name, refusal string
		db            func(*testing.T) store.DB
	}{
		{"postgres serving role", "permission denied", func(t *testing.T) store.DB { return storetest.AppRole(t, pg) }},
		{"postgres owner", "write-offs are permanent", func(t *testing.T) store.DB { _, owner := storetest.AppRoleAndOwner(t, pg); return owner }},
		{"sqlite", "write-offs are permanent", func(t *testing.T) store.DB { return storetest.SQLite(t) }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			db := tt.db(t)
			customer(t, db, "C-1")
			if _, err := record(db, writeoffs.Request{InvoiceID: "NF-1", CustomerID: "C-1", AmountCents: 10, Reason: "r"}, ana, t0); err != nil {
				t.Fatal(err)
			}
			for _, sql := range []string{`UPDATE write_off SET amount_cents = 1`, `DELETE FROM write_off`} {
				if _, err := db.Exec(context.Background(), sql); err == nil || !strings.Contains(err.Error(), tt.refusal) {
					t.Errorf("%s = %v, want %s", sql, err, tt.refusal)
				}
			}
			if w, err := writeoffs.ForInvoice(context.Background(), db, "NF-1"); err != nil || w.AmountCents != 10 {
				t.Errorf("after the refused edits: %+v, %v", w, err)
			}
		})
	}
}

// Writeoffs is a domain package: no pipeline, transport, SDK or driver.
func TestImports(t *testing.T) {
	const self = "github.com/cobranca/cobranca/internal/writeoffs"
	for _, d := range deptest.NonStd(t, self) {
		for _, banned := range []string{
			"github.com/cobranca/cobranca/internal/pipeline",
			"github.com/cobranca/cobranca/internal/collections",
			"github.com/cobranca/cobranca/internal/auditlog",
			"github.com/modelcontextprotocol/",
			"github.com/jackc/",
			"modernc.org/sqlite",
		} {
			if strings.HasPrefix(d, banned) {
				t.Errorf("%s depends on %s", self, d)
			}
		}
	}
}
