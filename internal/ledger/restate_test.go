package ledger_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/cobranca/cobranca/internal/customers"
	"github.com/cobranca/cobranca/internal/ledger"
	"github.com/cobranca/cobranca/internal/store"
	"github.com/cobranca/cobranca/internal/store/storetest"
	"github.com/cobranca/cobranca/internal/writeoffs"
)

// cacheRow is what the ledger caches of an invoice, or of a payment
// (Amount, Allocated as left): read as stored, or restated from the
// records.
type cacheRow struct {
	State                       string
	Open, Allocated, WrittenOff int64
	DisputeID, PromiseID        string
	PromisedFor                 string
}

// restate reads the records plainly and says what every invoice's and
// payment's cache must be: the sums of allocations and the write-off,
// the state and open amount by the rules written out here once more, the
// open dispute, the latest promise.
func restate(t *testing.T, q store.Querier) (want, got map[string]cacheRow) {
	t.Helper()
	ctx := context.Background()
	want, got = map[string]cacheRow{}, map[string]cacheRow{}
	type invoice struct {
		amount int64
		void   bool
	}
	invs := map[string]invoice{}
	each(t, q, `SELECT id, amount_cents, void, state, open_cents, allocated_cents, written_off_cents, dispute_id, promise_id, promised_for FROM ledger_invoice`, nil,
		func(r store.Rows) error {
			var id string
			var i invoice
			var c cacheRow
			err := r.Scan(&id, &i.amount, &i.void, &c.State, &c.Open, &c.Allocated, &c.WrittenOff, &c.DisputeID, &c.PromiseID, &c.PromisedFor)
			invs[id], got[id] = i, c
			return err
		})
	alloc := map[string]int64{}
	paidFrom := map[string]int64{}
	each(t, q, `SELECT payment_id, invoice_id, amount_cents FROM ledger_allocation`, nil, func(r store.Rows) error {
		var p, i string
		var n int64
		err := r.Scan(&p, &i, &n)
		alloc[i] += n
		paidFrom[p] += n
		return err
	})
	woff := map[string]int64{}
	each(t, q, `SELECT invoice_id, amount_cents FROM write_off`, nil, func(r store.Rows) error {
		var i string
		var n int64
		err := r.Scan(&i, &n)
		woff[i] = n
		return err
	})
	disputes := map[string]string{}
	each(t, q, `SELECT invoice_id, id FROM ledger_dispute WHERE outcome = ''`, nil, func(r store.Rows) error {
		var i, d string
		err := r.Scan(&i, &d)
		if disputes[i] != "" {
			t.Errorf("invoice %s has two open disputes", i)
		}
		disputes[i] = d
		return err
	})
	type promise struct {
		id, date string
		at       int64
	}
	latest := map[string]promise{}
	each(t, q, `SELECT invoice_id, id, promised_for, created_at FROM ledger_promise`, nil, func(r store.Rows) error {
		var i string
		var p promise
		err := r.Scan(&i, &p.id, &p.date, &p.at)
		if old, ok := latest[i]; !ok || p.at > old.at {
			latest[i] = p
		}
		return err
	})
	for id, inv := range invs {
		c := cacheRow{Allocated: alloc[id], WrittenOff: woff[id], DisputeID: disputes[id], PromiseID: latest[id].id, PromisedFor: latest[id].date}
		rest := inv.amount - c.Allocated - c.WrittenOff
		switch {
		case inv.void:
			c.State = "void"
		case c.Allocated >= inv.amount:
			c.State = "paid"
		case rest <= 0:
			c.State = "written_off"
		case c.Allocated > 0:
			c.State, c.Open = "partially_paid", rest
		default:
			c.State, c.Open = "open", rest
		}
		want[id] = c
	}
	each(t, q, `SELECT id, amount_cents, left_cents FROM ledger_payment`, nil, func(r store.Rows) error {
		var id string
		var amount, left int64
		err := r.Scan(&id, &amount, &left)
		got[id] = cacheRow{Open: left}
		want[id] = cacheRow{Open: amount - paidFrom[id]}
		if left < 0 {
			t.Errorf("payment %s has %d left", id, left)
		}
		return err
	})
	_ = ctx
	return want, got
}

