package jsonscan

import (
	"bytes"
	"encoding/json"
	"math"
	"math/big"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

// Every function is generic over string and []byte: the tests run each
// case through both instantiations and require the same answer.

func stopByte(c byte) bool { return c == '"' || c == '\\' || c < 0x20 }

// TestStop holds the word-at-a-time scan to a byte loop: every byte value
// at every position of runs of every length and alignment, so that borrows
// and carries cross every boundary, and random runs.
func TestStop(t *testing.T) {
	check := func(s string, from int) {
		t.Helper()
		want, high := from, false
		for want < len(s) && !stopByte(s[want]) {
			high = high || s[want] >= 0x80
			want++
		}
		j, h := Stop(s, from)
		jb, hb := Stop([]byte(s), from)
		if j != want || h != high || jb != j || hb != h {
			t.Fatalf("Stop(%q, %d) = %d, %v ([]byte: %d, %v); want %d, %v", s, from, j, h, jb, hb, want, high)
		}
	}
	near := []byte{0x00, 0x01, 0x1f, 0x20, 0x21, 0x22, 0x23, 0x5b, 0x5c, 0x5d, 0x7e, 0x7f, 0x80, 0x81, 0xa0, 0xdc, 0xdd, 0xfe, 0xff}
	for n := range 20 {
		for p := range n {
			for c := range 256 {
				b := bytes.Repeat([]byte{'a'}, n)
				b[p] = byte(c)
				for from := range min(n, 9) {
					check(string(b), from)
				}
				if p > 0 {
					b[p-1] = 0xc3 // a high byte before the one of interest
					check(string(b), 0)
				}
			}
		}
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 200_000 {
		b := make([]byte, r.IntN(40))
		for i := range b {
			b[i] = near[r.IntN(len(near))]
		}
		check(string(b), r.IntN(len(b)+1))
	}
}

func TestSpace(t *testing.T) {
	for _, tt := range []struct {
		s       string
		from, j int
	}{
		{"", 0, 0}, {" \t\r\n x", 0, 5}, {"x", 0, 0}, {"  ", 1, 2}, {"\v\f x", 0, 0}, {" \u00a0", 0, 1}, {"\x00", 0, 0},
	} {
		if j, jb := Space(tt.s, tt.from), Space([]byte(tt.s), tt.from); j != tt.j || jb != tt.j {
			t.Errorf("Space(%q, %d) = %d ([]byte: %d), want %d", tt.s, tt.from, j, jb, tt.j)
		}
	}
	for c := range 256 {
		want := c == ' ' || c == '\t' || c == '\n' || c == '\r'
		if got := Space(string([]byte{byte(c)}), 0) == 1; got != want {
			t.Errorf("Space(%#x) skips it: %v, want %v", c, got, want)
		}
	}
}

// stringCases are literals with what String and Decode make of them; the
// offsets at fault are the ones the bulk tool's error messages quote.
var stringCases = []struct {
	lit        string
	end        int
	fl         Flags
	f          Fault
	keep, repl string // Decode's contents (on a fault: as far as it got)
}{
	{`""`, 2, 0, None, "", ""},
	{`"abc" tail`, 5, 0, None, "abc", "abc"},
	{`"é 日本 😀"`, len(`"é 日本 😀"`), NonASCII, None, "é 日本 😀", "é 日本 😀"},
	{`"a\"b\\c\/d\b\f\n\r\t"`, 22, Escaped, None, "a\"b\\c/d\b\f\n\r\t", "a\"b\\c/d\b\f\n\r\t"},
	{`"\u00e9\u00C9\u0000"`, 20, Escaped, None, "éÉ\x00", "éÉ\x00"},
	{`"\ud83d\ude00"`, 14, Escaped, None, "😀", "😀"},
	{`"\uD83D\uDE00x"`, 15, Escaped, None, "😀x", "😀x"},
	{`"a\ud800"`, 9, Escaped | Lone, None, "a\xed\xa0\x80", "a\ufffd"},
	{`"\udc00inv"`, 11, Escaped | Lone, None, "\xed\xb0\x80inv", "\ufffdinv"},
	{`"\ude00\ud83d"`, 14, Escaped | Lone, None, "\xed\xb8\x80\xed\xa0\xbd", "\ufffd\ufffd"},
	// A high surrogate then another high one that pairs with what follows:
	// the first is lone, the second half of a pair (encoding/json's reading).
	{`"\ud800\ud83d\ude00"`, 20, Escaped | Lone, None, "\xed\xa0\x80😀", "\ufffd😀"},
	{`"\ud800\u0041"`, 14, Escaped | Lone, None, "\xed\xa0\x80A", "\ufffdA"},
	{`"\ud800\n"`, 10, Escaped | Lone, None, "\xed\xa0\x80\n", "\ufffd\n"},
	{"\"\xff\xfe\"", 4, NonASCII, None, "\xff\xfe", "\xff\xfe"},
	{"\"\xed\xa0\x80\"", 5, NonASCII, None, "\xed\xa0\x80", "\xed\xa0\x80"},
	{"\"\xe9\x80\\n\xc3\xa9\"", 8, NonASCII | Escaped, None, "\xe9\x80\né", "\xe9\x80\né"},
	{"\"0123456789\xff\"", 13, NonASCII, None, "0123456789\xff", "0123456789\xff"},
	// A raw leading byte before an escape's character: kept, still invalid.
	{"\"\xc3\\u00a9\"", 9, NonASCII | Escaped, None, "\xc3©", "\xc3©"},
	{`"abc`, 4, 0, Unterminated, "abc", "abc"},
	{`"abc\`, 4, 0, Unterminated, "abc", "abc"},
	{`"`, 1, 0, Unterminated, "", ""},
	{"\"Cliente\x01 0\"", 8, 0, Control, "Cliente", "Cliente"},
	{"\"a\tb\"", 2, 0, Control, "a", "a"},
	{`"Cli\xente"`, 4, 0, BadEscape, "Cli", "Cli"},
	{`"a\'"`, 2, 0, BadEscape, "a", "a"},
	{`"ab\u12"`, 3, 0, BadUnicode, "ab", "ab"},
	{`"ab\u12g4"`, 3, 0, BadUnicode, "ab", "ab"},
	{`"\ud800\u12"`, 7, Escaped | Lone, BadUnicode, "\xed\xa0\x80", "\ufffd"},
	{`"\ud83d\ude0"`, 7, Escaped | Lone, BadUnicode, "\xed\xa0\xbd", "\ufffd"},
}

func TestString(t *testing.T) {
	for _, tt := range stringCases {
		end, fl, f := String(tt.lit, 0)
		endb, flb, fb := String([]byte(tt.lit), 0)
		if end != tt.end || fl != tt.fl || f != tt.f || endb != end || flb != fl || fb != f {
			t.Errorf("String(%q) = %d, %b, %v ([]byte: %d, %b, %v); want %d, %b, %v", tt.lit, end, fl, f, endb, flb, fb, tt.end, tt.fl, tt.f)
		}
		for _, c := range []struct {
			sur  Surrogates
			want string
		}{{KeepSurrogates, tt.keep}, {ReplaceSurrogates, tt.repl}} {
			got, end, f := Decode(nil, tt.lit, 1, c.sur)
			gotb, endb, fb := Decode(make([]byte, 0, 1), []byte(tt.lit), 1, c.sur)
			if string(got) != c.want || end != tt.end || f != tt.f || string(gotb) != c.want || endb != end || fb != f {
				t.Errorf("Decode(%q, %d) = %q, %d, %v ([]byte: %q, %d, %v); want %q, %d, %v",
					tt.lit, c.sur, got, end, f, gotb, endb, fb, c.want, tt.end, tt.f)
			}
		}
	}
}

// TestDecodeFromOffset: a caller that has taken a plain prefix already
// decodes from where it stopped, and gets what decoding it whole gives.
func TestDecodeFromOffset(t *testing.T) {
	for _, lit := range []string{`"plain part\u00e9 rest"`, "\"bad \xff\xc3 prefix\\n\"", "\"\xe2\x82\\u0041\"", `"\ud800"`} {
		for _, inv := range []Surrogates{KeepSurrogates, ReplaceSurrogates} {
			whole, wend, wf := Decode(nil, lit, 1, inv)
			j, _ := Stop(lit, 1)
			got, end, f := Decode([]byte(lit[1:j]), lit, j, inv)
			if string(got) != string(whole) || end != wend || f != wf || f != None {
				t.Errorf("Decode(%q, %d) from %d = %q, %d, %v; from 1: %q, %d, %v", lit, inv, j, got, end, f, whole, wend, wf)
			}
		}
	}
}

func TestFaultString(t *testing.T) {
	for f, want := range map[Fault]string{Unterminated: "unterminated string", Control: "control character in string",
		BadEscape: "invalid escape", BadUnicode: `invalid \u escape`, BadNumber: "invalid number", OutOfRange: "number out of range", Fault(99): "fault 99"} {
		if got := f.String(); got != want {
			t.Errorf("Fault(%d).String() = %q, want %q", f, got, want)
		}
	}
}

var numberCases = []struct {
	lit      string
	end      int
	f        Fault
	v        int64 // Int
	integral bool  // Int
}{
	{"0", 1, None, 0, true},
	{"-0", 2, None, 0, true},
	{"123,", 3, None, 123, true},
	{"100.0", 5, None, 100, true},
	{"1e2", 3, None, 100, true},
	{"1E+2}", 4, None, 100, true},
	{"15e-1", 5, None, 0, false},
	{"1.5e1", 5, None, 15, true},
	{"1500e-2", 7, None, 15, true},
	{"0.000e5", 7, None, 0, true},
	{"0e-99999999999", 14, None, 0, true},
	{"1.5", 3, None, 0, false},
	{"1e-1", 4, None, 0, false},
	{"-12345678901234567890", 21, None, math.MinInt64, true},
	{"9223372036854775807", 19, None, math.MaxInt64, true},
	{"9223372036854775808", 19, None, math.MaxInt64, true},
	{"-9223372036854775808", 20, None, math.MinInt64, true},
	{"-9223372036854775807", 20, None, -math.MaxInt64, true},
	{"123456789012345678", 18, None, 123456789012345678, true},
	{"1234567890123456789", 19, None, 1234567890123456789, true},
	{"1e18", 4, None, 1_000_000_000_000_000_000, true},
	{"1e19", 4, None, math.MaxInt64, true},
	{"1e99999999999999", 16, None, math.MaxInt64, true},
	{"-", 1, BadNumber, 0, false},
	{"-x", 1, BadNumber, 0, false},
	{"x", 0, BadNumber, 0, false},
	{"", 0, BadNumber, 0, false},
	{"01", 1, None, 0, true}, // the number is 0; what follows is the caller's
	{"1.", 2, BadNumber, 0, false},
	{"1.e5", 2, BadNumber, 0, false},
	{".5", 0, BadNumber, 0, false},
	{"1e", 2, BadNumber, 0, false},
	{"1e+", 3, BadNumber, 0, false},
	{"+1", 0, BadNumber, 0, false},
}

func TestNumber(t *testing.T) {
	for _, tt := range numberCases {
		end, f := Number(tt.lit, 0)
		endb, fb := Number([]byte(tt.lit), 0)
		if end != tt.end || f != tt.f || endb != end || fb != f {
			t.Errorf("Number(%q) = %d, %v ([]byte: %d, %v); want %d, %v", tt.lit, end, f, endb, fb, tt.end, tt.f)
		}
		// PlainInt takes plain positive integers of up to 18 digits, and
		// nothing else.
		plain := tt.f == None && tt.end <= 18 && tt.lit[0] >= '1' && tt.lit[0] <= '9' && !strings.ContainsAny(tt.lit[:tt.end], ".eE")
		if pv, pend := PlainInt(tt.lit, 0); plain != (pend > 0) || plain && (pv != tt.v || pend != tt.end) {
			t.Errorf("PlainInt(%q) = %d, %d; plain: %v", tt.lit, pv, pend, plain)
		}
		v, end, integral, f := Int(tt.lit, 0)
		vb, endb, integralb, fb := Int([]byte(tt.lit), 0)
		if v != tt.v || end != tt.end || integral != tt.integral || f != tt.f || vb != v || endb != end || integralb != integral || fb != f {
			t.Errorf("Int(%q) = %d, %d, %v, %v ([]byte: %d, %d, %v, %v); want %d, %d, %v, %v",
				tt.lit, v, end, integral, f, vb, endb, integralb, fb, tt.v, tt.end, tt.integral, tt.f)
		}
	}
}

func TestFloat(t *testing.T) {
	for _, tt := range []struct {
		lit      string
		v        float64
		integral bool
		f        Fault
	}{
		{"0", 0, true, None},
		{"-0", math.Copysign(0, -1), true, None},
		{"123456789012345", 123456789012345, true, None},
		{"-1234567890123456789", -1234567890123456789, true, None},
		{"1.5", 1.5, false, None},
		{"1.0", 1, true, None},
		{"1e400", 0, false, OutOfRange},
		{"-1e400", 0, false, OutOfRange},
		{"1e-400", 0, true, None},
		{"1.00000000000000000001", 1, true, None}, // as a float64 it is 1
		{"1e", 0, false, BadNumber},
	} {
		v, _, integral, f := Float(tt.lit, 0)
		vb, _, integralb, fb := Float([]byte(tt.lit), 0)
		if math.Float64bits(v) != math.Float64bits(tt.v) || integral != tt.integral || f != tt.f || vb != v || integralb != integral || fb != f {
			t.Errorf("Float(%q) = %v, %v, %v ([]byte: %v, %v, %v); want %v, %v, %v", tt.lit, v, integral, f, vb, integralb, fb, tt.v, tt.integral, tt.f)
		}
	}
}

// FuzzString holds String and Decode to encoding/json: a literal String
// accepts whole is one encoding/json accepts, and the other way round;
// Decode with ReplaceSurrogates gives encoding/json's value; with KeepSurrogates
// it gives the same whenever that is valid UTF-8, and invalid UTF-8
// exactly when the literal has invalid raw bytes or a lone surrogate.
func FuzzString(f *testing.F) {
	for _, tt := range stringCases {
		f.Add([]byte(tt.lit))
	}
	f.Add([]byte(`"` + strings.Repeat("0123456789abcdef", 3) + `\u00e9"`))
	f.Fuzz(func(t *testing.T, lit []byte) {
		if len(lit) == 0 || lit[0] != '"' {
			return
		}
		end, fl, flt := String(lit, 0)
		ends, fls, flts := String(string(lit), 0)
		if ends != end || fls != fl || flts != flt {
			t.Fatalf("String(%q): string %d, %b, %v; []byte %d, %b, %v", lit, ends, fls, flts, end, fl, flt)
		}
		// encoding/json takes white space after the value.
		accepted := flt == None && Space(lit, end) == len(lit)
		var want string
		stdErr := json.Unmarshal(lit, &want)
		if accepted != (stdErr == nil) {
			t.Fatalf("String(%q) = %d, %v; encoding/json: %v", lit, end, flt, stdErr)
		}
		if flt == None && !json.Valid(lit[:end]) {
			t.Fatalf("String(%q) accepted %q, which encoding/json refuses", lit, lit[:end])
		}
		if flt != None {
			if end > len(lit) || end < 1 {
				t.Fatalf("String(%q) faults at %d", lit, end)
			}
			return
		}
		body := lit[1 : end-1]
		if (fl&Escaped != 0) != (bytes.IndexByte(body, '\\') >= 0) || (fl&NonASCII != 0) != bytes.ContainsFunc(body, func(r rune) bool { return r >= utf8.RuneSelf }) {
			t.Fatalf("String(%q) flags %b", lit, fl)
		}
		if !accepted {
			return
		}
		// ReplaceSurrogates: encoding/json's runes; its bytes, when the raw
		// text is UTF-8.
		sameAsJSON := func(got []byte) bool {
			return slices.Equal([]rune(string(got)), []rune(want)) && (!utf8.Valid(body) || string(got) == want)
		}
		repl, dend, df := Decode(nil, lit, 1, ReplaceSurrogates)
		if !sameAsJSON(repl) || dend != end || df != None {
			t.Fatalf("Decode(%q, ReplaceSurrogates) = %q, %d, %v; encoding/json %q", lit, repl, dend, df, want)
		}
		j, _ := Stop(lit, 1)
		if rest, rend, rf := Decode(append([]byte(nil), lit[1:j]...), lit, j, ReplaceSurrogates); string(rest) != string(repl) || rend != end || rf != None {
			t.Fatalf("Decode(%q, ReplaceSurrogates) from %d = %q, %d, %v; from 1 %q", lit, j, rest, rend, rf, repl)
		}
		keep, dend, df := Decode(nil, string(lit), 1, KeepSurrogates)
		if dend != end || df != None {
			t.Fatalf("Decode(%q, KeepSurrogates) = %q, %d, %v", lit, keep, dend, df)
		}
		if valid := utf8.Valid(keep); valid != (utf8.Valid(body) && fl&Lone == 0) || valid && string(keep) != want {
			t.Fatalf("Decode(%q, KeepSurrogates) = %q (valid UTF-8: %v), lone: %v; encoding/json %q", lit, keep, valid, fl&Lone != 0, want)
		}
		if fl&Escaped == 0 && (string(keep) != string(body)) {
			t.Fatalf("Decode(%q, KeepSurrogates) = %q, want the bytes as sent", lit, keep)
		}
	})
}

// FuzzNumber holds Number, Int and Float to encoding/json and to exact
// arithmetic: a number Number accepts whole is one encoding/json accepts,
// and the other way round; Float's value is encoding/json's float64 (its
// range error is OutOfRange); Int's is the exact value, saturated.
func FuzzNumber(f *testing.F) {
	for _, tt := range numberCases {
		f.Add([]byte(tt.lit))
	}
	f.Add([]byte("1e400"))
	f.Add([]byte("0.1e1"))
	f.Fuzz(func(t *testing.T, lit []byte) {
		end, flt := Number(lit, 0)
		if ends, flts := Number(string(lit), 0); ends != end || flts != flt {
			t.Fatalf("Number(%q): string %d, %v; []byte %d, %v", lit, ends, flts, end, flt)
		}
		if end < 0 || end > len(lit) {
			t.Fatalf("Number(%q) ends at %d", lit, end)
		}
		accepted := flt == None && end == len(lit)
		isNumber := len(lit) > 0 && (lit[0] == '-' || lit[0] >= '0' && lit[0] <= '9') && json.Valid(lit) &&
			lit[len(lit)-1] >= '0' && lit[len(lit)-1] <= '9'
		if accepted != isNumber {
			t.Fatalf("Number(%q) = %d, %v; encoding/json takes it for a number: %v", lit, end, flt, isNumber)
		}
		if flt == None && !json.Valid(lit[:end]) {
			t.Fatalf("Number(%q) accepted %q, which encoding/json refuses", lit, lit[:end])
		}
		v, fend, integral, ff := Float(lit, 0)
		var want float64
		stdErr := json.Unmarshal(lit[:end], &want)
		switch {
		case flt != None:
			if ff != flt || fend != end {
				t.Fatalf("Float(%q) = %d, %v; Number %d, %v", lit, fend, ff, end, flt)
			}
		case stdErr != nil:
			if ff != OutOfRange {
				t.Fatalf("Float(%q) = %v, %v; encoding/json: %v", lit, v, ff, stdErr)
			}
		case ff != None || fend != end || math.Float64bits(v) != math.Float64bits(want) || integral != (want == math.Trunc(want)):
			t.Fatalf("Float(%q) = %v, %d, %v, %v; encoding/json %v", lit, v, fend, integral, ff, want)
		}
		iv, iend, iintegral, iff := Int(lit, 0)
		if iff != flt || iend != end {
			t.Fatalf("Int(%q) = %d, %v; Number %d, %v", lit, iend, iff, end, flt)
		}
		if pv, pend := PlainInt(lit, 0); pend != 0 && (pend != end || flt != None || !iintegral || pv != iv || pv <= 0) {
			t.Fatalf("PlainInt(%q) = %d, %d; Int %d, %d, %v, %v", lit, pv, pend, iv, iend, iintegral, iff)
		}
		if pv, pend := PlainInt(string(lit), 0); pend != 0 && pend != end || pv != 0 && pv != iv {
			t.Fatalf("PlainInt(%q) (string) = %d, %d; Int %d, %d", lit, pv, pend, iv, iend)
		}
		if flt != None {
			return
		}
		wantV, wantIntegral, sure := exact(string(lit[:end]))
		if sure && (iintegral != wantIntegral || iintegral && iv != wantV) {
			t.Fatalf("Int(%q) = %d, %v; want %d, %v", lit, iv, iintegral, wantV, wantIntegral)
		}
	})
}

// exact is the value of a well-formed number by exact rational arithmetic,
// saturated to int64, when it is an integer; sure is false when the
// exponent is too large to compute it so (over a thousand).
func exact(lit string) (v int64, integral, sure bool) {
	if i := strings.IndexAny(lit, "eE"); i >= 0 {
		e := strings.TrimLeft(lit[i+1:], "+-0")
		if len(e) > 3 {
			return 0, false, false
		}
	}
	r, ok := new(big.Rat).SetString(lit)
	if !ok {
		panic("big.Rat refuses " + lit)
	}
	if !r.IsInt() {
		return 0, false, true
	}
	n := r.Num()
	switch {
	case n.IsInt64():
		return n.Int64(), true, true
	case n.Sign() < 0:
		return math.MinInt64, true, true
	}
	return math.MaxInt64, true, true
}
