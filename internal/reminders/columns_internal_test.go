package reminders

import (
	"strings"
	"testing"
)

// listColumns leaves out the HTML part, and only it: the same columns in the same order, so
// scanRecord reads both.
func TestListColumns(t *testing.T) {
	list, full := strings.Split(listColumns, ","), strings.Split(recordColumns, ",")
	if len(list) != len(full) {
		t.Fatalf("listColumns has %d columns, recordColumns %d", len(list), len(full))
	}
	var differ []string
	for i := range full {
		if strings.TrimSpace(list[i]) != strings.TrimSpace(full[i]) {
			differ = append(differ, strings.TrimSpace(full[i])+" → "+strings.TrimSpace(list[i]))
		}
	}
	if len(differ) != 1 || differ[0] != "html → ''" {
		t.Errorf("listColumns differs from recordColumns in %q, want html → '' alone", differ)
	}
}
