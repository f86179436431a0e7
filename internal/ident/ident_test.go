package ident_test

import (
	"regexp"
	"strings"
	"testing"

	"github.com/cobranca/cobranca/internal/ident"
)

// TestNew: fresh ids are valid, match their pattern, differ, and decode to bytes that encode
// back to them.
func TestNew(t *testing.T) {
	re := regexp.MustCompile(ident.Pattern("d_"))
	seen := map[string]bool{}
	for range 1000 {
		id := ident.New("d_")
		b, ok := ident.Decode("d_", id)
		if !ok || !ident.Valid("d_", id) || !re.MatchString(id) || len(id) != 2+ident.Chars || seen[id] {
			t.Fatalf("New = %q: Valid %v, pattern %v, seen %v", id, ok, re.MatchString(id), seen[id])
		}
		if again := ident.Encode("d_", b); again != id {
			t.Fatalf("Encode(Decode(%q)) = %q", id, again)
		}
		seen[id] = true
	}
}

// TestValidRefuses: only the spelling New makes is valid.
func TestValidRefuses(t *testing.T) {
	good := ident.Encode("f_", [ident.Size]byte{0xff, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 0xff})
	if !ident.Valid("f_", good) {
		t.Fatalf("Valid(%q) = false", good)
	}
	last := good[len(good)-1:]
	for name, s := range map[string]string{
		"another prefix":        "d_" + good[2:],
		"no prefix":             good[2:],
		"upper case":            "f_" + strings.ToUpper(good[2:]),
		"one character short":   good[:len(good)-1],
		"one character more":    good + "a",
		"a digit out of base32": good[:5] + "1" + good[6:],
		"hex":                   "f_0123456789abcdef0123456789",
		"a newline inside":      good[:5] + "\n" + good[6:len(good)-1],
		"padding":               good[:len(good)-1] + "=",
		"unused bits set":       good[:len(good)-1] + map[bool]string{true: "b", false: "z"}[last == "a" || last == "y"],
		"empty":                 "",
	} {
		if ident.Valid("f_", s) {
			t.Errorf("%s: Valid(%q) = true", name, s)
		}
	}
}

// FuzzDecode: whatever Decode accepts encodes back to exactly itself.
func FuzzDecode(f *testing.F) {
	f.Add("l_" + strings.Repeat("a", ident.Chars))
	f.Add("l_" + strings.Repeat("7", ident.Chars))
	f.Fuzz(func(t *testing.T, s string) {
		if b, ok := ident.Decode("l_", s); ok && ident.Encode("l_", b) != s {
			t.Fatalf("Decode(%q) = %x, which encodes to %q", s, b, ident.Encode("l_", b))
		}
	})
}
