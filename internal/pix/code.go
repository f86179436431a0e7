package pix

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// FieldError is a merchant or charge value the BR Code rules refuse:
// Field is "key", "name", "city", "amount" or "txid", so that the caller
// can name its own variable or argument.
type FieldError struct {
	Field   string
	Message string
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Message }

// The BR Code's bounds on the merchant's name (field 59) and city (60).
const (
	MaxNameLen = 25
	MaxCityLen = 15
)

// Merchant is the operator's receiving account: the key the payment goes
// to, and the name and city the payer's app shows before paying.
type Merchant struct {
	Key        Key
	Name, City string
}

// NewMerchant checks and normalizes a receiving account. Name (1–25
// characters) and city (1–15) are printable ASCII without leading or
// trailing spaces: the BR Code has no room for accents, and a payer's app
// may show them garbled.
func NewMerchant(key, name, city string) (Merchant, error) {
	k, err := ParseKey(key)
	if err != nil {
		return Merchant{}, &FieldError{"key", err.Error()}
	}
	m := Merchant{Key: k, Name: name, City: city}
	return m, m.check()
}

// check holds a Merchant, however it was built, to NewMerchant's rules: Code
// never writes a code for an account NewMerchant would refuse.
func (m Merchant) check() error {
	if k, err := ParseKey(m.Key.Value); err != nil {
		return &FieldError{"key", err.Error()}
	} else if k != m.Key {
		return &FieldError{"key", fmt.Sprintf("is not a normalized %s key: want the kind and value ParseKey gives", m.Key.Kind)}
	}
	if msg := textProblem(m.Name, MaxNameLen); msg != "" {
		return &FieldError{"name", msg}
	}
	if msg := textProblem(m.City, MaxCityLen); msg != "" {
		return &FieldError{"city", msg}
	}
	return nil
}

func textProblem(s string, max int) string {
	switch {
	case s == "":
		return "is empty"
	case len(s) > max:
		return fmt.Sprintf("has %d characters: the BR Code takes at most %d", len(s), max)
	case s[0] == ' ' || s[len(s)-1] == ' ':
		return "starts or ends with a space"
	}
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] > 0x7e {
			return "holds a character other than printable ASCII: write it without accents (SAO PAULO, not São Paulo)"
		}
	}
	return ""
}

// Charge is what one code asks for.
type Charge struct {
	// AmountCents is the amount in BRL cents; 0 leaves the amount out, for
	// the payer to type.
	AmountCents int64
	// TxID identifies the charge in the payment that comes back; "" writes
	// "***", no identifier.
	TxID string
}

// MaxTxIDLen is the txid's bound in a static code.
const MaxTxIDLen = 25

// ValidTxID reports whether s is a txid a static code may carry: 1 to 25
// letters and digits.
func ValidTxID(s string) bool {
	if s == "" || len(s) > MaxTxIDLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !(c >= '0' && c <= '9' || c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z') {
			return false
		}
	}
	return true
}

// Code writes the static BR Code of c to m's account: the copia-e-cola
// string, whose QR code QRPNG and QRSVG draw. Its fields are in the order
// of BACEN's example: payload format (00), merchant account (26: the GUI
// br.gov.bcb.pix and the key), category code (52, 0000), currency (53, 986:
// BRL), amount (54, when given), country (58), name (59), city (60),
// additional data (62: the txid) and the CRC (63).
func (m Merchant) Code(c Charge) (string, error) {
	if err := m.check(); err != nil {
		return "", err
	}
	txid := "***"
	if c.TxID != "" {
		if !ValidTxID(c.TxID) {
			return "", &FieldError{"txid", "must be 1 to 25 letters and digits"}
		}
		txid = c.TxID
	}
	var amount string
	switch {
	case c.AmountCents < 0:
		return "", &FieldError{"amount", "is negative"}
	case c.AmountCents > 0:
		amount = fmt.Sprintf("%d.%02d", c.AmountCents/100, c.AmountCents%100)
		if len(amount) > 13 {
			return "", &FieldError{"amount", "has more than 13 characters: the BR Code's amount field takes at most 9999999999.99"}
		}
	}
	var b strings.Builder
	b.Grow(160)
	fields := []struct{ id, value string }{
		{"00", "01"},
		{"26", tlv("00", "br.gov.bcb.pix") + tlv("01", m.Key.Value)},
		{"52", "0000"},
		{"53", "986"},
		{"54", amount},
		{"58", "BR"},
		{"59", m.Name},
		{"60", m.City},
		{"62", tlv("05", txid)},
	}
	for _, f := range fields {
		if f.value == "" {
			continue
		}
		if len(f.value) > 99 {
			return "", fmt.Errorf("field %s has %d bytes: the BR Code takes at most 99", f.id, len(f.value))
		}
		b.WriteString(tlv(f.id, f.value))
	}
	b.WriteString("6304")
	fmt.Fprintf(&b, "%04X", CRC16([]byte(b.String())))
	return b.String(), nil
}

// tlv is one EMV field: its id, its length in two digits, its value. The
// callers hold values to 99 bytes.
func tlv(id, value string) string {
	return id + string([]byte{byte('0' + len(value)/10), byte('0' + len(value)%10)}) + value
}

// CRC16 is the BR Code's checksum, CRC-16/CCITT-FALSE (polynomial 0x1021,
// initial value 0xFFFF, no reflection, no final XOR), computed over the
// whole code up to and including "6304".
func CRC16(b []byte) uint16 {
	crc := uint16(0xFFFF)
	for _, c := range b {
		crc ^= uint16(c) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return crc
}

// maxCodeLen is EMV QRCPS-MPM's bound on a payload: Codes looks no further
// for a code's end, so that text full of "000201" is read in linear time.
const maxCodeLen = 512

// Codes returns every BR Code in text, in order: a run of EMV fields that
// starts with "000201" and ends with a CRC field (63) that verifies. The
// approval page draws a QR code for each; a code with a broken CRC is not
// one.
func Codes(text string) []string {
	var out []string
	for i := 0; ; {
		j := strings.Index(text[i:], "000201")
		if j < 0 {
			return out
		}
		start := i + j
		if n, err := codeLen(text[start:]); err == nil {
			out = append(out, text[start:start+n])
			i = start + n
		} else {
			i = start + 1
		}
	}
}

// codeLen is the length of the BR Code s starts with: its fields walked up
// to the CRC field, which must verify.
func codeLen(s string) (int, error) {
	for i := 0; i+4 <= len(s) && i < maxCodeLen; {
		id, n := s[i:i+2], s[i+2:i+4]
		if !onlyDigits(id) || !onlyDigits(n) {
			return 0, errors.New("not a field")
		}
		size := int(n[0]-'0')*10 + int(n[1]-'0')
		if id == "63" {
			end := i + 8
			if size != 4 || end > len(s) || end > maxCodeLen {
				return 0, errors.New("not a CRC field")
			}
			crc, err := strconv.ParseUint(s[i+4:end], 16, 16)
			if err != nil || s[i+4:end] != strings.ToUpper(s[i+4:end]) || uint16(crc) != CRC16([]byte(s[:i+4])) {
				return 0, errors.New("CRC does not verify")
			}
			return end, nil
		}
		i += 4 + size
	}
	return 0, errors.New("no CRC field")
}
