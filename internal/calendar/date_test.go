package calendar

import (
	"errors"
	"testing"
	"time"
)

func date(s string) Date {
	d, err := ParseDate(s)
	if err != nil {
		panic(s + ": " + err.Error())
	}
	return d
}

func TestParseDate(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Date
		ok   bool
	}{
		{"2026-12-02", Date{2026, time.December, 2}, true},
		{"2024-02-29", Date{2024, time.February, 29}, true},
		{"2000-02-29", Date{2000, time.February, 29}, true},
		{"0001-01-01", Date{1, time.January, 1}, true},
		{"9999-12-31", Date{9999, time.December, 31}, true},
		{"2026-02-29", Date{}, false},
		{"1900-02-29", Date{}, false},
		{"2026-04-31", Date{}, false},
		{"2026-13-01", Date{}, false},
		{"2026-00-10", Date{}, false},
		{"2026-01-00", Date{}, false},
		{"2026-1-02", Date{}, false},
		{"2026-01-2", Date{}, false},
		{"26-01-02", Date{}, false},
		{"+2026-01-02", Date{}, false},
		{"2026/01/02", Date{}, false},
		{"2026-01-02T00:00:00Z", Date{}, false},
		{"2026-01-02 ", Date{}, false},
		{" 2026-01-02", Date{}, false},
		{"2026-0a-02", Date{}, false},
		{"2026-+1-02", Date{}, false},
		{"", Date{}, false},
	} {
		got, err := ParseDate(tc.in)
		if tc.ok {
			if err != nil || got != tc.want {
				t.Errorf("ParseDate(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
			}
			if got.String() != tc.in {
				t.Errorf("ParseDate(%q).String() = %q", tc.in, got.String())
			}
			continue
		}
		var e *Error
		if !errors.As(err, &e) || e.Message == "" || e.Field != "" {
			t.Errorf("ParseDate(%q) = %v, %v; want an *Error without a field", tc.in, got, err)
		}
	}
}

// FuzzParseDate holds ParseDate to time.Parse with time.DateOnly, which
// reads the same strict form, and to its own String.
func FuzzParseDate(f *testing.F) {
	for _, s := range []string{"2026-12-02", "2024-02-29", "2026-02-29", "0000-01-01", "2026-1-2", "", "2026-12-02x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := ParseDate(s)
		ref, refErr := time.Parse(time.DateOnly, s)
		if (err == nil) != (refErr == nil) {
			t.Fatalf("ParseDate(%q) err = %v; time.Parse err = %v", s, err, refErr)
		}
		if err != nil {
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("ParseDate(%q) = %v, not an *Error", s, err)
			}
			return
		}
		if want := DateOf(ref, time.UTC); d != want {
			t.Fatalf("ParseDate(%q) = %v, time.Parse says %v", s, d, want)
		}
		if d.String() != s {
			t.Fatalf("ParseDate(%q).String() = %q", s, d.String())
		}
	})
}

func TestDateArithmetic(t *testing.T) {
	for _, tc := range []struct {
		d    string
		n    int
		want string
	}{
		{"2026-12-31", 1, "2027-01-01"},
		{"2027-01-01", -1, "2026-12-31"},
		{"2024-02-28", 1, "2024-02-29"},
		{"2025-02-28", 1, "2025-03-01"},
		{"2026-12-02", 0, "2026-12-02"},
		{"2026-12-02", 365, "2027-12-02"},
		{"2000-01-01", 146097, "2400-01-01"},
	} {
		if got := date(tc.d).AddDays(tc.n); got != date(tc.want) {
			t.Errorf("%s.AddDays(%d) = %v, want %s", tc.d, tc.n, got, tc.want)
		}
	}
	if got := date("2026-12-02").Weekday(); got != time.Wednesday {
		t.Errorf("2026-12-02 Weekday() = %v, want Wednesday", got)
	}
	if got := (Date{2026, time.February, 30}).AddDays(0); got != date("2026-03-02") {
		t.Errorf("2026-02-30 normalizes to %v, want 2026-03-02", got)
	}
}

func TestCompare(t *testing.T) {
	days := []Date{date("2025-12-31"), date("2026-01-01"), date("2026-01-02"), date("2026-02-01"), date("2027-01-01")}
	for i, a := range days {
		for j, b := range days {
			want := cmpInt(i, j)
			if got := a.Compare(b); got != want {
				t.Errorf("%v.Compare(%v) = %d, want %d", a, b, got, want)
			}
			if got := a.Before(b); got != (i < j) {
				t.Errorf("%v.Before(%v) = %v", a, b, got)
			}
			if got := a.After(b); got != (i > j) {
				t.Errorf("%v.After(%v) = %v", a, b, got)
			}
		}
	}
	if got := (Date{2026, time.January, 32}).Compare(date("2026-02-01")); got != 0 {
		t.Errorf("2026-01-32 compared with 2026-02-01 = %d, want 0 (the same day)", got)
	}
}

func TestDateOf(t *testing.T) {
	sp := load(t, "America/Sao_Paulo")
	at := time.Date(2026, time.December, 2, 1, 30, 0, 0, time.UTC) // 22:30 the day before in São Paulo
	if got := DateOf(at, sp); got != date("2026-12-01") {
		t.Errorf("DateOf(%v, São Paulo) = %v, want 2026-12-01", at, got)
	}
	if got := DateOf(at, nil); got != date("2026-12-02") {
		t.Errorf("DateOf(%v, nil) = %v, want 2026-12-02 (UTC)", at, got)
	}
}

// In is the day's first instant, even where summer time skipped midnight.
func TestDateIn(t *testing.T) {
	sp := load(t, "America/Sao_Paulo")
	apia := load(t, "Pacific/Apia")
	for _, tc := range []struct {
		d    string
		loc  *time.Location
		want time.Time
	}{
		{"2026-12-02", sp, time.Date(2026, 12, 2, 3, 0, 0, 0, time.UTC)},
		{"2026-12-02", nil, time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC)},
		// Summer time began at midnight: the day began at 01:00 -02.
		{"2018-11-04", sp, time.Date(2018, 11, 4, 3, 0, 0, 0, time.UTC)},
		{"2004-11-02", sp, time.Date(2004, 11, 2, 3, 0, 0, 0, time.UTC)},
		// Samoa skipped 30 December 2011: the answer is the next day's start.
		{"2011-12-30", apia, time.Date(2011, 12, 30, 10, 0, 0, 0, time.UTC)},
	} {
		got := date(tc.d).In(tc.loc)
		if !got.Equal(tc.want) {
			t.Errorf("%s.In(%v) = %v, want %v", tc.d, tc.loc, got, tc.want.In(got.Location()))
		}
	}
	// The reason In does not just call time.Date.
	if naive := time.Date(2018, 11, 4, 0, 0, 0, 0, sp); DateOf(naive, sp) != date("2018-11-03") {
		t.Errorf("time.Date(2018-11-04 00:00, São Paulo) = %v: the DST case no longer needs In's care", naive)
	}
}

func load(t testing.TB, name string) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation(name)
	if err != nil {
		t.Fatal(err)
	}
	return loc
}
