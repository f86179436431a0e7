package reminders_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/cobranca/cobranca/internal/customers"
	"github.com/cobranca/cobranca/internal/pgtest"
	"github.com/cobranca/cobranca/internal/reminders"
	"github.com/cobranca/cobranca/internal/store"
	"github.com/cobranca/cobranca/internal/store/storetest"
)

var pg = pgtest.New()

func TestMain(m *testing.M) { pg.Run(m) }

func templates(t testing.TB) *reminders.Templates {
	t.Helper()
	tpl, err := reminders.ParseTemplates()
	if err != nil {
		t.Fatal(err)
	}
	return tpl
}

var t0 = time.Date(2026, 7, 1, 12, 0, 0, 123456000, time.UTC)

func request(customer string, tone reminders.Tone, invs ...reminders.Invoice) reminders.Request {
	return reminders.Request{CustomerID: customer, To: reminders.Recipient{Name: "Padaria Pão Quente", Email: "contas@example.com"}, Tone: tone,
		Language: reminders.PortugueseBR, Invoices: invs, CreatedBy: "ana", CreatedByActor: "ledger-copilot"}
}

var (
	inv1 = reminders.Invoice{ID: "NF-1", DueDate: "2026-05-10", AmountCents: 150000}
	inv2 = reminders.Invoice{ID: "NF-2", DueDate: "2026-06-10", AmountCents: 2599}
)

// prepare runs Prepare in a committed transaction of its own.
func prepare(t *testing.T, db store.DB, tpl *reminders.Templates, r reminders.Request, now time.Time) (reminders.Record, bool) {
	t.Helper()
	var rec reminders.Record
	var created bool
	err := db.InTx(context.Background(), func(ctx context.Context, tx store.Tx) error {
		if err := customer(ctx, tx, r, now); err != nil {
			return err
		}
		var err error
		rec, created, err = reminders.Prepare(ctx, tx, tpl, r, now)
		return err
	})
	if err != nil {
		t.Fatalf("Prepare: %v", err)
	}
	return rec, created
}

// customer stores the customer r is for, as prepare_reminder does before the draft.
func customer(ctx context.Context, tx store.Tx, r reminders.Request, now time.Time) error {
	_, err := customers.Upsert(ctx, tx, customers.Record{ID: r.CustomerID, Name: r.To.Name, Email: r.To.Email}, now)
	return err
}

func count(t *testing.T, db store.DB, where string, args ...any) int {
	t.Helper()
	var n int64
	if err := db.QueryRow(context.Background(), `SELECT count(*) FROM reminder_draft WHERE `+where, args...).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return int(n)
}

// TestPrepareNaturalKey: the same customer, invoice set (in any order) and tone find the open
// draft; another tone, another amount, another customer each make a draft of their own.
func TestPrepareNaturalKey(t *testing.T) {
	tpl := templates(t)
	storetest.Each(t, pg, func(t *testing.T, db store.DB) {
		first, created := prepare(t, db, tpl, request("c1", reminders.Friendly, inv1, inv2), t0)
		if !created || !reminders.ValidID(first.ID) || first.State != reminders.Draft || first.InvoiceCount != 2 ||
			first.TotalCents != 152599 || first.CreatedBy != "ana" || first.CreatedByActor != "ledger-copilot" || !first.CreatedAt.Equal(t0.Truncate(time.Microsecond)) {
			t.Fatalf("first Prepare = %+v, created %v; want a new draft of 2 invoices, 152599 cents, at %v", first, created, t0)
		}
		// The draft keeps its invoices, sorted by id: a send checks each against the ledger.
		if want := []reminders.Invoice{inv1, inv2}; !cmp.Equal(first.Invoices, want) {
			t.Errorf("first Prepare's invoices = %+v, want %+v", first.Invoices, want)
		}
		again, created := prepare(t, db, tpl, request("c1", reminders.Friendly, inv2, inv1), t0.Add(time.Hour))
		if created {
			t.Errorf("Prepare of the same set in another order created a draft")
		}
		if diff := cmp.Diff(first, again); diff != "" {
			t.Errorf("Prepare again: the open draft differs (-first +again):\n%s", diff)
		}
		// Another language is not another draft: the open one is found as it was written.
		en := request("c1", reminders.Friendly, inv1, inv2)
		en.Language = reminders.English
		if got, created := prepare(t, db, tpl, en, t0); created || got.ID != first.ID {
			t.Errorf("Prepare in English = %s, created %v; want the open draft %s", got.ID, created, first.ID)
		}
		other := inv2
		other.AmountCents++
		for name, r := range map[string]reminders.Request{
			"firm":           request("c1", reminders.Firm, inv1, inv2),
			"another amount": request("c1", reminders.Friendly, inv1, other),
			"a subset":       request("c1", reminders.Friendly, inv1),
			"c2":             request("c2", reminders.Friendly, inv1, inv2),
		} {
			if got, created := prepare(t, db, tpl, r, t0); !created || got.ID == first.ID {
				t.Errorf("Prepare(%s) = %s, created %v; want a new draft", name, got.ID, created)
			}
		}
		if n := count(t, db, "state = 'draft'"); n != 5 {
			t.Errorf("%d open drafts, want 5", n)
		}
	})
}

