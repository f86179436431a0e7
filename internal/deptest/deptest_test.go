package deptest

import (
	"slices"
	"strings"
	"testing"
)

// TestDisallowedCanFail: the check sees a real package's imports, the SDK
// among them, and an allowed prefix admits what is under it only.
func TestDisallowedCanFail(t *testing.T) {
	const mcpapi = "github.com/cobranca/cobranca/internal/mcpapi"
	deps := NonStd(t, mcpapi)
	bad := Disallowed(deps, []string{mcpapi, "github.com/cobranca/cobranca/internal/failure"})
	if !slices.Contains(bad, "github.com/modelcontextprotocol/go-sdk/mcp") || !slices.Contains(bad, "github.com/cobranca/cobranca/internal/contract") {
		t.Errorf("Disallowed(deps of mcpapi) = %q, want go-sdk/mcp and internal/contract among them", bad)
	}
	bad = Disallowed(deps, []string{"github.com/cobranca/cobranca/"})
	if !slices.Contains(bad, "github.com/modelcontextprotocol/go-sdk/mcp") || slices.ContainsFunc(bad, func(d string) bool { return strings.HasPrefix(d, "github.com/cobranca/") }) {
		t.Errorf("Disallowed(deps of mcpapi, github.com/cobranca/cobranca/) = %q, want go-sdk/mcp and no cobranca package", bad)
	}
	if got := Disallowed([]string{"github.com/cobranca/cobranca/internal/failurex"}, []string{"github.com/cobranca/cobranca/internal/failure"}); len(got) != 1 {
		t.Errorf("Disallowed(failurex, failure) = %q, want failurex: an exact entry is not a prefix", got)
	}
}

// TestImportersCanFail: the check sees who imports a real package, and
// only who imports it directly.
func TestImportersCanFail(t *testing.T) {
	const failure = "github.com/cobranca/cobranca/internal/failure"
	got := Importers(t, failure, "github.com/cobranca/cobranca/internal/...")
	if !slices.Contains(got, "github.com/cobranca/cobranca/internal/mcpapi") || slices.Contains(got, failure) {
		t.Errorf("Importers(failure) = %q, want mcpapi among them and not failure itself", got)
	}
}
