package ledger_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/cobranca/cobranca/internal/customers"
	"github.com/cobranca/cobranca/internal/failure"
	"github.com/cobranca/cobranca/internal/ledger"
	"github.com/cobranca/cobranca/internal/store"
	"github.com/cobranca/cobranca/internal/store/storetest"
	"github.com/cobranca/cobranca/internal/writeoffs"
)

func check(t *testing.T, db store.DB, expect ...ledger.Expected) []ledger.Verdict {
	t.Helper()
	return must[[]ledger.Verdict](t)(inTx(db, func(ctx context.Context, tx store.Tx) ([]ledger.Verdict, error) {
		return ledger.CheckContact(ctx, tx, today, expect)
	}))
}

// TestCheckContact: what the send-time check says of each kind of
// invoice. Settled (paid, void, written off) is invoice_settled; disputed,
// under a promise dated today or later, or with another open amount than
// the draft's is draft_stale; a promise in the past, a resolved dispute, a
// partial payment the draft already counts, are sendable; an invoice the
// ledger does not know is not known.
func TestCheckContact(t *testing.T) {
	storetest.Each(t, pg, func(t *testing.T, db store.DB) {
		must[customers.Customer](t)(inTx(db, func(ctx context.Context, tx store.Tx) (customers.Customer, error) {
			return customers.Upsert(ctx, tx, customers.Record{ID: "C-1", Name: "Padaria", Email: "f@padaria.example"}, t0)
		}))
		var recs []ledger.InvoiceRecord
		for _, id := range []string{"paid", "void", "written-off", "disputed", "promised-today", "promised-later", "promised-before",
			"resolved", "partly-paid", "other-amount", "open"} {
			r := inv(id, "C-1", 1000, "2026-11-20")
			r.Void = id == "void"
			recs = append(recs, r)
		}
		must[ledger.UpsertCounts](t)(upsert(t, db, recs...))
		p := record(t, db, payment("r1", 1300, "2026-11-30"))
		must[[]ledger.Allocation](t)(allocate(db, p.ID, ledger.Planned{InvoiceID: "paid", AmountCents: 1000}, ledger.Planned{InvoiceID: "partly-paid", AmountCents: 300}))
		must[writeoffs.WriteOff](t)(inTx(db, func(ctx context.Context, tx store.Tx) (writeoffs.WriteOff, error) {
			return writeoffs.Record(ctx, tx, writeoffs.Request{InvoiceID: "written-off", CustomerID: "C-1", AmountCents: 1000, Reason: "r"}, writeoffs.Author{Subject: "ana"}, t0)
		}))
		dispute := func(id string) {
			must[ledger.Dispute](t)(inTx(db, func(ctx context.Context, tx store.Tx) (ledger.Dispute, error) {
				return ledger.OpenDispute(ctx, tx, id, ledger.DisputeNotReceived, "", ana, t0)
			}))
		}
		dispute("disputed")
		dispute("resolved")
		must[ledger.Dispute](t)(inTx(db, func(ctx context.Context, tx store.Tx) (ledger.Dispute, error) {
			return ledger.ResolveDispute(ctx, tx, "resolved", ledger.OutcomeRejected, "", ana, t0)
		}))
		promise := func(id, date string, now time.Time) {
			must[ledger.Promise](t)(inTx(db, func(ctx context.Context, tx store.Tx) (ledger.Promise, error) {
				return ledger.RecordPromise(ctx, tx, ledger.PromiseRecord{InvoiceID: id, AmountCents: 1000, PromisedFor: date, Channel: "phone"}, ana, now)
			}))
		}
		promise("promised-today", today, t0)
		promise("promised-later", "2026-12-15", t0)
		promise("promised-before", "2026-11-30", t0.AddDate(0, 0, -3))

		type row struct {
			id    string
			open  int64
			known bool
			code  failure.Code
			why   string
		}
		for _, tt := range []row{
			{"paid", 1000, true, ledger.CodeInvoiceSettled, "paid"},
			{"void", 1000, true, ledger.CodeInvoiceSettled, "void"},
			{"written-off", 1000, true, ledger.CodeInvoiceSettled, "written off"},
			{"disputed", 1000, true, ledger.CodeDraftStale, "disputed"},
			{"promised-today", 1000, true, ledger.CodeDraftStale, "promise to pay on 2026-12-01"},
			{"promised-later", 1000, true, ledger.CodeDraftStale, "promise to pay on 2026-12-15"},
			{"promised-before", 1000, true, "", ""},
			{"resolved", 1000, true, "", ""},
			{"partly-paid", 700, true, "", ""},
			{"partly-paid", 1000, true, ledger.CodeDraftStale, "open amount is now R$\u00a07,00"},
			{"other-amount", 999, true, ledger.CodeDraftStale, "open amount is now R$\u00a010,00"},
			{"open", 1000, true, "", ""},
			{"unknown", 1000, false, "", ""},
		} {
			v := check(t, db, ledger.Expected{InvoiceID: tt.id, OpenCents: tt.open})
			if len(v) != 1 {
				t.Fatalf("%s: %d verdicts", tt.id, len(v))
			}
			got := row{v[0].InvoiceID, tt.open, v[0].Known, v[0].Code, v[0].Why}
			if got != tt {
				t.Errorf("CheckContact(%s, %d) = %+v, want %+v", tt.id, tt.open, got, tt)
			}
			if v[0].Known && v[0].Invoice.InvoiceID != tt.id {
				t.Errorf("%s: the verdict carries invoice %q", tt.id, v[0].Invoice.InvoiceID)
			}
		}
		// Several at once, the draft's order kept, one repeated.
		vs := check(t, db, ledger.Expected{InvoiceID: "open", OpenCents: 1000}, ledger.Expected{InvoiceID: "paid", OpenCents: 1000},
			ledger.Expected{InvoiceID: "unknown"}, ledger.Expected{InvoiceID: "open", OpenCents: 1})
		var codes []string
		for _, v := range vs {
			codes = append(codes, v.InvoiceID+":"+string(v.Code))
		}
		if want := []string{"open:", "paid:invoice_settled", "unknown:", "open:draft_stale"}; !equal(codes, want) {
			t.Errorf("several at once = %v, want %v", codes, want)
		}
	})
}

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// release lets a transaction held open by a test go on: once, when the
// test does, or when it ends (a failed test must not leave a connection
// the pool waits for at its close).
type release struct {
	c    chan struct{}
	once sync.Once
}

