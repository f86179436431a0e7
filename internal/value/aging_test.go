package value

import (
	"math"
	"testing"
)

func TestAgingBucket(t *testing.T) {
	for _, tc := range []struct {
		days int
		want string
	}{
		{-400, "current"}, {0, "current"}, {1, "1-30"}, {30, "1-30"}, {31, "31-60"}, {60, "31-60"},
		{61, "61-90"}, {90, "61-90"}, {91, "90+"}, {math.MaxInt, "90+"},
	} {
		if got := AgingBucketNames[AgingBucket(tc.days)]; got != tc.want {
			t.Errorf("AgingBucket(%d) = %s, want %s", tc.days, got, tc.want)
		}
	}
}
