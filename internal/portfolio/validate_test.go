package portfolio

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"
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
// (refRefused), and VisibleInText, with invisibleInText, to refVisible;
// invisibleInText holds no letter, number, punctuation or symbol but the
// blank-looking ones, and with refusedInText, the combining marks and the
// unassigned code points it is all that is not visible. And it checks that
// TextProblem may skip the table below firstRefusedAbove but for the soft
// hyphen.
func TestTextTables(t *testing.T) {
	var refused, visible int
	for r := rune(0); r <= unicode.MaxRune; r++ {
		if got, want := unicode.Is(refusedInText, r), refRefused(r); got != want {
			t.Errorf("unicode.Is(refusedInText, %U) = %v, want %v", r, got, want)
		}
		if got, want := VisibleInText(r), refVisible(r); got != want {
			t.Errorf("VisibleInText(%U) = %v, want %v", r, got, want)
		}
		unlisted := unicode.In(r, unicode.M, unicode.Cn, unicode.Cs) // Cs: never in valid UTF-8
		if got, want := unicode.Is(invisibleInText, r), !refVisible(r) && !refRefused(r) && !unlisted; got != want && !(got && refRefused(r)) {
			t.Errorf("unicode.Is(invisibleInText, %U) = %v, want %v", r, got, want)
		}
		if r > 0x9f && r < firstRefusedAbove && r != softHyphen && unicode.Is(refusedInText, r) {
			t.Errorf("%U is refused, below firstRefusedAbove %U", r, firstRefusedAbove)
		}
		refused += b2i(refRefused(r))
		visible += b2i(refVisible(r))
	}
	if !refRefused(softHyphen) {
		t.Errorf("softHyphen %U is not refused", softHyphen)
	}
	if refused < 4000 || visible < 100000 {
		t.Errorf("%d refused and %d visible characters: the reference sets are broken", refused, visible)
	}
	if RefusedInText() != refusedInText || InvisibleInText() != invisibleInText {
		t.Error("RefusedInText or InvisibleInText does not return the table Validate uses")
	}
}

// goodDate is the three checks of checkDate in one: it must agree with
// them on every date of the years around the valid range, and on every
// single-byte change of a valid date.
func TestGoodDate(t *testing.T) {
	ref := func(s string) bool { return dateShape(s) && realDate(s) && s >= MinDate && s <= MaxDate }
	var dates []string
	for d := time.Date(1998, 1, 1, 0, 0, 0, 0, time.UTC); d.Year() < 2102; d = d.AddDate(0, 0, 1) {
		dates = append(dates, d.Format(time.DateOnly))
	}
	for _, y := range []string{"0000", "1999", "2000", "2024", "2025", "2099", "2100", "9999"} {
		for m := range 100 {
			for _, d := range []string{"00", "01", "28", "29", "30", "31", "32", "99"} {
				dates = append(dates, fmt.Sprintf("%s-%02d-%s", y, m, d))
			}
		}
	}
	for _, s := range []string{"2025-06-30", MinDate, MaxDate} {
		for i := range len(s) {
			for c := range 256 {
				dates = append(dates, s[:i]+string([]byte{byte(c)})+s[i+1:], s[:i]+s[i+1:], s[:i]+"0"+s[i:])
			}
		}
	}
	dates = append(dates, "", "2025-06-3", "2025-06-300", "2025/06/30", " 2025-06-30")
	for _, s := range dates {
		if got, want := goodDate(s), ref(s); got != want {
			t.Errorf("goodDate(%q) = %v, want %v", s, got, want)
		}
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

// TestDateProblem: the exported date rule says what Validate says of asOf, in the same words,
// and nothing of a date that is good.
func TestDateProblem(t *testing.T) {
	for _, tc := range []struct{ s, want string }{
		{"2026-02-28", ""},
		{MinDate, ""},
		{MaxDate, ""},
		{"2024-02-29", ""},
		{"", "must be a date in YYYY-MM-DD form"},
		{"28/02/2026", "must be a date in YYYY-MM-DD form"},
		{"2026-02-30", "2026-02-30 is not a calendar date"},
		{"2025-02-29", "2025-02-29 is not a calendar date"},
		{"1999-12-31", "must be from " + MinDate + " to " + MaxDate},
		{"2100-01-01", "must be from " + MinDate + " to " + MaxDate},
	} {
		if got := DateProblem(tc.s); got != tc.want {
			t.Errorf("DateProblem(%q) = %q, want %q", tc.s, got, tc.want)
		}
		in := &Input{AsOf: tc.s, Invoices: []Invoice{{ID: "1", CustomerID: "c", CustomerName: "C", DueDate: MinDate, AmountCents: 1, Status: StatusOpen}}}
		e := validate(in)
		if (e == nil) != (tc.want == "") || e != nil && (e.Field != "asOf" || e.Message != tc.want) {
			t.Errorf("validate(asOf %q) = %v; want the message %q on asOf", tc.s, e, tc.want)
		}
	}
}
