package timestamp

import (
	"testing"

	"github.com/cobranca/cobranca/internal/deptest"
)

// A leaf under portfolio's core, which imports only the standard library
// and its leaves: it must import only the standard library itself.
func TestImportsOnlyStandardLibrary(t *testing.T) {
	const self = "github.com/cobranca/cobranca/internal/timestamp"
	deptest.Only(t, self, self)
}
