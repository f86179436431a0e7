package calendar

import (
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/rickar/cal/v2"
)

// Every bank holiday of four years, written out by hand from FEBRABAN's and
// ANBIMA's published calendars: Consciência Negra from 2024, Carnival Monday
// and Tuesday, Good Friday and Corpus Christi every year.
func TestHolidaysByYear(t *testing.T) {
	c := Brazil()
	for _, tc := range []struct {
		year int
		want []string
	}{
		{2023, []string{"01-01", "02-20", "02-21", "04-07", "04-21", "05-01", "06-08", "09-07", "10-12", "11-02", "11-15", "12-25"}},
		{2024, []string{"01-01", "02-12", "02-13", "03-29", "04-21", "05-01", "05-30", "09-07", "10-12", "11-02", "11-15", "11-20", "12-25"}},
		{2025, []string{"01-01", "03-03", "03-04", "04-18", "04-21", "05-01", "06-19", "09-07", "10-12", "11-02", "11-15", "11-20", "12-25"}},
		{2026, []string{"01-01", "02-16", "02-17", "04-03", "04-21", "05-01", "06-04", "09-07", "10-12", "11-02", "11-15", "11-20", "12-25"}},
		{2027, []string{"01-01", "02-08", "02-09", "03-26", "04-21", "05-01", "05-27", "09-07", "10-12", "11-02", "11-15", "11-20", "12-25"}},
	} {
		var got []string
		for d := (Date{tc.year, time.January, 1}); d.Year == tc.year; d = d.AddDays(1) {
			if _, ok := c.Holiday(d); ok {
				got = append(got, d.String()[5:])
			}
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("holidays of %d (-want +got):\n%s", tc.year, diff)
		}
	}
}

// The days rickar's br package lacks, and those banks keep though the law
// does not, each in several years.
func TestAddedHolidays(t *testing.T) {
	c := Brazil()
	for _, tc := range []struct {
		day     string
		name    string // "" when not a holiday
		weekday time.Weekday
	}{
		{"2023-11-20", "", time.Monday}, // before Lei 14.759/2023 took effect
		{"2024-11-20", "Consciência Negra", time.Wednesday},
		{"2025-11-20", "Consciência Negra", time.Thursday},
		{"2026-11-20", "Consciência Negra", time.Friday},
		{"2027-11-20", "Consciência Negra", time.Saturday},
		{"2024-02-12", "Carnaval (segunda-feira)", time.Monday},
		{"2024-02-13", "Carnaval (terça-feira)", time.Tuesday},
		{"2025-03-03", "Carnaval (segunda-feira)", time.Monday},
		{"2025-03-04", "Carnaval (terça-feira)", time.Tuesday},
		{"2026-02-16", "Carnaval (segunda-feira)", time.Monday},
		{"2026-02-17", "Carnaval (terça-feira)", time.Tuesday},
		{"2026-02-18", "", time.Wednesday}, // Ash Wednesday: branches open at noon
		{"2027-02-08", "Carnaval (segunda-feira)", time.Monday},
		{"2027-02-09", "Carnaval (terça-feira)", time.Tuesday},
		{"2024-03-29", "Sexta-feira Santa", time.Friday},
		{"2025-04-18", "Sexta-feira Santa", time.Friday},
		{"2026-04-03", "Sexta-feira Santa", time.Friday},
		{"2027-03-26", "Sexta-feira Santa", time.Friday},
		{"2024-05-30", "Corpus Christi", time.Thursday},
		{"2025-06-19", "Corpus Christi", time.Thursday},
		{"2026-06-04", "Corpus Christi", time.Thursday},
		{"2027-05-27", "Corpus Christi", time.Thursday},
		{"2026-12-31", "", time.Thursday}, // no public service, but reserves settle
		{"2000-04-21", "Sexta-feira Santa / Tiradentes", time.Friday},
	} {
		d := date(tc.day)
		if got := d.Weekday(); got != tc.weekday {
			t.Fatalf("%s is a %v, the table says %v", tc.day, got, tc.weekday)
		}
		name, ok := c.Holiday(d)
		if ok != (tc.name != "") || !strings.Contains(name, tc.name) {
			t.Errorf("Holiday(%s) = %q, %v; want %q", tc.day, name, ok, tc.name)
		}
		weekday := tc.weekday != time.Saturday && tc.weekday != time.Sunday
		if got := c.IsBusinessDay(d); got != (weekday && !ok) {
			t.Errorf("IsBusinessDay(%s) = %v", tc.day, got)
		}
	}
}

