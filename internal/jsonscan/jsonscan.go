// Package jsonscan reads the smallest pieces of JSON text (RFC 8259) —
// white space, string literals, numbers — at an offset into a document
// held as a string or a []byte. It is the one low-level lexer under
// cobranca's hand-written JSON readers: the bulk tool's decoder
// (internal/portfolio), the MCP envelope scanner (internal/mcpapi) and the
// output checker (internal/schema). Each of them keeps its own grammar,
// structure and error messages; what a string or a number is, and what it
// decodes to, is decided here, once, and held to encoding/json by the
// package's fuzz tests.
//
// Every function takes the document and the offset the piece starts at,
// and returns the offset just past it; on malformed input it returns the
// offset of the first byte at fault and a [Fault] saying what is wrong. No
// function allocates, but for the bytes [Decode] appends and the rare
// float conversion of [Float].
//
// Invalid UTF-8 is not a syntax error, as in encoding/json: [String]
// reports raw bytes from 0x80 (NonASCII) so that a caller who cares checks
// them, and [Decode] keeps them as sent. It decodes an unpaired surrogate
// escape either as encoding/json does or so that it stays detectable (see
// [Surrogates]).
package jsonscan

import (
	"math"
	"math/bits"
	"strconv"
	"unicode/utf8"
)

// Text is a JSON document held either way.
type Text interface{ string | []byte }

// A Fault says what is wrong at the offset a scan stopped at.
type Fault uint8

const (
	None         Fault = iota // nothing: the piece is well formed
	Unterminated              // the text ends inside a string
	Control                   // a raw control character (below 0x20) in a string
	BadEscape                 // a backslash followed by a character that is no escape
	BadUnicode                // \u not followed by four hex digits
	BadNumber                 // a number that breaks the grammar (or no number at all)
	OutOfRange                // a well-formed number beyond float64's range (Float only)
)

var faultText = [...]string{
	None:         "no fault",
	Unterminated: "unterminated string",
	Control:      "control character in string",
	BadEscape:    "invalid escape",
	BadUnicode:   `invalid \u escape`,
	BadNumber:    "invalid number",
	OutOfRange:   "number out of range",
}

// String is what is wrong, in a few words, for an error message.
func (f Fault) String() string {
	if int(f) < len(faultText) {
		return faultText[f]
	}
	return "fault " + strconv.Itoa(int(f))
}

// spaces has bit c set for the four white-space characters of JSON.
const spaces uint64 = 1<<' ' | 1<<'\t' | 1<<'\n' | 1<<'\r'

// Space returns the offset of the first byte of s at or after i that is
// not JSON white space (or len(s)).
func Space[T Text](s T, i int) int {
	for i < len(s) && s[i] <= ' ' && spaces>>s[i]&1 != 0 {
		i++
	}
	return i
}

// Flags describe a string literal [String] accepted.
type Flags uint8

const (
	// Escaped: the literal has at least one escape, so its contents are
	// not its bytes ([Decode] them).
	Escaped Flags = 1 << iota
	// NonASCII: the literal has a raw byte from 0x80 on, which may or may
	// not be valid UTF-8 (see utf8.Valid).
	NonASCII
	// Lone: the literal has a \u escape of a UTF-16 surrogate that is not
	// half of a pair (\uD800-\uDBFF directly followed by \uDC00-\uDFFF),
	// so it stands for no Unicode character.
	Lone
)

// String scans the string literal whose opening quote is s[i]. It returns
// the offset just past the closing quote and what the literal holds; or,
// when the literal is malformed, the offset of the byte at fault (the
// backslash of a bad escape, the control character, len(s)) and the
// fault. It checks escapes, not UTF-8.
func String[T Text](s T, i int) (end int, fl Flags, f Fault) {
	i++
	for {
		j, high := Stop(s, i)
		if high {
			fl |= NonASCII
		}
		if j == len(s) {
			return j, fl, Unterminated
		}
		switch c := s[j]; {
		case c == '"':
			return j + 1, fl, None
		case c < 0x20:
			return j, fl, Control
		}
		if j+1 < len(s) && unescape(s[j+1]) != 0 {
			fl |= Escaped
			i = j + 2
			continue
		}
		r, n, f := escape(s, j)
		if f != None {
			return j, fl, f
		}
		fl |= Escaped
		if isSurrogate(r) {
			fl |= Lone
		}
		i = j + n
	}
}

