package contract

import (
	"testing"

	"github.com/cobranca/cobranca/internal/deptest"
)

// The contract is a leaf: no service package of cobranca, no transport SDK.
// jsonschema-go is a schema library (the contract's own schemas are its
// values); failure is the shared error vocabulary, itself a leaf.
func TestLeaf(t *testing.T) {
	const self = "github.com/cobranca/cobranca/internal/contract"
	deptest.Only(t, self, self,
		"github.com/cobranca/cobranca/internal/failure",
		"github.com/google/jsonschema-go/jsonschema")
}
