package collections_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/cobranca/cobranca/internal/customers"
	"github.com/cobranca/cobranca/internal/ledger"
	"github.com/cobranca/cobranca/internal/pipeline"
	"github.com/cobranca/cobranca/internal/pipeline/pipelinetest"
	"github.com/cobranca/cobranca/internal/reminders"
	"github.com/cobranca/cobranca/internal/store"
	"github.com/cobranca/cobranca/internal/store/storetest"
)

// commitClock is a shared clock of ticks: each transaction that commits is stamped with the
// tick taken as its function returned (before COMMIT) and the one taken once InTx returned
// (after it), so its commit lies between the two. Two transactions whose stamps do not
// overlap committed in the order of their stamps.
type commitClock struct{ tick atomic.Int64 }

// stamp is a committed transaction's two ticks.
type stamp struct{ before, after int64 }

// clockedDB is a store.DB that stamps the transactions it commits on a commitClock and keeps
// the last stamp (the transaction's own Tx goes to fn, unwrapped: the outbox borrows it).
type clockedDB struct {
	store.DB
	clock *commitClock
	mu    sync.Mutex
	last  *stamp
}

func (c *clockedDB) InTx(ctx context.Context, fn func(ctx context.Context, tx store.Tx) error) error {
	var before int64
	err := c.DB.InTx(ctx, func(ctx context.Context, tx store.Tx) error {
		err := fn(ctx, tx)
		if err == nil {
			before = c.clock.tick.Add(1)
		}
		return err
	})
	after := c.clock.tick.Add(1)
	if err == nil {
		c.mu.Lock()
		c.last = &stamp{before, after}
		c.mu.Unlock()
	}
	return err
}

// take returns the last stamp and forgets it.
func (c *clockedDB) take() *stamp {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.last
	c.last = nil
	return s
}

// TestSendPaymentRace: a payment import and the approved send of a reminder about the same
// invoice, at once, 200 times on each store (40 in the -short tier). A send that queued its
// message committed before the payment (their commit stamps never say the payment committed
// first); a send that did not was refused invoice_settled (it saw the payment) and queued
// nothing. Without the send-time check's lock the payment commits while the send is still
// enqueuing, and the stamps show it.
func TestSendPaymentRace(t *testing.T) {
	rounds := 200
	if testing.Short() {
		rounds = 40
	}
	storetest.Each(t, pg, func(t *testing.T, db store.DB) {
		ctx := context.Background()
		e := newSendEnv(t, db)
		clock := &commitClock{}
		clocked := &clockedDB{DB: db, clock: clock}
		opts := e.opts
		opts.DB = clocked
		e.p = pipelinetest.Product(t, opts)
		e.customer(t, customers.Record{ID: "C-1", Name: "Oficina", Email: "oficina@example.com"})
		recs := make([]ledger.InvoiceRecord, rounds)
		for i := range recs {
			recs[i] = inLedger(fmt.Sprintf("NF-%03d", i), "C-1", 123456, "2026-06-01", fmt.Sprintf("55%06d", i))
		}
		e.invoices(t, recs...)
		type round struct {
			draft reminders.Record
			ask   pipelinetest.Asked
		}
		rs := make([]round, rounds)
		for i := range rs {
			rs[i].draft = e.bulkDraft(t, "C-1", recs[i].InvoiceID, recs[i].DueDate, reminders.Friendly)
			rs[i].ask = e.asked(t, urlClient, rs[i].draft.ID, fmt.Sprintf("k-%d", i))
			e.approve(t, rs[i].ask.ID)
		}
		clocked.take()
		var queued, refused, ordered int
		for i, r := range rs {
			pay := ledger.PaymentRecord{Source: "cnab240:341", SourceRef: recs[i].OurNumber + "/2026-06-30", AmountCents: recs[i].AmountCents,
				Currency: "BRL", PaidOn: "2026-06-30", Method: ledger.MethodBoleto, Reference: recs[i].OurNumber}
			var wg sync.WaitGroup
			start := make(chan struct{})
			var paid stamp
			var payErr error
			var res pipeline.Result
			wg.Add(2)
			go func() {
				defer wg.Done()
				<-start
				payErr = db.InTx(ctx, func(ctx context.Context, tx store.Tx) error {
					c, err := ledger.ImportPayments(ctx, tx, []ledger.PaymentRecord{pay}, bookkeeper, e.clock())
					if err == nil && c.MatchedReference != 1 {
						err = fmt.Errorf("import = %+v, want the invoice matched", c)
					}
					if err == nil {
						paid.before = clock.tick.Add(1)
					}
					return err
				})
				paid.after = clock.tick.Add(1)
			}()
			go func() {
				defer wg.Done()
				<-start
				res = e.sendCall(sender, urlClient, r.draft.ID, fmt.Sprintf("k-%d", i), r.ask)
			}()
			close(start)
			wg.Wait()
			sent := clocked.take()
			if payErr != nil {
				t.Fatalf("round %d: the payment import: %v", i, payErr)
			}
			state := e.draftNow(t, r.draft.ID).State
			switch res.Kind {
			case pipeline.Complete:
				queued++
				if sent == nil || state == reminders.Draft {
					t.Fatalf("round %d: the send completed, yet no commit was stamped or the draft is %s", i, state)
				}
				if paid.after < sent.before {
					t.Errorf("round %d: the message was queued by a transaction that committed after the payment's (payment %v, send %v)", i, paid, *sent)
				}
				if paid.before > sent.after {
					ordered++ // the send certainly committed first
				}
			default:
				refused++
				if code, _ := failed(res); code != ledger.CodeInvoiceSettled || state != reminders.Draft {
					t.Errorf("round %d: the send = %v %v, draft %s; want it queued, or refused invoice_settled with the draft a draft", i, res.Kind, res.Err, state)
				}
			}
		}
		if n := e.jobs(t); n != queued {
			t.Errorf("%d outbox entries, want the %d sends that completed", n, queued)
		}
		t.Logf("%d rounds: %d queued (%d certainly before the payment), %d refused invoice_settled", rounds, queued, ordered, refused)
	})
}
