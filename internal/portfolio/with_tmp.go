package portfolio

import "strconv"

// DELETE AT REBASE onto h15-core: stand-ins of what h15-core adds to this
// package (same names), so that h15-contract's branch compiles until it
// lands. They do not behave like h15-core's: AnalyzeWith ignores o,
// Currencies lists a few codes, String ignores nothing but is plain.

// AnalyzeWith ignores o here; h15-core's applies it.
func AnalyzeWith(in *Input, o Options) Analysis { return Analyze(in) }

// Currencies is a few codes here; h15-core's is ISO 4217's active codes.
func Currencies() []string { return []string{"BRL", "EUR", "JPY", "KWD", "USD"} }

// String writes d in plain decimal notation.
func (d Decimal) String() string {
	s := strconv.FormatUint(d.Coef, 10)
	if d.Scale == 0 {
		return s
	}
	for len(s) <= int(d.Scale) {
		s = "0" + s
	}
	return s[:len(s)-int(d.Scale)] + "." + s[len(s)-int(d.Scale):]
}

// The limits of Input.Rates, and the new codes.
const (
	MaxRates                = 200
	MaxRate                 = 1_000_000_000
	MaxRateScale            = 12
	MaxRateSignifics        = 18
	CodeMissingRate    Code = "missing_rate"
	CodeDuplicateEntry Code = "duplicate_entry"
)
