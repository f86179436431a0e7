package timestamp_test

import (
	"errors"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/cobranca/cobranca/internal/timestamp"
)

func TestParse(t *testing.T) {
	for _, c := range []struct {
		in   string
		want time.Time // zero: refused
	}{
		{"2025-06-28T10:00:00Z", time.Date(2025, 6, 28, 10, 0, 0, 0, time.UTC)},
		{"2025-06-28T10:00:00.5z", time.Time{}}, // time.RFC3339 wants an upper-case Z
		{"2025-06-28T10:00:00+23:59", time.Date(2025, 6, 27, 10, 1, 0, 0, time.UTC)},
		{"2025-06-28T10:00:00-23:59", time.Date(2025, 6, 29, 9, 59, 0, 0, time.UTC)},
		{"2025-06-28T10:00:00.123-03:00", time.Date(2025, 6, 28, 13, 0, 0, 123e6, time.UTC)},
		{"2025-06-28T10:00:00+24:00", time.Time{}},
		{"2025-06-28T10:00:00-03:60", time.Time{}},
		{"2025-06-28T10:00:00+24:60", time.Time{}},
		{"2025-06-28T10:00:00+25:00", time.Time{}},
		{"2025-06-28T10:00:00", time.Time{}},
		{"2025-06-28T1:00:00Z", time.Time{}},         // time.RFC3339 takes a one-digit hour
		{"2025-06-28T10:00:00,5-03:00", time.Time{}}, // and a comma before the fraction
		{"2025-06-28T10:00:00.Z", time.Time{}},
		{"2025-06-28", time.Time{}},
		{"", time.Time{}},
	} {
		got, err := timestamp.Parse(c.in)
		switch {
		case c.want.IsZero() && err == nil:
			t.Errorf("Parse(%q) = %v, want an error", c.in, got)
		case !c.want.IsZero() && (err != nil || !got.Equal(c.want)):
			t.Errorf("Parse(%q) = %v, %v; want %v", c.in, got, err, c.want)
		}
	}
	if _, err := timestamp.Parse("2025-06-28T10:00:00+24:00"); !errors.Is(err, timestamp.ErrOffset) {
		t.Errorf("Parse of +24:00: %v, want ErrOffset", err)
	}
}

// rfc3339 is RFC 3339's date-time, as a pattern (the values aside).
var rfc3339 = regexp.MustCompile(`^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]+)?(Z|[+-][0-9]{2}:[0-9]{2})$`)

// FuzzParse: Parse accepts exactly what time.RFC3339 accepts in RFC 3339's
// shape with an offset of at most ±23:59, and never panics.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"2025-06-28T10:00:00Z", "2025-06-28T1:00:00Z", "2025-06-28T10:00:00,5Z", "2025-06-28T10:00:00+24:00", "2025-06-28T10:00:00.5-03:00", "2025-06-28T10:00:00-23:60", "Z", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := timestamp.Parse(s)
		want, werr := time.Parse(time.RFC3339, s)
		if werr != nil {
			if err == nil {
				t.Fatalf("Parse(%q) accepted what time.Parse refuses (%v)", s, werr)
			}
			return
		}
		_, off := want.Zone()
		if s[len(s)-1] == 'Z' {
			off = 0
		}
		if off < 0 {
			off = -off
		}
		inRange := off <= 23*3600+59*60 && !strings.HasSuffix(s, ":60")
		if ok := inRange && rfc3339.MatchString(s); ok != (err == nil) {
			t.Fatalf("Parse(%q) = %v; RFC 3339's shape and offset: %v", s, err, ok)
		}
		if err == nil && !got.Equal(want) {
			t.Fatalf("Parse(%q) = %v, want %v", s, got, want)
		}
	})
}
