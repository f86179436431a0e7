package calendar

import (
	"fmt"
	"time"
)

// Date is a civil date: no time of day, no zone. A Date whose month or day
// is out of range (February 30) stands for the date time.Date normalizes it
// to (March 2); ParseDate never returns one.
type Date struct {
	Year  int
	Month time.Month
	Day   int
}

// DateOf is the date t falls on in loc; a nil loc is UTC.
func DateOf(t time.Time, loc *time.Location) Date {
	if loc == nil {
		loc = time.UTC
	}
	y, m, d := t.In(loc).Date()
	return Date{y, m, d}
}

// ParseDate reads a date written YYYY-MM-DD and nothing else: no time, no
// zone, no sign, two-digit month and day, a day that exists in its month.
// The error is an *Error without a Field: the caller knows which argument
// it parsed and sets it.
func ParseDate(s string) (Date, error) {
	if len(s) != len("2006-01-02") || s[4] != '-' || s[7] != '-' {
		return Date{}, &Error{Message: "want a calendar date written YYYY-MM-DD"}
	}
	y, ok1 := digits(s[0:4])
	m, ok2 := digits(s[5:7])
	d, ok3 := digits(s[8:10])
	if !ok1 || !ok2 || !ok3 {
		return Date{}, &Error{Message: "want a calendar date written YYYY-MM-DD"}
	}
	if m < 1 || m > 12 {
		return Date{}, &Error{Message: "the month must be 01 to 12"}
	}
	if d < 1 || d > daysInMonth(y, time.Month(m)) {
		return Date{}, &Error{Message: "the day does not exist in that month"}
	}
	return Date{y, time.Month(m), d}, nil
}

// digits reads s as a decimal number made of ASCII digits only.
func digits(s string) (int, bool) {
	n := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, true
}

// String is d written YYYY-MM-DD, the form ParseDate reads.
func (d Date) String() string {
	return fmt.Sprintf("%04d-%02d-%02d", d.Year, int(d.Month), d.Day)
}

// In is the first instant of d in loc (nil is UTC): its midnight, or, where
// the clock skipped midnight that day (Brazil's summer time began at 00:00
// until 2019), the moment the day began. time.Date alone would answer 23:00
// of the day before there. A day the zone skipped entirely has no instant;
// In answers the first instant after it.
func (d Date) In(loc *time.Location) time.Time {
	if loc == nil {
		loc = time.UTC
	}
	lo := d.wall()
	if t, ok := firstWall(loc, time.Unix(lo-maxOffset, 0), lo, lo+3*secondsPerDay); ok {
		return t.In(loc)
	}
	return time.Date(d.Year, d.Month, d.Day, 0, 0, 0, 0, loc)
}

// Weekday is the day of the week d falls on.
func (d Date) Weekday() time.Weekday {
	return d.utc().Weekday()
}

// AddDays is the date n days after d (before, when n < 0).
func (d Date) AddDays(n int) Date {
	y, m, dd := time.Date(d.Year, d.Month, d.Day+n, 12, 0, 0, 0, time.UTC).Date()
	return Date{y, m, dd}
}

// Compare is -1 when d is before e, +1 when after, 0 when the same date.
func (d Date) Compare(e Date) int {
	d, e = d.normal(), e.normal()
	switch {
	case d.Year != e.Year:
		return cmpInt(d.Year, e.Year)
	case d.Month != e.Month:
		return cmpInt(int(d.Month), int(e.Month))
	}
	return cmpInt(d.Day, e.Day)
}

// Before reports whether d is before e.
func (d Date) Before(e Date) bool { return d.Compare(e) < 0 }

// After reports whether d is after e.
func (d Date) After(e Date) bool { return d.Compare(e) > 0 }

func cmpInt(a, b int) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// valid reports whether d's month and day are in range.
func (d Date) valid() bool {
	return d.Month >= time.January && d.Month <= time.December &&
		d.Day >= 1 && d.Day <= daysInMonth(d.Year, d.Month)
}

// normal is d, or the date it stands for when out of range.
func (d Date) normal() Date {
	if d.valid() {
		return d
	}
	return d.AddDays(0)
}

// utc is noon of d in UTC: a moment on d whatever DST does elsewhere.
func (d Date) utc() time.Time {
	return time.Date(d.Year, d.Month, d.Day, 12, 0, 0, 0, time.UTC)
}

// wall is d's midnight as if the wall clock were UTC, in Unix seconds: the
// scale firstWall compares wall clocks on.
func (d Date) wall() int64 {
	return time.Date(d.Year, d.Month, d.Day, 0, 0, 0, 0, time.UTC).Unix()
}

const secondsPerDay = 24 * 60 * 60

func isLeap(y int) bool { return y%4 == 0 && (y%100 != 0 || y%400 == 0) }

func daysInYear(y int) int {
	if isLeap(y) {
		return 366
	}
	return 365
}

// daysBefore[m] is the number of days before month m+1 in a common year.
var daysBefore = [13]int{0, 31, 59, 90, 120, 151, 181, 212, 243, 273, 304, 334, 365}

func daysInMonth(y int, m time.Month) int {
	if m == time.February && isLeap(y) {
		return 29
	}
	return daysBefore[m] - daysBefore[m-1]
}

// ordinal is d's year and its index in that year (0 for 1 January), for
// the per-year tables of Calendar.
func (d Date) ordinal() (year, index int) {
	d = d.normal()
	i := daysBefore[d.Month-1] + d.Day - 1
	if d.Month > time.February && isLeap(d.Year) {
		i++
	}
	return d.Year, i
}

// fromOrdinal is the date at index i (0-based) of year y.
func fromOrdinal(y, i int) Date {
	return Date{y, time.January, 1 + i}.normal()
}
