package portfolio

import (
	"testing"

	"github.com/cobranca/cobranca/internal/value"
)

// The branch-free bucketing on date keys is value.AgingBucket's rule, for every due date
// from 200 days before asOf to 200 after.
func TestBucketOfKeyIsTheRule(t *testing.T) {
	const asOf = "2026-03-01"
	n := dayNumber(asOf)
	var keys [4]uint64
	for i, start := range value.AgingBucketStarts {
		keys[i] = dayKey(n - (start - 1))
	}
	for d := -200; d <= 200; d++ {
		due := dayKey(n - d)
		got, want := bucketOfKey(due, &keys), value.AgingBucket(d)
		if got != want {
			t.Errorf("bucketOfKey(%s) = %d, want %d (value.AgingBucket(%d))", appendDay(nil, n-d), got, want, d)
		}
		if b := bucketOfDays(d); b.String() != value.AgingBucketNames[want] {
			t.Errorf("bucketOfDays(%d) = %s, want %s", d, b, value.AgingBucketNames[want])
		}
	}
}
