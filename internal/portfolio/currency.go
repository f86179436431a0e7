package portfolio

import (
	"math/bits"
	"sort"
	"strconv"
)

//go:generate go run ./internal/currencygen -o currency_table.go

// currencyInfo is one currency of the generated table.
type currencyInfo struct {
	code   string // ISO 4217, three upper-case letters
	exp    uint8  // the minor unit is 10^-exp of the currency (BRL 2, JPY 0, KWD 3)
	symbol string // pt-BR, as CLDR gives it (R$, US$, €, JP¥), or the code
}

// baseCode is the currency of amounts whose currency is not given.
const baseCode = "BRL"

// brl is BRL's entry; Analyze takes the fast path when the base is BRL.
var brl = currencyOf(baseCode)

// currencyOf returns the table's entry for code, or nil when code is not an
// active ISO 4217 code with a minor unit.
func currencyOf(code string) *currencyInfo {
	if len(code) != 3 {
		return nil
	}
	i := sort.Search(len(currencies), func(i int) bool { return currencies[i].code >= code })
	if i < len(currencies) && currencies[i].code == code {
		return &currencies[i]
	}
	return nil
}

// codeOrBase is the currency of code, "" meaning BRL.
func codeOrBase(code string) string {
	if code == "" {
		return baseCode
	}
	return code
}

// Currencies returns the ISO 4217 codes an invoice, a rate or the base
// currency may be in, in order: the active codes that have a minor unit.
func Currencies() []string {
	codes := make([]string, len(currencies))
	for i := range currencies {
		codes[i] = currencies[i].code
	}
	return codes
}

// MinorUnits returns the ISO 4217 exponent of a currency of the table (2
// for BRL: amounts are in hundredths; 0 for JPY, 3 for KWD), and whether
// the code is in the table. Amounts in a result are in these units.
func MinorUnits(code string) (int, bool) {
	c := currencyOf(code)
	if c == nil {
		return 0, false
	}
	return int(c.exp), true
}

// pow10 holds the powers of ten that fit in a uint64.
var pow10 = [...]uint64{1, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19}

// convert turns amount, in minor units of a currency of exponent from, into
// minor units of the base currency, of exponent to, at rate (base units per
// unit of the currency): amount × rate × 10^(to−from), rounded half up, in
// 128-bit integer arithmetic, never float. ok is false when the result is
// not from 1 to MaxAmountCents (or amount is negative).
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
	if hi != 0 || lo < 1 || lo > MaxAmountCents {
		return 0, false
	}
	return int64(lo), true
}

// appendMoney appends an amount of minor units of c as pt-BR writes it:
// the symbol, a NO-BREAK SPACE as FormatBRL has it, the whole units grouped
// in thousands with '.', then ',' and the minor digits unless the exponent
// is 0 (US$ 1.234,56; JP¥ 1.234; KWD 1,234).
func appendMoney(dst []byte, amount int64, c *currencyInfo) []byte {
	if c == brl {
		return appendBRL(dst, amount)
	}
	u := uint64(amount)
	if amount < 0 {
		dst = append(dst, '-')
		u = -u
	}
	dst = append(dst, c.symbol...)
	dst = append(dst, "\u00a0"...)
	p := pow10[c.exp]
	dst = appendGrouped(dst, u/p)
	if c.exp > 0 {
		dst = append(dst, ',')
		dst = appendPadded(dst, u%p, int(c.exp))
	}
	return dst
}

// moneyLen is len(appendMoney(nil, amount, c)).
func moneyLen(amount int64, c *currencyInfo) int {
	if c == brl {
		return brlLen(amount)
	}
	u := uint64(amount)
	if amount < 0 {
		u = -u
	}
	n := decimalLen(u / pow10[c.exp])
	size := b2i(amount < 0) + len(c.symbol) + len("\u00a0") + n + (n-1)/3
	if c.exp > 0 {
		size += 1 + int(c.exp)
	}
	return size
}

// appendGrouped appends u with its digits grouped in threes by '.'.
func appendGrouped(dst []byte, u uint64) []byte {
	var groups [7]uint64 // 1000^7 > MaxUint64
	n := 0
	for {
		groups[n] = u % 1000
		n++
		u /= 1000
		if u == 0 {
			break
		}
	}
	switch g := groups[n-1]; {
	case g >= 100:
		dst = append(dst, byte('0'+g/100), byte('0'+g/10%10), byte('0'+g%10))
	case g >= 10:
		dst = append(dst, byte('0'+g/10), byte('0'+g%10))
	default:
		dst = append(dst, byte('0'+g))
	}
	for i := n - 2; i >= 0; i-- {
		g := groups[i]
		dst = append(dst, '.', byte('0'+g/100), byte('0'+g/10%10), byte('0'+g%10))
	}
	return dst
}

// appendPadded appends u in exactly width digits, zeros first; u must be
// below 10^width.
func appendPadded(dst []byte, u uint64, width int) []byte {
	var buf [20]byte
	for i := width - 1; i >= 0; i-- {
		buf[i] = byte('0' + u%10)
		u /= 10
	}
	return append(dst, buf[:width]...)
}

// FormatMoney writes an amount of minor units of the currency code ("" is
// BRL) as the analysis' reasons do: pt-BR digits after the currency's pt-BR
// symbol ("US$\u00a01.234,56", "JP¥\u00a01.234"); for BRL it is FormatBRL.
// An unknown code is written as the code and the amount in minor units.
func FormatMoney(cents int64, code string) string {
	c := currencyOf(codeOrBase(code))
	if c == nil {
		return code + " " + strconv.FormatInt(cents, 10)
	}
	return string(appendMoney(nil, cents, c))
}
