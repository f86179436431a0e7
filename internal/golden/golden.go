// Package golden holds test results to golden files: JSON documents under
// a package's testdata, compared as JSON values rather than bytes and
// rewritten when the test runs with -update.
package golden

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// JSON compares got, as encoding/json writes it, with the file at path as
// JSON values, or rewrites the file (indented) when update is set.
func JSON(t testing.TB, path string, got any, update bool) {
	t.Helper()
	gotJSON, err := json.MarshalIndent(got, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, append(gotJSON, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	wantJSON, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	var want, gotV any
	if err := json.Unmarshal(wantJSON, &want); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if err := json.Unmarshal(gotJSON, &gotV); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, gotV); diff != "" {
		t.Errorf("%s differs (-want +got); if the change is intended, run go test -update:\n%s", path, diff)
	}
}
