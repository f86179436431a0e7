package customers_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/cobranca/cobranca/internal/customers"
	"github.com/cobranca/cobranca/internal/failure"
	"github.com/cobranca/cobranca/internal/pgtest"
	"github.com/cobranca/cobranca/internal/store"
	"github.com/cobranca/cobranca/internal/store/storetest"
)

var pg = pgtest.New()

func TestMain(m *testing.M) { pg.Run(m) }

var t0 = time.Date(2026, 12, 1, 9, 30, 0, 123456000, time.UTC)

func inTx[T any](t *testing.T, db store.DB, fn func(ctx context.Context, tx store.Tx) (T, error)) (T, error) {
	t.Helper()
	var v T
	err := db.InTx(context.Background(), func(ctx context.Context, tx store.Tx) error {
		var err error
		v, err = fn(ctx, tx)
		return err
	})
	return v, err
}

func upsert(t *testing.T, db store.DB, r customers.Record, now time.Time) customers.Customer {
	t.Helper()
	c, err := inTx(t, db, func(ctx context.Context, tx store.Tx) (customers.Customer, error) {
		return customers.Upsert(ctx, tx, r, now)
	})
	if err != nil {
		t.Fatalf("Upsert(%+v) = %v", r, err)
	}
	return c
}

func get(t *testing.T, db store.DB, id string) customers.Customer {
	t.Helper()
	c, err := customers.Get(context.Background(), db, id)
	if err != nil {
		t.Fatalf("Get(%q) = %v", id, err)
	}
	return c
}

