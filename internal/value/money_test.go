package value

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/cobranca/cobranca/internal/value/valuetest"
)

// TestFormatMoneyExported: the exported formatter writes amounts as the reasons do,
// per currency, and BRL exactly as FormatBRL.
func TestFormatMoneyExported(t *testing.T) {
	for _, tt := range []struct {
		cents int64
		code  string
		want  string
	}{
		{123456, "", "R$\u00a01.234,56"},
		{123456, "BRL", FormatBRL(123456)},
		{123456, "USD", "US$\u00a01.234,56"},
		{1234, "JPY", "JP¥\u00a01.234"},
		{1234567, "KWD", "KWD\u00a01.234,567"},
		{5, "ZZZ", "ZZZ 5"},
	} {
		if got := FormatMoney(tt.cents, tt.code); got != tt.want {
			t.Errorf("FormatMoney(%d, %q) = %q, want %q", tt.cents, tt.code, got, tt.want)
		}
	}
}

// MinorUnits is ISO 4217's exponent, which CLDR (and so Intl) does not
// always share: HUF and IDR have 2 in ISO, 0 in CLDR.
func TestMinorUnits(t *testing.T) {
	for code, want := range map[string]int{"BRL": 2, "USD": 2, "JPY": 0, "KWD": 3, "CLF": 4, "HUF": 2, "IDR": 2} {
		if got, ok := MinorUnits(code); !ok || got != want {
			t.Errorf("MinorUnits(%q) = %d, %v; want %d, true", code, got, ok, want)
		}
	}
	for _, code := range []string{"", "brl", "XXX", "BRLX"} {
		if _, ok := MinorUnits(code); ok {
			t.Errorf("MinorUnits(%q) is known", code)
		}
	}
}

func TestFormatBRL(t *testing.T) {
	tests := []struct {
		cents int64
		want  string
	}{
		{0, "R$\u00a00,00"},
		{5, "R$\u00a00,05"},
		{99, "R$\u00a00,99"},
		{100, "R$\u00a01,00"},
		{99_999, "R$\u00a0999,99"},
		{100_000, "R$\u00a01.000,00"},
		{200_000, "R$\u00a02.000,00"},
		{123_456_789_012, "R$\u00a01.234.567.890,12"},
		{100_000_000_000_000, "R$\u00a01.000.000.000.000,00"},
		{500 * MaxAmountCents, "R$\u00a05.000.000.000.000,00"},
		{-5, "-R$\u00a00,05"},
	}
	for _, tt := range tests {
		if got := FormatBRL(tt.cents); got != tt.want {
			t.Errorf("FormatBRL(%d) = %q, want %q", tt.cents, got, tt.want)
		}
	}
}

func TestFormatMoney(t *testing.T) {
	tests := []struct {
		amount int64
		code   string
		want   string
	}{
		{123456, "BRL", "R$\u00a01.234,56"},
		{123456, "USD", "US$\u00a01.234,56"},
		{5, "EUR", "€\u00a00,05"},
		{123456, "GBP", "£\u00a01.234,56"},
		{1234, "JPY", "JP¥\u00a01.234"},
		{0, "JPY", "JP¥\u00a00"},
		{1234, "KWD", "KWD\u00a01,234"},
		{12345, "CLF", "CLF\u00a01,2345"},
		{1, "CLF", "CLF\u00a00,0001"},
		{123456789, "CHF", "CHF\u00a01.234.567,89"},
		{100, "CAD", "CA$\u00a01,00"},
		{-5, "USD", "-US$\u00a00,05"},
	}
	for _, tt := range tests {
		c := CurrencyOf(tt.code)
		if got := string(c.AppendAmount(nil, tt.amount)); got != tt.want || c.AmountLen(tt.amount) != len(tt.want) {
			t.Errorf("AppendAmount(%d, %s) = %q (AmountLen %d), want %q", tt.amount, tt.code, got, c.AmountLen(tt.amount), tt.want)
		}
	}
}

