package pgtest

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/jackc/pgx/v5"
)

// TestPristine: clusters are copies of one pristine cluster, made once per initdb binary, and
// made again when the binary making it died half way; a copy starts and serves.
func TestPristine(t *testing.T) {
	initdb, _, err := binaries()
	if err != nil {
		if skip, msg := startFailure(err, os.Getenv("CI") == "true"); skip {
			t.Skip(msg)
		} else {
			t.Fatal(msg)
		}
	}
	base := ownDir(t, "pgtest-pristine-")
	cred, err := serverCredential()
	if err != nil {
		t.Fatal(err)
	}
	c := &Cluster{cred: cred}
	first, err := c.pristine(initdb)
	if err != nil {
		t.Fatal(err)
	}
	if !isFile(filepath.Join(first, "PG_VERSION")) {
		t.Fatalf("pristine cluster %s has no PG_VERSION", first)
	}
	again, err := c.pristine(initdb)
	if err != nil || again != first {
		t.Fatalf("pristine again = %s, %v; want %s, made once", again, err, first)
	}
	// A binary that died half way: no mark, and a file initdb never writes.
	if err := os.Remove(filepath.Join(filepath.Dir(first), "whole")); err != nil {
		t.Fatal(err)
	}
	junk := filepath.Join(first, "junk")
	if err := os.WriteFile(junk, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := c.pristine(initdb); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(junk); !os.IsNotExist(err) {
		t.Errorf("a half-made pristine cluster was used as it was: %s is there (%v)", junk, err)
	}
	own := Private()
	t.Cleanup(own.Close)
	conn, err := pgx.Connect(context.Background(), own.Database(t))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var one int
	if err := conn.QueryRow(context.Background(), "SELECT 1").Scan(&one); err != nil || one != 1 {
		t.Errorf("SELECT 1 on a cluster copied from the pristine one = %d, %v", one, err)
	}
	if entries, _ := filepath.Glob(filepath.Join(base, "cobranca-pgtest-*-pristine-*")); len(entries) != 1 {
		t.Errorf("pristine clusters under %s: %v; want the one", base, entries)
	}
}

// ownDir makes PGTEST_DIR, for the rest of t, a new directory under Dir named from prefix,
// removed when t ends, and returns it. Not t.TempDir, whose parent only we may enter: as
// root, the postgres user runs initdb and the server in directories below it.
func ownDir(t *testing.T, prefix string) string {
	t.Helper()
	base, err := os.MkdirTemp(Dir(), prefix)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	if err := os.Chmod(base, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PGTEST_DIR", base)
	return base
}
