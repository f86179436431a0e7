package idempotency_test

import (
	"strings"
	"testing"

	"github.com/cobranca/cobranca/internal/deptest"
)

// The idempotency store sits under the call pipeline and works in the transactions it is
// given: it must not reach up to the audit log, the pipeline or MCP, nor down to a driver.
func TestImports(t *testing.T) {
	const self = "github.com/cobranca/cobranca/internal/idempotency"
	for _, d := range deptest.NonStd(t, self) {
		for _, banned := range []string{
			"github.com/cobranca/cobranca/internal/auditlog",
			"github.com/cobranca/cobranca/internal/pipeline",
			"github.com/cobranca/cobranca/internal/mcpapi",
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
