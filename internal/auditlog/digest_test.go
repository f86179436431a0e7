package auditlog

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestDigester(t *testing.T) {
	key := bytes.Repeat([]byte("k"), 32)
	d, err := NewDigester(key)
	if err != nil {
		t.Fatal(err)
	}
	other, _ := NewDigester(bytes.Repeat([]byte("o"), 32))
	a, err := d.JSON([]byte(`{"invoices":[{"id":"A1","amount":100}],"asOf":"2026-01-31"}`))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		doc  string
		d    *Digester
		same bool
	}{
		{"key order and space", "{ \"asOf\": \"2026-01-31\",\n \"invoices\": [{\"amount\": 100, \"id\": \"A1\"}] }", d, true},
		{"number spelling", `{"invoices":[{"id":"A1","amount":100.0}],"asOf":"2026-01-31"}`, d, true},
		{"exponent and escapes", `{"invoices":[{"\u0069d":"\u00411","amount":1e2}],"asOf":"2026-01-31"}`, d, true},
		{"other number", `{"invoices":[{"id":"A1","amount":100.5}],"asOf":"2026-01-31"}`, d, false},
		{"other value", `{"invoices":[{"id":"A2","amount":100}],"asOf":"2026-01-31"}`, d, false},
		{"array order matters", `{"invoices":[{"id":"A1","amount":100},{"id":"A1","amount":100}],"asOf":"2026-01-31"}`, d, false},
		{"other key", `{"invoices":[{"id":"A1","amount":100}],"asOf":"2026-01-31"}`, other, false},
	}
	for _, tt := range tests {
		got, err := tt.d.JSON([]byte(tt.doc))
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		if (got == a) != tt.same {
			t.Errorf("%s: digest equal = %v, want %v", tt.name, got == a, tt.same)
		}
		if len(got) != 64 {
			t.Errorf("%s: digest %q, want 64 hex digits", tt.name, got)
		}
	}
	for _, bad := range []string{``, `{`, `{} {}`, `{"a":1}x`, `{"a":1,"a":1}`, `"\ud800"`, `1e400`} {
		if _, err := d.JSON([]byte(bad)); err == nil {
			t.Errorf("JSON(%q) = nil error, want one", bad)
		}
	}
	if _, err := NewDigester([]byte("short")); err == nil {
		t.Error("NewDigester(short key) = nil error")
	}
	if strings.Contains(a, "A1") {
		t.Error("digest contains the argument")
	}
}

func TestKeys(t *testing.T) {
	dir := t.TempDir()
	for _, path := range []string{filepath.Join(dir, "audit.key"), filepath.Join(dir, "audit-signing.pem")} {
		st := func() os.FileMode {
			s, err := os.Stat(path)
			if err != nil {
				t.Fatal(err)
			}
			return s.Mode().Perm()
		}
		if strings.HasSuffix(path, ".key") {
			k1, err := LoadOrCreateDigestKey(path)
			if err != nil {
				t.Fatal(err)
			}
			k2, err := LoadOrCreateDigestKey(path)
			if err != nil || !bytes.Equal(k1, k2) || len(k1) < MinKeyLen {
				t.Errorf("LoadOrCreateDigestKey twice = %x, %x, %v; want the same key", k1, k2, err)
			}
		} else {
			k1, err := LoadOrCreateSigningKey(path)
			if err != nil {
				t.Fatal(err)
			}
			k2, err := LoadOrCreateSigningKey(path)
			if err != nil || !k1.Equal(k2) {
				t.Errorf("LoadOrCreateSigningKey twice: different keys or %v", err)
			}
		}
		if m := st(); m != 0o600 {
			t.Errorf("%s mode = %o, want 600", path, m)
		}
	}
}

func TestParseCheckpoint(t *testing.T) {
	_, key, _ := ed25519.GenerateKey(rand.Reader)
	_, otherKey, _ := ed25519.GenerateKey(rand.Reader)
	pub := key.Public().(ed25519.PublicKey)
	c := Checkpoint{Seq: 42, Hash: bytes.Repeat([]byte{0xab}, 32), Time: time.Date(2026, 1, 2, 3, 4, 5, 6000, time.UTC)}
	doc, err := c.Sign(key)
	if err != nil {
		t.Fatal(err)
	}
	got, err := ParseCheckpoint(doc, pub)
	if err != nil {
		t.Fatalf("ParseCheckpoint = %v", err)
	}
	if got.Seq != c.Seq || !bytes.Equal(got.Hash, c.Hash) || !got.Time.Equal(c.Time) {
		t.Errorf("ParseCheckpoint = %+v, want %+v", got, c)
	}
	otherDoc, _ := c.Sign(otherKey)
	for name, d := range map[string][]byte{
		"signed by another key": otherDoc,
		"seq changed":           bytes.Replace(doc, []byte(`"seq": 42`), []byte(`"seq": 41`), 1),
		"hash changed":          bytes.Replace(doc, []byte("abab"), []byte("abac"), 1),
		"not json":              []byte("seq 42"),
	} {
		if _, err := ParseCheckpoint(d, pub); err == nil {
			t.Errorf("ParseCheckpoint(%s) = nil error, want one", name)
		}
	}
}
