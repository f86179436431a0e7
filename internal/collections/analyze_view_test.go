package collections

import (
	"bytes"
	"encoding/json"
	"regexp"
	"testing"

	"github.com/cobranca/cobranca/internal/value"
)

// The view is served with portfolio's minor units in it, every currency's,
// in place of its mark.
func TestAnalyzeViewMinorUnits(t *testing.T) {
	if bytes.Contains(analyzeView, []byte("/*minor units*/")) {
		t.Fatal("the served view still has its mark")
	}
	m := regexp.MustCompile(`var MINOR_UNITS = (\{[^}]*\});`).FindSubmatch(analyzeView)
	if m == nil {
		t.Fatal("the served view has no MINOR_UNITS table")
	}
	var units map[string]int
	if err := json.Unmarshal(m[1], &units); err != nil {
		t.Fatal(err)
	}
	codes := value.Currencies()
	if len(units) != len(codes) {
		t.Errorf("the table has %d currencies, portfolio %d", len(units), len(codes))
	}
	for _, code := range codes {
		got, ok := units[code]
		if want, _ := value.MinorUnits(code); !ok || got != want {
			t.Errorf("%s: %d minor units in the view (listed: %v), want %d as in portfolio", code, got, ok, want)
		}
	}
}
