package calendar

import (
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestDocsListTheHolidays keeps docs/schedules.md's table of holidays the
// calendar's: one row per rule, by the name Holiday answers.
func TestDocsListTheHolidays(t *testing.T) {
	b, err := os.ReadFile("../../docs/schedules.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(b), "\n### Business days\n")
	if !ok {
		t.Fatal("docs/schedules.md has no ### Business days section")
	}
	section, _, _ = strings.Cut(section, "\n#")
	var documented []string
	for line := range strings.Lines(section) {
		cells := strings.Split(line, "|")
		if len(cells) < 3 || strings.HasPrefix(line, "|---") || strings.TrimSpace(cells[1]) == "holiday" {
			continue
		}
		documented = append(documented, strings.TrimSpace(cells[1]))
	}
	var names []string
	for _, h := range Brazil().rules {
		names = append(names, h.Name)
	}
	slices.Sort(documented)
	slices.Sort(names)
	if diff := cmp.Diff(names, documented); diff != "" {
		t.Errorf("docs/schedules.md's holidays and the calendar's differ (-code +doc):\n%s", diff)
	}
}
