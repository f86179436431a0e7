package portfolio

// Scanning eight bytes at a time, in a uint64 ("SWAR"): short strings of
// plain ASCII are the common case everywhere in this package, and these
// tests cost a few instructions a word where a loop costs a few a byte.
// Each test sets the top bit of a byte that is of interest; arithmetic
// across the word can carry or borrow into the next byte only out of a
// byte that is itself of interest, so the lowest byte flagged is always
// right and a word with none flagged has none.

// load64 returns the first eight bytes of s as a little-endian word; the
// compiler makes it one load.
func load64(s string) uint64 {
	_ = s[7]
	return uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
		uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
}

// load32 is load64 for four bytes.
func load32(s string) uint32 {
	_ = s[3]
	return uint32(s[0]) | uint32(s[1])<<8 | uint32(s[2])<<16 | uint32(s[3])<<24
}

const (
	lsb = 0x0101010101010101 // 1 in every byte
	msb = 0x8080808080808080 // the top bit of every byte
)

// hasZeroByte sets the top bit of the first zero byte of x, if any, and
// maybe of later bytes; the other bits mean nothing.
func hasZeroByte(x uint64) uint64 { return (x - lsb) &^ x }

// jsonSafe8 reports whether every byte of w stands for itself inside a
// JSON string as encoding/json writes it: ASCII from 0x20, but for '"' and
// '\\', and for '<', '>' and '&' when html is set. A byte outside sets its
// top bit in w (from 0x80), in w-0x20 (under 0x20), or in hasZeroByte of w
// xor that character repeated.
func jsonSafe8(w uint64, html bool) bool {
	t := w | (w - 0x20*lsb) | hasZeroByte(w^('"'*lsb)) | hasZeroByte(w^('\\'*lsb))
	if html {
		t |= hasZeroByte(w^('<'*lsb)) | hasZeroByte(w^('>'*lsb)) | hasZeroByte(w^('&'*lsb))
	}
	return t&msb == 0
}
