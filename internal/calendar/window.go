package calendar

import (
	"fmt"
	"slices"
	"strings"
	"time"
	// The zone database, linked in: America/Sao_Paulo (or the caller's
	// zone) must load on a machine without zoneinfo, as in the image.
	_ "time/tzdata"
)

// Error is an argument refused: Field names it (window.zone, window.open,
// window.close, window.days; empty from ParseDate, whose caller knows the
// argument's name) and Message says why, safe to show a caller. Callers
// report it as failure.InvalidArguments.
type Error struct {
	Field   string
	Message string
}

func (e *Error) Error() string {
	if e.Field == "" {
		return e.Message
	}
	return e.Field + ": " + e.Message
}

// Window is when messages may go out: on the weekdays in Days, from Open to
// Close by the wall clock of Zone, and never on a bank holiday of the
// Calendar asked. Open and Close are minutes after local midnight, 0 ≤ Open
// < Close ≤ 1440: a window does not cross midnight. Build one with
// ParseWindow or DefaultWindow; Validate checks one built by hand.
type Window struct {
	Zone        *time.Location
	Open, Close int
	Days        []time.Weekday
}

const defaultZone = "America/Sao_Paulo"

// DefaultWindow is 08:00 to 20:00 in São Paulo, Monday to Saturday.
func DefaultWindow() Window {
	return Window{
		Zone:  saoPaulo(),
		Open:  8 * 60,
		Close: 20 * 60,
		Days: []time.Weekday{
			time.Monday, time.Tuesday, time.Wednesday, time.Thursday, time.Friday, time.Saturday,
		},
	}
}

func saoPaulo() *time.Location {
	loc, err := time.LoadLocation(defaultZone)
	if err != nil {
		// Unreachable with time/tzdata linked in; the zone's offset since
		// Brazil gave up summer time in 2019 is the honest fallback.
		return time.FixedZone(defaultZone, -3*60*60)
	}
	return loc
}

type dayName struct {
	name string
	day  time.Weekday
}

// dayNames are the names ParseWindow reads and String writes, in the order
// String writes them.
var dayNames = []dayName{
	{"mon", time.Monday}, {"tue", time.Tuesday}, {"wed", time.Wednesday},
	{"thu", time.Thursday}, {"fri", time.Friday}, {"sat", time.Saturday},
	{"sun", time.Sunday},
}

// ParseWindow reads a window: zone an IANA name ("America/Sao_Paulo"), open
// and close times of day "HH:MM" (close may be "24:00"), days three-letter
// English names in any case ("mon", "Sat"). An empty zone, open or close,
// or no days at all, takes DefaultWindow's. The first problem found is
// returned as an *Error naming its field.
func ParseWindow(zone, open, close string, days []string) (Window, error) {
	w := DefaultWindow()
	if zone != "" {
		loc, err := loadZone(zone)
		if err != nil {
			return Window{}, err
		}
		w.Zone = loc
	}
	if open != "" {
		m, ok := parseClock(open)
		if !ok {
			return Window{}, &Error{"window.open", "want a time of day written HH:MM"}
		}
		w.Open = m
	}
	if close != "" {
		m, ok := parseClock(close)
		if !ok {
			return Window{}, &Error{"window.close", "want a time of day written HH:MM"}
		}
		w.Close = m
	}
	if len(days) > 0 {
		w.Days = make([]time.Weekday, 0, len(days))
		for i, s := range days {
			name := asciiLower(s)
			k := slices.IndexFunc(dayNames, func(n dayName) bool { return n.name == name })
			if k < 0 {
				return Window{}, &Error{"window.days", fmt.Sprintf("day %d is not one of mon, tue, wed, thu, fri, sat, sun", i+1)}
			}
			w.Days = append(w.Days, dayNames[k].day)
		}
		slices.SortFunc(w.Days, func(a, b time.Weekday) int { return dayOrder(a) - dayOrder(b) })
	}
	if err := w.Validate(); err != nil {
		return Window{}, err
	}
	return w, nil
}

// asciiLower lowers A to Z only: strings.EqualFold would also take "ſat"
// (a long s) for "sat".
func asciiLower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

// dayOrder puts Sunday last, as dayNames does.
func dayOrder(d time.Weekday) int { return (int(d) + 6) % 7 }

// loadZone loads an IANA zone by name. "Local" is refused: it is this
// server's zone, which the caller neither knows nor chose.
func loadZone(name string) (*time.Location, error) {
	loc, err := time.LoadLocation(name)
	if err != nil || name == "Local" {
		return nil, &Error{"window.zone", "want an IANA time zone name such as America/Sao_Paulo"}
	}
	return loc, nil
}

// parseClock reads "HH:MM", 00:00 to 24:00, as minutes after midnight.
func parseClock(s string) (int, bool) {
	if len(s) != len("15:04") || s[2] != ':' {
		return 0, false
	}
	h, ok1 := digits(s[0:2])
	m, ok2 := digits(s[3:5])
	if !ok1 || !ok2 || m > 59 || h > 24 || h == 24 && m != 0 {
		return 0, false
	}
	return h*60 + m, true
}

// Validate reports what is wrong with w as an *Error naming the field, or
// nil. A window that fails it is never open.
func (w Window) Validate() error {
	if field, msg := w.problem(); field != "" {
		return &Error{field, msg}
	}
	return nil
}

