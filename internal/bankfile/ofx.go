package bankfile

import (
	"errors"
	"io"
	"regexp"

	"github.com/cobranca/cobranca/internal/ledger"
	"github.com/cobranca/cobranca/internal/ofx"
	"github.com/cobranca/cobranca/internal/value"
)

// ofxFields names PaymentRecord's fields as OFX's elements.
var ofxFields = map[string]string{"source": "BANKACCTFROM", "sourceRef": "FITID", "amountCents": "TRNAMT", "currency": "CURDEF",
	"paidOn": "DTPOSTED", "reference": "REFNUM", "payer": "NAME"}

func readOFX(r io.Reader) (*File, error) {
	st, err := ofx.Read(r, value.MinorUnits)
	if err != nil {
		var e *ofx.Error
		if !errors.As(err, &e) {
			return nil, err
		}
		return nil, &Error{Format: OFX, Problems: []Problem{{Place: Place{Transaction: e.Transaction}, Field: e.Element, Code: ledger.CodeInvalidFormat, Message: e.Reason}}}
	}
	// ofxgo refuses a statement without its account (BANKID, ACCTID) or a
	// transaction without its FITID: every credit has its identity.
	out := &File{Format: OFX, Skipped: st.Debits}
	ps := problems{format: OFX}
	for _, c := range st.Credits {
		at := Problem{Place: Place{Transaction: c.Index}}
		if len(out.Payments) == MaxPayments {
			ps.add(tooMany(at))
			break
		}
		// The reference the customer quoted: the bank's REFNUM, else the memo.
		ref := c.RefNum
		if ref == "" {
			ref = c.Memo
		}
		p := ledger.PaymentRecord{
			Source:      "ofx:" + c.Account,
			SourceRef:   c.FITID,
			AmountCents: c.AmountCents,
			Currency:    c.Currency,
			PaidOn:      c.PostedOn,
			Method:      ofxMethod(c),
			Reference:   ref,
			Payer:       c.Name,
		}
		fields := ofxFields
		if c.RefNum == "" {
			fields = ofxMemoFields
		}
		if validate(&ps, &p, at, fields) {
			out.Payments = append(out.Payments, p)
			out.Places = append(out.Places, at.Place)
		}
		if ps.full() {
			break
		}
	}
	if err := ps.err(); err != nil {
		return nil, err
	}
	return out, nil
}

// ofxMemoFields is ofxFields for a reference read from the memo.
var ofxMemoFields = func() map[string]string {
	m := map[string]string{"reference": "MEMO"}
	for k, v := range ofxFields {
		if k != "reference" {
			m[k] = v
		}
	}
	return m
}()

var (
	pixWord      = regexp.MustCompile(`(?i)\bpix\b`)
	transferWord = regexp.MustCompile(`(?i)\b(ted|doc|transf|transferencia|transferência)\b`)
)

// ofxMethod is how a credit was paid, as far as the statement says: OFX
// has no type for PIX, which Brazilian banks name in the text.
func ofxMethod(c ofx.Credit) ledger.Method {
	text := c.Name + " " + c.Memo
	switch {
	case pixWord.MatchString(text):
		return ledger.MethodPIX
	case c.Type == "XFER" || c.Type == "DIRECTDEP" || transferWord.MatchString(text):
		return ledger.MethodTransfer
	}
	return ledger.MethodOther
}