func releaser(t *testing.T) *release {
	r := &release{c: make(chan struct{})}
	t.Cleanup(r.do)
	return r
}

func (r *release) do() { r.once.Do(func() { close(r.c) }) }

// waitForLockWait returns once some session of owner's database waits for
// a lock, or fails the test after 30 seconds.
func waitForLockWait(t *testing.T, owner store.DB) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		var n int64
		if err := owner.QueryRow(context.Background(), `SELECT count(*) FROM pg_stat_activity
WHERE datname = current_database() AND wait_event_type = 'Lock'`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n > 0 {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatal("no session waited for a lock")
}

// TestCheckContactSerializesWithWrites: on PostgreSQL, the send-time check
// and the ledger's writes to the same invoice take turns. A send holding
// the check's lock makes an allocation (a payment import, a person's
// match), a write-off, a promise or a dispute wait until it commits; a
// write in flight makes the check wait, and the check then sees it: a
// payment committed before the send's check is never missed, and none
// slips in between the check and the send's commit. (SQLite's write
// transactions serialize all of this by BEGIN IMMEDIATE.)
func TestCheckContactSerializesWithWrites(t *testing.T) {
	app, owner := storetest.AppRoleAndOwner(t, pg)
	db := store.DB(app)
	must[customers.Customer](t)(inTx(db, func(ctx context.Context, tx store.Tx) (customers.Customer, error) {
		return customers.Upsert(ctx, tx, customers.Record{ID: "C-1", Name: "Padaria", Email: "f@padaria.example"}, t0)
	}))
	n := 0
	fresh := func() string {
		n++
		id := "NF-" + string(rune('A'+n))
		r := inv(id, "C-1", 1000, "2026-11-20")
		r.PixTxID = "TX" + id[3:]
		must[ledger.UpsertCounts](t)(upsert(t, db, r))
		return id
	}
	writes := []struct {
		name string
		want failure.Code // the check's verdict once the write committed
		do   func(ctx context.Context, tx store.Tx, id string) error
	}{
		{"manual allocation", ledger.CodeInvoiceSettled, func(ctx context.Context, tx store.Tx, id string) error {
			p, _, err := ledger.RecordPayment(ctx, tx, payment("m-"+id, 1000, "2026-12-01"), ana, t0)
			if err == nil {
				_, err = ledger.Allocate(ctx, tx, p.ID, []ledger.Planned{{InvoiceID: id, AmountCents: 1000}}, ana, t0)
			}
			return err
		}},
		{"payment import", ledger.CodeInvoiceSettled, func(ctx context.Context, tx store.Tx, id string) error {
			p := payment("i-"+id, 1000, "2026-12-01")
			p.Reference = "TX" + id[3:]
			c, err := ledger.ImportPayments(ctx, tx, []ledger.PaymentRecord{p}, ana, t0)
			if err == nil && c.MatchedReference != 1 {
				t.Errorf("the import matched %+v", c)
			}
			return err
		}},
		{"write-off", ledger.CodeInvoiceSettled, func(ctx context.Context, tx store.Tx, id string) error {
			_, err := writeoffs.Record(ctx, tx, writeoffs.Request{InvoiceID: id, CustomerID: "C-1", AmountCents: 1000, Reason: "r"}, writeoffs.Author{Subject: "ana"}, t0)
			return err
		}},
		{"promise", ledger.CodeDraftStale, func(ctx context.Context, tx store.Tx, id string) error {
			_, err := ledger.RecordPromise(ctx, tx, ledger.PromiseRecord{InvoiceID: id, AmountCents: 1000, PromisedFor: "2026-12-09", Channel: "phone"}, ana, t0)
			return err
		}},
		{"dispute", ledger.CodeDraftStale, func(ctx context.Context, tx store.Tx, id string) error {
			_, err := ledger.OpenDispute(ctx, tx, id, ledger.DisputeAlreadyPaid, "", ana, t0)
			return err
		}},
	}
	ctx := context.Background()
	for _, w := range writes {
		t.Run(w.name+" waits for the send", func(t *testing.T) {
			id := fresh()
			checked := make(chan []ledger.Verdict)
			release := releaser(t)
			sendDone := make(chan error, 1)
			go func() {
				sendDone <- db.InTx(ctx, func(ctx context.Context, tx store.Tx) error {
					v, err := ledger.CheckContact(ctx, tx, today, []ledger.Expected{{InvoiceID: id, OpenCents: 1000}})
					if err != nil {
						close(checked)
						return err
					}
					checked <- v
					<-release.c // the send queues its message here, then commits
					return nil
				})
			}()
			v, ok := <-checked
			if !ok || v[0].Code != "" {
				t.Fatalf("the send's check = %+v", v)
			}
			writeDone := make(chan error, 1)
			var sendCommitted bool
			go func() {
				writeDone <- db.InTx(ctx, func(ctx context.Context, tx store.Tx) error { return w.do(ctx, tx, id) })
			}()
			waitForLockWait(t, owner)
			select {
			case err := <-writeDone:
				t.Fatalf("the %s finished (%v) while the send held its check", w.name, err)
			default:
			}
			release.do()
			if err := <-sendDone; err != nil {
				t.Fatal(err)
			}
			sendCommitted = true
			if err := <-writeDone; err != nil || !sendCommitted {
				t.Fatalf("the %s after the send: %v", w.name, err)
			}
			if v := check(t, db, ledger.Expected{InvoiceID: id, OpenCents: 1000}); v[0].Code != w.want {
				t.Errorf("after the %s the check says %q, want %s", w.name, v[0].Code, w.want)
			}
		})
		t.Run("the send waits for the "+w.name, func(t *testing.T) {
			id := fresh()
			done := make(chan struct{})
			release := releaser(t)
			writeDone := make(chan error, 1)
			go func() {
				writeDone <- db.InTx(ctx, func(ctx context.Context, tx store.Tx) error {
					err := w.do(ctx, tx, id)
					close(done)
					<-release.c
					return err
				})
			}()
			<-done
			sendDone := make(chan []ledger.Verdict, 1)
			go func() {
				v, err := inTx(db, func(ctx context.Context, tx store.Tx) ([]ledger.Verdict, error) {
					return ledger.CheckContact(ctx, tx, today, []ledger.Expected{{InvoiceID: id, OpenCents: 1000}})
				})
				if err != nil {
					t.Error(err)
				}
				sendDone <- v
			}()
			waitForLockWait(t, owner)
			select {
			case v := <-sendDone:
				t.Fatalf("the send's check answered %+v while the %s was in flight", v, w.name)
			default:
			}
			release.do()
			if err := <-writeDone; err != nil {
				t.Fatal(err)
			}
			v := <-sendDone
			if len(v) != 1 || v[0].Code != w.want {
				t.Fatalf("the check after the %s committed = %+v, want %s", w.name, v, w.want)
			}
			inv := v[0].Invoice
			if w.name == "promise" && inv.Promise == nil || w.name == "dispute" && inv.Dispute == nil {
				t.Errorf("the check after the %s reads the invoice without it: %+v", w.name, inv)
			}
		})
	}
}

// TestWriteOffDuringFirstImport: on PostgreSQL, a write-off of an invoice
// that an import is creating, both in flight, waits for the import, and
// the invoice ends written off; without the wait each would miss the other
// (the import reads no write-off, the write-off finds no invoice).
func TestWriteOffDuringFirstImport(t *testing.T) {
	app, owner := storetest.AppRoleAndOwner(t, pg)
	db := store.DB(app)
	ctx := context.Background()
	must[customers.Customer](t)(inTx(db, func(ctx context.Context, tx store.Tx) (customers.Customer, error) {
		return customers.Upsert(ctx, tx, customers.Record{ID: "C-1", Name: "Padaria", Email: "f@padaria.example"}, t0)
	}))
	created, release := make(chan struct{}), releaser(t)
	importDone := make(chan error, 1)
	go func() {
		importDone <- db.InTx(ctx, func(ctx context.Context, tx store.Tx) error {
			_, err := ledger.UpsertInvoices(ctx, tx, []ledger.InvoiceRecord{inv("NF-1", "C-1", 1000, "2026-12-10")}, t0)
			close(created)
			<-release.c
			return err
		})
	}()
	<-created
	woDone := make(chan error, 1)
	go func() {
		_, err := inTx(db, func(ctx context.Context, tx store.Tx) (writeoffs.WriteOff, error) {
			return writeoffs.Record(ctx, tx, writeoffs.Request{InvoiceID: "NF-1", CustomerID: "C-1", AmountCents: 1000, Reason: "r"}, writeoffs.Author{Subject: "ana"}, t0)
		})
		woDone <- err
	}()
	waitForLockWait(t, owner)
	release.do()
	if err := <-importDone; err != nil {
		t.Fatal(err)
	}
	if err := <-woDone; err != nil {
		t.Fatal(err)
	}
	if s := standing(t, db, "NF-1"); s.State != ledger.StateWrittenOff {
		t.Errorf("an invoice written off while it was first imported is %+v", s)
	}
}
