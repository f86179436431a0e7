// Package tier holds the rule that splits the tests in two tiers. `go test -short ./...` is the
// fast tier: every unit and package test, in-process, in about a minute. `go test ./...` (and
// CI, which never passes -short) runs the end-to-end tests too: those that start `cobranca
// serve` or another process, kill one, drive a browser, build the binary or its image, or run
// the client compatibility suite under node. An end-to-end test calls EndToEnd first, so that
// the rule and the message it skips with live here only. A package test whose point is scale
// (a race repeated hundreds of times, a store filled to tens of thousands of rows, a
// property checked over thousands of random cases) calls Volume: the fast tier runs the same
// rule at a smaller size elsewhere, or not at all, and the full tier runs it whole.
package tier

import "testing"

// EndToEnd marks t as an end-to-end test: under -short it is skipped, saying so.
func EndToEnd(t testing.TB) {
	t.Helper()
	if testing.Short() {
		t.Skip("end-to-end: skipped under -short (go test without -short runs it)")
	}
}

// Volume marks t as a test of scale: under -short it is skipped, saying so.
func Volume(t testing.TB) {
	t.Helper()
	if testing.Short() {
		t.Skip("volume: skipped under -short (go test without -short runs it)")
	}
}
