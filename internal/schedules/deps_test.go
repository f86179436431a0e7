package schedules_test

import (
	"strings"
	"testing"

	"github.com/cobranca/cobranca/internal/deptest"
)

// Schedules is a domain package: it works in the transactions it is given and knows neither the
// pipeline that owns them, nor a transport, an SDK or a driver (the tool glue in
// internal/collections does).
func TestImports(t *testing.T) {
	const self = "github.com/cobranca/cobranca/internal/schedules"
	for _, d := range deptest.NonStd(t, self) {
		for _, banned := range []string{
			"github.com/cobranca/cobranca/internal/pipeline",
			"github.com/cobranca/cobranca/internal/mcpapi",
			"github.com/cobranca/cobranca/internal/collections",
			"github.com/cobranca/cobranca/internal/auditlog",
			"github.com/modelcontextprotocol/",
			"github.com/jackc/",
			"modernc.org/sqlite",
		} {
			if strings.HasPrefix(d, banned) {
				t.Errorf("%s depends on %s", self, d)
			}
		}
	}
}
