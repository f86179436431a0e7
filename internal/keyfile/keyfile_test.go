package keyfile

import (
	"os"
	"path/filepath"
	"sync"
	"testing"
)

func TestLoadOrCreateEd25519(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sub", "key.pem")
	// Eight processes' worth of first starts at once agree on one key.
	keys := make([]string, 8)
	var wg sync.WaitGroup
	for i := range keys {
		wg.Go(func() {
			k, err := LoadOrCreateEd25519(path)
			if err != nil {
				t.Error(err)
				return
			}
			keys[i] = string(k)
		})
	}
	wg.Wait()
	for i := range keys {
		if keys[i] != keys[0] {
			t.Fatalf("concurrent creators got different keys")
		}
	}
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Errorf("key file mode %v, want 0600", st.Mode().Perm())
	}
	if dst, _ := os.Stat(filepath.Dir(path)); dst.Mode().Perm() != 0o700 {
		t.Errorf("key directory mode %v, want 0700", dst.Mode().Perm())
	}
	again, err := LoadOrCreateEd25519(path)
	if err != nil || string(again) != keys[0] {
		t.Errorf("second load = %v; want the same key", err)
	}
	entries, _ := os.ReadDir(filepath.Dir(path))
	if len(entries) != 1 {
		t.Errorf("directory holds %d entries, want only the key (no temporary files left)", len(entries))
	}
	if err := os.WriteFile(path, []byte("not pem"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadOrCreateEd25519(path); err == nil {
		t.Errorf("a corrupt key file was accepted")
	}
}
