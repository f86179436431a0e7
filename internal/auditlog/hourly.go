package auditlog

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/cobranca/cobranca/internal/store"
)

// HourCalls is how many tool calls of one tier ended one way in one hour: a cell of the
// console's chart of calls by tier and outcome per hour.
type HourCalls struct {
	Hour    time.Time // the hour's start, UTC
	Risk    string    // the tool's tier (contract.Risk)
	Outcome Outcome
	Count   int64
}

// MaxCallHours bounds CallsPerHour's range: 31 days.
const MaxCallHours = 31 * 24

// callsPerHourSQL counts the events of tool calls (those with a tier) written from $1 to
// before $2 (seconds since the epoch), by hour, tier and outcome: a range of
// audit_event_occurred_at, at most one row per hour, tier and outcome.
var callsPerHourSQL = map[store.Dialect]string{
	store.Postgres: `SELECT CAST(floor(extract(epoch FROM occurred_at) / 3600) AS bigint), risk, outcome, count(*)
FROM audit_event
WHERE occurred_at >= to_timestamp($1::bigint) AND occurred_at < to_timestamp($2::bigint) AND risk <> ''
GROUP BY 1, 2, 3`,
	store.SQLite: `SELECT occurred_at / 3600000000, risk, outcome, count(*)
FROM audit_event
WHERE occurred_at >= $1 * 1000000 AND occurred_at < $2 * 1000000 AND risk <> ''
GROUP BY 1, 2, 3`,
}

// CallsPerHour counts the tool calls audited from the hour of from to before the hour of to
// (each rounded down to its hour; at most MaxCallHours apart) by hour, tier and outcome, by
// the time each event was written. Hours, tiers and outcomes without a call have no entry.
// The entries come in hour order, then tier and outcome.
func (l *Log) CallsPerHour(ctx context.Context, from, to time.Time) ([]HourCalls, error) {
	from, to = from.UTC().Truncate(time.Hour), to.UTC().Truncate(time.Hour)
	if !from.Before(to) {
		return nil, fmt.Errorf("audit calls per hour: from (%s) must be an hour or more before to (%s)", from.Format(time.RFC3339), to.Format(time.RFC3339))
	}
	if to.Sub(from) > MaxCallHours*time.Hour {
		return nil, fmt.Errorf("audit calls per hour: from and to are more than %d hours apart", MaxCallHours)
	}
	rows, err := l.db.Query(ctx, callsPerHourSQL[l.db.Dialect()], from.Unix(), to.Unix())
	if err != nil {
		return nil, fmt.Errorf("audit calls per hour: %w", err)
	}
	defer rows.Close()
	var out []HourCalls
	for rows.Next() {
		var hour, n int64
		var risk, outcome string
		if err := rows.Scan(&hour, &risk, &outcome, &n); err != nil {
			return nil, fmt.Errorf("audit calls per hour: %w", err)
		}
		out = append(out, HourCalls{Hour: time.Unix(hour*3600, 0).UTC(), Risk: risk, Outcome: Outcome(outcome), Count: n})
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("audit calls per hour: %w", err)
	}
	slices.SortFunc(out, func(a, b HourCalls) int {
		if c := a.Hour.Compare(b.Hour); c != 0 {
			return c
		}
		if a.Risk != b.Risk {
			return cmp.Compare(a.Risk, b.Risk)
		}
		return cmp.Compare(string(a.Outcome), string(b.Outcome))
	})
	return out, nil
}

// CallsCache answers CallsPerHour for the console's chart, reading from the store only the
// hours it does not hold yet. An hour's counts never change once every event written in it
// has committed: events are never changed or deleted, and each takes the database clock at
// its INSERT (a spooled event written later counts in the hour it is written). So the cache
// keeps an hour once it ended Settle ago, and reads the hours since then afresh each time: a
// 7-day chart reads about Settle's hours of events, not the week's.
//
// Memory is bounded: it holds at most MaxCallHours hours, the latest asked for. Safe for
// concurrent use.
type CallsCache struct {
	log    *Log
	now    func() time.Time
	settle time.Duration

	mu    sync.Mutex
	hours map[int64][]HourCalls // by hour since the epoch; an entry without cells: no calls
}

// DefaultSettle is how long after its end an hour's counts are taken as final: far longer
// than a transaction holding an audit event stays open, and than the replicas' clocks differ
// from the database's.
const DefaultSettle = time.Hour

// NewCallsCache returns an empty cache over l; now is the server's clock, settle how long
// after its end an hour is final (DefaultSettle when 0).
func NewCallsCache(l *Log, now func() time.Time, settle time.Duration) *CallsCache {
	if settle <= 0 {
		settle = DefaultSettle
	}
	return &CallsCache{log: l, now: now, settle: settle, hours: map[int64][]HourCalls{}}
}

// CallsPerHour is Log.CallsPerHour, the final hours from the cache.
func (c *CallsCache) CallsPerHour(ctx context.Context, from, to time.Time) ([]HourCalls, error) {
	from, to = from.UTC().Truncate(time.Hour), to.UTC().Truncate(time.Hour)
	first, end := from.Unix()/3600, to.Unix()/3600
	if first >= end || end-first > MaxCallHours {
		return c.log.CallsPerHour(ctx, from, to) // which says what is wrong
	}
	// Hours before final are final: they ended settle ago.
	final := max(first, min(end, c.now().Add(-c.settle).UTC().Truncate(time.Hour).Unix()/3600))
	read := final // from here on, read from the store
	c.mu.Lock()
	n := 0
	for h := first; h < final; h++ {
		cells, ok := c.hours[h]
		if !ok {
			read = h
			break
		}
		n += len(cells)
	}
	out := make([]HourCalls, 0, n+n/8) // the held hours from first to read, then the fresh
	for h := first; h < read; h++ {
		out = append(out, c.hours[h]...)
	}
	c.mu.Unlock()
	var fresh []HourCalls
	if read < end {
		var err error
		if fresh, err = c.log.CallsPerHour(ctx, time.Unix(read*3600, 0), to); err != nil {
			return nil, err
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for h := read; h < final; h++ {
		c.hours[h] = []HourCalls{}
	}
	for _, cell := range fresh {
		if h := cell.Hour.Unix() / 3600; h < final {
			c.hours[h] = append(c.hours[h], cell)
		}
	}
	for h := range c.hours {
		if h < end-MaxCallHours {
			delete(c.hours, h)
		}
	}
	return append(out, fresh...), nil
}
