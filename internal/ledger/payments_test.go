package ledger

import (
	"slices"
	"strings"
	"testing"
)

func goodPayment() PaymentRecord {
	return PaymentRecord{Source: "cnab240:341", SourceRef: "00000123-2026-12-02", AmountCents: 15050, PaidOn: "2026-12-02", Method: MethodBoleto,
		Reference: "00000123", CustomerID: "C-1", Payer: "Padaria São João LTDA"}
}

// TestPaymentRecordValidate: every rule names its field and code; the
// value never reaches the message; a valid record takes BRL by default.
func TestPaymentRecordValidate(t *testing.T) {
	ok := goodPayment()
	if fe := ok.Validate(); fe != nil || ok.Currency != "BRL" {
		t.Fatalf("Validate(%+v) = %v, currency %q", ok, fe, ok.Currency)
	}
	secret := "S3CR3T"
	for _, tt := range []struct {
		name  string
		edit  func(*PaymentRecord)
		field string
		code  string
	}{
		{"no source", func(p *PaymentRecord) { p.Source = "" }, "source", CodeInvalidText},
		{"source with a control", func(p *PaymentRecord) { p.Source = secret + "\x01" }, "source", CodeInvalidText},
		{"no source reference", func(p *PaymentRecord) { p.SourceRef = "" }, "sourceRef", CodeInvalidText},
		{"source reference with a bidi override", func(p *PaymentRecord) { p.SourceRef = secret + "\u202e" }, "sourceRef", CodeInvalidText},
		{"zero", func(p *PaymentRecord) { p.AmountCents = 0 }, "amountCents", CodeOutOfRange},
		{"negative", func(p *PaymentRecord) { p.AmountCents = -1 }, "amountCents", CodeOutOfRange},
		{"over the bound", func(p *PaymentRecord) { p.AmountCents = 1 << 62 }, "amountCents", CodeOutOfRange},
		{"lower-case currency", func(p *PaymentRecord) { p.Currency = "brl" }, "currency", CodeInvalidValue},
		{"unknown currency", func(p *PaymentRecord) { p.Currency = "XYZ" }, "currency", CodeInvalidValue},
		{"no date", func(p *PaymentRecord) { p.PaidOn = "" }, "paidOn", CodeMissing},
		{"bad date", func(p *PaymentRecord) { p.PaidOn = secret }, "paidOn", CodeInvalidFormat},
		{"30 February", func(p *PaymentRecord) { p.PaidOn = "2026-02-30" }, "paidOn", CodeInvalidDate},
		{"no method", func(p *PaymentRecord) { p.Method = "" }, "method", CodeMissing},
		{"unknown method", func(p *PaymentRecord) { p.Method = Method(secret) }, "method", CodeInvalidValue},
		{"reference with a control", func(p *PaymentRecord) { p.Reference = secret + "\x00" }, "reference", CodeInvalidText},
		{"customer with a trailing space", func(p *PaymentRecord) { p.CustomerID = secret + " " }, "customerId", CodeInvalidText},
		{"payer too long", func(p *PaymentRecord) { p.Payer = strings.Repeat(secret, 100) }, "payer", CodeInvalidText},
	} {
		p := goodPayment()
		tt.edit(&p)
		fe := p.Validate()
		if fe == nil || fe.Field != tt.field || fe.Code != tt.code || strings.Contains(fe.Message, secret) {
			t.Errorf("%s: Validate = %+v, want %s on %s, without the value", tt.name, fe, tt.code, tt.field)
		}
	}
	for _, edit := range []func(*PaymentRecord){
		func(p *PaymentRecord) { p.Reference, p.CustomerID, p.Payer = "", "", "" },
		func(p *PaymentRecord) { p.Currency = "USD" },
		func(p *PaymentRecord) { p.AmountCents = 1 },
	} {
		p := goodPayment()
		edit(&p)
		if fe := p.Validate(); fe != nil {
			t.Errorf("Validate(%+v) = %v", p, fe)
		}
	}
}

var paymentFields = []string{"source", "sourceRef", "amountCents", "currency", "paidOn", "method", "reference", "customerId", "payer"}

// FuzzPaymentRecordValidate: Validate never panics; a problem names one of
// the record's fields with a code of the list; a valid record stays valid
// and unchanged when validated again.
func FuzzPaymentRecordValidate(f *testing.F) {
	g := goodPayment()
	f.Add(g.Source, g.SourceRef, g.AmountCents, "", g.PaidOn, string(g.Method), g.Reference, g.CustomerID, g.Payer)
	f.Add("ofx:341/1234", "FIT\u202e", int64(-1), "brl", "2026-02-29", "cheque", "\x00", " c", "")
	f.Fuzz(func(t *testing.T, source, ref string, cents int64, cur, paidOn, method, reference, customer, payer string) {
		p := PaymentRecord{Source: source, SourceRef: ref, AmountCents: cents, Currency: cur, PaidOn: paidOn, Method: Method(method),
			Reference: reference, CustomerID: customer, Payer: payer}
		fe := p.Validate()
		if fe != nil {
			codes := []string{CodeInvalidText, CodeInvalidFormat, CodeInvalidDate, CodeInvalidValue, CodeOutOfRange, CodeMissing}
			if !slices.Contains(paymentFields, fe.Field) || !slices.Contains(codes, fe.Code) || fe.Message == "" {
				t.Fatalf("Validate = %+v", fe)
			}
			return
		}
		again := p
		if fe := again.Validate(); fe != nil || again != p || p.Currency == "" {
			t.Fatalf("a valid %+v validates again as %+v, %v", p, again, fe)
		}
	})
}
