package portfolio

import (
	"math/bits"

	"github.com/cobranca/cobranca/internal/value"
)

// brl is BRL's entry; Analyze takes the fast path when the base is BRL.
var brl = value.CurrencyOf(value.BaseCurrency)

// codeOrBase is the currency of code, "" meaning the base one, BRL.
func codeOrBase(code string) string {
	if code == "" {
		return value.BaseCurrency
	}
	return code
}

// pow10 holds the powers of ten that fit in a uint64.
var pow10 = [...]uint64{1, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19}

// convert turns amount, in minor units of a currency of exponent from, into
// minor units of the base currency, of exponent to, at rate (base units per
// unit of the currency): amount × rate × 10^(to−from), rounded half up, in
// 128-bit integer arithmetic, never float. ok is false when the result is
// not from 1 to value.MaxAmountCents (or amount is negative).
func convert(amount int64, from uint8, rate Decimal, to uint8) (v int64, ok bool) {
	if amount < 0 {
		return 0, false
	}
	hi, lo := bits.Mul64(uint64(amount), rate.Coef)
	// The product is in units of 10^-(Scale+from) of the base; the result
	// is in 10^-to.
	switch k := int(rate.Scale) + int(from) - int(to); {
	case k < 0:
		if -k >= len(pow10) || hi != 0 {
			return 0, false
		}
		hi, lo = bits.Mul64(lo, pow10[-k])
	case k > 0:
		if k >= len(pow10) {
			return 0, false // only for a rate Validate refuses
		}
		d := pow10[k]
		if hi >= d {
			return 0, false // the quotient does not fit in 64 bits
		}
		q, r := bits.Div64(hi, lo, d)
		if r >= d-r { // half up: r/d >= 1/2
			q++
		}
		hi, lo = 0, q
	}
	if hi != 0 || lo < 1 || lo > value.MaxAmountCents {
		return 0, false
	}
	return int64(lo), true
}
