package collections

import "testing"

func TestQuote(t *testing.T) {
	for in, want := range map[string]string{
		"Lembrete: total de R$\u00a01.526,00": "\"Lembrete: total de R$\u00a01.526,00\"",
		`Ana "Bia" Souza`:                     `"Ana \"Bia\" Souza"`,
		`a\u00a0b`:                            `"a\\u00a0b"`, // the six characters, not a no-break space
		"tab\there\u202e":                     `"tab\there\u202e"`,
		"":                                    `""`,
		"\u00a0":                              "\"\u00a0\"",
	} {
		if got := quote(in); got != want {
			t.Errorf("quote(%q) = %s, want %s", in, got, want)
		}
	}
}
