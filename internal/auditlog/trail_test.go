package auditlog

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/cobranca/cobranca/internal/store"
	"github.com/cobranca/cobranca/internal/store/storetest"
)

// TestTrail: every filter's pages, read with a small limit to the end, are the events the
// filter picks, newest first, each once; unsealed events are in them with seq 0. The oracle
// is Events filtered in Go.
func TestTrail(t *testing.T) {
	eachStore(t, func(t *testing.T, f storetest.Fixture, db store.DB) {
		ctx := context.Background()
		// On SQLite every second event has the time of the one before: ties are ordered by id.
		clock, calls := fixedTime, 0
		l, err := New(db, testKey, Options{Now: func() time.Time {
			calls++
			if calls%2 == 0 {
				clock = clock.Add(time.Second)
			}
			return clock
		}})
		if err != nil {
			t.Fatal(err)
		}
		const n = 40
		for i := range n {
			if err := l.Record(ctx, variedEvent(i)); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := l.SealCommitted(ctx); err != nil {
			t.Fatal(err)
		}
		unsealed := variedEvent(n)
		unsealed.Subject = "late"
		err = db.InTx(ctx, func(ctx context.Context, tx store.Tx) error { return l.Append(ctx, tx, unsealed) })
		if err != nil {
			t.Fatal(err)
		}
		all, err := l.Events(ctx, 0, 1000)
		if err != nil {
			t.Fatal(err)
		}
		// The unsealed event, read back through the trail's own newest page.
		top, err := l.Trail(ctx, TrailFilter{Subject: "late"}, "", 10)
		if err != nil || len(top.Events) != 1 || top.Events[0].Seq != 0 || top.Next != "" {
			t.Fatalf("Trail(the unsealed event) = %+v, %v; want it alone, with seq 0", top, err)
		}
		all = append(all, top.Events[0])
		slices.SortStableFunc(all, func(a, b Event) int { return b.Time.Compare(a.Time) })
		// Within one time, the later id (the later seq, on SQLite) first.
		slices.SortStableFunc(all, func(a, b Event) int {
			if c := b.Time.Compare(a.Time); c != 0 {
				return c
			}
			return strings.Compare(b.RequestID, a.RequestID)
		})

		mid := all[n/2].Time
		for _, tf := range []TrailFilter{
			{},
			{Tool: "collections.send_reminder"},
			{Risk: "critical"},
			{Outcome: Denied},
			{Subject: "user-1"},
			{Actor: "agent-7"},
			{ClientID: "client-9"},
			{Actor: "nobody"},
			{Since: mid},
			{Until: mid},
			{Since: all[30].Time, Until: all[10].Time, Outcome: Allowed},
		} {
			var want []Event
			for _, ev := range all {
				if pickedBy(tf, ev) {
					want = append(want, ev)
				}
			}
			// A page looks at TrailScan events at most; 7 here, for the bound to be met.
			for _, scan := range []int{TrailScan, 7} {
				l.trailScan = scan
				for _, limit := range []int{1, 3, MaxTrailPage} {
					var got []Event
					after := ""
					for pages := 0; ; pages++ {
						page, err := l.Trail(ctx, tf, after, limit)
						if err != nil {
							t.Fatalf("Trail(%+v, %q, %d): %v", tf, after, limit, err)
						}
						if len(page.Events) > limit || pages > n+1 {
							t.Fatalf("Trail(%+v, %q, %d) = %d events on page %d", tf, after, limit, len(page.Events), pages)
						}
						for _, ev := range page.Events {
							if page.Next != "" && ev.Time.Before(page.Through) {
								t.Errorf("Trail(%+v, %q, %d): an event of %v, before the page's Through %v", tf, after, limit, ev.Time, page.Through)
							}
						}
						if page.Next != "" && len(page.Events) < limit && scan == TrailScan {
							t.Errorf("Trail(%+v, %q, %d) = a short page with a next one, below the bound", tf, after, limit)
						}
						got = append(got, page.Events...)
						if page.Next == "" {
							break
						}
						after = page.Next
					}
					if diff := cmp.Diff(want, got); diff != "" {
						t.Errorf("Trail(%+v) by %d, looking at %d (-want +got):\n%s", tf, limit, scan, diff)
					}
				}
			}
			l.trailScan = TrailScan
		}

		for _, after := range []string{"x", "1.", ".1", "1.0", "-1.1", "01.1", "zzzzzzzzzzzzzzzzzzzzz.1", "1.1.1"} {
			if _, err := l.Trail(ctx, TrailFilter{}, after, 10); !errors.Is(err, ErrBadCursor) {
				t.Errorf("Trail(after %q) = %v, want ErrBadCursor", after, err)
			}
		}
		for _, limit := range []int{0, -1, MaxTrailPage + 1} {
			if _, err := l.Trail(ctx, TrailFilter{}, "", limit); err == nil || !strings.Contains(err.Error(), "limit") {
				t.Errorf("Trail(limit %d) = %v, want an error naming the limit", limit, err)
			}
		}
	})
}

// pickedBy restates the trail's filter in Go, as the tests' oracle.
func pickedBy(f TrailFilter, ev Event) bool {
	return (f.Tool == "" || ev.Tool == f.Tool) && (f.Risk == "" || ev.Risk == f.Risk) &&
		(f.Outcome == "" || ev.Outcome == f.Outcome) && (f.Subject == "" || ev.Subject == f.Subject) &&
		(f.Actor == "" || ev.Actor == f.Actor) && (f.ClientID == "" || ev.ClientID == f.ClientID) &&
		(f.Since.IsZero() || !ev.Time.Before(f.Since)) && (f.Until.IsZero() || ev.Time.Before(f.Until))
}

func FuzzTrailCursor(f *testing.F) {
	f.Add(trailCursor{timeUS: fixedTime.UnixMicro(), id: 42}.String())
	f.Add("0.1")
	f.Add("-0.1")
	f.Add("")
	f.Fuzz(func(t *testing.T, s string) {
		c, err := parseTrailCursor(s)
		if err != nil {
			if !errors.Is(err, ErrBadCursor) {
				t.Fatalf("parseTrailCursor(%q) = %v, want ErrBadCursor", s, err)
			}
			return
		}
		if c.String() != s || c.id < 1 || c.timeUS < 0 {
			t.Errorf("parseTrailCursor(%q) = %+v, which reads back as %q", s, c, c.String())
		}
	})
}

// fillTrail inserts n events straight into audit_event, as an owner may, the last at
// fixedTime (storetest.FillTrail: a week of calls, 20 tools over 4 tiers, 500 subjects, 7
// agents on a third of the calls, 5 clients, 2% denied, 0.5% failed and 0.1% rate limited);
// then ANALYZE, as autovacuum would. Their MACs are random: the trail does not check them.
func fillTrail(tb testing.TB, db store.DB, n int) {
	tb.Helper()
	if err := storetest.FillTrail(context.Background(), db, n, fixedTime); err != nil {
		tb.Fatal(err)
	}
}

// trailCase is a page the console asks for.
type trailCase struct {
	name string
	f    TrailFilter
	deep bool // from a cursor half way down the trail
}

// trailCases are the trail's usual pages over fillTrail's events: each filter alone, a day,
// a rare outcome, a value no event has (the whole index walked: the worst page), and deep.
func trailCases() []trailCase {
	day := fixedTime.Add(-3 * 24 * time.Hour)
	return []trailCase{
		{name: "newest"},
		{name: "deep", deep: true},
		{name: "tool", f: TrailFilter{Tool: "collections.tool_7"}},
		{name: "tool deep", f: TrailFilter{Tool: "collections.tool_7"}, deep: true},
		{name: "tier", f: TrailFilter{Risk: "critical"}},
		{name: "outcome denied", f: TrailFilter{Outcome: Denied}},
		{name: "outcome rate_limited", f: TrailFilter{Outcome: RateLimited}},
		{name: "subject", f: TrailFilter{Subject: "user-123"}},
		{name: "actor", f: TrailFilter{Actor: "agent-3"}},
		{name: "client", f: TrailFilter{ClientID: "client-2"}},
		{name: "a day", f: TrailFilter{Since: day, Until: day.Add(24 * time.Hour)}},
		{name: "a day, a tool, denied", f: TrailFilter{Since: day, Until: day.Add(24 * time.Hour), Tool: "collections.tool_0", Outcome: Denied}},
		{name: "no match", f: TrailFilter{Tool: "collections.none"}},
	}
}

// trailQuery is the SQL and arguments of c's page of 50 over db (edge: of the read of its
// window's last event).
func trailQuery(tb testing.TB, db store.DB, c trailCase, edge bool) (string, []any) {
	tb.Helper()
	var cur *trailCursor
	if c.deep {
		var id, timeUS int64
		q := `SELECT id, occurred_at FROM audit_event ORDER BY id LIMIT 1 OFFSET (SELECT count(*) / 2 FROM audit_event)`
		if db.Dialect() == store.Postgres {
			q = `SELECT id, (extract(epoch FROM occurred_at) * 1000000)::bigint FROM audit_event ORDER BY id LIMIT 1 OFFSET (SELECT count(*) / 2 FROM audit_event)`
		}
		if err := db.QueryRow(context.Background(), q).Scan(&id, &timeUS); err != nil {
			tb.Fatal(err)
		}
		cur = &trailCursor{timeUS: timeUS, id: id}
	}
	if edge {
		return trailEdgeSQL(db.Dialect(), c.f, cur, TrailScan)
	}
	return trailSQL(db.Dialect(), c.f, cur, 51, TrailScan)
}

// trailPlan says which index the plan of c's page reads audit_event by, and whether it sorts
// more than the events of one microsecond (PostgreSQL's Incremental Sort over the index's
// order is what ORDER BY occurred_at, id costs there) or scans the table.
func trailPlan(tb testing.TB, db store.DB, sql string, args []any) (index string, sorts, scans bool, text string) {
	tb.Helper()
	ctx := context.Background()
	if db.Dialect() == store.SQLite {
		rows, err := db.Query(ctx, `EXPLAIN QUERY PLAN `+sql, args...)
		if err != nil {
			tb.Fatal(err)
		}
		defer rows.Close()
		var lines []string
		for rows.Next() {
			var id, parent, unused int64
			var detail string
			if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
				tb.Fatal(err)
			}
			lines = append(lines, detail)
			if m := usingIndex.FindStringSubmatch(detail); m != nil && index == "" && strings.Contains(detail, "audit_event") {
				index = m[1]
			}
			sorts = sorts || strings.Contains(detail, "TEMP B-TREE")
			scans = scans || strings.HasPrefix(detail, "SCAN e") && !strings.Contains(detail, "INDEX")
		}
		return index, sorts, scans, strings.Join(lines, "\n")
	}
	root, out := storetest.ExplainPG(tb, db, sql, args...)
	root.Walk(func(n storetest.PlanNode) {
		if n.Relation == "audit_event" && n.Index != "" && index == "" {
			index = n.Index
		}
		// An Incremental Sort over the index orders ties; a Sort would read every row.
		sorts = sorts || n.Type == "Sort"
		scans = scans || n.Type == "Seq Scan" && n.Relation == "audit_event" || n.Type == "Bitmap Heap Scan"
	})
	return index, sorts, scans, out
}

