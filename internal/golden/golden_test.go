package golden

import (
	"os"
	"path/filepath"
	"testing"
)

// recorder is a testing.TB that records failures instead of stopping.
type recorder struct {
	testing.TB
	failed bool
}

func (r *recorder) Errorf(string, ...any) { r.failed = true }
func (r *recorder) Fatalf(string, ...any) { r.failed = true }
func (r *recorder) Fatal(...any)          { r.failed = true }
func (r *recorder) Helper()               {}

func TestJSON(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x", "doc.json")
	JSON(t, path, map[string]int{"b": 2, "a": 1}, true)
	// The same value passes, however the file is spelled.
	if err := os.WriteFile(path, []byte(`{"a":1,   "b":2}`), 0o644); err != nil {
		t.Fatal(err)
	}
	r := &recorder{TB: t}
	JSON(r, path, map[string]int{"a": 1, "b": 2}, false)
	if r.failed {
		t.Errorf("JSON failed on an equal value")
	}
	// Another value fails.
	r = &recorder{TB: t}
	JSON(r, path, map[string]int{"a": 1, "b": 3}, false)
	if !r.failed {
		t.Errorf("JSON passed a different value")
	}
	// A missing file fails.
	r = &recorder{TB: t}
	JSON(r, filepath.Join(t.TempDir(), "none.json"), 1, false)
	if !r.failed {
		t.Errorf("JSON passed without a golden file")
	}
}
