//go:build unix

package safefile

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestOpen: Open takes the server's own regular files, created or not, and refuses a symbolic
// link (dangling or not), a directory, a FIFO and another user's file, naming the path, with
// nothing written through them.
func TestOpen(t *testing.T) {
	dir := t.TempDir()
	own := filepath.Join(dir, "own")
	if err := os.WriteFile(own, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(own, link); err != nil {
		t.Fatal(err)
	}
	dangling := filepath.Join(dir, "dangling")
	if err := os.Symlink(filepath.Join(dir, "absent"), dangling); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	other := "/etc/passwd" // root's: another user's unless we are root
	if os.Geteuid() == 0 {
		other = filepath.Join(dir, "other")
		if err := os.WriteFile(other, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(other, 12345, 12345); err != nil {
			t.Fatal(err)
		}
	}
	for _, tt := range []struct {
		path, want string // want "" for opened
		flag       int
	}{
		{own, "", os.O_RDWR | os.O_APPEND},
		{filepath.Join(dir, "new"), "", os.O_RDWR | os.O_CREATE},
		{link, "symbolic link", os.O_RDWR | os.O_CREATE | os.O_APPEND},
		{dangling, "symbolic link", os.O_RDWR | os.O_CREATE},
		{dir, "not a regular file", os.O_RDONLY},
		{fifo, "not a regular file", os.O_RDWR},
		{other, "owned by uid", os.O_RDONLY},
	} {
		f, err := Open(tt.path, tt.flag, 0o600)
		if tt.want == "" {
			if err != nil {
				t.Errorf("Open(%s) = %v, want it opened", tt.path, err)
			} else {
				f.Close()
			}
			continue
		}
		if err == nil {
			f.Close()
		}
		if err == nil || !errors.Is(err, ErrUnsafe) || !strings.Contains(err.Error(), tt.path) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Open(%s) = %v, want ErrUnsafe naming it and %q", tt.path, err, tt.want)
		}
	}
	if _, err := os.Lstat(filepath.Join(dir, "absent")); err == nil {
		t.Error("Open created the target of a dangling link")
	}
}