var usingIndex = regexp.MustCompile(`USING (?:COVERING )?INDEX (\S+)`)

// TestTrailPlan: every usual trail page reads audit_event by its occurred_at index, in the
// page's order, without sorting the events and without a scan of the table, over 100 000 events (10 000 under -short: the plans are the same). No index was
// added for the trail: a filter on a column the index does not hold walks the index from the
// cursor, newest first, over TrailScan events at most (docs/benchmarks.md).
func TestTrailPlan(t *testing.T) {
	n := 100_000
	if testing.Short() {
		n = 10_000
	}
	eachStore(t, func(t *testing.T, f storetest.Fixture, db store.DB) {
		fillTrail(t, db, n)
		for _, c := range trailCases() {
			for _, edge := range []bool{false, true} {
				if edge && !c.f.picks() {
					continue // a page without a window
				}
				sql, args := trailQuery(t, db, c, edge)
				index, sorts, scans, text := trailPlan(t, db, sql, args)
				if index != "audit_event_occurred_at" || sorts || scans {
					t.Errorf("%s (edge %v): the plan reads %q, sorts %v, scans %v; want audit_event_occurred_at, no sort, no scan:\n%s", c.name, edge, index, sorts, scans, text)
				}
			}
		}
	})
}

// BenchmarkTrail times each usual trail page of 50 over 100 000 events (sealed), as the
// console reads them.
func BenchmarkTrail(b *testing.B) {
	for _, f := range storetest.Fixtures(pg) {
		b.Run(string(f.Dialect), func(b *testing.B) {
			db := f.Migrated(b)
			fillTrail(b, db, 100_000)
			l := newLog(b, db)
			if _, err := l.Seal(context.Background()); err != nil {
				b.Fatal(err)
			}
			for _, c := range trailCases() {
				b.Run(strings.ReplaceAll(c.name, " ", "_"), func(b *testing.B) {
					after := ""
					if c.deep {
						_, args := trailQuery(b, db, c, false)
						after = (&trailCursor{timeUS: timeUSOf(args[0]), id: args[1].(int64)}).String()
					}
					ctx := context.Background()
					b.ReportAllocs()
					for b.Loop() {
						if _, err := l.Trail(ctx, c.f, after, 50); err != nil {
							b.Fatal(err)
						}
					}
				})
			}
		})
	}
}

// timeUSOf is a cursor's time argument back in microseconds.
func timeUSOf(v any) int64 {
	switch t := v.(type) {
	case time.Time:
		return t.UnixMicro()
	case int64:
		return t
	}
	panic(fmt.Sprintf("time argument %T", v))
}
