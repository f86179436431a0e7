package reminders_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/cobranca/cobranca/internal/ident"
	"github.com/cobranca/cobranca/internal/outbox"
	"github.com/cobranca/cobranca/internal/outbox/outboxtest"
	"github.com/cobranca/cobranca/internal/pix/qrtest"
	"github.com/cobranca/cobranca/internal/reminders"
	"github.com/cobranca/cobranca/internal/smtptest"
	"github.com/cobranca/cobranca/internal/store"
	"github.com/cobranca/cobranca/internal/store/storetest"
)

// The outbox asks Delivery for the bodies of reminder messages enqueued FromOwner.
var _ interface {
	outbox.Owner
	outbox.ContentOwner
} = reminders.Delivery{}

// TestDeliveryContent: Delivery gives the outbox a draft's message body as stored — its text,
// its HTML and, when it carries a PIX code, the code's QR image under QRContentID, which reads
// back as the code; no image for a draft without a code; outbox.ErrNoContent for a ref no draft
// has, and another error (a retry) when the store cannot be read. Sent through a real outbox,
// the message a mail server receives has them all.
func TestDeliveryContent(t *testing.T) {
	tpl := templates(t)
	storetest.Each(t, pg, func(t *testing.T, db store.DB) {
		ctx := context.Background()
		brl := request("c1", reminders.Friendly, inv1, inv2)
		brl.PixCode = func(string, int64) (string, error) { return bacenCode, nil }
		withPix, _ := prepare(t, db, tpl, brl, t0)
		usd := request("c2", reminders.Firm, inv1)
		usd.Currency = "USD"
		noPix, _ := prepare(t, db, tpl, usd, t0)
		if withPix.Pix == nil || withPix.HTML == "" || noPix.Pix != nil || noPix.HTML == "" {
			t.Fatalf("prepared %+v and %+v, want a draft with a PIX code and one without, both with HTML", withPix, noPix)
		}

		c, err := reminders.Delivery{}.Content(ctx, db, withPix.ID)
		if err != nil {
			t.Fatalf("Content(the PIX draft) = %v", err)
		}
		if c.Text != withPix.Body || c.HTML != withPix.HTML {
			t.Errorf("Content(the PIX draft) = text %q, HTML %q; want the draft's parts", c.Text, c.HTML)
		}
		if len(c.Related) != 1 {
			t.Fatalf("Content(the PIX draft) has %d inline parts, want the QR code", len(c.Related))
		}
		p := c.Related[0]
		if p.ContentID != reminders.QRContentID || p.ContentType != "image/png" || p.Name != "pix-qr.png" {
			t.Errorf("the QR part = %s %s %s, want %s image/png pix-qr.png", p.ContentID, p.ContentType, p.Name, reminders.QRContentID)
		}
		if got := qrtest.Decode(t, p.Data); got != bacenCode {
			t.Errorf("the QR image reads %q, want the draft's code %q", got, bacenCode)
		}
		if err := c.Validate(); err != nil {
			t.Errorf("the PIX draft's body does not validate: %v", err)
		}

		c, err = reminders.Delivery{}.Content(ctx, db, noPix.ID)
		if err != nil || !cmp.Equal(c, outbox.Content{Text: noPix.Body, HTML: noPix.HTML}) {
			t.Errorf("Content(the USD draft) = %+v, %v; want its text and HTML, no image", c, err)
		}

		for _, ref := range []string{ident.New(reminders.IDPrefix), "not a draft", ""} {
			if _, err := (reminders.Delivery{}).Content(ctx, db, ref); !errors.Is(err, outbox.ErrNoContent) {
				t.Errorf("Content(%q) = %v, want outbox.ErrNoContent", ref, err)
			}
		}
		gone, cancel := context.WithCancel(ctx)
		cancel()
		if _, err := (reminders.Delivery{}).Content(gone, db, withPix.ID); err == nil || errors.Is(err, outbox.ErrNoContent) {
			t.Errorf("Content with the store unreachable = %v, want an error that is not ErrNoContent (retried)", err)
		}

		// Through the outbox: enqueued FromOwner with the draft marked queued, delivered with
		// the draft's body, the draft recorded sent.
		s := smtptest.New(t)
		o := outboxtest.Deliver(t, db, s, outbox.Config{Owner: reminders.Delivery{}})
		var e outbox.Entry
		if err := db.InTx(ctx, func(ctx context.Context, tx store.Tx) error {
			var err error
			e, err = o.Enqueue(ctx, tx, outbox.Message{To: withPix.To.Email, Subject: withPix.Subject, Ref: withPix.ID, FromOwner: true})
			if err != nil {
				return err
			}
			return reminders.MarkQueued(ctx, tx, withPix.ID, reminders.Queue{OutboxID: int64(e.ID), MessageID: e.MessageID, By: "ana"}, t0)
		}); err != nil {
			t.Fatal(err)
		}
		got := s.Wait(t, 1, 10*time.Second)
		m, err := smtptest.Parse(got[0].Raw)
		if err != nil {
			t.Fatal(err)
		}
		if m.MessageID != e.MessageID || m.Subject != withPix.Subject {
			t.Errorf("received %s %q, want %s %q", m.MessageID, m.Subject, e.MessageID, withPix.Subject)
		}
		if want := strings.TrimSpace(withPix.Body); outboxtest.Text(m.Body) != want {
			t.Errorf("the text received (-draft +got):\n%s", cmp.Diff(want, outboxtest.Text(m.Body)))
		}
		if outboxtest.Text(m.HTML) != withPix.HTML {
			t.Errorf("the HTML received (-draft +got):\n%s", cmp.Diff(withPix.HTML, outboxtest.Text(m.HTML)))
		}
		img, ok := m.Inline[reminders.QRContentID]
		if !ok || img.ContentType != "image/png" {
			t.Fatalf("inline parts received = %v, want the QR code under %s", m.Inline, reminders.QRContentID)
		}
		if code := qrtest.Decode(t, img.Data); code != bacenCode {
			t.Errorf("the QR code received reads %q, want %q", code, bacenCode)
		}
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			d, err := reminders.Get(ctx, db, withPix.ID)
			if err != nil {
				t.Fatal(err)
			}
			if d.State == reminders.Sent {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the draft is %s after its message was received, want sent", d.State)
			}
		}
	})
}
