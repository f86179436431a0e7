// Package boleto reads the linha digitável of a boleto bancário (FEBRABAN):
// the 47 digits a customer types to pay, in five fields. The first three
// each end in a modulo-10 check digit; the fourth is the barcode's general
// check digit, modulo 11; the fifth is the due-date factor and the amount.
// A line whose digits do not verify is refused, so a mistyped line is
// caught when it is recorded, not when the customer tries to pay.
package boleto

import (
	"errors"
	"strings"
)

// Length is the number of digits of a linha digitável of a boleto bancário.
const Length = 47

var (
	ErrLength    = errors.New("a linha digitável of a boleto has 47 digits (dots and spaces aside)")
	ErrCharacter = errors.New("a linha digitável holds only digits, dots and spaces")
	ErrField1    = errors.New("the check digit of the first field (position 10) does not verify")
	ErrField2    = errors.New("the check digit of the second field (position 21) does not verify")
	ErrField3    = errors.New("the check digit of the third field (position 32) does not verify")
	ErrGeneral   = errors.New("the general check digit (position 33) does not verify")
)

// Line is a verified linha digitável.
type Line struct {
	Digits      string // the 47 digits, no separators
	Bank        string // the issuing bank's code
	Currency    string // "9" is the real
	DueFactor   int    // days since the base date; 0 when the boleto has none
	AmountCents int64  // 0 when the amount is open
}

// Barcode is the 44-digit barcode the line encodes.
func (l Line) Barcode() string { return barcode(l.Digits) }

// Formatted writes the line as banks print it:
// AAAAA.AAAAA BBBBB.BBBBBB CCCCC.CCCCCC D EEEEEEEEEEEEEE.
func (l Line) Formatted() string {
	d := l.Digits
	return d[0:5] + "." + d[5:10] + " " + d[10:15] + "." + d[15:21] + " " + d[21:26] + "." + d[26:32] + " " + d[32:33] + " " + d[33:47]
}

// Parse reads and verifies a linha digitável; dots and spaces are ignored.
func Parse(s string) (Line, error) {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= '0' && c <= '9':
			if b.Len() == Length {
				return Line{}, ErrLength
			}
			b.WriteByte(c)
		case c == '.' || c == ' ':
		default:
			return Line{}, ErrCharacter
		}
	}
	d := b.String()
	if len(d) != Length {
		return Line{}, ErrLength
	}
	switch {
	case mod10(d[0:9]) != d[9]:
		return Line{}, ErrField1
	case mod10(d[10:20]) != d[20]:
		return Line{}, ErrField2
	case mod10(d[21:31]) != d[31]:
		return Line{}, ErrField3
	}
	bc := barcode(d)
	if mod11(bc[:4]+bc[5:]) != bc[4] {
		return Line{}, ErrGeneral
	}
	return Line{
		Digits:      d,
		Bank:        d[0:3],
		Currency:    d[3:4],
		DueFactor:   atoi(d[33:37]),
		AmountCents: int64(atoi(d[37:47])),
	}, nil
}

// barcode rebuilds the 44-digit barcode from the line: bank and currency,
// the general check digit, factor and amount, then the 25-digit free field
// spread over the first three fields.
func barcode(d string) string {
	return d[0:4] + d[32:33] + d[33:47] + d[4:9] + d[10:20] + d[21:31]
}

// mod10 is the check digit of the line's fields: digits weighted 2, 1, 2…
// from the right, each product's digits summed, then what completes the sum
// to a multiple of ten.
func mod10(s string) byte {
	sum, w := 0, 2
	for i := len(s) - 1; i >= 0; i-- {
		p := int(s[i]-'0') * w
		sum += p/10 + p%10
		w = 3 - w
	}
	return byte('0' + (10-sum%10)%10)
}

// mod11 is the barcode's general check digit: digits weighted 2 to 9 from
// the right, cycling; 11 minus the remainder of the sum by 11, with 0, 10
// and 11 written as 1.
func mod11(s string) byte {
	sum, w := 0, 2
	for i := len(s) - 1; i >= 0; i-- {
		sum += int(s[i]-'0') * w
		w++
		if w > 9 {
			w = 2
		}
	}
	dv := 11 - sum%11
	if dv == 0 || dv == 10 || dv == 11 {
		dv = 1
	}
	return byte('0' + dv)
}

func atoi(s string) int {
	n := 0
	for i := 0; i < len(s); i++ {
		n = n*10 + int(s[i]-'0')
	}
	return n
}
