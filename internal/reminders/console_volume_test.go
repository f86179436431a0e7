package reminders_test

import (
	"context"
	"slices"
	"testing"

	"github.com/cobranca/cobranca/internal/reminders"
	"github.com/cobranca/cobranca/internal/store"
	"github.com/cobranca/cobranca/internal/store/storetest"
	"github.com/cobranca/cobranca/internal/tier"
)

// The console's outbox over a store of scale on PostgreSQL (issue 29,
// docs/benchmarks.md "Console reads"): 20 000 customers, 300 000 drafts
// (one in a hundred undeliverable, one in ten open, one in ten queued,
// the rest sent), 10 000 bulk sends of 20 drafts each.
const (
	volumeDrafts = 300_000
	volumeBulks  = 10_000
)

// fillSending writes the store above straight into its tables
// (storetest.FillSending: far faster than Prepare and CreateBulk), then
// the planner's statistics. Ids are storetest.FillID's.
func fillSending(tb testing.TB, db store.DB) {
	tb.Helper()
	if err := storetest.FillSending(context.Background(), db, volumeDrafts, volumeBulks); err != nil {
		tb.Fatal(err)
	}
}

func volumeStore(tb testing.TB) store.DB {
	tb.Helper()
	db := storetest.Fixtures(pg)[1].Migrated(tb)
	if d, _ := store.DialectOf(db); d != store.Postgres {
		tb.Fatalf("the second fixture is %s, not PostgreSQL", d)
	}
	fillSending(tb, db)
	return db
}

// sendingCases are the outbox's pages: the first and one deep (half way)
// of each delivery state.
func sendingCases(tb testing.TB, db store.DB) map[string]reminders.SendingFilter {
	tb.Helper()
	out := map[string]reminders.SendingFilter{}
	for _, st := range []reminders.State{reminders.Queued, reminders.Sent, reminders.Undeliverable} {
		out[string(st)+"_first"] = reminders.SendingFilter{State: st, Limit: 50}
		var pos reminders.SendingPosition
		if err := db.QueryRow(context.Background(), `SELECT queued_at, id FROM reminder_draft WHERE state = $1
 ORDER BY queued_at DESC, id DESC LIMIT 1 OFFSET (SELECT count(*) / 2 FROM reminder_draft WHERE state = $1)`, string(st)).Scan(&pos.QueuedAt, &pos.ID); err != nil {
			tb.Fatal(err)
		}
		out[string(st)+"_deep"] = reminders.SendingFilter{State: st, Limit: 50, After: &pos}
	}
	return out
}

// bulkMid is the position half way down the bulk sends.
var bulkMid = &reminders.BulkPosition{CreatedAt: volumeBulks / 2, ID: storetest.FillID(reminders.BulkIDPrefix, volumeBulks/2)}

// TestConsoleVolumePlans: over the store above, each page of the console's
// outbox reads reminder_draft_sending, and each page of bulk sends
// bulk_send_created, from where the previous page ended, without sorting;
// the bulks' progress counts read reminder_draft_bulk, not the drafts.
func TestConsoleVolumePlans(t *testing.T) {
	tier.Volume(t)
	t.Parallel()
	db := volumeStore(t)
	check := func(name, want string, sql string, args []any) {
		t.Helper()
		root, text := storetest.ExplainPG(t, db, sql, args...)
		t.Logf("%s:\n%s", name, root.Outline())
		if idx := root.Indexes(); len(idx) != 1 || idx[0] != want || root.Sorts() {
			t.Errorf("%s: the plan reads %v, sorts %v; want %s alone, no sort:\n%s", name, idx, root.Sorts(), want, text)
		}
	}
	for name, f := range sendingCases(t, db) {
		sql, args := reminders.SendingSQL(f)
		check(name, "reminder_draft_sending", sql, args)
	}
	for name, after := range map[string]*reminders.BulkPosition{"bulks_first": nil, "bulks_deep": bulkMid} {
		sql, args := reminders.BulksSQL(after, 20)
		check(name, "bulk_send_created", sql, args)
		page, _, err := reminders.ListBulks(context.Background(), db, after, 20)
		if err != nil || len(page) != 20 || page[0].Sent+page[0].Queued+page[0].Undeliverable == 0 {
			t.Errorf("%s: %d bulks, the first %+v, %v; want 20 with their counts", name, len(page), page, err)
		}
	}
	root, text := storetest.ExplainPG(t, db, `SELECT bulk_id, state, COUNT(*) FROM reminder_draft WHERE bulk_id IS NOT NULL AND
 bulk_id = ANY (ARRAY(SELECT jsonb_array_elements_text($1::jsonb))) GROUP BY bulk_id, state`, `["`+bulkMid.ID+`"]`)
	t.Logf("bulk counts:\n%s", root.Outline())
	if !slices.Contains(root.Indexes(), "reminder_draft_bulk") || len(root.SeqScans("reminder_draft")) > 0 {
		t.Errorf("bulk counts: the plan reads %v, whole %v; want reminder_draft_bulk:\n%s", root.Indexes(), root.SeqScans("reminder_draft"), text)
	}
}

// BenchmarkConsoleReads: each page of the console's outbox and bulk sends
// over the store above.
func BenchmarkConsoleReads(b *testing.B) {
	db := volumeStore(b)
	ctx := context.Background()
	cases := sendingCases(b, db)
	names := make([]string, 0, len(cases))
	for name := range cases {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		b.Run("sending_"+name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if page, _, err := reminders.ListSending(ctx, db, cases[name]); err != nil || len(page) != 50 {
					b.Fatalf("%d, %v", len(page), err)
				}
			}
		})
	}
	for name, after := range map[string]*reminders.BulkPosition{"bulks_first": nil, "bulks_deep": bulkMid} {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if page, _, err := reminders.ListBulks(ctx, db, after, 20); err != nil || len(page) != 20 {
					b.Fatalf("%d, %v", len(page), err)
				}
			}
		})
	}
}
