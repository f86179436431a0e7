package pgtest

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// Only a machine without PostgreSQL skips; a cluster that fails to start fails the test,
// on a laptop as in CI.
func TestStartFailure(t *testing.T) {
	missing := fmt.Errorf("%w: initdb not found", errNotInstalled)
	broken := errors.New("postgres exited")
	for _, c := range []struct {
		err      error
		ci, skip bool
	}{
		{missing, false, true},
		{missing, true, false},
		{broken, false, false},
		{broken, true, false},
	} {
		skip, msg := startFailure(c.err, c.ci)
		if skip != c.skip || !strings.Contains(msg, c.err.Error()) {
			t.Errorf("startFailure(%v, ci=%v) = %v, %q; want skip %v and the error named", c.err, c.ci, skip, msg, c.skip)
		}
	}
}
