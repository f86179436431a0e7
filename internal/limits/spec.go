package limits

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Limit is a GCRA budget: Rate requests per Period on average, at most Burst
// at once. The zero Limit is "off": it admits everything.
type Limit struct {
	Rate   int64
	Period time.Duration
	Burst  int64
}

// Bounds of a spec, so that every derived quantity fits an int64 of
// microseconds with room to spare.
const (
	maxRate   = 1_000_000
	maxBurst  = 1_000_000
	maxPeriod = 24 * time.Hour
)

// Off reports whether the limit is disabled.
func (l Limit) Off() bool { return l.Rate <= 0 }

// Interval is the emission interval: the time one request costs, rounded up
// to a whole microsecond (the unit of the stored TAT) so the rounding never
// admits more than the spec says.
func (l Limit) Interval() time.Duration {
	if l.Off() {
		return 0
	}
	us := (l.Period.Microseconds() + l.Rate - 1) / l.Rate
	return time.Duration(max(us, 1)) * time.Microsecond
}

// intervalUS and toleranceUS are the GCRA parameters in microseconds: T and
// the full-bucket span Burst×T.
func (l Limit) intervalUS() int64  { return l.Interval().Microseconds() }
func (l Limit) toleranceUS() int64 { return l.Burst * l.intervalUS() }

// String renders the limit as a spec ParseSpec accepts.
func (l Limit) String() string {
	if l.Off() {
		return "off"
	}
	return strconv.FormatInt(l.Rate, 10) + "/" + formatPeriod(l.Period) + ",burst=" + strconv.FormatInt(l.Burst, 10)
}

func formatPeriod(d time.Duration) string {
	switch {
	case d%time.Hour == 0:
		return strconv.FormatInt(int64(d/time.Hour), 10) + "h"
	case d%time.Minute == 0:
		return strconv.FormatInt(int64(d/time.Minute), 10) + "m"
	case d%time.Second == 0:
		return strconv.FormatInt(int64(d/time.Second), 10) + "s"
	default:
		return strconv.FormatInt(int64(d/time.Millisecond), 10) + "ms"
	}
}

// ParseSpec parses a limit written `N/PERIOD[,burst=B]` or `off`.
//
// PERIOD is a Go duration of at least 1ms and at most 24h (`1s`, `1m`, `90s`,
// `1h`), or a bare unit meaning one of it (`s`, `m`, `h`). N and B are whole
// numbers from 1 to 1 000 000, and one request may cost no less than 1µs.
// Without burst, B is N: up to a period's worth of requests at once.
func ParseSpec(s string) (Limit, error) {
	s = strings.TrimSpace(s)
	if s == "off" {
		return Limit{}, nil
	}
	head, opts, hasOpts := strings.Cut(s, ",")
	ns, ps, ok := strings.Cut(head, "/")
	if !ok {
		return Limit{}, fmt.Errorf("%q: want N/PERIOD[,burst=B] or off", s)
	}
	n, err := parseCount(strings.TrimSpace(ns), maxRate)
	if err != nil {
		return Limit{}, fmt.Errorf("%q: rate: %w", s, err)
	}
	period, err := parsePeriod(strings.TrimSpace(ps))
	if err != nil {
		return Limit{}, fmt.Errorf("%q: period: %w", s, err)
	}
	l := Limit{Rate: n, Period: period, Burst: n}
	if hasOpts {
		k, v, ok := strings.Cut(opts, "=")
		if !ok || strings.TrimSpace(k) != "burst" {
			return Limit{}, fmt.Errorf("%q: the only option is burst=B", s)
		}
		if l.Burst, err = parseCount(strings.TrimSpace(v), maxBurst); err != nil {
			return Limit{}, fmt.Errorf("%q: burst: %w", s, err)
		}
	}
	if period < time.Duration(n)*time.Microsecond {
		return Limit{}, fmt.Errorf("%q: more than one request per microsecond", s)
	}
	return l, nil
}

func parseCount(s string, limit int64) (int64, error) {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 1 || n > limit || s[0] == '+' {
		return 0, fmt.Errorf("%q is not a whole number from 1 to %d", s, limit)
	}
	return n, nil
}

var errPeriod = errors.New("want a duration from 1ms to 24h, like 1s, 1m, 1h (or s, m, h)")

func parsePeriod(s string) (time.Duration, error) {
	switch s {
	case "s":
		return time.Second, nil
	case "m":
		return time.Minute, nil
	case "h":
		return time.Hour, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < time.Millisecond || d > maxPeriod || d%time.Millisecond != 0 {
		return 0, errPeriod
	}
	return d, nil
}