// easter is the anonymous Gregorian algorithm (Meeus/Jones/Butcher),
// written from its published form to check rickar's.
func easter(y int) Date {
	a := y % 19
	b, c := y/100, y%100
	d, e := b/4, b%4
	f := (b + 8) / 25
	g := (b - f + 1) / 3
	h := (19*a + b - d - g + 15) % 30
	i, k := c/4, c%4
	l := (32 + 2*e + 2*i - h - k) % 7
	m := (a + 11*h + 22*l) / 451
	month := (h + l - 7*m + 114) / 31
	day := (h+l-7*m+114)%31 + 1
	return Date{y, time.Month(month), day}
}

// naiveHoliday restates brazilRules plainly: the oracle the calendar's
// tables are held to.
func naiveHoliday(d Date) bool {
	switch [2]int{int(d.Month), d.Day} {
	case [2]int{1, 1}, [2]int{4, 21}, [2]int{5, 1}, [2]int{9, 7}, [2]int{10, 12},
		[2]int{11, 2}, [2]int{11, 15}, [2]int{12, 25}:
		return true
	case [2]int{11, 20}:
		return d.Year >= 2024
	}
	e := easter(d.Year)
	for _, offset := range []int{-48, -47, -2, 60} {
		if e.AddDays(offset) == d {
			return true
		}
	}
	return false
}

func naiveBusinessDay(d Date) bool {
	wd := d.Weekday()
	return wd != time.Saturday && wd != time.Sunday && !naiveHoliday(d)
}

// Every day of the cached years, and some on either side, against the
// naive restatement.
func TestAgainstNaive(t *testing.T) {
	c := Brazil()
	from, to := Date{1870, time.January, 1}, Date{2330, time.December, 31}
	if testing.Short() {
		from, to = Date{1995, time.January, 1}, Date{2060, time.December, 31}
	}
	for d := from; !d.After(to); d = d.AddDays(1) {
		_, holiday := c.Holiday(d)
		if want := naiveHoliday(d); holiday != want {
			t.Fatalf("Holiday(%v) ok = %v, want %v", d, holiday, want)
		}
		if got, want := c.IsBusinessDay(d), naiveBusinessDay(d); got != want {
			t.Fatalf("IsBusinessDay(%v) = %v, want %v", d, got, want)
		}
	}
}

// rickar builds holidays at midnight in cal.DefaultLoc. On a server whose
// zone is São Paulo, Finados 2004 fell on the night summer time began at
// 00:00, and time.Date put that midnight on 1 November.
func TestHolidayWhereMidnightWasSkipped(t *testing.T) {
	old := cal.DefaultLoc
	t.Cleanup(func() { cal.DefaultLoc = old })
	cal.DefaultLoc = load(t, "America/Sao_Paulo")
	c := Brazil()
	if name, ok := c.Holiday(date("2004-11-02")); !ok || name != "Finados" {
		t.Errorf("Holiday(2004-11-02) = %q, %v; want Finados", name, ok)
	}
	if name, ok := c.Holiday(date("2004-11-01")); ok {
		t.Errorf("Holiday(2004-11-01) = %q; want none", name)
	}
}

