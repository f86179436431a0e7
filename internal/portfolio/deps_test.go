package portfolio

import (
	"testing"

	"github.com/cobranca/cobranca/internal/deptest"
)

// The core must import only the standard library (test files aside) and
// the JSON lexer under its decoder, itself held to the standard library.
func TestImportsOnlyStandardLibrary(t *testing.T) {
	const self = "github.com/cobranca/cobranca/internal/portfolio"
	deptest.Only(t, self, self, "github.com/cobranca/cobranca/internal/jsonscan")
}
