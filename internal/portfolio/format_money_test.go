package portfolio

import "testing"

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