// TestAmountLen: the sizes agree with what is written, for every kind of
// entry (BRL's fast path, exponents 0 to 4, long symbols) and amount.
func TestAmountLen(t *testing.T) {
	for _, code := range []string{"BRL", "USD", "JPY", "KWD", "CLF", "XOF", "CHF"} {
		c := CurrencyOf(code)
		for _, cents := range []int64{math.MinInt64, -100_000, -1, 0, 1, 9, 10, 99, 100, 999, 1000, 99_999, 100_000, 123_456_789_012, 500 * MaxAmountCents, math.MaxInt64} {
			if got, want := c.AmountLen(cents), len(c.AppendAmount(nil, cents)); got != want {
				t.Errorf("%s AmountLen(%d) = %d, want %d (%q)", code, cents, got, want, c.AppendAmount(nil, cents))
			}
			if code == "BRL" && brlLen(cents) != len(FormatBRL(cents)) {
				t.Errorf("brlLen(%d) = %d, want len(%q)", cents, brlLen(cents), FormatBRL(cents))
			}
		}
	}
	// Negative amounts are out of the contract, but must be sized right.
	r := rand.New(rand.NewPCG(3, 4))
	for range 20000 {
		c := r.Int64N(1<<r.IntN(63) + 1)
		for _, c := range []int64{c, -c} {
			if got, want := brlLen(c), len(FormatBRL(c)); got != want {
				t.Fatalf("brlLen(%d) = %d, want len(%q) = %d", c, got, FormatBRL(c), want)
			}
		}
	}
	for u, want := range map[uint64]int{0: 1, 9: 1, 10: 2, 999: 3, 1000: 4, math.MaxUint64: 20} {
		if got := DigitsLen(u); got != want {
			t.Errorf("DigitsLen(%d) = %d, want %d", u, got, want)
		}
	}
}

// TestCurrencyTable spot-checks the generated table against ISO 4217's
// minor units and CLDR's pt-BR symbols, and checks it whole against
// valuetest.Exp, the standard's exceptions to 2 written out.
func TestCurrencyTable(t *testing.T) {
	spot := []struct {
		code   string
		exp    uint8
		symbol string
	}{
		{"BRL", 2, "R$"}, {"USD", 2, "US$"}, {"EUR", 2, "€"}, {"GBP", 2, "£"}, {"JPY", 0, "JP¥"}, {"CAD", 2, "CA$"},
		{"KWD", 3, "KWD"}, {"CLF", 4, "CLF"}, {"CHF", 2, "CHF"}, {"CLP", 0, "CLP"}, {"BHD", 3, "BHD"}, {"UYW", 4, "UYW"},
		{"XOF", 0, "F\u202fCFA"}, {"KRW", 0, "₩"}, {"INR", 2, "₹"}, {"VES", 2, "VES"},
	}
	for _, s := range spot {
		c := CurrencyOf(s.code)
		if c == nil || c.exp != s.exp || c.symbol != s.symbol {
			t.Errorf("CurrencyOf(%s) = %+v, want exponent %d, symbol %q", s.code, c, s.exp, s.symbol)
		}
	}
	for _, code := range []string{"", "BR", "BRLL", "brl", "XAU", "XDR", "XXX", "XTS", "DEM", "HRK", "ZWL"} {
		if c := CurrencyOf(code); c != nil {
			t.Errorf("CurrencyOf(%q) = %+v, want none: not an active code with a minor unit", code, c)
		}
	}
	if len(currencies) < 150 {
		t.Errorf("the table has %d currencies, ISO 4217 has some 175 active ones with a minor unit", len(currencies))
	}
	for i := range currencies {
		c := &currencies[i]
		if int(c.exp) != valuetest.Exp(c.code) {
			t.Errorf("%s: exponent %d, ISO 4217 says %d", c.code, c.exp, valuetest.Exp(c.code))
		}
		if i > 0 && currencies[i-1].code >= c.code || len(c.code) != 3 || strings.ToUpper(c.code) != c.code || c.symbol == "" {
			t.Errorf("entry %d %+v: codes must be three upper-case letters, in order, with a symbol", i, c)
		}
		if CurrencyOf(c.code) != c {
			t.Errorf("CurrencyOf(%s) does not find its entry", c.code)
		}
	}
	if got := Currencies(); len(got) != len(currencies) || got[0] != currencies[0].code {
		t.Errorf("Currencies() = %v", got)
	}
}

func BenchmarkFormatBRL(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		FormatBRL(123_456_789_012)
	}
}
