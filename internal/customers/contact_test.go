package customers_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/cobranca/cobranca/internal/customers"
	"github.com/cobranca/cobranca/internal/failure"
	"github.com/cobranca/cobranca/internal/store"
	"github.com/cobranca/cobranca/internal/store/storetest"
	"github.com/cobranca/cobranca/internal/value"
)

// TestIDProblemEnds: an id with white space at either end is refused, saying which end;
// white space inside an id is the operator's to choose, and the text rule still holds.
func TestIDProblemEnds(t *testing.T) {
	for s, want := range map[string]string{
		"c-1":       "",
		"c 1":       "",
		"c-1 ":      "must not end with white space",
		" c-1":      "must not begin with white space",
		"c-1\u00a0": "must not end with white space",
		"\u3000c-1": "must not begin with white space",
		"   ":       portfolioRefusal("   "),
		"\tc-1":     portfolioRefusal("\tc-1"),
	} {
		if got := customers.IDProblem(s); got != want {
			t.Errorf("IDProblem(%q) = %q, want %q", s, got, want)
		}
	}
	r := customers.Record{ID: "c-1 ", Name: "Ana", Email: "ana@example.com"}
	if fe := r.Validate("customer."); fe == nil || fe.Field != "customer.id" {
		t.Errorf("Validate(%+v) = %v, want invalid_arguments on customer.id", r, fe)
	}
}

// portfolioRefusal is the text rule's refusal of s, which must be one.
func portfolioRefusal(s string) string {
	p := value.TextProblem(s)
	if p == "" {
		panic("the text rule accepts " + s)
	}
	return p
}

// TestLockForContact: the customer and every customer with its address, in any case, in id
// order; a customer sharing none is left out.
func TestLockForContact(t *testing.T) {
	storetest.Each(t, pg, func(t *testing.T, db store.DB) {
		for _, r := range []customers.Record{
			{ID: "c-3", Name: "Ana", Email: "ana@example.com"},
			{ID: "c-1", Name: "Bia", Email: "bia@example.com"},
			{ID: "c-2", Name: "Ana Filial", Email: "Ana@Example.com"},
			{ID: "c-4", Name: "Caio", Email: "caio@example.com"},
		} {
			upsert(t, db, r, t0)
		}
		// c-2 moves to another address: its old one no longer names it.
		upsert(t, db, customers.Record{ID: "c-2", Name: "Ana Filial", Email: "filial@example.com"}, t0)
		upsert(t, db, customers.Record{ID: "c-5", Name: "Ana Matriz", Email: "ANA@EXAMPLE.COM"}, t0)
		got, err := inTx(t, db, func(ctx context.Context, tx store.Tx) ([]string, error) {
			cs, err := customers.LockForContact(ctx, tx, "c-4", "aNa@example.COM")
			var ids []string
			for _, c := range cs {
				ids = append(ids, c.ID)
			}
			return ids, err
		})
		if diff := cmp.Diff([]string{"c-3", "c-4", "c-5"}, got); err != nil || diff != "" {
			t.Errorf("LockForContact(c-4, aNa@example.COM) (-want +got):\n%s%v", diff, err)
		}
	})
}

// TestAddressContactable: only the customers at the address count; do_not_contact comes
// before a pause, and of pauses the latest date is given; no customer id is named.
func TestAddressContactable(t *testing.T) {
	at := func(id, email string, s customers.Status, until string) customers.Customer {
		return customers.Customer{ID: id, Email: email, Status: s, PausedUntil: until}
	}
	const today = "2026-12-01"
	for _, tc := range []struct {
		name string
		cs   []customers.Customer
		want failure.Code
		msg  string
	}{
		{"none", nil, "", ""},
		{"contactable", []customers.Customer{at("c-1", "ana@example.com", customers.Contactable, "")}, "", ""},
		{"another address", []customers.Customer{at("c-1", "bia@example.com", customers.DoNotContact, "")}, "", ""},
		{"do_not_contact in another case", []customers.Customer{at("c-1", "ANA@example.com", customers.DoNotContact, "")}, customers.CodeDoNotContact, "e-mail address"},
		{"a pause ended", []customers.Customer{at("c-1", "ana@example.com", customers.Paused, today)}, "", ""},
		{"two pauses", []customers.Customer{at("c-1", "ana@example.com", customers.Paused, "2027-01-05"), at("c-2", "Ana@example.com", customers.Paused, "2027-03-01"), at("c-3", "ana@example.com", customers.Paused, "2027-02-01")}, customers.CodePaused, "until 2027-03-01"},
		{"a pause and do_not_contact", []customers.Customer{at("c-1", "ana@example.com", customers.Paused, "2027-01-05"), at("c-2", "ana@example.com", customers.DoNotContact, "")}, customers.CodeDoNotContact, "asked not to be contacted"},
	} {
		fe := customers.AddressContactable(tc.cs, "ana@example.com", today)
		var got failure.Code
		if fe != nil {
			got = fe.Code
		}
		if got != tc.want || fe != nil && (!strings.Contains(fe.Message, tc.msg) || strings.Contains(fe.Message, "c-")) {
			t.Errorf("%s: AddressContactable = %v, want %q saying %q and no id", tc.name, fe, tc.want, tc.msg)
		}
	}
}

// TestUpsertLocks (PostgreSQL, where row locks show): whatever Upsert did — created,
// updated, or found the customer as given, the case where no statement of its own locked the
// row — the customer is locked until the transaction ends: another transaction cannot lock it.
func TestUpsertLocks(t *testing.T) {
	db := storetest.AppRole(t, pg)
	r := customers.Record{ID: "c-1", Name: "Ana", Email: "ana@example.com"}
	for _, tc := range []struct {
		name string
		r    customers.Record
	}{
		{"created", r},
		{"unchanged", r},
		{"updated", customers.Record{ID: r.ID, Name: "Ana Maria", Email: r.Email}},
	} {
		_, err := inTx(t, db, func(ctx context.Context, tx store.Tx) (struct{}, error) {
			if _, err := customers.Upsert(ctx, tx, tc.r, t0); err != nil {
				return struct{}{}, err
			}
			var id string
			err := db.QueryRow(context.Background(), `SELECT id FROM customer WHERE id = $1 FOR UPDATE NOWAIT`, r.ID).Scan(&id)
			if tc.name == "created" && errors.Is(err, store.ErrNoRows) {
				return struct{}{}, nil // not visible before the commit; a second insert waits on the key
			}
			if err == nil || !strings.Contains(err.Error(), "55P03") {
				t.Errorf("%s: another transaction locked the customer Upsert returned: %v, want lock_not_available (55P03)", tc.name, err)
			}
			return struct{}{}, nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}
