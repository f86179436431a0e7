package portfolio

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// refTextProblem is textProblem as it was before its word-at-a-time fast
// path: one byte, or one rune, at a time.
func refTextProblem(s string) string {
	if s == "" {
		return "must not be empty"
	}
	n := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c < 0x20 || c == 0x7f {
				return "must not contain control characters"
			}
			i++
		} else {
			r, size := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && size == 1 {
				return "must be valid UTF-8"
			}
			if r <= 0x9f {
				return "must not contain control characters"
			}
			i += size
		}
		n++
	}
	if n > MaxTextLen {
		return "must be at most " + strconv.Itoa(MaxTextLen) + " characters"
	}
	return ""
}

func TestTextProblem(t *testing.T) {
	var strs []string
	for _, n := range []int{MaxTextLen - 1, MaxTextLen, MaxTextLen + 1} {
		for _, c := range []string{"x", "é", "😀", "\u2028"} {
			strs = append(strs, strings.Repeat(c, n), strings.Repeat(c, n-1)+"\x00", "\xff"+strings.Repeat(c, n))
		}
	}
	for _, p := range []string{"", "a", " ", "~", "\x00", "\x1f", "\x7f", "\u0080", "\u009f", "\u00a0", "é", "\xff", "\xc3", "\xed\xa0\x80", "😀"} {
		for before := range 18 {
			for after := range 10 {
				strs = append(strs, strings.Repeat("a", before)+p+strings.Repeat("b", after))
			}
		}
	}
	// Runes counted in words after an accented letter, up to the limit.
	for k := MaxTextLen - 20; k <= MaxTextLen+2; k++ {
		strs = append(strs, "é"+strings.Repeat("x", k), strings.Repeat("é"+strings.Repeat("x", 8), k/9)+strings.Repeat("y", k%9),
			"é"+strings.Repeat("x", k)+"\x00", "é"+strings.Repeat("x", k)+"\xff")
	}
	for _, s := range strs {
		if got, want := textProblem(s), refTextProblem(s); got != want {
			t.Errorf("textProblem(%q) = %q, want %q", s, got, want)
		}
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