func TestAddBusinessDays(t *testing.T) {
	c := Brazil()
	for _, tc := range []struct {
		d    string
		n    int
		want string
	}{
		{"2025-12-24", 1, "2025-12-26"}, // over Christmas
		{"2025-12-31", 1, "2026-01-02"}, // over the year's end and New Year
		{"2025-12-31", 0, "2025-12-31"},
		{"2026-01-01", 0, "2026-01-02"},
		{"2026-01-03", 0, "2026-01-05"}, // a Saturday
		{"2026-01-02", -1, "2025-12-31"},
		{"2026-01-05", -2, "2025-12-31"},
		{"2026-01-03", -1, "2026-01-02"},
		{"2026-12-31", 1, "2027-01-04"},
		{"2026-02-10", 3, "2026-02-13"},
		{"2026-02-10", 4, "2026-02-18"}, // over Carnival
		{"2026-02-13", 1, "2026-02-18"},
		{"2026-02-18", -1, "2026-02-13"},
		{"2026-02-14", -1, "2026-02-13"},
		{"2026-02-16", 0, "2026-02-18"},
		{"2027-02-05", 1, "2027-02-10"},
		{"2025-02-28", 1, "2025-03-05"},
		{"2023-11-17", 1, "2023-11-20"}, // not yet a holiday
		{"2024-11-19", 1, "2024-11-21"},
		{"2026-11-19", 1, "2026-11-23"},
		{"2026-04-02", 1, "2026-04-06"}, // Good Friday
		{"2026-06-03", 1, "2026-06-05"}, // Corpus Christi
		{"2025-12-31", 249, "2026-12-31"},
		{"2026-12-31", -249, "2025-12-31"},
		{"2299-12-30", 2, "2300-01-03"}, // out of the cached years
		{"1900-01-02", -1, "1899-12-29"},
	} {
		if got := c.AddBusinessDays(date(tc.d), tc.n); got != date(tc.want) {
			t.Errorf("AddBusinessDays(%s, %d) = %v, want %s", tc.d, tc.n, got, tc.want)
		}
	}
}

func TestBusinessDaysBetween(t *testing.T) {
	c := Brazil()
	for _, tc := range []struct {
		from, to string
		want     int
	}{
		{"2026-02-13", "2026-02-18", 1},
		{"2026-02-18", "2026-02-13", -1},
		{"2026-02-13", "2026-02-13", 0},
		{"2026-02-14", "2026-02-15", 0},
		{"2025-12-31", "2026-01-02", 1},
		{"2025-12-24", "2026-01-05", 6}, // 26, 29, 30, 31 December, 2 and 5 January
		{"2025-12-31", "2026-12-31", 249},
		{"2024-12-31", "2025-12-31", 252},
		{"2023-12-31", "2024-12-31", 253},
		{"2026-12-31", "2025-12-31", -249},
		{"2299-12-29", "2300-01-03", 2}, // 1 January is a Monday
	} {
		if got := c.BusinessDaysBetween(date(tc.from), date(tc.to)); got != tc.want {
			t.Errorf("BusinessDaysBetween(%s, %s) = %d, want %d", tc.from, tc.to, got, tc.want)
		}
	}
}

// randomDate is a date between 1880 and 2320: inside the cached years and
// on both sides of them.
func randomDate(r *rand.Rand) Date {
	return Date{1880, time.January, 1}.AddDays(r.IntN(440 * 365))
}

func TestAddBusinessDaysProperties(t *testing.T) {
	c := Brazil()
	r := rand.New(rand.NewPCG(30, 2026))
	runs := 20000
	if testing.Short() {
		runs = 2000
	}
	for range runs {
		d := randomDate(r)
		n := r.IntN(801) - 400
		got := c.AddBusinessDays(d, n)
		if !c.IsBusinessDay(got) {
			t.Fatalf("AddBusinessDays(%v, %d) = %v, not a business day", d, n, got)
		}
		if want := naiveAdd(d, n); got != want {
			t.Fatalf("AddBusinessDays(%v, %d) = %v; a day at a time gives %v", d, n, got, want)
		}
		switch between := c.BusinessDaysBetween(d, got); {
		case n > 0 && between != n:
			t.Fatalf("BusinessDaysBetween(%v, AddBusinessDays(%v, %d) = %v) = %d", d, d, n, got, between)
		case n < 0 && c.IsBusinessDay(d) && between != n:
			t.Fatalf("BusinessDaysBetween(%v, AddBusinessDays(%v, %d) = %v) = %d (%v is a business day)", d, d, n, got, between, d)
		case n < 0 && !c.IsBusinessDay(d) && between != n+1:
			t.Fatalf("BusinessDaysBetween(%v, AddBusinessDays(%v, %d) = %v) = %d (%v is not a business day)", d, d, n, got, between, d)
		}
		if c.IsBusinessDay(d) {
			if back := c.AddBusinessDays(got, -n); back != d {
				t.Fatalf("AddBusinessDays(AddBusinessDays(%v, %d) = %v, %d) = %v", d, n, got, -n, back)
			}
		}
	}
}

