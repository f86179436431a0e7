package chart

import (
	"testing"

	"github.com/cobranca/cobranca/internal/deptest"
)

// A leaf: the standard library only.
func TestImportsOnlyStandardLibrary(t *testing.T) {
	const self = "github.com/cobranca/cobranca/internal/chart"
	deptest.Only(t, self, self)
}
