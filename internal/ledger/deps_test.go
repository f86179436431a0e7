package ledger

import (
	"slices"
	"strings"
	"testing"

	"github.com/cobranca/cobranca/internal/deptest"
)

// The ledger is a leaf that the tools and the command line use: its rules
// and its store, no SDK, no HTTP, no service package. Besides the standard
// library it reads JSON with the one tokenizer, holds values to
// the shared value rules (internal/value), ids to the customers' rule and boleto lines to
// boleto's, and speaks SQL through the store (whatever the store itself
// links, which the store's own fence holds).
func TestImportsOnlyLeaves(t *testing.T) {
	const self = "github.com/cobranca/cobranca/internal/ledger"
	allowed := append(deptest.NonStd(t, "github.com/cobranca/cobranca/internal/customers"),
		self,
		"github.com/cobranca/cobranca/internal/boleto",
		"github.com/cobranca/cobranca/internal/value",
		"github.com/cobranca/cobranca/internal/jsonscan",
		"github.com/cobranca/cobranca/internal/timestamp",
		"github.com/cobranca/cobranca/internal/failure",
		"github.com/cobranca/cobranca/internal/ident",
		"github.com/cobranca/cobranca/internal/store",
		"github.com/go-json-experiment/json",
		"github.com/go-json-experiment/json/")
	deps := deptest.NonStd(t, self)
	for _, d := range deptest.Disallowed(deps, allowed) {
		t.Errorf("%s depends on %s; it may import only its leaves, the store and the customers' rules", self, d)
	}
	// What customers and store link must stay clear of the SDK, the
	// transport and the service packages too.
	for _, banned := range []string{
		"github.com/modelcontextprotocol/",
		"github.com/go-chi/",
		"github.com/cobranca/cobranca/internal/pipeline",
		"github.com/cobranca/cobranca/internal/collections",
		"github.com/cobranca/cobranca/internal/server",
		"github.com/cobranca/cobranca/internal/reminders",
		"github.com/cobranca/cobranca/internal/writeoffs",
		"github.com/cobranca/cobranca/internal/auditlog",
	} {
		if i := slices.IndexFunc(deps, func(d string) bool { return strings.HasPrefix(d, banned) }); i >= 0 {
			t.Errorf("%s depends on %s", self, deps[i])
		}
	}
}