// Surrogates says what [Decode] writes for a \u escape of a UTF-16
// surrogate that is not half of a pair, which stands for no character.
type Surrogates uint8

const (
	// KeepSurrogates writes the three bytes UTF-8 would give the surrogate
	// if it allowed surrogates (it does not): the result is invalid UTF-8,
	// so a caller's UTF-8 check refuses it along with invalid raw bytes,
	// where encoding/json's silent U+FFFD would let it through.
	KeepSurrogates Surrogates = iota
	// ReplaceSurrogates writes U+FFFD, as encoding/json does. Raw bytes
	// are kept as sent all the same, where encoding/json writes U+FFFD for
	// each byte that is not part of valid UTF-8: the result is the same
	// runes (as ranging over a string, utf8.RuneCount and regexp read
	// them), and the same bytes when the literal's raw text is UTF-8.
	ReplaceSurrogates
)

// Decode appends to dst the contents of a string literal from s[i] — just
// past the opening quote, or any later offset up to which the contents are
// plain bytes (see [Stop]) the caller has taken already — to the closing
// quote, with escapes decoded (unpaired surrogates as sur says). It
// returns dst, the offset just past the closing quote, and None; or, on
// malformed input, dst as far as it got, the offset at fault and the fault
// (those [String] would report).
func Decode[T Text](dst []byte, s T, i int, sur Surrogates) ([]byte, int, Fault) {
	for {
		j := i
		if j < len(s) && s[j] >= 0x20 && s[j] != '"' && s[j] != '\\' {
			// A run of plain contents (escapes often come in a row, or
			// right before the closing quote, with none between).
			j, _ = Stop(s, i)
			dst = append(dst, s[i:j]...)
		}
		switch {
		case j == len(s):
			return dst, j, Unterminated
		case s[j] == '"':
			return dst, j + 1, None
		case s[j] < 0x20:
			return dst, j, Control
		case j+1 < len(s) && unescape(s[j+1]) != 0:
			dst = append(dst, unescape(s[j+1]))
			i = j + 2
			continue
		}
		r, n, f := escape(s, j)
		switch {
		case f != None:
			return dst, j, f
		case isSurrogate(r) && sur == ReplaceSurrogates:
			dst = utf8.AppendRune(dst, utf8.RuneError)
		case isSurrogate(r):
			dst = append(dst, byte(0xE0|r>>12), byte(0x80|(r>>6)&0x3F), byte(0x80|r&0x3F))
		default:
			dst = utf8.AppendRune(dst, r)
		}
		i = j + n
	}
}

func isSurrogate(r rune) bool { return r >= 0xD800 && r < 0xE000 }

// escape reads the escape whose backslash is s[i]. It returns the
// character it stands for, its length in bytes, and None; a \u escape of
// a high surrogate directly followed by a \u escape of a low one is read
// as the pair (12 bytes), and any other surrogate is returned as itself.
func escape[T Text](s T, i int) (r rune, n int, f Fault) {
	if i+1 >= len(s) {
		return 0, 0, Unterminated
	}
	if c := unescape(s[i+1]); c != 0 {
		return rune(c), 2, None
	}
	if s[i+1] == 'u' {
		r, ok := hex4(s, i+2)
		if !ok {
			return 0, 0, BadUnicode
		}
		if r >= 0xD800 && r < 0xDC00 && i+12 <= len(s) && s[i+6] == '\\' && s[i+7] == 'u' {
			if lo, ok := hex4(s, i+8); ok && lo >= 0xDC00 && lo < 0xE000 {
				return 0x10000 + (r-0xD800)<<10 + (lo - 0xDC00), 12, None
			}
		}
		return r, 6, None
	}
	return 0, 0, BadEscape
}

// unescape is the character a backslash and c stand for, when c makes one
// of the two-character escapes, or 0.
func unescape(c byte) byte {
	switch c {
	case '"', '\\', '/':
		return c
	case 'b':
		return '\b'
	case 'f':
		return '\f'
	case 'n':
		return '\n'
	case 'r':
		return '\r'
	case 't':
		return '\t'
	}
	return 0
}

