// Package timestamp reads RFC 3339 date-times as RFC 3339 has them.
//
// time.Parse with time.RFC3339 takes offsets up to ±24:60; RFC 3339's
// time-numoffset is at most ±23:59 (hours 00–23, minutes 00–59). Every
// tool that takes a date-time from a caller reads it here, so that the
// rule, and the input schemas that state it, are one.
package timestamp

import (
	"errors"
	"time"
)

// ErrOffset is Parse's error for an offset past ±23:59.
var ErrOffset = errors.New("timestamp: offset out of RFC 3339's range (±23:59)")

// ErrShape is Parse's error for a string time.RFC3339 reads that is not
// RFC 3339's date-time: a one-digit hour, a comma before the fraction.
var ErrShape = errors.New("timestamp: not an RFC 3339 date-time (YYYY-MM-DDThh:mm:ss[.frac](Z|±hh:mm))")

// Parse reads s as time.Parse(time.RFC3339, s) does, and refuses what RFC
// 3339 does not allow: an offset past ±23:59, and the shapes Go is lenient
// with (a one-digit hour, a comma as the decimal mark).
func Parse(s string) (time.Time, error) {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return time.Time{}, err
	}
	if !shaped(s) {
		return time.Time{}, ErrShape
	}
	if n := len(s); s[n-1] != 'Z' && (s[n-5:n-3] > "23" || s[n-2:] > "59") {
		return time.Time{}, ErrOffset
	}
	return t, nil
}

// shaped reports whether s is laid out as RFC 3339's date-time: digits and
// separators where the grammar puts them, a fraction of at least one digit
// after a period, then Z or ±hh:mm. (The values are time.Parse's to check.)
func shaped(s string) bool {
	const layout = "dddd-dd-ddTdd:dd:dd"
	if len(s) < len(layout)+1 {
		return false
	}
	for i := range len(layout) {
		if c := s[i]; layout[i] == 'd' && (c < '0' || c > '9') || layout[i] != 'd' && c != layout[i] {
			return false
		}
	}
	rest := s[len(layout):]
	if rest[0] == '.' {
		i := 1
		for i < len(rest) && rest[i] >= '0' && rest[i] <= '9' {
			i++
		}
		if i == 1 {
			return false
		}
		rest = rest[i:]
	}
	if rest == "Z" {
		return true
	}
	return len(rest) == 6 && (rest[0] == '+' || rest[0] == '-') && digit(rest[1]) && digit(rest[2]) && rest[3] == ':' && digit(rest[4]) && digit(rest[5])
}

func digit(c byte) bool { return c >= '0' && c <= '9' }
