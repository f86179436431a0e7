package value

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/cobranca/cobranca/internal/value/valuetest"
)

// refTextProblem is TextProblem without its word-at-a-time fast path: one
// byte, or one rune, at a time, the first problem from the left, then the
// length, then blankness.
func refTextProblem(s string) string {
	if s == "" {
		return msgEmpty
	}
	n := 0
	visible := false
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			return msgUTF8
		case unicode.Is(unicode.Cc, r):
			return msgControl
		case unicode.Is(refusedInText, r):
			return fmt.Sprintf("must not contain U+%04X", r) + msgRefused
		}
		visible = visible || VisibleInText(r)
		i += size
		n++
	}
	if n > MaxTextLen {
		return "must be at most " + strconv.Itoa(MaxTextLen) + " characters"
	}
	if !visible {
		return msgBlank
	}
	return ""
}

func TestTextProblem(t *testing.T) {
	var strs []string
	for _, n := range []int{MaxTextLen - 1, MaxTextLen, MaxTextLen + 1} {
		for _, c := range []string{"x", "é", "😀", "\u2027", " ", "\u00a0"} {
			strs = append(strs, strings.Repeat(c, n), strings.Repeat(c, n-1)+"\x00", "\xff"+strings.Repeat(c, n), strings.Repeat(c, n-1)+"\u202e")
		}
	}
	pieces := []string{"", "a", " ", "~", "\x00", "\x1f", "\x7f", "\u0080", "\u009f", "\u00a0", "é", "\xff", "\xc3", "\xed\xa0\x80", "😀",
		"\u00ad", "\u3000", "\u3164", "\ufe0f", "\u200a", "\u200b", "\u200d", "\u200e", "\u200f", "\u061c", "\u2028", "\u2029", "\u202a", "\u202e", "\u202f",
		"\u2060", "\u2065", "\u2066", "\u2069", "\ufeff", "\U000e0000", "\U000e0041", "\U000e007f", "\U000e0080", "\U0001bca0"}
	for _, p := range pieces {
		for before := range 18 {
			for after := range 10 {
				strs = append(strs, strings.Repeat("a", before)+p+strings.Repeat("b", after),
					strings.Repeat(" ", before)+p+strings.Repeat(" ", after))
			}
		}
	}
	// Runes counted in words after an accented letter, up to the limit.
	for k := MaxTextLen - 20; k <= MaxTextLen+2; k++ {
		strs = append(strs, "é"+strings.Repeat("x", k), strings.Repeat("é"+strings.Repeat("x", 8), k/9)+strings.Repeat("y", k%9),
			"é"+strings.Repeat("x", k)+"\x00", "é"+strings.Repeat("x", k)+"\xff", "\u00a0"+strings.Repeat(" ", k), "\u00a0"+strings.Repeat(" ", k)+"x")
	}
	for _, s := range strs {
		if got, want := TextProblem(s), refTextProblem(s); got != want {
			t.Errorf("TextProblem(%q) = %q, want %q", s, got, want)
		}
	}
}

// TestTextTables holds the tables to their definitions, for every
// character: refusedInText to the rule as the issue and the probe state it
// (valuetest.Refused), and VisibleInText, with invisibleInText, to
// valuetest.Visible;
// invisibleInText holds no letter, number, punctuation or symbol but the
// blank-looking ones, and with refusedInText, the combining marks and the
// unassigned code points it is all that is not visible. And it checks that
// TextProblem may skip the table below firstRefusedAbove but for the soft
// hyphen.
func TestTextTables(t *testing.T) {
	var refused, visible int
	for r := rune(0); r <= unicode.MaxRune; r++ {
		if got, want := unicode.Is(refusedInText, r), valuetest.Refused(r); got != want {
			t.Errorf("unicode.Is(refusedInText, %U) = %v, want %v", r, got, want)
		}
		if got, want := VisibleInText(r), valuetest.Visible(r); got != want {
			t.Errorf("VisibleInText(%U) = %v, want %v", r, got, want)
		}
		unlisted := unicode.In(r, unicode.M, unicode.Cn, unicode.Cs) // Cs: never in valid UTF-8
		if got, want := unicode.Is(invisibleInText, r), !valuetest.Visible(r) && !valuetest.Refused(r) && !unlisted; got != want && !(got && valuetest.Refused(r)) {
			t.Errorf("unicode.Is(invisibleInText, %U) = %v, want %v", r, got, want)
		}
		if r > 0x9f && r < firstRefusedAbove && r != softHyphen && unicode.Is(refusedInText, r) {
			t.Errorf("%U is refused, below firstRefusedAbove %U", r, firstRefusedAbove)
		}
		refused += b2i(valuetest.Refused(r))
		visible += b2i(valuetest.Visible(r))
	}
	if !valuetest.Refused(softHyphen) {
		t.Errorf("softHyphen %U is not refused", softHyphen)
	}
	if refused < 4000 || visible < 100000 {
		t.Errorf("%d refused and %d visible characters: the reference sets are broken", refused, visible)
	}
	if RefusedInText() != refusedInText || InvisibleInText() != invisibleInText {
		t.Error("RefusedInText or InvisibleInText does not return the table TextProblem uses")
	}
}

