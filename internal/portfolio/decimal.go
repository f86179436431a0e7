package portfolio

import (
	"errors"
	"math"
	"strconv"

	"github.com/cobranca/cobranca/internal/jsonscan"
	"github.com/cobranca/cobranca/internal/value"
)

// Decimal is an exact positive decimal number, as a rate is given: Coef ×
// 10^-Scale. It encodes as a JSON number in plain decimal notation with no
// trailing zeros after the point (5.1234, 0.00012, 5).
type Decimal struct {
	Coef  uint64
	Scale uint8
}

// The limits of a rate (see [Validate]).
const (
	MaxRate          = 1_000_000_000 // a rate is greater than 0 and at most this
	MaxRateScale     = 12            // fractional digits
	MaxRateSignifics = 18            // significant digits
)

// decimalOf reads s, the text of a JSON number, exactly. A value Decimal
// cannot hold becomes one Validate refuses with the code that value
// deserves: zero for 0 and negative numbers (out_of_range), {MaxUint64, 0}
// for numbers far above MaxRate (out_of_range), and {1, 255} for numbers
// with more digits than a rate may have (invalid_value). ok is false when s
// is not a JSON number.
func decimalOf(s string) (d Decimal, ok bool) {
	n, f := jsonscan.Number(s, 0)
	if f != jsonscan.None || n != len(s) {
		return Decimal{}, false
	}
	neg := s[0] == '-'
	// The significant digits of the integer and fraction parts (from the
	// first nonzero one): how many (sig), how many up to the last nonzero
	// one (nz), the first ones, and how many were after the point.
	var digits [MaxRateSignifics]byte
	sig, nz, fracDigits := 0, 0, int64(0)
	i, frac := b2i(neg), false
	for ; i < len(s) && s[i] != 'e' && s[i] != 'E'; i++ {
		c := s[i]
		if c == '.' {
			frac = true
			continue
		}
		fracDigits += int64(b2i(frac))
		if sig == 0 && c == '0' {
			continue
		}
		if sig < len(digits) {
			digits[sig] = c
		}
		sig++
		if c != '0' {
			nz = sig
		}
	}
	var exp int64
	if i < len(s) {
		e, err := strconv.ParseInt(s[i+1:], 10, 64)
		if err != nil { // beyond int64: saturate far beyond any digit count
			e = 1 << 40
			if s[i+1] == '-' {
				e = -e
			}
		}
		exp = max(min(e, 1<<40), -1<<40)
	}
	// The value is the nz digits times 10^exp.
	exp += int64(sig-nz) - fracDigits
	switch {
	case nz == 0 || neg:
		return Decimal{}, true
	case int64(nz)+exp > 10 || int64(nz)+exp == 10 && (nz > 1 || digits[0] != '1'):
		// At least 10^10, or from 10^9 to 10^10 but not 10^9 itself.
		return Decimal{Coef: math.MaxUint64}, true
	case nz > MaxRateSignifics || exp < -MaxRateScale:
		return Decimal{Coef: 1, Scale: math.MaxUint8}, true
	}
	var coef uint64
	for _, c := range digits[:nz] {
		coef = coef*10 + uint64(c-'0')
	}
	if exp > 0 {
		return Decimal{Coef: coef * pow10[exp]}, true // below 10^10
	}
	return Decimal{Coef: coef, Scale: uint8(-exp)}, true
}

// normal is d without trailing zeros after the point.
func (d Decimal) normal() Decimal {
	for d.Scale > 0 && d.Coef%10 == 0 && d.Coef != 0 {
		d.Coef /= 10
		d.Scale--
	}
	return d
}

// rateProblem returns the code and message Validate answers for a rate, or
// "" when it is acceptable.
func rateProblem(d Decimal) (Code, string) {
	d = d.normal()
	if d.Coef == 0 || d.Scale <= 10 && d.Coef > MaxRate*pow10[d.Scale] {
		return CodeOutOfRange, "must be a number greater than 0 and at most " + strconv.Itoa(MaxRate)
	}
	if d.Scale > MaxRateScale || d.Coef >= pow10[MaxRateSignifics] {
		return CodeInvalidValue, "must have at most " + strconv.Itoa(MaxRateScale) + " decimal places and " +
			strconv.Itoa(MaxRateSignifics) + " significant digits"
	}
	return "", ""
}

// appendDecimal appends d in plain decimal notation without trailing zeros
// after the point; point is the decimal separator ('.' for JSON, ',' for
// pt-BR text) and group, when not 0, groups the whole part in thousands.
func appendDecimal(b []byte, d Decimal, point byte, group bool) []byte {
	d = d.normal()
	var buf [20]byte
	digits := strconv.AppendUint(buf[:0], d.Coef, 10)
	scale := int(d.Scale)
	whole, fracZeros := "0", 0
	if len(digits) > scale {
		whole = string(digits[:len(digits)-scale]) // no allocation: only compared and appended
		digits = digits[len(digits)-scale:]
	} else {
		fracZeros = scale - len(digits)
	}
	if group {
		w, _ := strconv.ParseUint(whole, 10, 64)
		b = value.AppendGrouped(b, w)
	} else {
		b = append(b, whole...)
	}
	if scale == 0 {
		return b
	}
	b = append(b, point)
	for range fracZeros {
		b = append(b, '0')
	}
	return append(b, digits...)
}

// MarshalJSON writes d as a JSON number: plain decimal notation, no
// trailing zeros after the point.
func (d Decimal) MarshalJSON() ([]byte, error) {
	return appendDecimal(make([]byte, 0, 24), d, '.', false), nil
}

// UnmarshalJSON reads a JSON number exactly (never through float64); a
// value Decimal cannot hold becomes one Validate refuses (see decimalOf).
func (d *Decimal) UnmarshalJSON(data []byte) error {
	v, ok := decimalOf(string(data))
	if !ok {
		return errors.New("portfolio: a rate must be a JSON number")
	}
	*d = v
	return nil
}

// String is d in plain decimal notation.
func (d Decimal) String() string {
	return string(appendDecimal(nil, d, '.', false))
}

// appendCanonicalDecimal writes d as RFC 8785 writes a number: the
// ECMAScript serialization of the double nearest to d's value.
func appendCanonicalDecimal(b []byte, d Decimal) []byte {
	var buf [64]byte
	f, _ := strconv.ParseFloat(string(appendDecimal(buf[:0], d, '.', false)), 64)
	return appendES6Number(b, f)
}

// appendES6Number writes f, finite, as ECMAScript's Number::toString does:
// the shortest digits that read back as f, in plain notation from 1e-6 to
// below 1e21, otherwise as d.ddde±x.
func appendES6Number(b []byte, f float64) []byte {
	if f == 0 {
		return append(b, '0')
	}
	if a := math.Abs(f); a >= 1e-6 && a < 1e21 {
		return strconv.AppendFloat(b, f, 'f', -1, 64)
	}
	start := len(b)
	b = strconv.AppendFloat(b, f, 'e', -1, 64)
	// Go writes e-07 and e+21; ECMAScript e-7 and e+21.
	for i := start; i < len(b); i++ {
		if b[i] == 'e' && i+3 < len(b) && b[i+2] == '0' {
			b = append(b[:i+2], b[i+3:]...)
			break
		}
	}
	return b
}
