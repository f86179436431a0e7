//go:build unix

package sqlite_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/cobranca/cobranca/internal/store/sqlite"
)

// TestFilesPrivate: the database, its -wal and -shm files and the
// migration lock are created 0600 in a directory the operator made
// world-readable, whatever the umask. Run it as a non-root user too: root
// ignores permissions, so only then does it prove the server can work in a
// directory under the strictest umask.
func TestFilesPrivate(t *testing.T) {
	for _, umask := range []int{0, 0o022, 0o277} {
		t.Run(fmt.Sprintf("umask %03o", umask), func(t *testing.T) {
			// The directories are made before the umask changes: under
			// umask 277 a directory made afterwards is 0500, and a
			// non-root user could not create anything in it.
			dir := filepath.Join(t.TempDir(), "data")
			if err := os.Mkdir(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			old := syscall.Umask(umask)
			t.Cleanup(func() { syscall.Umask(old) })
			ctx := context.Background()
			path := filepath.Join(dir, sqlite.FileName)
			db, err := sqlite.Open(ctx, path, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			if _, err := db.Migrate(ctx); err != nil {
				t.Fatal(err)
			}
			if _, err := db.Exec(ctx, "CREATE TABLE mode_probe (x)"); err != nil {
				t.Fatal(err)
			}
			var n int
			if err := db.QueryRow(ctx, "SELECT count(*) FROM mode_probe").Scan(&n); err != nil {
				t.Fatal(err)
			}
			for _, name := range []string{path, path + "-wal", path + "-shm", path + ".lock"} {
				st, err := os.Stat(name)
				if err != nil {
					t.Fatal(err)
				}
				if perm := st.Mode().Perm(); perm != 0o600 {
					t.Errorf("%s: mode %v, want -rw-------", filepath.Base(name), perm)
				}
			}
		})
	}
}
