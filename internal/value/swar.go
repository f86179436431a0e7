package value

// Scanning eight bytes at a time, in a uint64 ("SWAR"): short strings of
// plain ASCII are the common case for ids, names and dates, and these
// tests cost a few instructions a word where a loop costs a few a byte.

// load64 returns the first eight bytes of s as a little-endian word; the
// compiler makes it one load.
func load64(s string) uint64 {
	_ = s[7]
	return uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
		uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
}

const (
	lsb = 0x0101010101010101 // 1 in every byte
	msb = 0x8080808080808080 // the top bit of every byte
)

// printableASCII8 reports whether every byte of w is from 0x20 to 0x7e. A
// byte outside sets its top bit in w (from 0x80), in w-0x20 (under 0x20) or
// in w+1 (0x7f); arithmetic across the word can carry or borrow into the
// next byte only out of a byte that is itself outside.
func printableASCII8(w uint64) bool {
	return (w|(w-0x20*lsb)|(w+lsb))&msb == 0
}