func TestBusinessDaysBetweenAgainstNaive(t *testing.T) {
	c := Brazil()
	r := rand.New(rand.NewPCG(30, 1))
	runs := 3000
	if testing.Short() {
		runs = 300
	}
	for range runs {
		from := randomDate(r)
		to := from.AddDays(r.IntN(2001) - 1000)
		if got, want := c.BusinessDaysBetween(from, to), naiveBetween(from, to); got != want {
			t.Fatalf("BusinessDaysBetween(%v, %v) = %d; a day at a time gives %d", from, to, got, want)
		}
	}
}

func naiveAdd(d Date, n int) Date {
	if n == 0 {
		for !naiveBusinessDay(d) {
			d = d.AddDays(1)
		}
		return d
	}
	step := 1
	if n < 0 {
		step, n = -1, -n
	}
	for n > 0 {
		d = d.AddDays(step)
		if naiveBusinessDay(d) {
			n--
		}
	}
	return d
}

func naiveBetween(from, to Date) int {
	if to.Before(from) {
		return -naiveBetween(to, from)
	}
	n := 0
	for d := from.AddDays(1); !d.After(to); d = d.AddDays(1) {
		if naiveBusinessDay(d) {
			n++
		}
	}
	return n
}

// Dates out of range stand for the day they normalize to.
func TestOutOfRangeDates(t *testing.T) {
	c := Brazil()
	odd, even := Date{2026, time.February, 30}, date("2026-03-02")
	if c.IsBusinessDay(odd) != c.IsBusinessDay(even) {
		t.Errorf("IsBusinessDay(2026-02-30) = %v, IsBusinessDay(2026-03-02) = %v", c.IsBusinessDay(odd), c.IsBusinessDay(even))
	}
	if got := c.AddBusinessDays(Date{2025, time.December, 32}, 0); got != date("2026-01-02") {
		t.Errorf("AddBusinessDays(2025-12-32, 0) = %v, want 2026-01-02", got)
	}
	if got := c.AddBusinessDays(Date{2026, time.March, 0}, 0); got != date("2026-03-02") {
		t.Errorf("AddBusinessDays(2026-03-00, 0) = %v, want 2026-03-02", got)
	}
	if name, ok := c.Holiday(Date{2026, time.November, 55}); !ok || name != "Natal" {
		t.Errorf("Holiday(2026-11-55) = %q, %v; want Natal (2026-12-25)", name, ok)
	}
}

// One Calendar shared by goroutines that all ask about a year first.
func TestConcurrentFirstUse(t *testing.T) {
	c := Brazil()
	var wg sync.WaitGroup
	counts := make([]int, 8)
	for g := range counts {
		wg.Go(func() {
			counts[g] = c.BusinessDaysBetween(date("2025-12-31"), date("2026-12-31"))
		})
	}
	wg.Wait()
	for g, n := range counts {
		if n != 249 {
			t.Errorf("goroutine %d counted %d business days in 2026, want 249", g, n)
		}
	}
}

func BenchmarkIsBusinessDay(b *testing.B) {
	c := Brazil()
	days := make([]Date, 1024)
	for i := range days {
		days[i] = date("2026-01-01").AddDays(i % 365)
	}
	c.IsBusinessDay(days[0])
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		c.IsBusinessDay(days[i%len(days)])
		i++
	}
}

func BenchmarkAddBusinessDays(b *testing.B) {
	c := Brazil()
	due := date("2026-01-01")
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		c.AddBusinessDays(due.AddDays(i%365), 20)
		i++
	}
}

func BenchmarkBusinessDaysBetween(b *testing.B) {
	c := Brazil()
	today := date("2026-12-02")
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		c.BusinessDaysBetween(today.AddDays(-(i % 720)), today)
		i++
	}
}