// TestBidiControlsRefused: every Unicode Bidi_Control character — the marks
// (ALM, LRM, RLM) as well as the embeddings, overrides and isolates — can
// reorder how the text around it displays, so an id or name holding one is
// refused, wherever it stands.
func TestBidiControlsRefused(t *testing.T) {
	n := 0
	for _, rg := range unicode.Bidi_Control.R16 {
		for r := rune(rg.Lo); r <= rune(rg.Hi); r += rune(rg.Stride) {
			n++
			for _, s := range []string{string(r), "a" + string(r), string(r) + "a", "Cliente" + string(r) + " 1-2", "é" + string(r) + "bcdefghij"} {
				want := "must not contain " + codePoint(r) + msgRefused
				if got := TextProblem(s); got != want {
					t.Errorf("TextProblem(%+q) = %q, want %q", s, got, want)
				}
			}
		}
	}
	if len(unicode.Bidi_Control.R32) > 0 {
		t.Errorf("unicode.Bidi_Control has characters beyond U+FFFF: this test does not check them")
	}
	if n < 12 {
		t.Errorf("unicode.Bidi_Control has %d characters: the table is not the one this test is for", n)
	}
}

// FuzzTextProblem holds TextProblem to refTextProblem, one rune at a time,
// and its verdict to valuetest.Text, the rule restated from the issue: it
// accepts exactly the valid UTF-8 the restatement accepts.
func FuzzTextProblem(f *testing.F) {
	for _, s := range []string{"", "a", " ", "Cliente 1", "é" + strings.Repeat("x", 300), "a\u200bb", "\u3164", "\xff", "a\u202e", "\U000e0041x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := TextProblem(s)
		if want := refTextProblem(s); got != want {
			t.Fatalf("TextProblem(%+q) = %q, want %q", s, got, want)
		}
		want := valuetest.Text(s)
		if !utf8.ValidString(s) {
			want = "not UTF-8" // the rule speaks of characters; JSON brings only valid ones
		}
		if (got == "") != (want == "") {
			t.Fatalf("TextProblem(%+q) = %q, but the rule says %q", s, got, want)
		}
	})
}

// TestPrintableASCII8 holds the word test to a byte loop: every byte value
// in every position of a printable word, and random words.
func TestPrintableASCII8(t *testing.T) {
	printable := func(w uint64) bool {
		for i := range 8 {
			if c := byte(w >> (8 * i)); c < 0x20 || c >= 0x7f {
				return false
			}
		}
		return true
	}
	words := []uint64{}
	for _, base := range []uint64{' ' * lsb, '~' * lsb, 'a' * lsb, 0x7e207e207e207e20} {
		for p := range 8 {
			for c := range 256 {
				words = append(words, base&^(0xff<<(8*p))|uint64(c)<<(8*p))
			}
		}
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 100_000 {
		words = append(words, r.Uint64(), r.Uint64()&0x7f7f7f7f7f7f7f7f|0x2020202020202020)
	}
	for _, w := range words {
		if got, want := printableASCII8(w), printable(w); got != want {
			t.Fatalf("printableASCII8(%#016x) = %v, want %v", w, got, want)
		}
	}
}