// hex4 decodes the four hex digits at s[i:].
func hex4[T Text](s T, i int) (rune, bool) {
	if i+4 > len(s) {
		return 0, false
	}
	var r rune
	for k := i; k < i+4; k++ {
		c := s[k]
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c -= 'a' - 10
		case c >= 'A' && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}

// Stop returns the offset of the first byte of s at or after i that ends a
// run of plain string contents — '"', '\\' or a control character — or
// len(s); and whether the run has a byte from 0x80 on. It reads eight
// bytes at a time while they last.
func Stop[T Text](s T, i int) (j int, nonASCII bool) {
	var seen uint64 // the bytes of the run, or-ed together
	for ; i+8 <= len(s); i += 8 {
		w := load64(s, i)
		if m := stops8(w); m != 0 {
			k := bits.TrailingZeros64(m) / 8
			seen |= w & (1<<(8*k) - 1)
			return i + k, seen&msb != 0
		}
		seen |= w
	}
	for ; i < len(s); i++ {
		c := s[i]
		if c == '"' || c == '\\' || c < 0x20 {
			break
		}
		seen |= uint64(c)
	}
	return i, seen&msb != 0
}

// Word-at-a-time ("SWAR") tests: short strings of plain ASCII are the
// common case, and these cost a few instructions a word where a loop costs
// a few a byte. A test sets the top bit of each byte of interest;
// arithmetic across the word carries or borrows into the next byte only
// out of a byte that is itself of interest, so the lowest byte flagged is
// always right and a word with none flagged has none.
const (
	lsb = 0x0101010101010101 // 1 in every byte
	msb = 0x8080808080808080 // the top bit of every byte
)

// load64 returns s[i:i+8] as a little-endian word; the compiler makes it
// one load.
func load64[T Text](s T, i int) uint64 {
	b := s[i : i+8]
	return uint64(b[0]) | uint64(b[1])<<8 | uint64(b[2])<<16 | uint64(b[3])<<24 |
		uint64(b[4])<<32 | uint64(b[5])<<40 | uint64(b[6])<<48 | uint64(b[7])<<56
}

// zeroByte sets the top bit of the first zero byte of x, if any, and maybe
// of later bytes; the other bits mean nothing.
func zeroByte(x uint64) uint64 { return (x - lsb) &^ x }

// stops8 returns a word whose lowest set bit is the top bit of the first
// byte of w, in memory order, that is '"', '\\' or a control character, or
// 0 if there is none.
func stops8(w uint64) uint64 {
	return (zeroByte(w^('"'*lsb)) | zeroByte(w^('\\'*lsb)) | (w-0x20*lsb)&^w) & msb
}

// number is where the parts of a well-formed number are: s[start:end] is
// the literal, s[intStart:intEnd] its integer digits, s[fracStart:fracEnd]
// its fraction digits (empty, at intEnd, when it has none); exp is the
// exponent's value, saturated far beyond any digit count a document can
// have.
type number struct {
	start, end         int
	neg, hasExp        bool
	intStart, intEnd   int
	fracStart, fracEnd int
	exp                int64 // int64 so that 32-bit builds saturate where 64-bit ones do
}

// scanNumber reads the number at s[i] (RFC 8259: -?(0|[1-9][0-9]*)
// (\.[0-9]+)?([eE][+-]?[0-9]+)?). On a fault, n.end is its offset.
func scanNumber[T Text](s T, i int) (n number, f Fault) {
	n.start = i
	if i < len(s) && s[i] == '-' {
		n.neg = true
		i++
	}
	n.intStart = i
	switch {
	case i < len(s) && s[i] == '0':
		i++
	case i < len(s) && s[i] >= '1' && s[i] <= '9':
		for i < len(s) && s[i]-'0' <= 9 {
			i++
		}
	default:
		n.end = i
		return n, BadNumber
	}
	n.intEnd, n.fracStart, n.fracEnd = i, i, i
	if i < len(s) && s[i] == '.' {
		i++
		n.fracStart = i
		for i < len(s) && s[i]-'0' <= 9 {
			i++
		}
		n.fracEnd = i
		if n.fracStart == n.fracEnd {
			n.end = i
			return n, BadNumber
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		n.hasExp = true
		i++
		neg := false
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			neg = s[i] == '-'
			i++
		}
		if i >= len(s) || s[i]-'0' > 9 {
			n.end = i
			return n, BadNumber
		}
		for ; i < len(s) && s[i]-'0' <= 9; i++ {
			if n.exp < 1<<40 {
				n.exp = n.exp*10 + int64(s[i]-'0')
			}
		}
		if neg {
			n.exp = -n.exp
		}
	}
	n.end = i
	return n, None
}

// Number scans the number at s[i] and returns the offset just past it; or
// the offset at fault and BadNumber.
func Number[T Text](s T, i int) (end int, f Fault) {
	n, f := scanNumber(s, i)
	return n.end, f
}

// Int reads the number at s[i] as an integer: integral reports whether its
// value is exactly an integer however it is written (100, 100.0, 1e2,
// 1.5e1 and -0 are; 1.5 and 1e-1 are not), and v is that integer, with
// values beyond int64 saturated to math.MaxInt64 or math.MinInt64. end is
// the offset past the number; on a fault, as [Number].
func Int[T Text](s T, i int) (v int64, end int, integral bool, f Fault) {
	if v, j := PlainInt(s, i); j > i {
		return v, j, true, None
	}
	n, f := scanNumber(s, i)
	if f != None {
		return 0, n.end, false, f
	}
	v, integral = exactInt(s, n)
	return v, n.end, integral, None
}

// PlainInt is [Int]'s fast path, small enough to be inlined in a caller
// that reads many integers: for a positive integer of 1 to 18 digits,
// written plainly (the usual spelling, which cannot overflow), it returns
// its value and the offset past it; for anything else, 0 and i.
func PlainInt[T Text](s T, i int) (v int64, end int) {
	j := i
	for ; j < len(s) && s[j]-'0' <= 9; j++ {
		v = v*10 + int64(s[j]-'0') // overflows only past 18 digits, refused below
	}
	if n := j - i; n == 0 || n > 18 || s[i] == '0' || j < len(s) && (s[j] == '.' || s[j]|0x20 == 'e') {
		return 0, i
	}
	return v, j
}

// exactInt is the value of the well-formed number n, if it is an integer.
func exactInt[T Text](s T, n number) (int64, bool) {
	// The value is digits × 10^(exp - len(frac)), digits being the integer
	// and fraction digits in a row. Trim zeros at both ends of the digits.
	nInt := n.intEnd - n.intStart
	nFrac := n.fracEnd - n.fracStart
	digit := func(k int) byte { // the k-th digit of the row
		if k < nInt {
			return s[n.intStart+k]
		}
		return s[n.fracStart+k-nInt]
	}
	nd := nInt + nFrac
	first, last := 0, nd-1
	for first < nd && digit(first) == '0' {
		first++
	}
	if first == nd {
		return 0, true // zero, however written
	}
	for digit(last) == '0' {
		last--
	}
	exp := n.exp + int64(nd-1-last-nFrac)
	if exp < 0 {
		return 0, false
	}
	var v uint64
	if int64(last-first+1)+exp > 19 { // at least 10^19 > MaxInt64
		v = math.MaxUint64
	} else {
		for k := first; k <= last; k++ {
			v = v*10 + uint64(digit(k)-'0')
		}
		for ; exp > 0; exp-- {
			v *= 10 // 19 digits at most: cannot overflow uint64
		}
	}
	switch {
	case n.neg && v > 1<<63:
		return math.MinInt64, true
	case n.neg:
		return -int64(v), true
	case v > math.MaxInt64:
		return math.MaxInt64, true
	}
	return int64(v), true
}

// Float reads the number at s[i] as encoding/json reads it into a float64:
// the nearest float64, or OutOfRange (at the end of the number) when its
// magnitude is beyond float64's. integral reports whether that float64 is
// an integer (JSON Schema's "integer", as validators that decode into
// float64 judge it). end is the offset past the number; on a fault, as
// [Number].
func Float[T Text](s T, i int) (v float64, end int, integral bool, f Fault) {
	// Fast path: a plain integer of 1 to 15 digits is below 2^53, so exact
	// in a float64.
	j := i
	neg := j < len(s) && s[j] == '-'
	if neg {
		j++
	}
	d := j
	var u uint64 // meaningful up to 19 digits
	for ; j < len(s) && s[j]-'0' <= 9; j++ {
		u = u*10 + uint64(s[j]-'0')
	}
	if nd := j - d; nd > 0 && nd <= 15 && (s[d] != '0' || nd == 1) && (j == len(s) || s[j] != '.' && s[j]|0x20 != 'e') {
		v = float64(u)
		if neg {
			v = -v // -0 too, as strconv reads it
		}
		return v, j, true, None
	}
	n, f := scanNumber(s, i)
	if f != None {
		return 0, n.end, false, f
	}
	v, err := strconv.ParseFloat(string(s[n.start:n.end]), 64)
	if err != nil {
		return 0, n.end, false, OutOfRange
	}
	return v, n.end, v == math.Trunc(v), None
}
