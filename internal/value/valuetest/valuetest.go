// Package valuetest restates internal/value's rules naively, from the
// issue, Unicode's properties, ISO 4217 and the time package rather than
// from value's code or tables, as oracles for the tests of value and of
// the tools that hold their fields to it (portfolio's FuzzValidate and its
// naive analysis among them). It imports neither value nor any package
// that does.
package valuetest

import (
	"regexp"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// Text is the rule for ids and names, restated from the issue and the
// probe that set it rather than from the package's tables: 1 to 255
// characters; no character that is invisible or changes how its
// neighbours display (Refused); and at least one visible character
// (Visible).
func Text(s string) string {
	if n := utf8.RuneCountInString(s); n < 1 || n > 255 {
		return "text length"
	}
	if strings.ContainsFunc(s, Refused) {
		return "refused character in text"
	}
	if !strings.ContainsFunc(s, Visible) {
		return "blank text"
	}
	return ""
}

// Refused reports whether r is refused anywhere in an id or name: a
// control character (Cc), a line or paragraph separator, a bidirectional
// control, a default-ignorable code point, or any other format character
// (Cf, the prepended concatenation marks included).
func Refused(r rune) bool {
	return unicode.Is(unicode.Cc, r) ||
		r == 0x2028 || r == 0x2029 || // line and paragraph separators
		unicode.Is(unicode.Bidi_Control, r) || // bidirectional controls and marks
		defaultIgnorable(r) ||
		unicode.Is(unicode.Cf, r)
}

// defaultIgnorable is Unicode's Default_Ignorable_Code_Point, derived as
// DerivedCoreProperties.txt says it is.
func defaultIgnorable(r rune) bool {
	if !unicode.In(r, unicode.Other_Default_Ignorable_Code_Point, unicode.Cf, unicode.Variation_Selector) {
		return false
	}
	return !unicode.Is(unicode.White_Space, r) && !(r >= 0xFFF9 && r <= 0xFFFB) && !(r >= 0x13430 && r <= 0x1343F) &&
		!unicode.Is(unicode.Prepended_Concatenation_Mark, r)
}

// Visible reports whether a person sees r: a letter, number,
// punctuation or symbol (L, N, P, S) that is not one of the characters
// that look blank (the Hangul fillers, the braille pattern blank, the
// musical symbol null notehead).
func Visible(r rune) bool {
	switch r {
	case 0x115F, 0x1160, 0x3164, 0xFFA0, 0x2800, 0x1D159:
		return false
	}
	return unicode.In(r, unicode.L, unicode.N, unicode.P, unicode.S)
}

var dateRE = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}$`)

// Date reports whether s is a good date: YYYY-MM-DD, a day of the
// calendar as the time package reads it, in the years 2000 to 2099.
func Date(s string) bool {
	if !dateRE.MatchString(s) {
		return false
	}
	d, err := time.Parse(time.DateOnly, s)
	return err == nil && d.Year() >= 2000 && d.Year() <= 2099
}

// Exp is ISO 4217's minor unit, as the standard lists it: 0, 3 and 4
// for these, 2 for every other active code with a minor unit.
func Exp(code string) int {
	switch code {
	case "BIF", "CLP", "DJF", "GNF", "ISK", "JPY", "KMF", "KRW", "PYG", "RWF", "UGX", "UYI", "VND", "VUV", "XAF", "XOF", "XPF":
		return 0
	case "BHD", "IQD", "JOD", "KWD", "LYD", "OMR", "TND":
		return 3
	case "CLF", "UYW":
		return 4
	}
	return 2
}
