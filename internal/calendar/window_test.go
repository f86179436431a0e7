package calendar

import (
	"errors"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestDefaultWindow(t *testing.T) {
	w := DefaultWindow()
	if got, want := w.String(), "America/Sao_Paulo 08:00-20:00 mon,tue,wed,thu,fri,sat"; got != want {
		t.Errorf("DefaultWindow() = %s, want %s", got, want)
	}
	if err := w.Validate(); err != nil {
		t.Errorf("DefaultWindow().Validate() = %v", err)
	}
	parsed, err := ParseWindow("", "", "", nil)
	if err != nil || parsed.String() != w.String() {
		t.Errorf(`ParseWindow("", "", "", nil) = %s, %v; want %s`, parsed, err, w)
	}
}

func TestParseWindow(t *testing.T) {
	for _, tc := range []struct {
		zone, open, close string
		days              []string
		want              string // the window's String, or the *Error's Field
	}{
		{"America/New_York", "09:30", "17:00", []string{"fri", "mon"}, "America/New_York 09:30-17:00 mon,fri"},
		{"UTC", "00:00", "24:00", []string{"SUN", "Sat"}, "UTC 00:00-24:00 sat,sun"},
		{"", "10:00", "", []string{"mon", "tue", "wed", "thu", "fri", "sat", "sun"}, "America/Sao_Paulo 10:00-20:00 mon,tue,wed,thu,fri,sat,sun"},
		{"Mars/Olympus_Mons", "", "", nil, "window.zone"},
		{"Local", "", "", nil, "window.zone"},
		{"../../etc/passwd", "", "", nil, "window.zone"},
		{"/etc/localtime", "", "", nil, "window.zone"},
		{"", "8:00", "", nil, "window.open"},
		{"", "08h00", "", nil, "window.open"},
		{"", "24:00", "", nil, "window.open"},
		{"", "07:60", "", nil, "window.open"},
		{"", "", "24:01", nil, "window.close"},
		{"", "", "00:00", nil, "window.close"},
		{"", "", "20:00:00", nil, "window.close"},
		{"", "20:00", "08:00", nil, "window.close"}, // no window crosses midnight
		{"", "08:00", "08:00", nil, "window.close"},
		{"", "", "", []string{"monday"}, "window.days"},
		{"", "", "", []string{"mon", ""}, "window.days"},
		{"", "", "", []string{"mon", "Mon"}, "window.days"},
		{"", "", "", []string{"\u017fat"}, "window.days"}, // a long s, which Unicode folds to s
	} {
		w, err := ParseWindow(tc.zone, tc.open, tc.close, tc.days)
		if !strings.HasPrefix(tc.want, "window.") {
			if err != nil || w.String() != tc.want {
				t.Errorf("ParseWindow(%q, %q, %q, %q) = %s, %v; want %s", tc.zone, tc.open, tc.close, tc.days, w, err, tc.want)
			}
			continue
		}
		var e *Error
		if !errors.As(err, &e) || e.Field != tc.want || e.Message == "" || w.Zone != nil || w.Days != nil {
			t.Errorf("ParseWindow(%q, %q, %q, %q) = %s, %v; want the zero Window and an *Error on %s", tc.zone, tc.open, tc.close, tc.days, w, err, tc.want)
		}
	}
}

// Windows built by hand are refused field by field, and never open.
func TestValidate(t *testing.T) {
	c := Brazil()
	sp := load(t, "America/Sao_Paulo")
	weekdays := []time.Weekday{time.Monday}
	for _, tc := range []struct {
		w     Window
		field string
	}{
		{Window{Open: 480, Close: 1200, Days: weekdays}, "window.zone"},
		{Window{Zone: sp, Open: -1, Close: 1200, Days: weekdays}, "window.open"},
		{Window{Zone: sp, Open: 1440, Close: 1440, Days: weekdays}, "window.open"},
		{Window{Zone: sp, Open: 480, Close: 1441, Days: weekdays}, "window.close"},
		{Window{Zone: sp, Open: 480, Close: 480, Days: weekdays}, "window.close"},
		{Window{Zone: sp, Open: 480, Close: 1200}, "window.days"},
		{Window{Zone: sp, Open: 480, Close: 1200, Days: []time.Weekday{7}}, "window.days"},
		{Window{Zone: sp, Open: 480, Close: 1200, Days: []time.Weekday{time.Monday, time.Monday}}, "window.days"},
		{Window{}, "window.zone"},
	} {
		var e *Error
		if err := tc.w.Validate(); !errors.As(err, &e) || e.Field != tc.field {
			t.Errorf("%+v.Validate() = %v; want an *Error on %s", tc.w, err, tc.field)
		}
		monday := time.Date(2026, 11, 30, 12, 0, 0, 0, sp)
		if c.InWindow(tc.w, monday) {
			t.Errorf("InWindow(%+v, %v) = true for an invalid window", tc.w, monday)
		}
		if got := c.NextOpen(tc.w, monday); !got.IsZero() {
			t.Errorf("NextOpen(%+v, %v) = %v for an invalid window, want the zero Time", tc.w, monday, got)
		}
	}
}

// FuzzParseWindow: whatever the input, an *Error naming one of the four
// fields, or a valid window that reads back from its String the same.
func FuzzParseWindow(f *testing.F) {
	f.Add("America/Sao_Paulo", "08:00", "20:00", "mon,tue,wed,thu,fri,sat")
	f.Add("", "", "", "")
	f.Add("America/New_York", "00:00", "24:00", "SUN")
	f.Add("Local", "24:00", "8:00", "mon,mon")
	f.Add("Etc/GMT+3", "23:59", "24:00", "sat,sun")
	f.Add("UTC", "", "", "\u017fat,SUN")
	f.Fuzz(func(t *testing.T, zone, open, close, days string) {
		var list []string
		if days != "" {
			list = strings.Split(days, ",")
		}
		w, err := ParseWindow(zone, open, close, list)
		if err != nil {
			var e *Error
			if !errors.As(err, &e) || !slices.Contains([]string{"window.zone", "window.open", "window.close", "window.days"}, e.Field) || e.Message == "" {
				t.Fatalf("ParseWindow(%q, %q, %q, %q) = %#v", zone, open, close, list, err)
			}
			return
		}
		if err := w.Validate(); err != nil {
			t.Fatalf("ParseWindow(%q, %q, %q, %q) = %s, which fails Validate: %v", zone, open, close, list, w, err)
		}
		parts := strings.Fields(w.String())
		if len(parts) != 3 {
			t.Fatalf("String() = %q", w.String())
		}
		clock := strings.Split(parts[1], "-")
		again, err := ParseWindow(parts[0], clock[0], clock[1], strings.Split(parts[2], ","))
		if err != nil || again.String() != w.String() {
			t.Fatalf("ParseWindow(%q, %q, %q, %q) = %s; read back from its String: %s, %v", zone, open, close, list, w, again, err)
		}
	})
}

func TestInWindow(t *testing.T) {
	c := Brazil()
	w := DefaultWindow()
	sp, tokyo := w.Zone, load(t, "Asia/Tokyo")
	at := func(s string) time.Time {
		t.Helper()
		v, err := time.ParseInLocation("2006-01-02 15:04:05", s, sp)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	for _, tc := range []struct {
		at   time.Time
		want bool
	}{
		{at("2026-12-02 07:59:59"), false},
		{at("2026-12-02 08:00:00"), true},
		{at("2026-12-02 19:59:59"), true},
		{at("2026-12-02 20:00:00"), false},
		{time.Date(2026, 12, 2, 11, 0, 0, 0, time.UTC), true}, // 08:00 in São Paulo
		{time.Date(2026, 12, 2, 10, 59, 0, 0, time.UTC), false},
		{time.Date(2026, 12, 2, 23, 30, 0, 0, time.UTC), false}, // 20:30 in São Paulo
		{at("2026-12-05 10:00:00"), true},                       // Saturday
		{at("2026-12-06 10:00:00"), false},                      // Sunday
		{at("2026-04-21 10:00:00"), false},                      // Tiradentes
		{at("2026-11-20 10:00:00"), false},                      // Consciência Negra
		{at("2027-11-20 10:00:00"), false},                      // Consciência Negra on a Saturday
		{at("2026-02-16 10:00:00"), false},                      // Carnival Monday
		{at("2026-02-17 10:00:00"), false},                      // Carnival Tuesday
		{at("2026-02-18 10:00:00"), true},                       // Ash Wednesday
		{at("2026-12-31 10:00:00"), true},                       // banks close to the public, reserves settle
		{at("2027-01-01 10:00:00"), false},                      // New Year
		{time.Date(2027, 1, 1, 2, 0, 0, 0, time.UTC), false},    // 23:00 on 31 December in São Paulo
		{time.Date(2026, 12, 31, 22, 59, 0, 0, time.UTC), true}, // 19:59 on 31 December in São Paulo
		{time.Date(2026, 12, 2, 12, 0, 0, 0, tokyo), false},     // 00:00 in São Paulo
	} {
		if got := c.InWindow(w, tc.at); got != tc.want {
			t.Errorf("InWindow(%s, %v) = %v, want %v", w, tc.at, got, tc.want)
		}
	}
}

func TestNextOpen(t *testing.T) {
	c := Brazil()
	sp := load(t, "America/Sao_Paulo")
	ny := load(t, "America/New_York")
	every := []string{"mon", "tue", "wed", "thu", "fri", "sat", "sun"}
	window := func(zone, open, close string, days []string) Window {
		w, err := ParseWindow(zone, open, close, days)
		if err != nil {
			t.Fatal(err)
		}
		return w
	}
	def := DefaultWindow()
	for _, tc := range []struct {
		name string
		w    Window
		t    time.Time
		want time.Time
	}{
		{"open: t itself", def, time.Date(2026, 12, 2, 10, 17, 3, 9, sp), time.Date(2026, 12, 2, 10, 17, 3, 9, sp)},
		{"before opening", def, time.Date(2026, 12, 2, 6, 0, 0, 0, sp), time.Date(2026, 12, 2, 8, 0, 0, 0, sp)},
		{"after closing", def, time.Date(2026, 12, 2, 20, 0, 0, 0, sp), time.Date(2026, 12, 3, 8, 0, 0, 0, sp)},
		{"Saturday is open", def, time.Date(2026, 2, 13, 20, 30, 0, 0, sp), time.Date(2026, 2, 14, 8, 0, 0, 0, sp)},
		{"Sunday then Carnival", def, time.Date(2026, 2, 14, 20, 0, 0, 0, sp), time.Date(2026, 2, 18, 8, 0, 0, 0, sp)},
		{"Tiradentes", def, time.Date(2026, 4, 20, 21, 0, 0, 0, sp), time.Date(2026, 4, 22, 8, 0, 0, 0, sp)},
		{"Consciência Negra", def, time.Date(2026, 11, 19, 20, 0, 0, 0, sp), time.Date(2026, 11, 21, 8, 0, 0, 0, sp)},
		{"New Year", def, time.Date(2026, 12, 31, 20, 0, 0, 0, sp), time.Date(2027, 1, 2, 8, 0, 0, 0, sp)},
		{"t in UTC, answer in UTC", def, time.Date(2026, 12, 2, 23, 30, 0, 0, time.UTC), time.Date(2026, 12, 3, 11, 0, 0, 0, time.UTC)},
		{"Thursdays only: two holidays running", window("", "", "", []string{"thu"}), time.Date(2025, 12, 24, 12, 0, 0, 0, sp), time.Date(2026, 1, 8, 8, 0, 0, 0, sp)},
		// New York springs forward on 8 March 2026 at 02:00 (to 03:00)
		// and falls back on 1 November 2026 at 02:00 (to 01:00).
		{"over spring forward", window("America/New_York", "", "", nil), time.Date(2026, 3, 7, 21, 0, 0, 0, ny), time.Date(2026, 3, 9, 8, 0, 0, 0, ny)},
		{"Open in the skipped hour", window("America/New_York", "02:30", "03:30", every), time.Date(2026, 3, 8, 1, 59, 59, 0, ny), time.Date(2026, 3, 8, 7, 0, 0, 0, time.UTC)},
		{"whole window skipped", window("America/New_York", "02:00", "02:30", every), time.Date(2026, 3, 8, 1, 0, 0, 0, ny), time.Date(2026, 3, 9, 6, 0, 0, 0, time.UTC)},
		{"the repeated hour, first time", window("America/New_York", "01:00", "01:30", every), time.Date(2026, 11, 1, 0, 30, 0, 0, ny), time.Date(2026, 11, 1, 5, 0, 0, 0, time.UTC)},
		{"the repeated hour, second time", window("America/New_York", "01:00", "01:30", every), time.Date(2026, 11, 1, 5, 45, 0, 0, time.UTC), time.Date(2026, 11, 1, 6, 0, 0, 0, time.UTC)},
		{"over fall back, then Finados", window("America/New_York", "", "", nil), time.Date(2026, 10, 31, 21, 0, 0, 0, ny), time.Date(2026, 11, 3, 13, 0, 0, 0, time.UTC)},
		// São Paulo's summer time began at 00:00 on 4 November 2018.
		{"midnight skipped in São Paulo", window("", "00:00", "06:00", every), time.Date(2018, 11, 3, 23, 30, 0, 0, sp), time.Date(2018, 11, 4, 3, 0, 0, 0, time.UTC)},
	} {
		got := c.NextOpen(tc.w, tc.t)
		if !got.Equal(tc.want) || got.Location() != tc.t.Location() {
			t.Errorf("%s: NextOpen(%s, %v) = %v, want %v", tc.name, tc.w, tc.t, got, tc.want.In(tc.t.Location()))
		}
	}
}

// Over random instants and windows: NextOpen is open, not before t, on an
// open day that is no holiday, and nothing between t and it is open (minute
// by minute, the finest step a window has).
func TestNextOpenProperties(t *testing.T) {
	c := Brazil()
	windows := []Window{DefaultWindow()}
	for _, args := range [][4]string{
		{"America/New_York", "01:30", "02:30", "mon,sat,sun"},
		{"America/New_York", "00:00", "01:00", "sun"},
		{"America/Sao_Paulo", "00:00", "00:30", "mon,tue,wed,thu,fri,sat,sun"},
		{"America/Sao_Paulo", "23:00", "24:00", "fri"},
		{"Europe/London", "00:30", "01:30", "sun,mon"},
		{"Australia/Lord_Howe", "01:45", "02:15", "sun"}, // a 30-minute change
		{"Asia/Kathmandu", "09:00", "09:01", "tue"},
	} {
		w, err := ParseWindow(args[0], args[1], args[2], strings.Split(args[3], ","))
		if err != nil {
			t.Fatal(err)
		}
		windows = append(windows, w)
	}
	r := rand.New(rand.NewPCG(30, 3))
	runs := 1500
	if testing.Short() {
		runs = 150
	}
	start := time.Date(2014, 1, 1, 0, 0, 0, 0, time.UTC).Unix()
	for range runs {
		w := windows[r.IntN(len(windows))]
		at := time.Unix(start+r.Int64N(16*365*secondsPerDay), r.Int64N(1e9))
		got := c.NextOpen(w, at)
		if got.Before(at) || !c.InWindow(w, got) {
			t.Fatalf("NextOpen(%s, %v) = %v: before t, or not open", w, at, got)
		}
		d := DateOf(got, w.Zone)
		if _, holiday := c.Holiday(d); holiday || !slices.Contains(w.Days, d.Weekday()) {
			t.Fatalf("NextOpen(%s, %v) = %v, on %v (%v), a holiday or a closed day", w, at, got, d, d.Weekday())
		}
		for m := at.Truncate(time.Minute).Add(time.Minute); m.Before(got); m = m.Add(time.Minute) {
			if c.InWindow(w, m) {
				t.Fatalf("NextOpen(%s, %v) = %v, but %v is open", w, at, got, m)
			}
		}
	}
}

func BenchmarkInWindow(b *testing.B) {
	c := Brazil()
	w := DefaultWindow()
	at := time.Date(2026, 12, 2, 15, 0, 0, 0, time.UTC)
	b.ReportAllocs()
	for b.Loop() {
		c.InWindow(w, at)
	}
}

// NextOpen from a closed moment, the costly path: from each hour of a week
// that holds a holiday.
func BenchmarkNextOpen(b *testing.B) {
	c := Brazil()
	w := DefaultWindow()
	start := time.Date(2026, 11, 16, 0, 0, 0, 0, w.Zone)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		c.NextOpen(w, start.Add(time.Duration(i%168)*time.Hour))
		i++
	}
}

func TestNextClose(t *testing.T) {
	c := Brazil()
	sp := load(t, "America/Sao_Paulo")
	def := DefaultWindow()
	for _, tc := range []struct {
		name string
		t    time.Time
		want time.Time
	}{
		{"open: today's close", time.Date(2026, 12, 2, 10, 17, 3, 9, sp), time.Date(2026, 12, 2, 20, 0, 0, 0, sp)},
		{"before opening: today's close", time.Date(2026, 12, 2, 0, 5, 0, 0, sp), time.Date(2026, 12, 2, 20, 0, 0, 0, sp)},
		{"at closing: the next day's", time.Date(2026, 12, 2, 20, 0, 0, 0, sp), time.Date(2026, 12, 3, 20, 0, 0, 0, sp)},
		{"Sunday then Carnival: Ash Wednesday's", time.Date(2026, 2, 14, 20, 0, 0, 0, sp), time.Date(2026, 2, 18, 20, 0, 0, 0, sp)},
		{"Consciência Negra: Saturday's", time.Date(2026, 11, 19, 21, 0, 0, 0, sp), time.Date(2026, 11, 21, 20, 0, 0, 0, sp)},
		{"t in UTC, answer in UTC", time.Date(2026, 12, 2, 23, 30, 0, 0, time.UTC), time.Date(2026, 12, 3, 23, 0, 0, 0, time.UTC)},
	} {
		got := c.NextClose(def, tc.t)
		if !got.Equal(tc.want) || got.Location() != tc.t.Location() {
			t.Errorf("%s: NextClose(%v) = %v, want %v", tc.name, tc.t, got, tc.want)
		}
		if open := c.NextOpen(def, tc.t); !c.InWindow(def, got.Add(-time.Second)) || c.InWindow(def, got) || !got.After(open) {
			t.Errorf("%s: NextClose(%v) = %v is not where the window open at %v closes", tc.name, tc.t, got, open)
		}
	}
	if got := c.NextClose(Window{}, time.Now()); !got.IsZero() {
		t.Errorf("NextClose of an invalid window = %v, want the zero Time", got)
	}
}
