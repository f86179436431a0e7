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

// Parse reads s as time.Parse(time.RFC3339, s) does, and refuses an offset
// RFC 3339 does not allow.
func Parse(s string) (time.Time, error) {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return time.Time{}, err
	}
	if n := len(s); s[n-1] != 'Z' && (s[n-5:n-3] > "23" || s[n-2:] > "59") {
		return time.Time{}, ErrOffset
	}
	return t, nil
}