// problem is Validate without the allocation, for InWindow and NextOpen.
func (w Window) problem() (field, message string) {
	switch {
	case w.Zone == nil:
		return "window.zone", "a time zone is required"
	case w.Open < 0 || w.Open >= 24*60:
		return "window.open", "must be 00:00 to 23:59"
	case w.Close <= 0 || w.Close > 24*60:
		return "window.close", "must be 00:01 to 24:00"
	case w.Close <= w.Open:
		return "window.close", "must be after window.open: a window does not cross midnight"
	case len(w.Days) == 0:
		return "window.days", "at least one day is required"
	}
	var seen [7]bool
	for _, d := range w.Days {
		if d < time.Sunday || d > time.Saturday {
			return "window.days", "not a day of the week"
		}
		if seen[d] {
			return "window.days", "a day is listed twice"
		}
		seen[d] = true
	}
	return "", ""
}

// String is w in one line, its parts as ParseWindow reads them:
// "America/Sao_Paulo 08:00-20:00 mon,tue,wed,thu,fri,sat".
func (w Window) String() string {
	var b strings.Builder
	b.WriteString(w.Zone.String())
	fmt.Fprintf(&b, " %02d:%02d-%02d:%02d ", w.Open/60, w.Open%60, w.Close/60, w.Close%60)
	for i, d := range w.Days {
		if i > 0 {
			b.WriteByte(',')
		}
		if k := slices.IndexFunc(dayNames, func(n dayName) bool {
			return n.day == d
		}); k >= 0 {
			b.WriteString(dayNames[k].name)
		} else {
			fmt.Fprintf(&b, "%d", int(d))
		}
	}
	return b.String()
}

// InWindow reports whether a message may go out at t: w is valid, t's date
// in w.Zone is one of w.Days and not a bank holiday, and its wall clock
// there is at or after Open and before Close. Wall clock means what a clock
// in the zone shows: on the night summer time ends, an hour that happens
// twice is in the window twice.
func (c *Calendar) InWindow(w Window, t time.Time) bool {
	if field, _ := w.problem(); field != "" {
		return false
	}
	lt := t.In(w.Zone)
	y, m, d := lt.Date()
	h, mi, s := lt.Clock()
	sec := h*3600 + mi*60 + s
	return sec >= w.Open*60 && sec < w.Close*60 && c.openOn(w, Date{y, m, d})
}

// openOn reports whether w opens at all on d.
func (c *Calendar) openOn(w Window, d Date) bool {
	return slices.Contains(w.Days, d.Weekday()) && !c.isHoliday(d)
}

// searchDays bounds NextOpen's search. A valid window opens on one of its
// weekdays every week, but for holidays; no weekday is a holiday more than
// two weeks running (25 December, 1 January).
const searchDays = 400

// NextOpen is t when InWindow(w, t), else the first moment after t at which
// the window is open (in t's location). It reads the zone's real clock, so
// it is right across summer time changes: if Open falls in the hour skipped
// in spring, the window opens when the clock jumps past it; a day whose
// whole window was skipped is passed over. It returns the zero Time only
// for a window that fails Validate.
func (c *Calendar) NextOpen(w Window, t time.Time) time.Time {
	if field, _ := w.problem(); field != "" {
		return time.Time{}
	}
	if c.InWindow(w, t) {
		return t
	}
	// From the day before t's: a clock turned back across midnight may
	// show yesterday's date again.
	first := DateOf(t, w.Zone).AddDays(-1)
	for k := range searchDays {
		d := first.AddDays(k)
		at, ok := c.opening(w, d, t)
		if !ok {
			continue
		}
		// The same clock may show the next day's window before the rest of
		// this one.
		if next, ok := c.opening(w, d.AddDays(1), t); ok && next.Before(at) {
			at = next
		}
		return at.In(t.Location())
	}
	return time.Time{}
}

// NextClose is when the window open at t, or the next one to open after t (NextOpen),
// closes: its day's Close on the zone's clock (in t's location). A schedule's batch may wait
// for a person's approval until then. It returns the zero Time only for a window that fails
// Validate.
func (c *Calendar) NextClose(w Window, t time.Time) time.Time {
	open := c.NextOpen(w, t)
	if open.IsZero() {
		return time.Time{}
	}
	lo := open.In(w.Zone)
	y, m, d := lo.Date()
	return time.Date(y, m, d, w.Close/60, w.Close%60, 0, 0, w.Zone).In(t.Location())
}

// opening is the first moment at or after from at which w is open on d.
func (c *Calendar) opening(w Window, d Date, from time.Time) (time.Time, bool) {
	if !c.openOn(w, d) {
		return time.Time{}, false
	}
	midnight := d.wall()
	return firstWall(w.Zone, from, midnight+int64(w.Open)*60, midnight+int64(w.Close)*60)
}

// maxOffset bounds any zone's distance from UTC (they run from -12h to
// +14h), with room.
const maxOffset = 26 * 60 * 60

// firstWall is the earliest instant at or after from whose wall clock in
// loc is in [lo, hi), wall clocks written as Unix seconds as if the clock
// were UTC (see Date.wall). It walks the zone's periods of constant offset
// (time.Time.ZoneBounds): inside one, the wall clock is the instant plus
// that offset, so the answer there is a subtraction, and a transition that
// skips or repeats an hour is where one period ends and the next begins.
func firstWall(loc *time.Location, from time.Time, lo, hi int64) (time.Time, bool) {
	stop := time.Unix(hi+maxOffset, 0) // every wall clock is past hi from here
	for x := from; x.Before(stop); {
		lx := x.In(loc)
		_, offset := lx.Zone()
		_, end := lx.ZoneBounds()
		at := x
		if open := time.Unix(lo-int64(offset), 0); open.After(at) {
			at = open
		}
		if at.Before(time.Unix(hi-int64(offset), 0)) && (end.IsZero() || at.Before(end)) {
			return at, true
		}
		if end.IsZero() {
			break
		}
		x = end
	}
	return time.Time{}, false
}
