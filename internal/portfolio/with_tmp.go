package portfolio

// DELETE AT REBASE onto h15-core: stand-ins of what h15-core adds to this
// package, so that h15-contract's branch compiles until it lands (its
// names may differ: adapt the callers in internal/collections).

// AnalyzeWith ignores o here; h15-core's applies it.
func AnalyzeWith(in *Input, o Options) Analysis { return Analyze(in) }

// The limits of Input.Rates (api.md, issue 15).
const (
	MaxRates                = 200
	MaxRate                 = 1_000_000_000
	MaxRateScale            = 12 // fractional digits
	MaxRateSignif           = 18 // significant digits
	CodeMissingRate    Code = "missing_rate"
	CodeDuplicateEntry Code = "duplicate_entry"
)
