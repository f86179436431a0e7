package portfolio

import (
	"testing"

	"github.com/cobranca/cobranca/internal/deptest"
)

// The core must import only the standard library (test files aside), the
// JSON lexer under its decoder, the RFC 3339 reader and the value rules
// every tool shares, each held to the standard library itself.
func TestImportsOnlyStandardLibrary(t *testing.T) {
	const self = "github.com/cobranca/cobranca/internal/portfolio"
	deptest.Only(t, self, self, "github.com/cobranca/cobranca/internal/jsonscan", "github.com/cobranca/cobranca/internal/timestamp",
		"github.com/cobranca/cobranca/internal/value")
}

// The analysis is one tool's: only that tool, the command line that runs
// it and its test helpers import it. A package that needs a date, text or
// money rule imports internal/value, the leaf of shared value rules.
func TestOnlyTheToolImportsTheAnalysis(t *testing.T) {
	const self = "github.com/cobranca/cobranca/internal/portfolio"
	allowed := []string{
		"github.com/cobranca/cobranca/cmd/cobranca",
		"github.com/cobranca/cobranca/internal/collections",
		"github.com/cobranca/cobranca/internal/portfolio/portfoliotest",
	}
	for _, p := range deptest.Disallowed(deptest.Importers(t, self, "github.com/cobranca/cobranca/..."), allowed) {
		t.Errorf("%s imports %s; it may be imported only by %q (value rules are in internal/value)", p, self, allowed)
	}
}
