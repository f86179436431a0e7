package limits

import (
	"strings"
	"testing"
	"time"
)

func TestParseSpec(t *testing.T) {
	tests := []struct {
		in   string
		want Limit
	}{
		{"off", Limit{}},
		{"600/1m,burst=60", Limit{Rate: 600, Period: time.Minute, Burst: 60}},
		{"600/m,burst=60", Limit{Rate: 600, Period: time.Minute, Burst: 60}},
		{" 10 / 1h , burst = 3 ", Limit{Rate: 10, Period: time.Hour, Burst: 3}},
		{"5/s", Limit{Rate: 5, Period: time.Second, Burst: 5}},
		{"1/h", Limit{Rate: 1, Period: time.Hour, Burst: 1}},
		{"100/90s,burst=1", Limit{Rate: 100, Period: 90 * time.Second, Burst: 1}},
		{"1000/1s", Limit{Rate: 1000, Period: time.Second, Burst: 1000}},
		{"1/24h", Limit{Rate: 1, Period: 24 * time.Hour, Burst: 1}},
	}
	for _, tt := range tests {
		got, err := ParseSpec(tt.in)
		if err != nil || got != tt.want {
			t.Errorf("ParseSpec(%q) = %+v, %v; want %+v", tt.in, got, err, tt.want)
		}
	}
	for _, bad := range []string{
		"", "600", "600/", "/1m", "0/1m", "-1/1m", "+5/1m", "1.5/1m", "600/0s", "600/1d", "1/25h",
		"600/1m,burst=0", "600/1m,burst=", "600/1m,burst=x", "600/1m,rate=3", "600/1m,burst=1,burst=2",
		"1000001/1h", "2000/1ms", "10/1500us", "Off", "600/1m burst=60",
	} {
		if got, err := ParseSpec(bad); err == nil {
			t.Errorf("ParseSpec(%q) = %+v, want an error", bad, got)
		}
	}
}

// FuzzParseSpec: no input panics, and whatever parses renders to a spec that
// parses to the same limit, with a positive interval that fits the store.
func FuzzParseSpec(f *testing.F) {
	for _, s := range []string{"off", "600/1m,burst=60", "10/h", "1/24h", "1000000/1s", "5/90s,burst=1", "x/y,z=w"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		l, err := ParseSpec(s)
		if err != nil {
			if strings.TrimSpace(s) == "off" {
				t.Fatalf("ParseSpec(%q) failed: %v", s, err)
			}
			return
		}
		again, err := ParseSpec(l.String())
		if err != nil || again != l {
			t.Fatalf("ParseSpec(%q) = %+v; its String %q parses to %+v, %v", s, l, l.String(), again, err)
		}
		if l.Off() {
			return
		}
		if l.Interval() < time.Microsecond || l.Burst < 1 || l.toleranceUS() <= 0 || l.toleranceUS() > maxBurst*maxPeriod.Microseconds() {
			t.Fatalf("ParseSpec(%q) = %+v: interval %v, tolerance %dµs out of range", s, l, l.Interval(), l.toleranceUS())
		}
	})
}