// byUncarriedReference lists the allocations by the reference rule whose
// payment quotes a reference its invoice does not carry, neither as its
// own nor recorded (ledger_reference): none ever.
func byUncarriedReference(t *testing.T, q store.Querier) []string {
	t.Helper()
	var bad []string
	each(t, q, `SELECT a.payment_id, a.invoice_id, p.reference FROM ledger_allocation a
 JOIN ledger_payment p ON p.id = a.payment_id JOIN ledger_invoice i ON i.id = a.invoice_id
 WHERE a.rule = 'reference' AND p.reference NOT IN (i.pix_txid, i.our_number, i.boleto_line, i.reference)
 AND NOT EXISTS (SELECT 1 FROM ledger_reference r WHERE r.invoice_id = a.invoice_id AND r.reference = p.reference)`, nil,
		func(r store.Rows) error {
			var p, i, ref string
			err := r.Scan(&p, &i, &ref)
			bad = append(bad, p+" → "+i+" by "+ref)
			return err
		})
	return bad
}

func each(t testing.TB, q store.Querier, sql string, args []any, fn func(store.Rows) error) {
	t.Helper()
	rows, err := q.Query(context.Background(), sql, args...)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		if err := fn(rows); err != nil {
			t.Fatal(err)
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
}

// TestCacheAgainstRestatement: over random histories of invoices upserted
// and upserted again (amounts, voids, dates), reminders' txids recorded on
// them, payments imported and matched (by their own references, by
// recorded ones, by amount), allocations by hand, write-offs before and
// after their invoices, promises and disputes, the cache of every invoice
// and payment equals what the records restate, and every allocation by
// the reference rule went to an invoice that carries the payment's
// reference, after every step, on both stores. A refused step changes
// nothing.
func TestCacheAgainstRestatement(t *testing.T) {
	steps := 150
	if testing.Short() {
		steps = 40
	}
	storetest.Each(t, pg, func(t *testing.T, db store.DB) {
		seed := uint64(time.Now().UnixNano())
		t.Logf("seed %d", seed)
		rnd := rand.New(rand.NewPCG(seed, 26))
		ctx := context.Background()
		for c := range 3 {
			must[customers.Customer](t)(inTx(db, func(ctx context.Context, tx store.Tx) (customers.Customer, error) {
				return customers.Upsert(ctx, tx, customers.Record{ID: fmt.Sprintf("C-%d", c), Name: "Cliente", Email: fmt.Sprintf("c%d@example.com", c)}, t0)
			}))
		}
		ids := make([]string, 10)
		for i := range ids {
			ids[i] = fmt.Sprintf("NF-%d", i)
		}
		customerOf := func(id string) string { return fmt.Sprintf("C-%d", int(id[3]-'0')%3) }
		amounts := []int64{100, 250, 500, 1000}
		records := map[string]ledger.InvoiceRecord{}
		refused := map[string]int{}
		for step := range steps {
			now := t0.Add(time.Duration(step) * time.Minute)
			var what string
			var err error
			before, _ := restate(t, db)
			switch k := rnd.IntN(11); {
			case k < 3: // upsert a few invoices, new or changed
				n := 1 + rnd.IntN(3)
				var batch []ledger.InvoiceRecord
				seen := map[string]bool{}
				for range n {
					id := ids[rnd.IntN(len(ids))]
					if seen[id] {
						continue
					}
					seen[id] = true
					r, ok := records[id]
					if !ok {
						r = inv(id, customerOf(id), amounts[rnd.IntN(len(amounts))], "2026-12-10")
						r.Reference = "REF" + id[3:]
					}
					switch rnd.IntN(8) {
					case 0, 1:
						r.AmountCents = amounts[rnd.IntN(len(amounts))]
					case 2:
						r.Void = !r.Void
					case 3:
						r.DueDate = fmt.Sprintf("2026-12-%02d", 1+rnd.IntN(28))
					}
					batch = append(batch, r)
				}
				what = fmt.Sprintf("upsert %v", batch)
				_, err = upsert(t, db, batch...)
				if err == nil {
					for _, r := range batch {
						records[r.InvoiceID] = r
					}
				}
			case k < 5: // import payments matched by reference or amount
				var ps []ledger.PaymentRecord
				for range 1 + rnd.IntN(3) {
					id := ids[rnd.IntN(len(ids))]
					p := payment(fmt.Sprintf("P%d", rnd.IntN(400)), amounts[rnd.IntN(len(amounts))], "2026-12-05")
					switch rnd.IntN(3) {
					case 0:
						p.Reference = "REF" + id[3:]
					case 1: // a reminder's txid, recorded or not
						p.Reference = fmt.Sprintf("TX%d", rnd.IntN(4))
					default:
						p.CustomerID = customerOf(id)
					}
					ps = append(ps, p)
				}
				what = fmt.Sprintf("import %v", ps)
				_, err = inTx(db, func(ctx context.Context, tx store.Tx) (ledger.ImportCounts, error) {
					return ledger.ImportPayments(ctx, tx, ps, ana, now)
				})
			case k < 7: // a person allocates a payment with something left
				page, _, lerr := ledger.ListUnmatched(ctx, db, "", 50)
				if lerr != nil || len(page) == 0 {
					continue
				}
				p := page[rnd.IntN(len(page))]
				var plan []ledger.Planned
				for _, id := range []string{ids[rnd.IntN(len(ids))], ids[rnd.IntN(len(ids))]} {
					if len(plan) == 0 || plan[0].InvoiceID != id {
						plan = append(plan, ledger.Planned{InvoiceID: id, AmountCents: 1 + rnd.Int64N(p.LeftCents)})
					}
				}
				what = fmt.Sprintf("allocate %s %v", p.ID, plan)
				_, err = inTx(db, func(ctx context.Context, tx store.Tx) ([]ledger.Allocation, error) {
					return ledger.Allocate(ctx, tx, p.ID, plan, ana, now)
				})
			case k < 8: // a write-off, of an invoice the ledger may not know yet
				id := ids[rnd.IntN(len(ids))]
				cents := amounts[rnd.IntN(len(amounts))] / 2
				what = fmt.Sprintf("write off %s %d", id, cents)
				_, err = inTx(db, func(ctx context.Context, tx store.Tx) (writeoffs.WriteOff, error) {
					return writeoffs.Record(ctx, tx, writeoffs.Request{InvoiceID: id, CustomerID: customerOf(id), AmountCents: cents, Reason: "r"},
						writeoffs.Author{Subject: "ana"}, now)
				})
			case k < 9: // a promise
				id := ids[rnd.IntN(len(ids))]
				what = "promise " + id
				_, err = inTx(db, func(ctx context.Context, tx store.Tx) (ledger.Promise, error) {
					return ledger.RecordPromise(ctx, tx, ledger.PromiseRecord{InvoiceID: id, AmountCents: 100,
						PromisedFor: fmt.Sprintf("2026-12-%02d", 10+rnd.IntN(10)), Channel: "phone"}, ana, now)
				})
			case k < 10: // a reminder's txid recorded on invoices, some unknown to the ledger
				batch := []string{ids[rnd.IntN(len(ids))], ids[rnd.IntN(len(ids))], ids[rnd.IntN(len(ids))]}[:1+rnd.IntN(3)]
				ref := fmt.Sprintf("TX%d", rnd.IntN(4))
				what = fmt.Sprintf("reference %s on %v", ref, batch)
				_, err = inTx(db, func(ctx context.Context, tx store.Tx) (struct{}, error) {
					return struct{}{}, ledger.AddReference(ctx, tx, batch, ref, ledger.SourceReminder, fmt.Sprintf("d_%d", step), now)
				})
			default: // a dispute opened or resolved
				id := ids[rnd.IntN(len(ids))]
				if rnd.IntN(2) == 0 {
					what = "open dispute " + id
					_, err = inTx(db, func(ctx context.Context, tx store.Tx) (ledger.Dispute, error) {
						return ledger.OpenDispute(ctx, tx, id, ledger.DisputePricing, "", ana, now)
					})
				} else {
					what = "resolve dispute " + id
					_, err = inTx(db, func(ctx context.Context, tx store.Tx) (ledger.Dispute, error) {
						return ledger.ResolveDispute(ctx, tx, id, ledger.OutcomeUpheld, "", ana, now)
					})
				}
			}
			want, got := restate(t, db)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Fatalf("step %d (%s, %v): the cache differs from the records (-restated +cached):\n%s", step, what, err, diff)
			}
			if bad := byUncarriedReference(t, db); len(bad) > 0 {
				t.Fatalf("step %d (%s): allocations by a reference their invoice does not carry: %v", step, what, bad)
			}
			if err != nil {
				refused[fmt.Sprint(code(err))]++
				if diff := cmp.Diff(before, want); diff != "" {
					t.Fatalf("step %d (%s) was refused (%v) but changed the ledger:\n%s", step, what, err, diff)
				}
				if c, _ := code(err); c == "" {
					t.Fatalf("step %d (%s) failed: %v", step, what, err)
				}
			}
		}
		t.Logf("refusals: %v", refused)
		rules := map[string]int{}
		each(t, db, `SELECT rule FROM ledger_allocation`, nil, func(r store.Rows) error {
			var rule string
			err := r.Scan(&rule)
			rules[rule]++
			return err
		})
		var recorded int
		each(t, db, `SELECT count(*) FROM ledger_allocation a JOIN ledger_payment p ON p.id = a.payment_id
 JOIN ledger_reference r ON r.invoice_id = a.invoice_id AND r.reference = p.reference WHERE a.rule = 'reference'`, nil, func(r store.Rows) error {
			return r.Scan(&recorded)
		})
		t.Logf("allocations by rule: %v, %d of them by a recorded reference", rules, recorded)
		states := map[string]int{}
		want, _ := restate(t, db)
		for _, c := range want {
			states[c.State]++
		}
		t.Logf("final states: %v", states)
	})
}

