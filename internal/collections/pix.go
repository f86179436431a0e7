package collections

import (
	"fmt"
	"strings"

	"github.com/cobranca/cobranca/internal/outbox"
	"github.com/cobranca/cobranca/internal/pix"
	"github.com/cobranca/cobranca/internal/reminders"
	"github.com/cobranca/cobranca/internal/value"
	"github.com/google/jsonschema-go/jsonschema"
)

// pixCharge is how prepare_reminder asks reminders.Prepare for the draft's PIX code: the
// merchant's static BR Code for the draft's total and txid. Nil — no code — without a PIX key
// (COBRANCA_PIX_KEY) or for a draft in another currency than the real: PIX moves reais only.
func pixCharge(m *pix.Merchant, currency string) func(txid string, amountCents int64) (string, error) {
	if m == nil || currency != value.BaseCurrency {
		return nil
	}
	return func(txid string, amountCents int64) (string, error) {
		return m.Code(pix.Charge{AmountCents: amountCents, TxID: txid})
	}
}

// pixAnswer is a draft's PIX code, as the tools answer it: what the person approves.
type pixAnswer struct {
	TxID        string `json:"txid"`
	AmountCents int64  `json:"amountCents"`
	Code        string `json:"code"`
}

func pixOf(d reminders.Record) *pixAnswer {
	if d.Pix == nil {
		return nil
	}
	return &pixAnswer{TxID: d.Pix.TxID, AmountCents: d.Pix.AmountCents, Code: d.Pix.Code}
}

// pixWarning says why a draft carries no PIX code, when the reason is the draft's own (its
// currency); "" when it carries one, or when the server has no PIX key.
func pixWarning(d reminders.Record) string {
	if d.Pix != nil || d.Currency == "" || d.Currency == value.BaseCurrency {
		return ""
	}
	return "no PIX code: the invoices are in " + d.Currency + ", and PIX moves only reais (BRL)"
}

// writePix writes what a preview says of the draft's PIX code, indented by indent: the amount,
// the txid and the copia-e-cola string itself (the approval page draws it as a QR code), or
// why there is none.
func writePix(b *strings.Builder, indent string, d reminders.Record) {
	switch {
	case d.Pix != nil:
		fmt.Fprintf(b, "%sPIX: %s, txid %s (a payment carrying it matches the draft's invoices); the message carries this code and its QR code:\n",
			indent, value.FormatMoney(d.Pix.AmountCents, value.BaseCurrency), d.Pix.TxID)
		fmt.Fprintf(b, "%sPIX copia-e-cola: %s\n", indent, d.Pix.Code)
	case pixWarning(d) != "":
		fmt.Fprintf(b, "%sWarning: %s.\n", indent, pixWarning(d))
	default:
		fmt.Fprintf(b, "%sPIX: none (the server had no PIX key when the draft was written).\n", indent)
	}
}

// reminderMessage is the outbox entry of draft d's e-mail: its address and subject, and its Ref,
// the draft, whose stored parts — text, HTML and the QR image drawn from its code — the outbox
// reads from the draft when it delivers the message (reminders.Delivery.Content). A draft's
// parts never change once written, so the entry needs no copy of its own: a bulk send of 10 000
// drafts writes none of their bodies in its transaction.
func reminderMessage(d reminders.Record) outbox.Message {
	return outbox.Message{To: d.To.Email, Subject: d.Subject, Ref: d.ID, FromOwner: true}
}

// pixAnswerRules describes a pixAnswer property of an output schema.
func pixAnswerRules(s *jsonschema.Schema) {
	s.Types, s.Type = nil, "object"
	closeObject(s)
	s.Description = "The draft's PIX code (a static BR Code, as BACEN's Manual de Padrões para Iniciação do Pix specifies), for the draft's total: " +
		"what the message carries as copia-e-cola text and as a QR code. Absent when the draft carries none (no PIX key on the server, or not in BRL)."
	tx := s.Properties["txid"]
	tx.Pattern = "^[A-Z0-9]{1,25}$"
	tx.Description = "The code's transaction id: names the draft, and is recorded as a payment reference of its invoices, so a payment carrying it matches them."
	amt := s.Properties["amountCents"]
	amt.Minimum = ptr(1.0)
	amt.Description = "The amount the code asks for, in BRL cents: the draft's total."
	code := s.Properties["code"]
	code.Pattern = "^000201"
	code.MaxLength = ptr(512)
	code.Description = "The BR Code itself (PIX copia-e-cola): paste it in a bank app's PIX, or scan the QR code drawn from it."
}

// draftCurrency is the currency d states its amounts in: BRL for a draft written before drafts
// had one.
func draftCurrency(d reminders.Record) string {
	if d.Currency == "" {
		return value.BaseCurrency
	}
	return d.Currency
}

// pixTxID is the txid of d's PIX code; "" when it carries none.
func pixTxID(d reminders.Record) string {
	if d.Pix == nil {
		return ""
	}
	return d.Pix.TxID
}

// pixCode is d's PIX code; "" when it carries none.
func pixCode(d reminders.Record) string {
	if d.Pix == nil {
		return ""
	}
	return d.Pix.Code
}
