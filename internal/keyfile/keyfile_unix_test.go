//go:build unix

package keyfile

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestUnsafeKeyFiles: a key file that someone else could have planted or can rewrite is
// refused with an error naming the file and what is wrong, never used; its safe neighbour is
// accepted.
func TestUnsafeKeyFiles(t *testing.T) {
	good := func(t *testing.T) string {
		t.Helper()
		path := filepath.Join(t.TempDir(), "key.pem")
		if _, err := LoadOrCreateEd25519(path); err != nil {
			t.Fatal(err)
		}
		return path
	}
	tests := []struct {
		name  string
		setup func(t *testing.T) string // returns the path to load
		want  string                    // "" for accepted
	}{
		{"own 0600 file", good, ""},
		{"own 0644 file", func(t *testing.T) string { p := good(t); chmod(t, p, 0o644); return p }, ""},
		{"group-writable", func(t *testing.T) string { p := good(t); chmod(t, p, 0o620); return p }, "writable by its group or by other users (mode 0620)"},
		{"world-writable", func(t *testing.T) string { p := good(t); chmod(t, p, 0o666); return p }, "writable by its group or by other users (mode 0666)"},
		{"symbolic link to a good key", func(t *testing.T) string {
			link := filepath.Join(t.TempDir(), "key.pem")
			if err := os.Symlink(good(t), link); err != nil {
				t.Fatal(err)
			}
			return link
		}, "symbolic link"},
		{"dangling symbolic link", func(t *testing.T) string {
			link := filepath.Join(t.TempDir(), "key.pem")
			if err := os.Symlink(filepath.Join(t.TempDir(), "planted.pem"), link); err != nil {
				t.Fatal(err)
			}
			return link
		}, "symbolic link"},
		{"a directory", func(t *testing.T) string { return t.TempDir() }, "not a regular file"},
		{"owned by another user", func(t *testing.T) string {
			if os.Geteuid() != 0 {
				// Not root: a file root owns, readable by all, is another user's.
				const p = "/etc/passwd"
				if st, err := os.Stat(p); err != nil || st.Sys().(*syscall.Stat_t).Uid != 0 {
					t.Fatalf("%s is not a root-owned file here: %v", p, err)
				}
				return p
			}
			p := good(t)
			if err := os.Chown(p, 12345, 12345); err != nil {
				t.Fatal(err)
			}
			return p
		}, "owned by uid"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := tt.setup(t)
			_, err := LoadOrCreateEd25519(path)
			if tt.want == "" {
				if err != nil {
					t.Fatalf("LoadOrCreateEd25519(%s) = %v, want it accepted", path, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("LoadOrCreateEd25519(%s) = %v, want an error naming the file and %q", path, err, tt.want)
			}
			if _, err := Read(path); err == nil {
				t.Errorf("Read(%s) succeeded", path)
			}
		})
	}
}

func chmod(t *testing.T, path string, mode os.FileMode) {
	t.Helper()
	if err := os.Chmod(path, mode); err != nil {
		t.Fatal(err)
	}
}