// TestOpenDraftsAndDiscardOpen: the hand-off to the customers helper. OpenDrafts lists a
// customer's open drafts, oldest first, with their subjects; DiscardOpen discards them all, as
// of now, in the caller's transaction, and only them.
func TestOpenDraftsAndDiscardOpen(t *testing.T) {
	tpl := templates(t)
	storetest.Each(t, pg, func(t *testing.T, db store.DB) {
		ctx := context.Background()
		a, _ := prepare(t, db, tpl, request("c1", reminders.Friendly, inv1), t0)
		b, _ := prepare(t, db, tpl, request("c1", reminders.Firm, inv1, inv2), t0.Add(time.Minute))
		c, _ := prepare(t, db, tpl, request("c2", reminders.Friendly, inv1), t0)

		refs, err := reminders.OpenDrafts(ctx, db, "c1")
		if err != nil {
			t.Fatal(err)
		}
		want := []reminders.Ref{{ID: a.ID, Subject: a.Subject}, {ID: b.ID, Subject: b.Subject}}
		if diff := cmp.Diff(want, refs); diff != "" {
			t.Errorf("OpenDrafts(c1) (-want +got):\n%s", diff)
		}
		if !strings.HasPrefix(b.Subject, "Aviso de pagamento pendente: 2 faturas") {
			t.Errorf("subject of the firm draft = %q", b.Subject)
		}

		// Rolled back with its transaction: nothing discarded.
		errBoom := errors.New("boom")
		err = db.InTx(ctx, func(ctx context.Context, tx store.Tx) error {
			if n, err := reminders.DiscardOpen(ctx, tx, "c1", t0.Add(time.Hour)); err != nil || n != 2 {
				t.Errorf("DiscardOpen in a failing transaction = %d, %v; want 2", n, err)
			}
			return errBoom
		})
		if !errors.Is(err, errBoom) {
			t.Fatal(err)
		}
		if n := count(t, db, "customer_id = $1 AND state = 'draft'", "c1"); n != 2 {
			t.Errorf("after a rolled-back DiscardOpen, %d open drafts of c1, want 2", n)
		}

		later := t0.Add(2 * time.Hour)
		var n int64
		err = db.InTx(ctx, func(ctx context.Context, tx store.Tx) error {
			n, err = reminders.DiscardOpen(ctx, tx, "c1", later)
			return err
		})
		if err != nil || n != 2 {
			t.Fatalf("DiscardOpen(c1) = %d, %v; want 2", n, err)
		}
		if refs, err := reminders.OpenDrafts(ctx, db, "c1"); err != nil || refs == nil || len(refs) != 0 {
			t.Errorf("OpenDrafts(c1) after DiscardOpen = %#v, %v; want an empty list", refs, err)
		}
		if n := count(t, db, "customer_id = $1 AND state = 'discarded' AND updated_at = $2", "c1", later.UnixMicro()); n != 2 {
			t.Errorf("%d drafts of c1 discarded at %v, want 2", n, later)
		}
		if refs, err := reminders.OpenDrafts(ctx, db, "c2"); err != nil || len(refs) != 1 || refs[0].ID != c.ID {
			t.Errorf("OpenDrafts(c2) = %v, %v; want %s untouched", refs, err, c.ID)
		}
		if n, err := reminders.DiscardOpen(ctx, db, "c1", later); err != nil || n != 0 {
			t.Errorf("DiscardOpen(c1) again = %d, %v; want 0", n, err)
		}
		// A discarded draft no longer holds the natural key: the same request writes anew.
		if again, created := prepare(t, db, tpl, request("c1", reminders.Friendly, inv1), later); !created || again.ID == a.ID {
			t.Errorf("Prepare after the discard = %s, created %v; want a new draft", again.ID, created)
		}
	})
}

