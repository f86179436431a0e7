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
