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
