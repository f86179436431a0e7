package reminders_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/cobranca/cobranca/internal/reminders"
	"github.com/cobranca/cobranca/internal/store"
	"github.com/cobranca/cobranca/internal/store/storetest"
)

// TestPreparePix: Prepare asks for the PIX code of the draft's txid (TxIDFor its id) and total,
// renders both parts with it and the invoices' boleto lines, and stores the HTML, the currency
// and the code; every read returns them as written: Get, List, Select, OpenDrafts' subject,
// and once sent, Sends and SendsNaming.
func TestPreparePix(t *testing.T) {
	tpl := templates(t)
	storetest.Each(t, pg, func(t *testing.T, db store.DB) {
		ctx := context.Background()
		withBoleto := reminders.Invoice{ID: "NF-1", DueDate: "2026-05-10", AmountCents: 150000, BoletoLine: boletoItau}
		type ask struct {
			txid   string
			amount int64
		}
		var asked []ask
		r := request("c1", reminders.Friendly, withBoleto, inv2)
		r.PixCode = func(txid string, amountCents int64) (string, error) {
			asked = append(asked, ask{txid, amountCents})
			return bacenCode, nil
		}
		rec, created := prepare(t, db, tpl, r, t0)
		want := &reminders.Pix{Code: bacenCode, TxID: reminders.TxIDFor(rec.ID), AmountCents: 152599}
		if !created || !cmp.Equal(rec.Pix, want) || rec.Currency != "BRL" {
			t.Fatalf("Prepare = %+v, created %v; want a new BRL draft carrying %+v", rec, created, want)
		}
		if len(asked) != 1 || asked[0] != (ask{want.TxID, 152599}) {
			t.Errorf("PixCode was asked %v, want once for the draft's txid %s and its total", asked, want.TxID)
		}
		rendered, err := tpl.Render(r.Language, r.Tone, reminders.Message{Name: r.To.Name, Invoices: r.Invoices, Pix: want})
		if err != nil {
			t.Fatal(err)
		}
		if rec.Subject != rendered.Subject || rec.Body != rendered.Text || rec.HTML != rendered.HTML {
			t.Errorf("the draft's parts are not the rendering of its message with its PIX code")
		}
		for _, s := range []string{bacenCode, boletoItauLine} {
			if !strings.Contains(rec.Body, s) || !strings.Contains(rec.HTML, s) {
				t.Errorf("the draft's parts do not both say %s", s)
			}
		}
		if rec.Invoices[0].BoletoLine != boletoItau {
			t.Errorf("the draft's invoices = %+v, want NF-1 with its boleto line", rec.Invoices)
		}

		reads := map[string]func() ([]reminders.Record, error){
			"Get": func() ([]reminders.Record, error) {
				got, err := reminders.Get(ctx, db, rec.ID)
				return []reminders.Record{got}, err
			},
			"List": func() ([]reminders.Record, error) {
				return reminders.List(ctx, db, reminders.Filter{CustomerID: "c1", Limit: 10})
			},
			"Select": func() ([]reminders.Record, error) {
				return reminders.Select(ctx, db, reminders.Selection{IDs: []string{rec.ID}}, false, 10)
			},
		}
		readsHTML := map[string]bool{"Get": true}
		check := func(when string, want reminders.Record) {
			t.Helper()
			for name, read := range reads {
				got, err := read()
				if err != nil || len(got) != 1 {
					t.Fatalf("%s %s = %d records, %v; want the draft", when, name, len(got), err)
				}
				want := want
				if !readsHTML[name] {
					want.HTML = "" // the reads of many drafts leave the HTML part out
				}
				if diff := cmp.Diff(want, got[0]); diff != "" {
					t.Errorf("%s %s (-prepared +read):\n%s", when, name, diff)
				}
			}
		}
		check("after Prepare", rec)

		// Prepared again: the open draft, its code unchanged.
		again, created := prepare(t, db, tpl, r, t0.Add(time.Hour))
		if created || !cmp.Equal(again, rec) {
			t.Errorf("Prepare again = %+v, created %v; want the open draft as written", again, created)
		}

		// Sent: the sends' reads return it too.
		at := t0.Add(2 * time.Hour)
		if err := db.InTx(ctx, func(ctx context.Context, tx store.Tx) error {
			return reminders.MarkQueued(ctx, tx, rec.ID, reminders.Queue{OutboxID: 1, MessageID: "<1.outbox@x>", By: "ana"}, at)
		}); err != nil {
			t.Fatal(err)
		}
		queued, err := reminders.Get(ctx, db, rec.ID)
		if err != nil || queued.Pix == nil || *queued.Pix != *want || queued.HTML != rec.HTML {
			t.Fatalf("Get once queued = %+v, %v", queued, err)
		}
		reads["Sends"] = func() ([]reminders.Record, error) { return reminders.Sends(ctx, db, "c1", 10) }
		reads["SendsNaming"] = func() ([]reminders.Record, error) { return reminders.SendsNaming(ctx, db, "c1", "NF-1", 10, 10) }
		check("once queued", queued)
	})
}

