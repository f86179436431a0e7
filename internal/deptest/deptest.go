// Package deptest holds a package's dependencies to a list, in tests
// (tailscale's tstest/deptest idea, done with `go list -deps`): the core and
// the leaves (internal/contract, internal/config) keep a test that fails if
// they ever import what they must not.
package deptest

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// NonStd lists the packages outside the standard library that pkg depends
// on, pkg itself included when it is outside; flags go to go list (e.g.
// -tags).
func NonStd(t testing.TB, pkg string, flags ...string) []string {
	t.Helper()
	args := append([]string{"list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}"}, flags...)
	out, err := exec.Command("go", append(args, pkg)...).Output()
	if err != nil {
		t.Fatalf("go list -deps %s %s: %v", flags, pkg, err)
	}
	return strings.Fields(string(out))
}

// Disallowed returns the deps that are none of allowed: an allowed entry
// ending in "/" admits every package under it.
func Disallowed(deps, allowed []string) []string {
	var bad []string
	for _, d := range deps {
		if !slices.ContainsFunc(allowed, func(a string) bool {
			return d == a || strings.HasSuffix(a, "/") && strings.HasPrefix(d, a)
		}) {
			bad = append(bad, d)
		}
	}
	return bad
}

// Only fails t if pkg depends, outside the standard library, on anything
// but allowed (see Disallowed).
func Only(t testing.TB, pkg string, allowed ...string) {
	t.Helper()
	for _, d := range Disallowed(NonStd(t, pkg), allowed) {
		t.Errorf("%s depends on %s; it may import only the standard library and %q", pkg, d, allowed)
	}
}
