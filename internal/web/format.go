package web

import (
	"github.com/cobranca/cobranca/internal/limits"
	"strconv"
	"strings"
	"time"
)

// brasilia is the time the pages show dates in: the finance team's, Brasília's (UTC−3, with
// no daylight saving since 2019), fixed so that no time zone database is needed.
var brasilia = time.FixedZone("BRT", -3*60*60)

// Date is t as the reader writes a date and time: 02/12/2026 09:45 in Portuguese,
// 2026-12-02 09:45 BRT in English, both in Brasília's time.
func (t *texts) Date(at time.Time) string { return t.DateIn(at, brasilia) }

// DateIn is Date in the time of loc (a schedule's window zone, say): 2026-12-02 09:45 -03 in
// English for America/Sao_Paulo, whose zone has no abbreviation.
func (t *texts) DateIn(at time.Time, loc *time.Location) string {
	at = at.In(loc)
	if t.Tag == portuguese.Tag {
		return at.Format("02/01/2006 15:04")
	}
	return at.Format("2006-01-02 15:04 MST")
}

// Stamp is an RFC 3339 timestamp, as the tools answer one, written as Date writes it; one that
// does not parse is shown as it came.
func (t *texts) Stamp(s string) string {
	at, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return s
	}
	return t.Date(at)
}

// Money is an amount in cents of a real as the reader writes it: R$ 1.234,56 in Portuguese,
// R$ 1,234.56 in English.
func (t *texts) Money(cents int64) string {
	thousands, decimal := t.separators()
	u, sign := magnitude(cents)
	cs := u % 100
	return sign + "R$ " + group(u/100, thousands) + decimal + string([]byte{byte('0' + cs/10), byte('0' + cs%10)})
}

// Count is n with the reader's thousands separator: 1.234.567 in Portuguese, 1,234,567 in
// English.
func (t *texts) Count(n int64) string {
	thousands, _ := t.separators()
	u, sign := magnitude(n)
	return sign + group(u, thousands)
}

func (t *texts) separators() (thousands, decimal string) {
	if t.Tag == portuguese.Tag {
		return ".", ","
	}
	return ",", "."
}

// magnitude is |n| (right for math.MinInt64 too) and the sign to write before it: U+2212, a
// minus a screen reader says.
func magnitude(n int64) (uint64, string) {
	if n < 0 {
		return -uint64(n), "−"
	}
	return uint64(n), ""
}

// group writes u in decimal with sep between each group of three digits.
func group(u uint64, sep string) string {
	digits := strconv.FormatUint(u, 10)
	var b strings.Builder
	for i, d := range digits {
		if i > 0 && (len(digits)-i)%3 == 0 {
			b.WriteString(sep)
		}
		b.WriteRune(d)
	}
	return b.String()
}

// Age is how long d is, to the minute, in the largest two units: 2 d 4 h, 3 h 5 min, 12 min.
func (t *texts) Age(d time.Duration) string {
	if d < time.Minute {
		return t.JustNow
	}
	days, hours, mins := int64(d/(24*time.Hour)), int64(d/time.Hour)%24, int64(d/time.Minute)%60
	switch {
	case days > 0 && hours == 0:
		return strconv.FormatInt(days, 10) + " d"
	case days > 0:
		return strconv.FormatInt(days, 10) + " d " + strconv.FormatInt(hours, 10) + " h"
	case hours > 0 && mins == 0:
		return strconv.FormatInt(hours, 10) + " h"
	case hours > 0:
		return strconv.FormatInt(hours, 10) + " h " + strconv.FormatInt(mins, 10) + " min"
	}
	return strconv.FormatInt(mins, 10) + " min"
}

// Limit is a rate limit as the reader says it: 60 per 1 min, bursts up to 10.
func (t *texts) Limit(l limits.Limit) string {
	if l.Off() {
		return t.Off
	}
	return t.Count(l.Rate) + " / " + t.Age(l.Period) + ", " + t.Burst + " " + t.Count(l.Burst)
}
