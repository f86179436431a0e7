package auditlog

import (
	"context"
	"crypto/rand"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/cobranca/cobranca/internal/store"
	"github.com/cobranca/cobranca/internal/store/storetest"
)

// insertAt writes an event of a tier and outcome with its database time set to at, as the
// owner can (the serving role cannot choose occurred_at): the chart reads that time.
func insertAt(t testing.TB, db store.DB, at time.Time, risk string, outcome Outcome) {
	t.Helper()
	nonce := make([]byte, 16)
	rand.Read(nonce)
	sql := `INSERT INTO audit_event (occurred_at, event, tool, risk, outcome, server_time, nonce, mac)
VALUES (to_timestamp($1::bigint / 1000000.0), 'e', 't', $2, $3, $1, $4, $5)`
	if db.Dialect() == store.SQLite {
		sql = strings.Replace(sql, "to_timestamp($1::bigint / 1000000.0)", "$1", 1)
	}
	if _, err := db.Exec(context.Background(), sql, at.UnixMicro(), risk, string(outcome), nonce, make([]byte, 32)); err != nil {
		t.Fatal(err)
	}
}

func TestCallsPerHour(t *testing.T) {
	h0 := time.Date(2026, 11, 30, 14, 0, 0, 0, time.UTC)
	eachStore(t, func(t *testing.T, f storetest.Fixture, db store.DB) {
		l := newLog(t, db)
		for _, e := range []struct {
			at      time.Time
			risk    string
			outcome Outcome
		}{
			{h0.Add(-time.Microsecond), "low", Allowed}, // before from
			{h0, "low", Allowed},
			{h0.Add(59*time.Minute + 59*time.Second), "low", Allowed},
			{h0.Add(30 * time.Minute), "low", Denied},
			{h0.Add(10 * time.Minute), "critical", InputRequired},
			{h0.Add(20 * time.Minute), "", Denied}, // no tier: not a tool call
			{h0.Add(2*time.Hour + time.Second), "high", RateLimited},
			{h0.Add(3 * time.Hour), "high", RateLimited}, // at to: after the range
		} {
			insertAt(t, db, e.at, e.risk, e.outcome)
		}
		// From and to are rounded down to their hours.
		got, err := l.CallsPerHour(context.Background(), h0.Add(45*time.Minute), h0.Add(3*time.Hour+59*time.Minute).In(time.FixedZone("BRT", -3*3600)))
		if err != nil {
			t.Fatal(err)
		}
		want := []HourCalls{
			{Hour: h0, Risk: "critical", Outcome: InputRequired, Count: 1},
			{Hour: h0, Risk: "low", Outcome: Allowed, Count: 2},
			{Hour: h0, Risk: "low", Outcome: Denied, Count: 1},
			{Hour: h0.Add(2 * time.Hour), Risk: "high", Outcome: RateLimited, Count: 1},
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("CallsPerHour (-want +got):\n%s", diff)
		}
	})
}

func TestCallsPerHourRefusesBadRanges(t *testing.T) {
	l := newLog(t, storetest.SQLite(t))
	h := time.Date(2026, 11, 30, 14, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name     string
		from, to time.Time
		want     string
	}{
		{"empty", h, h.Add(59 * time.Minute), "from (2026-11-30T14:00:00Z) must be an hour or more before to"},
		{"backwards", h, h.Add(-time.Hour), "must be an hour or more before to"},
		{"too long", h, h.Add((MaxCallHours + 1) * time.Hour), "more than 744 hours apart"},
	} {
		if _, err := l.CallsPerHour(context.Background(), tc.from, tc.to); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: CallsPerHour error = %v, want one saying %q", tc.name, err, tc.want)
		}
	}
	if _, err := l.CallsPerHour(context.Background(), h, h.Add(MaxCallHours*time.Hour)); err != nil {
		t.Errorf("CallsPerHour over %d hours = %v", MaxCallHours, err)
	}
}

// The cache answers what the log answers, reading only the hours not final yet: an event
// slipped into a final hour behind its back (only the owner can set a time) stays unseen,
// one in a recent hour is counted.
func TestCallsCache(t *testing.T) {
	h0 := time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)
	eachStore(t, func(t *testing.T, f storetest.Fixture, db store.DB) {
		l := newLog(t, db)
		ctx := context.Background()
		for i := range 48 {
			for j := range i % 3 {
				insertAt(t, db, h0.Add(time.Duration(i)*time.Hour+time.Duration(j)*time.Minute), []string{"low", "high"}[j%2], Allowed)
			}
		}
		now := h0.Add(40*time.Hour + 30*time.Minute)
		c := NewCallsCache(l, func() time.Time { return now }, 0)
		check := func(from, to time.Time, stale bool) {
			t.Helper()
			got, err := c.CallsPerHour(ctx, from, to)
			if err != nil {
				t.Fatal(err)
			}
			want, err := l.CallsPerHour(ctx, from, to)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, got, cmpopts.EquateEmpty()); (diff != "") != stale {
				t.Errorf("cache.CallsPerHour(%s, %s), stale %v (-log +cache):\n%s", from, to, stale, diff)
			}
		}
		check(h0, h0.Add(48*time.Hour), false)
		check(h0.Add(5*time.Hour), h0.Add(12*time.Hour), false)               // all final, from the cache
		check(h0.Add(-3*time.Hour), h0.Add(2*time.Hour), false)               // before the hours held
		insertAt(t, db, h0.Add(39*time.Hour+time.Minute), "critical", Denied) // the last hour not final yet
		check(h0, h0.Add(48*time.Hour), false)
		insertAt(t, db, h0.Add(10*time.Hour), "critical", Denied) // a final hour, held
		check(h0, h0.Add(48*time.Hour), true)
		check(h0.Add(11*time.Hour), h0.Add(48*time.Hour), false)
		// Hours held far behind the latest asked for are dropped: asked again, they are read.
		check(h0.Add(MaxCallHours*time.Hour), h0.Add((MaxCallHours+1)*time.Hour), false)
		if n := len(c.hours); n > MaxCallHours {
			t.Errorf("the cache holds %d hours, want at most %d", n, MaxCallHours)
		}
		check(h0, h0.Add(48*time.Hour), false)
		if _, err := c.CallsPerHour(ctx, h0, h0); err == nil {
			t.Error("an empty range: no error")
		}
	})
}
