package portfolio

import (
	"encoding/binary"
	"math/bits"
	"math/rand/v2"
	"testing"
)

// The word tests against byte-by-byte statements of the same rules.

func jsonSafeByte(c byte, html bool) bool {
	return c >= 0x20 && c < 0x80 && c != '"' && c != '\\' && !(html && (c == '<' || c == '>' || c == '&'))
}

// firstByte returns the index of the first byte of w that f holds for, or 8.
func firstByte(w uint64, f func(byte) bool) int {
	for i := range 8 {
		if f(byte(w >> (8 * i))) {
			return i
		}
	}
	return 8
}

// interestingWords yields words made of bytes next to every boundary the
// tests draw, in every position, so that borrows and carries run across
// them; then every byte value in every position; then random words.
func interestingWords(yield func(uint64) bool) {
	near := []byte{0x00, 0x01, 0x1f, 0x20, 0x21, 0x22, 0x23, 0x25, 0x26, 0x27, 0x3b, 0x3c, 0x3d, 0x3e, 0x3f,
		0x5b, 0x5c, 0x5d, 0x7e, 0x7f, 0x80, 0x81, 0x9f, 0xa0, 0xdf, 0xe0, 0xfe, 0xff}
	r := rand.New(rand.NewPCG(1, 2))
	for range 300_000 {
		var w uint64
		for i := range 8 {
			w |= uint64(near[r.IntN(len(near))]) << (8 * i)
		}
		if !yield(w) {
			return
		}
	}
	for p := range 8 {
		for c := range 256 {
			for range 20 {
				w := r.Uint64()&^(0xff<<(8*p)) | uint64(c)<<(8*p)
				if !yield(w) {
					return
				}
			}
		}
	}
	for range 300_000 {
		if !yield(r.Uint64()) {
			return
		}
	}
}

func TestJSONSafe8(t *testing.T) {
	for w := range interestingWords {
		for _, html := range []bool{false, true} {
			want := firstByte(w, func(c byte) bool { return !jsonSafeByte(c, html) }) == 8
			if got := jsonSafe8(w, html); got != want {
				t.Fatalf("jsonSafe8(%#016x, %v) = %v, want %v", w, html, got, want)
			}
		}
	}
}

func TestHasZeroByte(t *testing.T) {
	for w := range interestingWords {
		want := firstByte(w, func(c byte) bool { return c == 0 })
		got := 8
		if m := hasZeroByte(w) & msb; m != 0 {
			got = bits.TrailingZeros64(m) / 8
		}
		if got != want {
			t.Fatalf("hasZeroByte(%#016x) finds byte %d, want %d", w, got, want)
		}
	}
}

func TestLoad(t *testing.T) {
	b := []byte("0123456789abcdef")
	for i := 0; i+8 <= len(b); i++ {
		if got, want := load64(string(b[i:])), binary.LittleEndian.Uint64(b[i:]); got != want {
			t.Errorf("load64(%q) = %#x, want %#x", b[i:], got, want)
		}
		if got, want := load32(string(b[i:])), binary.LittleEndian.Uint32(b[i:]); got != want {
			t.Errorf("load32(%q) = %#x, want %#x", b[i:], got, want)
		}
	}
}
