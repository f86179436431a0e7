package pix

import (
	"testing"

	"github.com/cobranca/cobranca/internal/deptest"
)

// A leaf under collections and reminders: the standard library, the QR
// encoder and brdoc's check digits only (test files aside).
func TestImportsOnlyQRAndBrdoc(t *testing.T) {
	const self = "github.com/cobranca/cobranca/internal/pix"
	deptest.Only(t, self, self, "rsc.io/qr", "rsc.io/qr/", "github.com/paemuri/brdoc")
}