// TestPrepareCurrencyAndRefusals: a draft in another currency is written and stored in it,
// without a PIX code; a PIX code that cannot be made, or one for a draft not in reais, writes
// no draft.
func TestPrepareCurrencyAndRefusals(t *testing.T) {
	tpl := templates(t)
	storetest.Each(t, pg, func(t *testing.T, db store.DB) {
		ctx := context.Background()
		usd := request("c1", reminders.Firm, inv1)
		usd.Currency = "USD"
		rec, _ := prepare(t, db, tpl, usd, t0)
		got, err := reminders.Get(ctx, db, rec.ID)
		if err != nil || got.Currency != "USD" || got.Pix != nil || !strings.Contains(got.Body, "US$\u00a01.500,00") || !strings.Contains(got.HTML, "US$\u00a01.500,00") {
			t.Errorf("a USD draft reads back as %+v, %v; want USD amounts and no PIX code", got, err)
		}

		failing := errors.New("no merchant")
		for name, tc := range map[string]struct {
			currency string
			code     func(string, int64) (string, error)
			want     string
		}{
			"the code fails":     {"", func(string, int64) (string, error) { return "", failing }, "reminders: PIX code: no merchant"},
			"a code for dollars": {"USD", func(string, int64) (string, error) { return bacenCode, nil }, "a PIX code pays reais (BRL), not USD"},
			"a broken code":      {"", func(string, int64) (string, error) { return "a\nb", nil }, "the PIX code must be"},
		} {
			r := request("c2", reminders.Friendly, inv2)
			r.Currency, r.PixCode = tc.currency, tc.code
			err := db.InTx(ctx, func(ctx context.Context, tx store.Tx) error {
				if err := customer(ctx, tx, r, t0); err != nil {
					return err
				}
				_, _, err := reminders.Prepare(ctx, tx, tpl, r, t0)
				return err
			})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%s: Prepare = %v, want an error saying %q", name, err, tc.want)
			}
		}
		if n := count(t, db, "customer_id = 'c2'"); n != 0 {
			t.Errorf("the refused Prepares left %d drafts", n)
		}
	})
}

// TestDraftPixGuards: the database holds the rules of a draft's PIX code whatever writes it: no
// two drafts share a txid (a payment carrying it matches one draft's invoices), a code has a
// txid and is in reais; on PostgreSQL the serving role cannot change a draft's rendered parts
// or code once written (what the person approved is what is sent).
func TestDraftPixGuards(t *testing.T) {
	tpl := templates(t)
	storetest.Each(t, pg, func(t *testing.T, db store.DB) {
		ctx := context.Background()
		r := request("c1", reminders.Friendly, inv1)
		r.PixCode = func(string, int64) (string, error) { return bacenCode, nil }
		rec, _ := prepare(t, db, tpl, r, t0)
		insert := func(id, currency, code, txid string) error {
			_, err := db.Exec(ctx, `INSERT INTO reminder_draft (id, customer_id, recipient_name, recipient_email, tone, language,
    invoices, invoice_set_hash, invoice_count, total_cents, subject, body, state, created_by, created_by_actor,
    created_at, updated_at, earliest_due_date, html, currency, pix_code, pix_txid, pix_amount_cents)
SELECT $1, customer_id, recipient_name, recipient_email, 'firm', language, invoices, invoice_set_hash, invoice_count, total_cents,
    subject, body, 'discarded', created_by, created_by_actor, created_at, updated_at, earliest_due_date, html, $2, $3, $4, pix_amount_cents
FROM reminder_draft WHERE id = $5`, id, currency, code, txid, rec.ID)
			return err
		}
		other := func(c byte) string { return "d_" + strings.Repeat(string(c), 26) }
		if err := insert(other('b'), "BRL", bacenCode, rec.Pix.TxID); err == nil {
			t.Errorf("a second draft with the txid %s was stored", rec.Pix.TxID)
		}
		for name, args := range map[string][3]string{
			"a code without a txid": {"BRL", bacenCode, ""},
			"a txid without a code": {"BRL", "", "ABC"},
			"a code in dollars":     {"USD", bacenCode, "ABC"},
			"a txid of 26":          {"BRL", bacenCode, strings.Repeat("A", 26)},
			"a txid with a dash":    {"BRL", bacenCode, "A-B"},
			"a currency in lower":   {"brl", "", ""},
		} {
			if err := insert(other('c'), args[0], args[1], args[2]); err == nil {
				t.Errorf("%s was stored", name)
				if _, err := db.Exec(ctx, `DELETE FROM reminder_draft WHERE id = $1`, other('c')); err != nil {
					t.Fatal(err)
				}
			}
		}
		if err := insert(other('d'), "BRL", bacenCode, "OTHERTXID"); err != nil {
			t.Errorf("a draft with a code of its own was refused: %v", err)
		}
		if db.Dialect() != store.Postgres {
			return
		}
		for _, col := range []string{"html", "body", "subject", "currency", "pix_code", "pix_txid", "pix_amount_cents"} {
			value := "''"
			if col == "pix_amount_cents" {
				value = "1"
			}
			if _, err := db.Exec(ctx, `UPDATE reminder_draft SET `+col+` = `+value+` WHERE id = $1`, rec.ID); err == nil || !strings.Contains(err.Error(), "permission denied") {
				t.Errorf("the serving role's UPDATE of %s = %v, want permission denied", col, err)
			}
		}
	})
}
