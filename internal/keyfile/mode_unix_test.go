//go:build unix

package keyfile

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// TestKeyFilesPrivate: key files are 0600 in a directory the operator made
// world-readable, whatever the umask.
func TestKeyFilesPrivate(t *testing.T) {
	for _, umask := range []int{0, 0o022, 0o277} {
		t.Run(fmt.Sprintf("umask %03o", umask), func(t *testing.T) {
			old := syscall.Umask(umask)
			t.Cleanup(func() { syscall.Umask(old) })
			dir := filepath.Join(t.TempDir(), "data")
			if err := os.Mkdir(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			secret := filepath.Join(dir, "audit.key")
			if _, err := LoadOrCreate(secret, func() ([]byte, error) { return []byte("0123456789abcdef0123456789abcdef"), nil }); err != nil {
				t.Fatal(err)
			}
			signing := filepath.Join(dir, "signing.pem")
			if _, err := LoadOrCreateEd25519(signing); err != nil {
				t.Fatal(err)
			}
			for _, name := range []string{secret, signing} {
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