func TestUpsert(t *testing.T) {
	storetest.Each(t, pg, func(t *testing.T, db store.DB) {
		r := customers.Record{ID: "C-001", Name: "Padaria São João", Email: "financeiro@padaria.example"}
		created := upsert(t, db, r, t0)
		want := customers.Customer{ID: r.ID, Name: r.Name, Email: r.Email, Status: customers.Contactable, CreatedAt: t0, UpdatedAt: t0}
		if diff := cmp.Diff(want, created); diff != "" {
			t.Fatalf("Upsert(new) (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff(want, get(t, db, r.ID)); diff != "" {
			t.Fatalf("Get after create (-want +got):\n%s", diff)
		}

		// The same record later: nothing written.
		if got := upsert(t, db, r, t0.Add(time.Hour)); !got.UpdatedAt.Equal(t0) {
			t.Errorf("Upsert(same) UpdatedAt = %v, want %v (unchanged)", got.UpdatedAt, t0)
		}

		// A status set by a person survives an update of name and e-mail.
		ch := customers.Change{Status: customers.DoNotContact, Reason: "asked by phone", SetBy: "user-7"}
		if _, err := inTx(t, db, func(ctx context.Context, tx store.Tx) (customers.Customer, error) {
			return customers.SetStatus(ctx, tx, r.ID, ch, t0.Add(2*time.Hour))
		}); err != nil {
			t.Fatal(err)
		}
		r2 := customers.Record{ID: r.ID, Name: "Padaria São João Ltda", Email: "contas@padaria.example"}
		updated := upsert(t, db, r2, t0.Add(3*time.Hour))
		want = customers.Customer{ID: r.ID, Name: r2.Name, Email: r2.Email, Status: customers.DoNotContact,
			Reason: "asked by phone", SetBy: "user-7", SetAt: t0.Add(2 * time.Hour), CreatedAt: t0, UpdatedAt: t0.Add(3 * time.Hour)}
		if diff := cmp.Diff(want, updated); diff != "" {
			t.Errorf("Upsert(update) (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff(want, get(t, db, r.ID)); diff != "" {
			t.Errorf("Get after update (-want +got):\n%s", diff)
		}
	})
}

func TestUpsertRefusesInvalid(t *testing.T) {
	storetest.Each(t, pg, func(t *testing.T, db store.DB) {
		_, err := inTx(t, db, func(ctx context.Context, tx store.Tx) (customers.Customer, error) {
			return customers.Upsert(ctx, tx, customers.Record{ID: "C-1", Name: "Ana", Email: "Ana <ana@example.com>"}, t0)
		})
		fe, ok := failure.As(err)
		if !ok || fe.Code != failure.InvalidArguments || fe.Field != "email" {
			t.Fatalf("Upsert(display name) = %v, want invalid_arguments on email", err)
		}
		if _, err := customers.Get(context.Background(), db, "C-1"); !errors.Is(err, customers.ErrNotFound) {
			t.Errorf("Get after refused Upsert = %v, want ErrNotFound", err)
		}
	})
}

func TestGetNotFound(t *testing.T) {
	storetest.Each(t, pg, func(t *testing.T, db store.DB) {
		if _, err := customers.Get(context.Background(), db, "nobody"); !errors.Is(err, customers.ErrNotFound) {
			t.Errorf("Get(nobody) = %v, want ErrNotFound", err)
		}
		_, err := inTx(t, db, func(ctx context.Context, tx store.Tx) (customers.Customer, error) {
			return customers.GetForUpdate(ctx, tx, "nobody")
		})
		if !errors.Is(err, customers.ErrNotFound) {
			t.Errorf("GetForUpdate(nobody) = %v, want ErrNotFound", err)
		}
		_, err = inTx(t, db, func(ctx context.Context, tx store.Tx) (customers.Customer, error) {
			return customers.SetStatus(ctx, tx, "nobody", customers.Change{Status: customers.DoNotContact, Reason: "x", SetBy: "u"}, t0)
		})
		if !errors.Is(err, customers.ErrNotFound) {
			t.Errorf("SetStatus(nobody) = %v, want ErrNotFound", err)
		}
	})
}

func TestSetStatus(t *testing.T) {
	storetest.Each(t, pg, func(t *testing.T, db store.DB) {
		r := customers.Record{ID: "C-9", Name: "Oficina Dois Irmãos", Email: "ana@oficina.example"}
		upsert(t, db, r, t0)
		at := t0.Add(time.Minute)
		ch := customers.Change{Status: customers.Paused, PausedUntil: "2026-12-15", Reason: "renegotiating", SetBy: "user-1", SetByActor: "agent-42"}
		got, err := inTx(t, db, func(ctx context.Context, tx store.Tx) (customers.Customer, error) {
			before, err := customers.GetForUpdate(ctx, tx, r.ID)
			if err != nil {
				return customers.Customer{}, err
			}
			if ch.Same(before, customers.Today(at)) {
				t.Errorf("Change %+v is Same as %+v", ch, before)
			}
			return customers.SetStatus(ctx, tx, r.ID, ch, at)
		})
		if err != nil {
			t.Fatal(err)
		}
		want := customers.Customer{ID: r.ID, Name: r.Name, Email: r.Email, Status: customers.Paused, PausedUntil: "2026-12-15",
			Reason: "renegotiating", SetBy: "user-1", SetByActor: "agent-42", SetAt: at, CreatedAt: t0, UpdatedAt: at}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("SetStatus (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff(want, get(t, db, r.ID)); diff != "" {
			t.Errorf("Get after SetStatus (-want +got):\n%s", diff)
		}
		if !ch.Same(got, customers.Today(at)) {
			t.Errorf("Change %+v is not Same as the status it set", ch)
		}
		if other := (customers.Change{Status: customers.Paused, PausedUntil: "2026-12-16"}); other.Same(got, customers.Today(at)) {
			t.Errorf("a pause to another date is Same")
		}
		// From the pause's last day on, it is over: the customer is
		// contactable, and setting contactable changes nothing.
		if contactable := (customers.Change{Status: customers.Contactable}); contactable.Same(got, "2026-12-14") || !contactable.Same(got, "2026-12-15") || ch.Same(got, "2026-12-15") {
			t.Errorf("Same around the end of a pause until 2026-12-15: contactable on 12-14 %v (want false), on 12-15 %v (want true); the pause itself on 12-15 %v (want false)",
				contactable.Same(got, "2026-12-14"), contactable.Same(got, "2026-12-15"), ch.Same(got, "2026-12-15"))
		}

		// An invalid change is refused, and nothing is written.
		_, err = inTx(t, db, func(ctx context.Context, tx store.Tx) (customers.Customer, error) {
			return customers.SetStatus(ctx, tx, r.ID, customers.Change{Status: customers.Paused, PausedUntil: "2026-12-01", Reason: "x", SetBy: "u"}, at)
		})
		if fe, ok := failure.As(err); !ok || fe.Code != failure.InvalidArguments || fe.Field != "pausedUntil" {
			t.Errorf("SetStatus(pause until today) = %v, want invalid_arguments on pausedUntil", err)
		}
		if diff := cmp.Diff(want, get(t, db, r.ID)); diff != "" {
			t.Errorf("Get after a refused SetStatus (-want +got):\n%s", diff)
		}
	})
}

// TestSchemaChecks: the table itself refuses a status the code would never
// write, whoever writes it.
func TestSchemaChecks(t *testing.T) {
	storetest.Each(t, pg, func(t *testing.T, db store.DB) {
		ctx := context.Background()
		upsert(t, db, customers.Record{ID: "C-1", Name: "Ana", Email: "ana@example.com"}, t0)
		for _, q := range []string{
			`UPDATE customer SET contact_status = 'paused' WHERE id = 'C-1'`,
			`UPDATE customer SET paused_until = '2027-01-01' WHERE id = 'C-1'`,
			`UPDATE customer SET contact_status = 'maybe' WHERE id = 'C-1'`,
			`UPDATE customer SET contact_status = 'paused', paused_until = '1/1/2027' WHERE id = 'C-1'`,
		} {
			if _, err := db.Exec(ctx, q); err == nil {
				t.Errorf("%s: accepted, want a check violation", q)
			}
		}
	})
}

// TestAppRoleGrants: the serving role reads, creates and updates customers
// as serving does (upsert, set status, lock), and can neither delete one nor
// rewrite a column serving never writes (PostgreSQL: SQLite has no roles).
func TestAppRoleGrants(t *testing.T) {
	db := storetest.AppRole(t, pg)
	ctx := context.Background()
	upsert(t, db, customers.Record{ID: "C-1", Name: "Ana", Email: "ana@example.com"}, t0)
	upsert(t, db, customers.Record{ID: "C-1", Name: "Ana Maria", Email: "ana.maria@example.com"}, t0.Add(time.Hour))
	_, err := inTx(t, db, func(ctx context.Context, tx store.Tx) (customers.Customer, error) {
		if _, err := customers.GetForUpdate(ctx, tx, "C-1"); err != nil {
			return customers.Customer{}, err
		}
		return customers.SetStatus(ctx, tx, "C-1", customers.Change{Status: customers.Paused, PausedUntil: "2027-01-10", Reason: "on holiday", SetBy: "ana", SetByActor: "agent-7"}, t0.Add(2*time.Hour))
	})
	if err != nil {
		t.Fatalf("the serving role's upsert, lock and set status: %v", err)
	}
	for _, q := range []string{
		`DELETE FROM customer WHERE id = 'C-1'`,
		`UPDATE customer SET id = 'C-2' WHERE id = 'C-1'`,
		`UPDATE customer SET created_at = 0 WHERE id = 'C-1'`,
	} {
		if _, err := db.Exec(ctx, q); err == nil || !strings.Contains(err.Error(), "permission denied") {
			t.Errorf("%s as the serving role = %v, want permission denied", q, err)
		}
	}
	if c := get(t, db, "C-1"); c.ID != "C-1" || !c.CreatedAt.Equal(t0) || c.Name != "Ana Maria" || c.Status != customers.Paused {
		t.Errorf("C-1 after the refused statements = %+v", c)
	}
}

// TestContactable: Contactable and InEffect read a status by one rule: a
// pause is over from its PausedUntil day on (UTC days), when the customer is
// contactable again and InEffect says the day the pause ended.
func TestContactable(t *testing.T) {
	for _, tc := range []struct {
		c      customers.Customer
		today  string
		want   failure.Code
		msg    string
		status customers.Status
		ended  string
	}{
		{customers.Customer{Status: customers.Contactable}, "2026-12-01", "", "", customers.Contactable, ""},
		{customers.Customer{Status: customers.DoNotContact}, "2026-12-01", customers.CodeDoNotContact, "do_not_contact", customers.DoNotContact, ""},
		{customers.Customer{Status: customers.Paused, PausedUntil: "2026-12-02"}, "2026-12-01", customers.CodePaused, "2026-12-02", customers.Paused, ""},
		{customers.Customer{Status: customers.Paused, PausedUntil: "2026-12-02"}, "2026-12-02", "", "", customers.Contactable, "2026-12-02"},
		{customers.Customer{Status: customers.Paused, PausedUntil: "2026-12-02"}, "2027-01-01", "", "", customers.Contactable, "2026-12-02"},
	} {
		fe := tc.c.Contactable(tc.today)
		var got failure.Code
		if fe != nil {
			got = fe.Code
		}
		if got != tc.want || fe != nil && !strings.Contains(fe.Message, tc.msg) {
			t.Errorf("%+v.Contactable(%s) = %v, want %q mentioning %q", tc.c, tc.today, fe, tc.want, tc.msg)
		}
		if s, ended := tc.c.InEffect(tc.today); s != tc.status || ended != tc.ended {
			t.Errorf("%+v.InEffect(%s) = %s, %q, want %s, %q", tc.c, tc.today, s, ended, tc.status, tc.ended)
		}
		if s, _ := tc.c.InEffect(tc.today); (s == customers.Contactable) != (fe == nil) {
			t.Errorf("%+v on %s: InEffect says %s, Contactable %v: one rule, not two", tc.c, tc.today, s, fe)
		}
	}
}

func TestRecordValidate(t *testing.T) {
	good := customers.Record{ID: "C-1", Name: "José d'Ávila", Email: "jose.avila+cobranca@empresa.com.br"}
	for _, tc := range []struct {
		name  string
		edit  func(*customers.Record)
		field string
	}{
		{"good", func(*customers.Record) {}, ""},
		{"empty id", func(r *customers.Record) { r.ID = "" }, "customer.id"},
		{"blank name", func(r *customers.Record) { r.Name = "  \u200b " }, "customer.name"},
		{"bidi in name", func(r *customers.Record) { r.Name = "Ana\u202egnp.exe" }, "customer.name"},
		{"long name", func(r *customers.Record) { r.Name = strings.Repeat("a", 256) }, "customer.name"},
		{"control in name", func(r *customers.Record) { r.Name = "Ana\nBob" }, "customer.name"},
		{"empty email", func(r *customers.Record) { r.Email = "" }, "customer.email"},
		{"display name", func(r *customers.Record) { r.Email = "José <jose@empresa.com.br>" }, "customer.email"},
		{"angle brackets", func(r *customers.Record) { r.Email = "<jose@empresa.com.br>" }, "customer.email"},
		{"comment", func(r *customers.Record) { r.Email = "jose@empresa.com.br (José)" }, "customer.email"},
		{"no domain", func(r *customers.Record) { r.Email = "jose" }, "customer.email"},
		{"two addresses", func(r *customers.Record) { r.Email = "a@b.example, c@d.example" }, "customer.email"},
		{"quoted local part", func(r *customers.Record) { r.Email = `"jo se"@empresa.com.br` }, "customer.email"},
		{"too long", func(r *customers.Record) { r.Email = strings.Repeat("a", 64) + "@" + strings.Repeat("b", 186) + ".com" }, "customer.email"},
		{"newline", func(r *customers.Record) { r.Email = "jose@empresa.com.br\nBcc: x@y.example" }, "customer.email"},
		// A domain literal has the mail server deliver to an address of the caller's choice.
		{"IPv4 domain literal", func(r *customers.Record) { r.Email = "t@[127.0.0.1]" }, "customer.email"},
		{"private IPv4 domain literal", func(r *customers.Record) { r.Email = "jose@[10.0.0.5]" }, "customer.email"},
		{"IPv6 domain literal", func(r *customers.Record) { r.Email = "t@[IPv6:::1]" }, "customer.email"},
		{"a name that is an IPv4 address", func(r *customers.Record) { r.Email = "t@127.0.0.1" }, "customer.email"},
	} {
		r := good
		tc.edit(&r)
		fe := r.Validate("customer.")
		switch {
		case tc.field == "" && fe != nil:
			t.Errorf("%s: Validate = %v, want nil", tc.name, fe)
		case tc.field != "" && (fe == nil || fe.Code != failure.InvalidArguments || fe.Field != tc.field):
			t.Errorf("%s: Validate = %v, want invalid_arguments on %s", tc.name, fe, tc.field)
		case fe != nil && (strings.Contains(fe.Message, r.Email) && r.Email != "" || strings.Contains(fe.Message, r.Name) && r.Name != ""):
			t.Errorf("%s: message %q repeats the value", tc.name, fe.Message)
		}
	}
}

func TestChangeValidate(t *testing.T) {
	const today = "2026-12-01"
	for _, tc := range []struct {
		ch    customers.Change
		field string
	}{
		{customers.Change{Status: customers.Contactable, Reason: "paid"}, ""},
		{customers.Change{Status: customers.DoNotContact, Reason: "asked"}, ""},
		{customers.Change{Status: customers.Paused, PausedUntil: "2026-12-02", Reason: "r"}, ""},
		{customers.Change{Status: "blocked", Reason: "r"}, "status"},
		{customers.Change{Status: customers.Paused, Reason: "r"}, "pausedUntil"},
		{customers.Change{Status: customers.DoNotContact, PausedUntil: "2026-12-02", Reason: "r"}, "pausedUntil"},
		{customers.Change{Status: customers.Paused, PausedUntil: "2026-12-01", Reason: "r"}, "pausedUntil"},
		{customers.Change{Status: customers.Paused, PausedUntil: "2027-02-29", Reason: "r"}, "pausedUntil"},
		{customers.Change{Status: customers.Paused, PausedUntil: "2027-2-28", Reason: "r"}, "pausedUntil"},
		{customers.Change{Status: customers.Paused, PausedUntil: "2100-01-01", Reason: "r"}, "pausedUntil"},
		{customers.Change{Status: customers.DoNotContact, Reason: " "}, "reason"},
		{customers.Change{Status: customers.DoNotContact}, "reason"},
	} {
		fe := tc.ch.Validate(today)
		if tc.field == "" && fe != nil || tc.field != "" && (fe == nil || fe.Field != tc.field || fe.Code != failure.InvalidArguments) {
			t.Errorf("%+v.Validate(%s) = %v, want field %q", tc.ch, today, fe, tc.field)
		}
	}
}
