package auditlog

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/cobranca/cobranca/internal/store"
	"github.com/cobranca/cobranca/internal/store/storetest"
)

// fillEventsSQL writes $1 tool-call events spread evenly over the 7 days before $2 (µs since
// the epoch), of four tiers and five outcomes, as the owner (who may set occurred_at).
var fillEventsSQL = map[store.Dialect]string{
	store.Postgres: `INSERT INTO audit_event (occurred_at, event, tool, risk, subject, outcome, server_time, nonce, mac)
SELECT to_timestamp(($2::bigint - g::bigint * 604800000000 / $1::bigint) / 1000000.0), 'e', 'collections.t' || (g % 12),
 (ARRAY['low', 'medium', 'high', 'critical'])[1 + g % 4], 'user-' || (g % 50),
 (ARRAY['allowed', 'allowed', 'allowed', 'denied', 'rejected', 'rate_limited', 'input_required'])[1 + g % 7],
 $2::bigint - g::bigint * 604800000000 / $1::bigint, decode(lpad(to_hex(g), 32, '0'), 'hex'), decode(repeat('00', 32), 'hex')
FROM generate_series(1, $1::int) g`,
	store.SQLite: `WITH RECURSIVE s(g) AS (SELECT 1 UNION ALL SELECT g + 1 FROM s WHERE g < $1)
INSERT INTO audit_event (occurred_at, event, tool, risk, subject, outcome, server_time, nonce, mac)
SELECT $2 - g * 604800000000 / $1, 'e', 'collections.t' || (g % 12),
 CASE g % 4 WHEN 0 THEN 'low' WHEN 1 THEN 'medium' WHEN 2 THEN 'high' ELSE 'critical' END, 'user-' || (g % 50),
 CASE g % 7 WHEN 3 THEN 'denied' WHEN 4 THEN 'rejected' WHEN 5 THEN 'rate_limited' WHEN 6 THEN 'input_required' ELSE 'allowed' END,
 $2 - g * 604800000000 / $1, randomblob(16), zeroblob(32)
FROM s`,
}

// BenchmarkCallsPerHour: the console's chart of calls by tier and outcome per hour over 7
// days, with 100 000 events in them. The plan is logged, for docs/benchmarks.md.
func BenchmarkCallsPerHour(b *testing.B) {
	const n = 100_000
	now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	for _, f := range storetest.Fixtures(pg) {
		b.Run(string(f.Dialect), func(b *testing.B) {
			db := f.Migrated(b)
			ctx := context.Background()
			if _, err := db.Exec(ctx, fillEventsSQL[f.Dialect], n, now.UnixMicro()); err != nil {
				b.Fatal(err)
			}
			if _, err := db.Exec(ctx, `ANALYZE`); err != nil {
				b.Fatal(err)
			}
			l := newLog(b, db)
			from := now.Add(-7 * 24 * time.Hour)
			b.Log(explainCalls(b, db, from, now))
			b.Log(explainCalls(b, db, now.Add(-2*time.Hour), now))
			b.Run("log", func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					cells, err := l.CallsPerHour(ctx, from, now)
					if err != nil || len(cells) < 7*24 {
						b.Fatalf("%d cells, %v", len(cells), err)
					}
				}
			})
			// Warm, as a console serving the chart is: the final hours held, the hour
			// since DefaultSettle ago read.
			b.Run("cache", func(b *testing.B) {
				c := NewCallsCache(l, func() time.Time { return now }, 0)
				if _, err := c.CallsPerHour(ctx, from, now); err != nil {
					b.Fatal(err)
				}
				b.ReportAllocs()
				for b.Loop() {
					cells, err := c.CallsPerHour(ctx, from, now)
					if err != nil || len(cells) < 7*24 {
						b.Fatalf("%d cells, %v", len(cells), err)
					}
				}
			})
		})
	}
}

func explainCalls(tb testing.TB, db store.DB, from, to time.Time) string {
	tb.Helper()
	prefix := `EXPLAIN (ANALYZE, BUFFERS) `
	if db.Dialect() == store.SQLite {
		prefix = `EXPLAIN QUERY PLAN `
	}
	rows, err := db.Query(context.Background(), prefix+callsPerHourSQL[db.Dialect()], from.Unix(), to.Unix())
	if err != nil {
		tb.Fatal(err)
	}
	defer rows.Close()
	var out strings.Builder
	for rows.Next() {
		var line string
		if db.Dialect() == store.SQLite {
			var id, parent, unused int64
			err = rows.Scan(&id, &parent, &unused, &line)
		} else {
			err = rows.Scan(&line)
		}
		if err != nil {
			tb.Fatal(err)
		}
		out.WriteString(line + "\n")
	}
	return out.String()
}
