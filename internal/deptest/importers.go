package deptest

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// Importers lists the packages matching pattern (e.g.
// "github.com/cobranca/cobranca/...") whose non-test files import pkg
// directly.
func Importers(t testing.TB, pkg, pattern string) []string {
	t.Helper()
	out, err := exec.Command("go", "list", "-f", "{{.ImportPath}} {{join .Imports \" \"}}", pattern).Output()
	if err != nil {
		t.Fatalf("go list %s: %v", pattern, err)
	}
	var importers []string
	for line := range strings.Lines(string(out)) {
		f := strings.Fields(line)
		if len(f) > 1 && slices.Contains(f[1:], pkg) {
			importers = append(importers, f[0])
		}
	}
	return importers
}
