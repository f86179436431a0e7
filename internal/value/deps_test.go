package value

import (
	"testing"

	"github.com/cobranca/cobranca/internal/deptest"
)

// The value rules are a leaf under every tool, the portfolio's analysis
// among them: they import only the standard library (test files aside).
func TestImportsOnlyStandardLibrary(t *testing.T) {
	const self = "github.com/cobranca/cobranca/internal/value"
	deptest.Only(t, self, self)
}