// ledgerGrants are the serving role's privileges on the ledger's tables,
// and the columns it may update where it may update only some.
func ledgerGrants(t *testing.T, owner store.Querier) map[string][]string {
	t.Helper()
	got := map[string][]string{}
	each(t, owner, `SELECT table_name, privilege_type FROM information_schema.table_privileges
WHERE grantee = 'cobranca_app' AND table_name LIKE 'ledger%' ORDER BY table_name, privilege_type`, nil, func(r store.Rows) error {
		var table, priv string
		err := r.Scan(&table, &priv)
		got[table] = append(got[table], priv)
		return err
	})
	// Every column of ledger_invoice, whose rows the role updates whole.
	each(t, owner, `SELECT table_name, column_name FROM information_schema.column_privileges
WHERE grantee = 'cobranca_app' AND privilege_type = 'UPDATE' AND table_name LIKE 'ledger%' AND table_name <> 'ledger_invoice'
ORDER BY table_name, column_name`, nil, func(r store.Rows) error {
		var table, col string
		err := r.Scan(&table, &col)
		got[table+" columns"] = append(got[table+" columns"], col)
		return err
	})
	return got
}

// TestServingRoleGrants: on PostgreSQL the serving role may write only
// what serving writes: read and insert every ledger table, update the
// invoices, a payment's left_cents and a dispute's resolution, nothing
// else; never delete or truncate. Every other test of the store runs as
// that role, so what serving needs is granted; this one holds the grants
// to no more (one grant more, on a table or a column, fails it), and shows
// the refusals. SQLite, which has no roles, refuses deletes of every
// ledger table and edits of allocations, promises and recorded references
// itself.
func TestServingRoleGrants(t *testing.T) {
	app, owner := storetest.AppRoleAndOwner(t, pg)
	want := map[string][]string{
		"ledger_invoice":         {"INSERT", "SELECT", "UPDATE"},
		"ledger_payment":         {"INSERT", "SELECT"},
		"ledger_payment columns": {"left_cents"},
		"ledger_allocation":      {"INSERT", "SELECT"},
		"ledger_promise":         {"INSERT", "SELECT"},
		"ledger_dispute":         {"INSERT", "SELECT"},
		"ledger_dispute columns": {"outcome", "resolution_note", "resolved_at", "resolved_by", "resolved_by_actor"},
		"ledger_reference":       {"INSERT", "SELECT"},
	}
	if diff := cmp.Diff(want, ledgerGrants(t, owner)); diff != "" {
		t.Errorf("the serving role's grants on the ledger (-want +got):\n%s", diff)
	}
	// The comparison sees one grant more, each in a transaction rolled back.
	errRollback := errors.New("rolled back")
	for _, grant := range []string{
		`GRANT UPDATE (source_id) ON ledger_reference TO cobranca_app`,
		`GRANT DELETE ON ledger_reference TO cobranca_app`,
		`GRANT UPDATE (amount_cents) ON ledger_allocation TO cobranca_app`,
		`GRANT TRUNCATE ON ledger_invoice TO cobranca_app`,
	} {
		err := owner.InTx(context.Background(), func(ctx context.Context, tx store.Tx) error {
			if _, err := tx.Exec(ctx, grant); err != nil {
				return err
			}
			if cmp.Equal(want, ledgerGrants(t, tx)) {
				t.Errorf("after %s the grants compare equal to what serving needs", grant)
			}
			return errRollback
		})
		if !errors.Is(err, errRollback) {
			t.Fatalf("%s: %v", grant, err)
		}
	}

	for _, tt := range []struct {
		name string
		db   store.DB
		sql  []string
	}{
		{"postgres serving role", app, []string{
			`DELETE FROM ledger_invoice`, `DELETE FROM ledger_payment`, `DELETE FROM ledger_allocation`, `DELETE FROM ledger_promise`,
			`DELETE FROM ledger_dispute`, `TRUNCATE ledger_allocation`, `UPDATE ledger_payment SET amount_cents = 1`,
			`UPDATE ledger_allocation SET amount_cents = 1`, `UPDATE ledger_promise SET amount_cents = 1`, `UPDATE ledger_dispute SET reason = 'other'`,
			`DELETE FROM ledger_reference`, `TRUNCATE ledger_reference`, `UPDATE ledger_reference SET source_id = 'd_other'`,
		}},
		{"sqlite", storetest.SQLite(t), []string{
			`DELETE FROM ledger_invoice`, `DELETE FROM ledger_payment`, `DELETE FROM ledger_allocation`, `DELETE FROM ledger_promise`,
			`DELETE FROM ledger_dispute`, `UPDATE ledger_allocation SET amount_cents = 1`, `UPDATE ledger_promise SET amount_cents = 1`,
			`DELETE FROM ledger_reference`, `UPDATE ledger_reference SET source_id = 'd_other'`,
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			db := tt.db
			must[ledger.UpsertCounts](t)(upsert(t, db, inv("NF-1", "C-1", 1000, "2026-12-10")))
			p := record(t, db, payment("r1", 100, "2026-12-02"))
			must[[]ledger.Allocation](t)(allocate(db, p.ID, ledger.Planned{InvoiceID: "NF-1", AmountCents: 100}))
			must[ledger.Promise](t)(inTx(db, func(ctx context.Context, tx store.Tx) (ledger.Promise, error) {
				return ledger.RecordPromise(ctx, tx, ledger.PromiseRecord{InvoiceID: "NF-1", AmountCents: 1, PromisedFor: today, Channel: "phone"}, ana, t0)
			}))
			must[ledger.Dispute](t)(inTx(db, func(ctx context.Context, tx store.Tx) (ledger.Dispute, error) {
				return ledger.OpenDispute(ctx, tx, "NF-1", ledger.DisputePricing, "", ana, t0)
			}))
			if err := addReference(db, []string{"NF-1"}, "TX1", ledger.SourceReminder, "d_1"); err != nil {
				t.Fatal(err)
			}
			for _, sql := range tt.sql {
				if _, err := db.Exec(context.Background(), sql); err == nil ||
					!strings.Contains(err.Error(), "permission denied") && !strings.Contains(err.Error(), "the ledger keeps its records") {
					t.Errorf("%s = %v, want it refused", sql, err)
				}
			}
			for _, table := range []string{"ledger_invoice", "ledger_payment", "ledger_allocation", "ledger_promise", "ledger_dispute", "ledger_reference"} {
				if n := storetest.Count(t, db, table); n != 1 {
					t.Errorf("%s holds %d rows after the refused statements, want 1", table, n)
				}
			}
		})
	}
}
