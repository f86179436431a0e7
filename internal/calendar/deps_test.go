package calendar

import (
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/cobranca/cobranca/internal/deptest"
)

const self = "github.com/cobranca/cobranca/internal/calendar"

// A leaf: the standard library and rickar's holidays only.
func TestImportsOnlyStandardLibraryAndRickar(t *testing.T) {
	deptest.Only(t, self, self, "github.com/rickar/cal/v2", "github.com/rickar/cal/v2/br", "github.com/rickar/cal/v2/aa")
}

// The zone database is linked in: the image has no zoneinfo, and a window's
// zone must load there.
func TestLinksTheZoneDatabase(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", self).Output()
	if err != nil {
		t.Fatalf("go list -deps %s: %v", self, err)
	}
	if !slices.Contains(strings.Fields(string(out)), "time/tzdata") {
		t.Errorf("%s does not depend on time/tzdata", self)
	}
}
