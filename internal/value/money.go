package value

import (
	"sort"
	"strconv"
)

//go:generate go run ./internal/currencygen -o currency_table.go

// MaxAmountCents bounds an amount of minor units (R$ 10 billion): every
// tool refuses an amount from 1 to it or outside. With at most 500
// invoices a call, every sum is at most 5e14, far below 2^53, so totals
// are exact in int64 and as JSON numbers read into float64.
const MaxAmountCents = 1_000_000_000_000

// BaseCurrency is the currency of an amount whose currency is not given.
const BaseCurrency = "BRL"

// Currency is one currency of the table: an active ISO 4217 code that has a
// minor unit, with that unit and the currency's pt-BR symbol. Find one with
// [CurrencyOf]; the zero Currency is none.
type Currency struct {
	code   string // ISO 4217, three upper-case letters
	exp    uint8  // the minor unit is 10^-exp of the currency (BRL 2, JPY 0, KWD 3)
	symbol string // pt-BR, as CLDR gives it (R$, US$, €, JP¥), or the code
}

// brl is BRL's entry, which [Currency.AppendAmount] writes on its fast path.
var brl = CurrencyOf(BaseCurrency)

// CurrencyOf returns the table's entry for code, or nil when code is not an
// active ISO 4217 code with a minor unit ("" is none: callers that default
// to [BaseCurrency] say so). The entry must not be modified.
func CurrencyOf(code string) *Currency {
	if len(code) != 3 {
		return nil
	}
	i := sort.Search(len(currencies), func(i int) bool { return currencies[i].code >= code })
	if i < len(currencies) && currencies[i].code == code {
		return &currencies[i]
	}
	return nil
}

// Code is c's ISO 4217 code.
func (c *Currency) Code() string { return c.code }

// Exp is the ISO 4217 exponent of c's minor unit: amounts of c are in
// units of 10^-Exp of it (2 for BRL, 0 for JPY, 3 for KWD).
func (c *Currency) Exp() uint8 { return c.exp }

// Currencies returns the ISO 4217 codes an amount may be in, in order: the
// active codes that have a minor unit.
func Currencies() []string {
	codes := make([]string, len(currencies))
	for i := range currencies {
		codes[i] = currencies[i].code
	}
	return codes
}

// MinorUnits returns the ISO 4217 exponent of a currency of the table (2
// for BRL: amounts are in hundredths; 0 for JPY, 3 for KWD), and whether
// the code is in the table. Amounts are in these units.
func MinorUnits(code string) (int, bool) {
	c := CurrencyOf(code)
	if c == nil {
		return 0, false
	}
	return int(c.exp), true
}

// pow10 holds the powers of ten that fit in a uint64.
var pow10 = [...]uint64{1, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19}

// FormatMoney writes an amount of minor units of the currency code ("" is
// BRL) as pt-BR does: digits after the currency's pt-BR symbol
// ("US$\u00a01.234,56", "JP¥\u00a01.234"); for BRL it is [FormatBRL].
// An unknown code is written as the code and the amount in minor units.
func FormatMoney(cents int64, code string) string {
	if code == "" {
		code = BaseCurrency
	}
	c := CurrencyOf(code)
	if c == nil {
		return code + " " + strconv.FormatInt(cents, 10)
	}
	return string(c.AppendAmount(nil, cents))
}

// AppendAmount appends an amount of minor units of c as pt-BR writes it:
// the symbol, a NO-BREAK SPACE as [FormatBRL] has it, the whole units
// grouped in thousands with '.', then ',' and the minor digits unless the
// exponent is 0 (US$ 1.234,56; JP¥ 1.234; KWD 1,234).
func (c *Currency) AppendAmount(dst []byte, amount int64) []byte {
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
	dst = AppendGrouped(dst, u/p)
	if c.exp > 0 {
		dst = append(dst, ',')
		dst = appendPadded(dst, u%p, int(c.exp))
	}
	return dst
}

// AmountLen is len(c.AppendAmount(nil, amount)), for sizing a buffer.
func (c *Currency) AmountLen(amount int64) int {
	if c == brl {
		return brlLen(amount)
	}
	u := uint64(amount)
	if amount < 0 {
		u = -u
	}
	n := DigitsLen(u / pow10[c.exp])
	size := b2i(amount < 0) + len(c.symbol) + len("\u00a0") + n + (n-1)/3
	if c.exp > 0 {
		size += 1 + int(c.exp)
	}
	return size
}

// AppendGrouped appends u as pt-BR writes a whole number: its digits
// grouped in threes by '.'.
func AppendGrouped(dst []byte, u uint64) []byte {
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

// FormatBRL formats an amount of cents as Brazilian reais, exactly as
// JavaScript's
//
//	new Intl.NumberFormat("pt-BR", {style: "currency", currency: "BRL"}).format(cents / 100)
//
// does: "R$", a NO-BREAK SPACE (U+00A0), the integer part grouped in
// thousands with '.', a ',' and two decimals. For example 200000 becomes
// "R$\u00a02.000,00".
//
// Only non-negative amounts are part of the contract (no tool produces
// others). A negative amount is given a leading '-', which is also what
// Intl prints ("-R$\u00a00,05"), but that is not relied upon.
func FormatBRL(cents int64) string {
	var buf [40]byte
	return string(appendBRL(buf[:0], cents))
}

// appendBRL appends FormatBRL(cents) to dst.
func appendBRL(dst []byte, cents int64) []byte {
	u := uint64(cents)
	if cents < 0 {
		dst = append(dst, '-')
		u = -u // two's complement: right for math.MinInt64 too
	}
	dst = append(dst, "R$\u00a0"...)
	whole, frac := u/100, u%100
	dst = AppendGrouped(dst, whole)
	return append(dst, ',', byte('0'+frac/10), byte('0'+frac%10))
}

// brlLen is len(FormatBRL(cents)).
func brlLen(cents int64) int {
	u := uint64(cents)
	if cents < 0 {
		u = -u
	}
	n := DigitsLen(u / 100)
	return b2i(cents < 0) + len("R$\u00a0") + n + (n-1)/3 + len(",00")
}

// DigitsLen is the number of decimal digits of u, for sizing a buffer.
func DigitsLen(u uint64) int {
	n := 1
	for ; u >= 10; u /= 10 {
		n++
	}
	return n
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}
