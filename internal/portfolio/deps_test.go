package portfolio

import (
	"os/exec"
	"strings"
	"testing"
)

// nonStdDeps lists the packages outside the standard library that pkg
// depends on, pkg itself included when it is outside.
func nonStdDeps(t *testing.T, pkg string) []string {
	t.Helper()
	out, err := exec.Command("go", "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", pkg).Output()
	if err != nil {
		t.Fatalf("go list -deps %s: %v", pkg, err)
	}
	return strings.Fields(string(out))
}

// The core must import only the standard library (test files aside).
func TestImportsOnlyStandardLibrary(t *testing.T) {
	const self = "github.com/cobranca/cobranca/internal/portfolio"
	for _, p := range nonStdDeps(t, ".") {
		if p != self {
			t.Errorf("%s depends on %s, want the standard library only", self, p)
		}
	}
	// The check can fail: a package outside the standard library shows up.
	if got := nonStdDeps(t, "github.com/google/go-cmp/cmp"); len(got) == 0 {
		t.Errorf("nonStdDeps(go-cmp) = [], want go-cmp's packages")
	}
}
