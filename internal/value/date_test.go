package value

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/cobranca/cobranca/internal/value/valuetest"
)

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

// TestDateProblem: the date rule says why, in words safe to show, and
// nothing of a date that is good.
func TestDateProblem(t *testing.T) {
	for _, tc := range []struct{ s, code, want string }{
		{"2026-02-28", "", ""},
		{MinDate, "", ""},
		{MaxDate, "", ""},
		{"2024-02-29", "", ""},
		{"", CodeInvalidFormat, "must be a date in YYYY-MM-DD form"},
		{"28/02/2026", CodeInvalidFormat, "must be a date in YYYY-MM-DD form"},
		{"2026-02-30", CodeInvalidDate, "2026-02-30 is not a calendar date"},
		{"2025-02-29", CodeInvalidDate, "2025-02-29 is not a calendar date"},
		{"2100-02-29", CodeInvalidDate, "2100-02-29 is not a calendar date"},
		{"1999-12-31", CodeOutOfRange, "must be from " + MinDate + " to " + MaxDate},
		{"2100-01-01", CodeOutOfRange, "must be from " + MinDate + " to " + MaxDate},
	} {
		if got := DateProblem(tc.s); got != tc.want {
			t.Errorf("DateProblem(%q) = %q, want %q", tc.s, got, tc.want)
		}
		if code, msg := DateCheck(tc.s); code != tc.code || msg != tc.want {
			t.Errorf("DateCheck(%q) = %q, %q; want %q, %q", tc.s, code, msg, tc.code, tc.want)
		}
	}
}

// FuzzDateCheck holds DateCheck to valuetest.Date, the rule restated with the
// time package, and its message to its promise: it quotes the input only
// when that is digits and dashes.
func FuzzDateCheck(f *testing.F) {
	for _, s := range []string{"", "2026-02-28", "2026-02-30", "1999-12-31", "2099-12-31", "2100-01-01", "0000-00-00", "2026-2-28", "２０２６-02-28"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		code, msg := DateCheck(s)
		if good := code == "" && msg == ""; good != valuetest.Date(s) {
			t.Fatalf("DateCheck(%+q) = %q, %q; the rule says good = %v", s, code, msg, valuetest.Date(s))
		}
		switch {
		case code == "":
		case code == CodeInvalidFormat && msg == "must be a date in YYYY-MM-DD form":
		case code == CodeOutOfRange && msg == "must be from "+MinDate+" to "+MaxDate:
		case code == CodeInvalidDate && msg == s+" is not a calendar date" && strings.Trim(s, "0123456789-") == "":
		default:
			t.Fatalf("DateCheck(%+q) = %q, %q: not one of the rule's answers, or it quotes what is not digits and dashes", s, code, msg)
		}
	})
}
