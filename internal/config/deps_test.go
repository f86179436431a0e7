package config

import (
	"testing"

	"github.com/cobranca/cobranca/internal/deptest"
)

// Configuration is a leaf of plain values: the standard library only;
// cmd/cobranca turns it into the services' options.
func TestLeaf(t *testing.T) {
	const self = "github.com/cobranca/cobranca/internal/config"
	deptest.Only(t, self, self)
}