// TestPrepareConcurrent: concurrent transactions preparing one reminder leave one draft, and
// every one of them answers it.
func TestPrepareConcurrent(t *testing.T) {
	tpl := templates(t)
	storetest.Each(t, pg, func(t *testing.T, db store.DB) {
		const n = 20
		ids := make([]string, n)
		created := make([]bool, n)
		errs := make([]error, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				errs[i] = db.InTx(context.Background(), func(ctx context.Context, tx store.Tx) error {
					r := request("c1", reminders.Firm, inv1, inv2)
					if err := customer(ctx, tx, r, t0); err != nil {
						return err
					}
					rec, c, err := reminders.Prepare(ctx, tx, tpl, r, t0)
					ids[i], created[i] = rec.ID, c
					return err
				})
			})
		}
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Errorf("call %d: %v", i, err)
			}
		}
		if k := len(slices.Compact(slices.Sorted(slices.Values(ids)))); k != 1 {
			t.Errorf("%d distinct draft ids answered, want 1: %v", k, ids)
		}
		if k := len(slices.DeleteFunc(created, func(c bool) bool { return !c })); k != 1 {
			t.Errorf("%d calls created the draft, want 1", k)
		}
		if k := count(t, db, "1 = 1"); k != 1 {
			t.Errorf("%d drafts stored, want 1", k)
		}
	})
}

