package reqstate

import (
	"testing"

	"github.com/cobranca/cobranca/internal/deptest"
)

// The request state must import only the standard library (test files aside).
func TestImportsOnlyStandardLibrary(t *testing.T) {
	const self = "github.com/cobranca/cobranca/internal/reqstate"
	deptest.Only(t, self, self)
}
