package jsonscan

import (
	"testing"

	"github.com/cobranca/cobranca/internal/deptest"
)

// The lexer is a leaf under the bulk tool's core, which imports only the
// standard library and this package: it must import only the standard
// library itself.
func TestImportsOnlyStandardLibrary(t *testing.T) {
	const self = "github.com/cobranca/cobranca/internal/jsonscan"
	deptest.Only(t, self, self)
}
