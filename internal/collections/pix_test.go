package collections_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cobranca/cobranca/internal/collections"
	"github.com/cobranca/cobranca/internal/customers"
	"github.com/cobranca/cobranca/internal/failure"
	"github.com/cobranca/cobranca/internal/ledger"
	"github.com/cobranca/cobranca/internal/pipeline"
	"github.com/cobranca/cobranca/internal/pix"
	"github.com/cobranca/cobranca/internal/pix/qrtest"
	"github.com/cobranca/cobranca/internal/reminders"
	"github.com/cobranca/cobranca/internal/store"
	"github.com/cobranca/cobranca/internal/store/storetest"
)

// preparedPix is prepare_reminder's answer, with its PIX code.
type preparedPix struct {
	DraftID string `json:"draftId"`
	Pix     *struct {
		TxID        string `json:"txid"`
		AmountCents int64  `json:"amountCents"`
		Code        string `json:"code"`
	} `json:"pix"`
	Warnings []string `json:"warnings"`
}

// TestPixReminder: with a PIX key, a reminder prepared from the ledger carries a PIX code for
// the invoices' open total, whose txid names the draft and is recorded as a payment reference
// of each invoice; the send's preview states the amount, the txid and the code; the message
// carries the code in its text part and as the QR image its HTML part shows, which decodes
// back to the code; a bulk dry run's samples show it. A draft in another currency carries no
// code and says why; invoices in two currencies are refused. Without a key, no code.
func TestPixReminder(t *testing.T) {
	storetest.Each(t, pg, func(t *testing.T, db store.DB) {
		e := newSendEnv(t, db)
		ctx := context.Background()
		merchant, err := pix.NewMerchant("pix@cobranca.example", "Cobranca Teste", "SAO PAULO")
		if err != nil {
			t.Fatal(err)
		}
		e.serve(t, collections.Settings{Pix: &merchant})
		e.customer(t, customers.Record{ID: "C-1", Name: "Oficina", Email: "oficina@example.com"})
		usd := inLedger("US-1", "C-1", 5000, "2026-06-01", "")
		usd.Currency = "USD"
		e.invoices(t, inLedger("NF-1", "C-1", 100000, "2026-06-01", ""), inLedger("NF-2", "C-1", 23456, "2026-06-10", ""), usd)
		prepare := func(key string, ids ...string) pipeline.Result {
			args := map[string]any{"customer": map[string]any{"id": "C-1", "name": "Oficina", "email": "oficina@example.com"},
				"invoiceIds": ids, "tone": "friendly", "idempotencyKey": key}
			return e.call(writer, collections.PrepareReminderName, args)
		}

		got := decode[preparedPix](t, prepare("k-1", "NF-1", "NF-2"))
		if got.Pix == nil || got.Pix.AmountCents != 123456 || got.Pix.TxID != reminders.TxIDFor(got.DraftID) || len(got.Warnings) != 0 {
			t.Fatalf("prepare_reminder = %+v, want a PIX code for R$ 1.234,56 with the draft's txid", got)
		}
		amount := "54071234.56"
		if !strings.Contains(got.Pix.Code, amount) || !strings.Contains(got.Pix.Code, fmt.Sprintf("05%02d%s", len(got.Pix.TxID), got.Pix.TxID)) ||
			!slices.Equal(pix.Codes(got.Pix.Code), []string{got.Pix.Code}) {
			t.Errorf("the code %q does not ask for 1234.56 with the txid, or is not a valid BR Code", got.Pix.Code)
		}
		for _, id := range []string{"NF-1", "NF-2"} {
			refs, err := ledger.RecordedReferences(ctx, db, id)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.ContainsFunc(refs, func(r ledger.RecordedReference) bool {
				return r.Reference == got.Pix.TxID && r.Source == ledger.SourceReminder && r.SourceID == got.DraftID
			}) {
				t.Errorf("invoice %s's recorded references %+v lack the draft's txid", id, refs)
			}
			// get_invoice lists it.
			inv := decode[invoiceOut](t, e.call(reader, collections.GetInvoiceName, map[string]any{"invoiceId": id}))
			if inv.PaymentReferenceCount != 1 || len(inv.PaymentReferences) != 1 || inv.PaymentReferences[0].Reference != got.Pix.TxID ||
				inv.PaymentReferences[0].DraftID != got.DraftID || inv.PaymentReferences[0].Source != ledger.SourceReminder {
				t.Errorf("get_invoice(%s).paymentReferences = %+v, want the draft's txid", id, inv.PaymentReferences)
			}
		}

		// The preview states what the message carries; the message carries it.
		ask := e.asked(t, urlClient, got.DraftID, "k-send")
		a, err := e.approvals.Get(ctx, db, ask.ID)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(a.Preview, "PIX copia-e-cola: "+got.Pix.Code) || !strings.Contains(a.Preview, "txid "+got.Pix.TxID) {
			t.Errorf("the send's preview lacks the PIX code and txid:\n%s", a.Preview)
		}
		e.approve(t, ask.ID)
		if res := e.sendCall(sender, urlClient, got.DraftID, "k-send", ask); res.Err != nil {
			t.Fatalf("send after the approval: %v", res.Err)
		}
		msgs := e.smtp.Wait(t, 1, 15*time.Second)
		m := msgs[0]
		img, ok := m.Inline[reminders.QRContentID]
		if !ok || !strings.Contains(m.HTML, `src="cid:`+reminders.QRContentID+`"`) || !strings.Contains(m.Body, got.Pix.Code) {
			t.Fatalf("the message lacks the code in its text, or the QR image its HTML shows: text %q, parts %v", m.Body, m.Inline)
		}
		if code := qrtest.Decode(t, img.Data); code != got.Pix.Code {
			t.Errorf("the QR image decodes to %q, want %q", code, got.Pix.Code)
		}

		// A bulk dry run's samples show the code.
		other := decode[preparedPix](t, prepare("k-2", "NF-1"))
		dr := decode[struct {
			SampleMessages []struct {
				Pix *struct{ TxID, Code string } `json:"pix"`
			} `json:"sampleMessages"`
		}](t, e.do(sender, urlClient, bulk, bulkArgs(map[string]any{"draftIds": []string{other.DraftID}}, true, "", "")))
		if len(dr.SampleMessages) != 1 || dr.SampleMessages[0].Pix == nil || dr.SampleMessages[0].Pix.Code != other.Pix.Code {
			t.Errorf("bulk dry run samples = %+v, want the draft's PIX code", dr.SampleMessages)
		}

		// Another currency: no code, a warning; two currencies: refused, naming the field.
		foreign := decode[preparedPix](t, prepare("k-3", "US-1"))
		if foreign.Pix != nil || len(foreign.Warnings) != 1 || !strings.Contains(foreign.Warnings[0], "USD") {
			t.Errorf("a draft in USD = %+v, want no PIX code and a warning naming USD", foreign)
		}
		if code, field := failed(prepare("k-4", "NF-2", "US-1")); code != failure.InvalidArguments || field != "invoiceIds[1]" {
			t.Errorf("invoices in BRL and USD = %s on %q, want invalid_arguments on invoiceIds[1]", code, field)
		}

		// Without a key, no code.
		e.serve(t, collections.Settings{})
		if plain := decode[preparedPix](t, prepare("k-5", "NF-2")); plain.Pix != nil || len(plain.Warnings) != 0 {
			t.Errorf("without a PIX key = %+v, want no code and no warning", plain)
		}
	})
}
