package collections_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/cobranca/cobranca/internal/collections"
	"github.com/cobranca/cobranca/internal/customers"
	"github.com/cobranca/cobranca/internal/ledger"
	"github.com/cobranca/cobranca/internal/reminders"
	"github.com/cobranca/cobranca/internal/store"
	"github.com/cobranca/cobranca/internal/store/storetest"
)

// countingDB is a store.DB whose transactions record the statements they send, one entry per
// Exec, Query or QueryRow: each a round trip to the database.
type countingDB struct {
	store.DB
	mu    sync.Mutex
	stmts []string // the last transaction's
}

func (c *countingDB) InTx(ctx context.Context, fn func(ctx context.Context, tx store.Tx) error) error {
	c.mu.Lock()
	c.stmts = nil
	c.mu.Unlock()
	return c.DB.InTx(ctx, func(ctx context.Context, tx store.Tx) error {
		return fn(ctx, &countingTx{Tx: tx, db: c})
	})
}

func (c *countingDB) record(sql string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.stmts = append(c.stmts, strings.Join(strings.Fields(sql), " "))
}

type countingTx struct {
	store.Tx
	db *countingDB
}

func (t *countingTx) Exec(ctx context.Context, sql string, args ...any) (int64, error) {
	t.db.record(sql)
	return t.Tx.Exec(ctx, sql, args...)
}

func (t *countingTx) Query(ctx context.Context, sql string, args ...any) (store.Rows, error) {
	t.db.record(sql)
	return t.Tx.Query(ctx, sql, args...)
}

func (t *countingTx) QueryRow(ctx context.Context, sql string, args ...any) store.Row {
	t.db.record(sql)
	return t.Tx.QueryRow(ctx, sql, args...)
}

// sendChecksBefore is how many statements send_reminder's checks ran in its transaction before
// the ledger (measured before the send-time ledger check was added): the draft read, the
// customers locked, the draft locked.
const sendChecksBefore = 3

// TestSendReminderRoundTrips: the checks send_reminder's execution runs in its transaction
// before it enqueues (collections.Sendable) take one round trip more than before the ledger
// check — one statement, reading the ledger — for a draft whose invoices are in the ledger, and
// for one whose invoices are not.
func TestSendReminderRoundTrips(t *testing.T) {
	storetest.Each(t, pg, func(t *testing.T, db store.DB) {
		counting := &countingDB{DB: db}
		e := newSendEnv(t, db)
		e.customer(t, customers.Record{ID: "C-1", Name: "Oficina", Email: "oficina@example.com"})
		e.invoices(t, inLedger("NF-1", "C-1", 123456, "2026-11-01", "1"))
		for _, invoice := range []string{"NF-1", "NF-404"} {
			d := e.draft(t, "C-1", "Oficina", invoice)
			if err := counting.InTx(context.Background(), func(ctx context.Context, tx store.Tx) error {
				return collections.Sendable(ctx, tx, d.ID, "2026-07-01", false)
			}); err != nil {
				t.Fatal(err)
			}
			ledgerStmts := 0
			for _, s := range counting.stmts {
				if strings.Contains(s, "ledger_") {
					ledgerStmts++
				}
			}
			if len(counting.stmts) != sendChecksBefore+1 || ledgerStmts != 1 {
				t.Errorf("a draft about %s: %d statements, %d of the ledger; want %d, 1:\n%s", invoice, len(counting.stmts), ledgerStmts,
					sendChecksBefore+1, strings.Join(counting.stmts, "\n"))
			}
		}
	})
}

// BenchmarkSendChecks measures send_reminder's checks in a transaction of their own, before
// the ledger's (draft, customers, draft locked) and with it, for a draft of 1 and of 100
// invoices, all in the ledger; docs/benchmarks.md, "Ledger: the send-time check".
func BenchmarkSendChecks(b *testing.B) {
	tpl, err := reminders.ParseTemplates()
	if err != nil {
		b.Fatal(err)
	}
	for _, f := range storetest.Fixtures(pg) {
		b.Run(string(f.Dialect), func(b *testing.B) {
			db := f.Serving(b)
			e := newEnv(b, db)
			e.customer(b, customers.Record{ID: "C-1", Name: "Oficina", Email: "oficina@example.com"})
			for _, n := range []int{1, 100} {
				var recs []ledger.InvoiceRecord
				var invs []reminders.Invoice
				for i := range n {
					id := fmt.Sprintf("NF-%d-%03d", n, i)
					recs = append(recs, inLedger(id, "C-1", 123456, "2026-06-01", fmt.Sprintf("%d%03d", n, i)))
					invs = append(invs, reminders.Invoice{ID: id, DueDate: "2026-06-01", AmountCents: 123456})
				}
				e.invoices(b, recs...)
				var d reminders.Record
				if err := db.InTx(context.Background(), func(ctx context.Context, tx store.Tx) error {
					d, _, err = reminders.Prepare(ctx, tx, tpl, reminders.Request{CustomerID: "C-1", To: reminders.Recipient{Name: "Oficina", Email: "oficina@example.com"},
						Tone: reminders.Friendly, Language: reminders.PortugueseBR, Invoices: invs}, e.clock())
					return err
				}); err != nil {
					b.Fatal(err)
				}
				for _, checks := range []struct {
					name string
					run  func(ctx context.Context, tx store.Tx) error
				}{
					{"before", func(ctx context.Context, tx store.Tx) error {
						return collections.Contactable(ctx, tx, d.ID, "2026-07-01")
					}},
					{"with-ledger", func(ctx context.Context, tx store.Tx) error {
						return collections.Sendable(ctx, tx, d.ID, "2026-07-01", true)
					}},
				} {
					b.Run(fmt.Sprintf("invoices=%d/%s", n, checks.name), func(b *testing.B) {
						b.ReportAllocs()
						for b.Loop() {
							if err := db.InTx(context.Background(), checks.run); err != nil {
								b.Fatal(err)
							}
						}
					})
				}
			}
		})
	}
}
