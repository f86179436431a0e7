package auditlog

import (
	"context"
	"testing"
	"time"

	"github.com/cobranca/cobranca/internal/store"
	"github.com/cobranca/cobranca/internal/store/storetest"
)

// TestLag: the events written since the last seal are the lag, dated by the oldest of them;
// sealing brings it to zero; at most limit are counted.
func TestLag(t *testing.T) {
	eachStore(t, func(t *testing.T, _ storetest.Fixture, db store.DB) {
		ctx := context.Background()
		l := newLog(t, db)
		lag := func(limit int64) Lag {
			t.Helper()
			got, err := l.Lag(ctx, limit)
			if err != nil {
				t.Fatal(err)
			}
			return got
		}
		if got := lag(100); got != (Lag{}) {
			t.Errorf("Lag(empty log) = %+v, want zero", got)
		}
		record := func(from, to int) {
			for i := from; i < to; i++ {
				if err := l.Record(ctx, sampleEvent(i)); err != nil {
					t.Fatal(err)
				}
			}
		}
		start := time.Now()
		record(0, 3)
		got := lag(100)
		if got.Unsealed != 3 || !plausible(db, got.Oldest, start) {
			t.Errorf("Lag(3 unsealed, none sealed ever) = %+v, want 3 from about %v", got, start)
		}
		if _, err := l.Seal(ctx); err != nil {
			t.Fatal(err)
		}
		if got := lag(100); got != (Lag{}) {
			t.Errorf("Lag(all sealed) = %+v, want zero", got)
		}
		start = time.Now()
		record(3, 8)
		if got := lag(100); got.Unsealed != 5 || !plausible(db, got.Oldest, start) {
			t.Errorf("Lag(5 past the head) = %+v, want 5 from about %v", got, start)
		}
		if got := lag(2); got.Unsealed != 2 {
			t.Errorf("Lag(limit 2) = %+v, want 2 counted", got)
		}
		if _, err := l.Seal(ctx); err != nil {
			t.Fatal(err)
		}
		if got := lag(100); got != (Lag{}) {
			t.Errorf("Lag(all sealed again) = %+v, want zero", got)
		}
	})
}

// plausible reports whether oldest is the time of an event written after start: on SQLite
// the log's clock (fixedTime in these tests), on PostgreSQL the database's.
func plausible(db store.DB, oldest, start time.Time) bool {
	if db.Dialect() == store.SQLite {
		return oldest.Equal(fixedTime)
	}
	return !oldest.Before(start.Add(-time.Second)) && oldest.Before(time.Now().Add(time.Second))
}
