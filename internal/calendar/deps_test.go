package calendar

import (
	"testing"

	"github.com/cobranca/cobranca/internal/deptest"
)

// A leaf: the standard library and rickar's holidays only.
func TestImportsOnlyStandardLibraryAndRickar(t *testing.T) {
	const self = "github.com/cobranca/cobranca/internal/calendar"
	deptest.Only(t, self, self, "github.com/rickar/cal/v2", "github.com/rickar/cal/v2/br", "github.com/rickar/cal/v2/aa")
}
