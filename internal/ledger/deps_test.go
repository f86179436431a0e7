package ledger

import (
	"testing"

	"github.com/cobranca/cobranca/internal/deptest"
)

// The ledger's rules are a leaf that the store, the tools and the command
// line all use: no store, no SDK, no HTTP. Besides the standard library it
// reads JSON with the one tokenizer, holds values to portfolio's rules and
// boleto lines to boleto's.
func TestImportsOnlyLeaves(t *testing.T) {
	const self = "github.com/cobranca/cobranca/internal/ledger"
	deptest.Only(t, self, self,
		"github.com/cobranca/cobranca/internal/boleto",
		"github.com/cobranca/cobranca/internal/portfolio",
		"github.com/cobranca/cobranca/internal/jsonscan",
		"github.com/cobranca/cobranca/internal/timestamp",
		"github.com/go-json-experiment/json",
		"github.com/go-json-experiment/json/")
}
