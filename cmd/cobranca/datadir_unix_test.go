//go:build unix

package main

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// TestDataDirPrivate: in a data directory the operator made 0755, under a
// umask that takes nothing away, every file the commands create — the
// database and its lock, the development signing key, the audit keys — is
// owner-only (0600).
func TestDataDirPrivate(t *testing.T) {
	// The directories are made before the umask changes, so that they are
	// exactly what the operator made (0755), not whatever umask 0 gives.
	dir := filepath.Join(t.TempDir(), "data")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	old := syscall.Umask(0)
	t.Cleanup(func() { syscall.Umask(old) })
	environ := []string{"COBRANCA_DATA_DIR=" + dir}
	for _, args := range [][]string{{"migrate"}, {"token", "--sub", "alice"}, {"audit", "checkpoint"}} {
		var out bytes.Buffer
		if err := run(t.Context(), args, environ, nil, &out, &out); err != nil {
			t.Fatalf("cobranca %v: %v\n%s", args, err, out.String())
		}
	}
	n := 0
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		st, err := d.Info()
		if err != nil {
			return err
		}
		n++
		if perm := st.Mode().Perm(); perm != 0o600 {
			t.Errorf("%s: mode %v, want -rw-------", filepath.Base(path), perm)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n < 4 {
		t.Errorf("the commands created %d files in the data directory; want the database, its lock and the keys", n)
	}
}
