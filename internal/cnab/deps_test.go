package cnab

import (
	"testing"

	"github.com/cobranca/cobranca/internal/deptest"
)

// The rules are a leaf: the standard library only, so that the store, the
// tools and the command line can all use them.
func TestImportsOnlyStandardLibrary(t *testing.T) {
	const self = "github.com/cobranca/cobranca/internal/cnab"
	deptest.Only(t, self, self)
}