// TestList: every filter, newest first, and keyset pages that walk every selected draft once.
func TestList(t *testing.T) {
	tpl := templates(t)
	storetest.Each(t, pg, func(t *testing.T, db store.DB) {
		ctx := context.Background()
		var all []reminders.Record
		for i := range 7 {
			inv := reminders.Invoice{ID: "NF-" + string(rune('a'+i)), DueDate: "2026-05-10", AmountCents: int64(100 + i)}
			customer := []string{"c1", "c2"}[i%2]
			// Two drafts share each creation time: the id breaks the tie.
			r, _ := prepare(t, db, tpl, request(customer, reminders.Friendly, inv), t0.Add(time.Duration(i/2)*time.Second))
			all = append(all, r)
		}
		if _, err := reminders.DiscardOpen(ctx, db, "c2", t0.Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
		newestFirst := func(a, b reminders.Record) int {
			if c := b.CreatedAt.Compare(a.CreatedAt); c != 0 {
				return c
			}
			return strings.Compare(b.ID, a.ID)
		}
		slices.SortFunc(all, newestFirst)
		ids := func(rs []reminders.Record, keep func(reminders.Record) bool) []string {
			var out []string
			for _, r := range rs {
				if keep(r) {
					out = append(out, r.ID)
				}
			}
			return out
		}
		for _, tc := range []struct {
			name string
			f    reminders.Filter
			keep func(reminders.Record) bool
		}{
			{"every draft", reminders.Filter{}, func(reminders.Record) bool { return true }},
			{"c1", reminders.Filter{CustomerID: "c1"}, func(r reminders.Record) bool { return r.CustomerID == "c1" }},
			{"discarded", reminders.Filter{State: reminders.Discarded}, func(r reminders.Record) bool { return r.CustomerID == "c2" }},
			{"c1 discarded", reminders.Filter{CustomerID: "c1", State: reminders.Discarded}, func(reminders.Record) bool { return false }},
		} {
			for _, limit := range []int{1, 2, 3, 100} {
				var got []string
				f := tc.f
				f.Limit = limit
				for range 10 {
					page, err := reminders.List(ctx, db, f)
					if err != nil {
						t.Fatal(err)
					}
					got = append(got, ids(page, func(reminders.Record) bool { return true })...)
					if len(page) < limit {
						break
					}
					pos := reminders.PositionOf(page[len(page)-1])
					f.After = &pos
				}
				if diff := cmp.Diff(ids(all, tc.keep), got); diff != "" {
					t.Errorf("%s, pages of %d (-want +got):\n%s", tc.name, limit, diff)
				}
			}
		}
	})
}

// TestDraftNeedsCustomer: a draft is written only for a stored customer.
func TestDraftNeedsCustomer(t *testing.T) {
	tpl := templates(t)
	storetest.Each(t, pg, func(t *testing.T, db store.DB) {
		err := db.InTx(context.Background(), func(ctx context.Context, tx store.Tx) error {
			_, _, err := reminders.Prepare(ctx, tx, tpl, request("nobody", reminders.Friendly, inv1), t0)
			return err
		})
		if err == nil || count(t, db, "1 = 1") != 0 {
			t.Errorf("Prepare for a customer never stored: %v, %d drafts; want an error and none", err, count(t, db, "1 = 1"))
		}
	})
}

// TestServingRoleCannotDelete: on PostgreSQL the serving role writes drafts and changes their
// state, and deletes none.
func TestServingRoleCannotDelete(t *testing.T) {
	db := storetest.AppRole(t, pg)
	prepare(t, db, templates(t), request("c1", reminders.Friendly, inv1), t0)
	if _, err := db.Exec(context.Background(), `DELETE FROM reminder_draft`); err == nil || !strings.Contains(err.Error(), "permission denied") {
		t.Errorf("DELETE as the serving role: %v, want permission denied", err)
	}
	if _, err := db.Exec(context.Background(), `UPDATE reminder_draft SET body = 'x'`); err == nil || !strings.Contains(err.Error(), "permission denied") {
		t.Errorf("UPDATE of a body as the serving role: %v, want permission denied", err)
	}
}

// TestRecipient: a draft keeps whom it was written to, and DiscardNotTo discards the
// customer's open drafts to anyone else — another name or another address — and only them.
func TestRecipient(t *testing.T) {
	tpl := templates(t)
	storetest.Each(t, pg, func(t *testing.T, db store.DB) {
		ctx := context.Background()
		old, _ := prepare(t, db, tpl, request("c1", reminders.Friendly, inv1), t0)
		if old.To != (reminders.Recipient{Name: "Padaria Pão Quente", Email: "contas@example.com"}) {
			t.Fatalf("Prepare = %+v, want it to record its recipient", old.To)
		}
		renamed := request("c1", reminders.Firm, inv1)
		renamed.To.Name = "Padaria Nova"
		moved := request("c1", reminders.Friendly, inv2)
		moved.To.Email = "novo@example.com"
		a, _ := prepare(t, db, tpl, renamed, t0)
		b, _ := prepare(t, db, tpl, moved, t0)
		keep, _ := prepare(t, db, tpl, request("c1", reminders.Firm, inv2), t0)
		other, _ := prepare(t, db, tpl, request("c2", reminders.Friendly, inv1), t0)
		if !strings.Contains(a.Body, "Padaria Nova") {
			t.Errorf("the draft to %q greets: %q", renamed.To.Name, a.Body)
		}
		page, err := reminders.List(ctx, db, reminders.Filter{CustomerID: "c1", Limit: 10})
		if err != nil || len(page) != 4 {
			t.Fatalf("List = %d drafts, %v", len(page), err)
		}
		var n int64
		err = db.InTx(ctx, func(ctx context.Context, tx store.Tx) (err error) {
			n, err = reminders.DiscardNotTo(ctx, tx, "c1", old.To, t0.Add(time.Hour))
			return err
		})
		if err != nil || n != 2 {
			t.Fatalf("DiscardNotTo = %d, %v; want the 2 drafts to another name or address", n, err)
		}
		open, err := reminders.OpenDrafts(ctx, db, "c1")
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, r := range open {
			ids = append(ids, r.ID)
		}
		want := []string{old.ID, keep.ID}
		slices.Sort(want)
		slices.Sort(ids)
		if diff := cmp.Diff(want, ids); diff != "" {
			t.Errorf("open drafts of c1 (-want +got):\n%s", diff)
		}
		if n := count(t, db, "id IN ($1, $2) AND state = 'discarded'", a.ID, b.ID); n != 2 {
			t.Errorf("%d of the drafts to another recipient discarded, want 2", n)
		}
		if n := count(t, db, "id = $1 AND state = 'draft'", other.ID); n != 1 {
			t.Errorf("c2's draft was touched")
		}
	})
}
