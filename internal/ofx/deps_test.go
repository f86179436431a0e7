package ofx

import (
	"testing"

	"github.com/cobranca/cobranca/internal/deptest"
)

// A leaf: the standard library and the OFX reader it wraps.
func TestImportsOnlyItsReader(t *testing.T) {
	const self = "github.com/cobranca/cobranca/internal/ofx"
	deptest.Only(t, self, self, "github.com/aclindsa/ofxgo", "github.com/aclindsa/xml", "golang.org/x/text/")
}
