package reminders_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/cobranca/cobranca/internal/ident"
	"github.com/cobranca/cobranca/internal/outbox"
	"github.com/cobranca/cobranca/internal/reminders"
	"github.com/cobranca/cobranca/internal/store"
	"github.com/cobranca/cobranca/internal/store/storetest"
)

// TestGreetsByName: a name with a letter is greeted by it; one without (a tax id filed as the
// name) gets each template's fallback greeting, and its text appears nowhere in the greeting.
func TestGreetsByName(t *testing.T) {
	tpl := templates(t)
	for _, tc := range []struct {
		lang  reminders.Language
		tone  reminders.Tone
		named string
		plain string
	}{
		{reminders.PortugueseBR, reminders.Friendly, "Olá, Ana Souza!\n", "Olá!\n"},
		{reminders.PortugueseBR, reminders.Firm, "Prezado(a) Ana Souza,\n", "Prezado(a) cliente,\n"},
		{reminders.English, reminders.Friendly, "Hello Ana Souza,\n", "Hello,\n"},
		{reminders.English, reminders.Firm, "Dear Ana Souza,\n", "Dear customer,\n"},
	} {
		for name, want := range map[string]string{"Ana Souza": tc.named, "12.345.678/0001-90": tc.plain} {
			if got := reminders.GreetsByName(name); got != (want == tc.named) {
				t.Errorf("GreetsByName(%q) = %v", name, got)
			}
			r, err := tpl.Render(tc.lang, tc.tone, reminders.Message{Name: name, Invoices: []reminders.Invoice{inv1}})
			if err != nil {
				t.Fatal(err)
			}
			body := r.Text
			if !strings.HasPrefix(body, want) {
				t.Errorf("%s.%s, name %q: body starts %q, want %q", tc.lang, tc.tone, name, body[:min(len(body), 40)], want)
			}
		}
	}
}

// TestSelect: by ids, any state, by id; by filter, the open drafts of the customers, tone and
// earliest due date asked for, by id, at most the limit.
func TestSelect(t *testing.T) {
	storetest.Each(t, pg, func(t *testing.T, db store.DB) {
		tpl := templates(t)
		old := reminders.Invoice{ID: "NF-OLD", DueDate: "2026-04-01", AmountCents: 100}
		recent := reminders.Invoice{ID: "NF-NEW", DueDate: "2026-06-25", AmountCents: 100}
		a, _ := prepare(t, db, tpl, request("c1", reminders.Friendly, recent, old), t0) // earliest due 2026-04-01
		b, _ := prepare(t, db, tpl, request("c1", reminders.Firm, recent), t0)
		c, _ := prepare(t, db, tpl, request("c2", reminders.Friendly, recent), t0)
		d, _ := prepare(t, db, tpl, request("c3", reminders.Friendly, old), t0)
		if _, err := reminders.DiscardOpen(context.Background(), db, "c3", t0); err != nil {
			t.Fatal(err)
		}
		ids := func(rs []reminders.Record) []string {
			var out []string
			for _, r := range rs {
				out = append(out, r.ID)
			}
			return out
		}
		sorted := func(rs ...reminders.Record) []string {
			out := ids(rs)
			slices.Sort(out)
			return out
		}
		for _, tc := range []struct {
			name string
			sel  reminders.Selection
			want []string
		}{
			{"ids, any state", reminders.Selection{IDs: []string{d.ID, a.ID, "d_" + strings.Repeat("a", 26)}}, sorted(a, d)},
			{"every open draft", reminders.Selection{}, sorted(a, b, c)},
			{"customers", reminders.Selection{CustomerIDs: []string{"c2", "c3"}}, sorted(c)},
			{"tone", reminders.Selection{Tone: reminders.Friendly}, sorted(a, c)},
			{"due by the earliest date", reminders.Selection{DueBy: "2026-04-01"}, sorted(a)},
			{"due by the day before", reminders.Selection{DueBy: "2026-03-31"}, nil},
			{"due by a later date", reminders.Selection{DueBy: "2026-06-25", CustomerIDs: []string{"c1"}, Tone: reminders.Firm}, sorted(b)},
		} {
			got, err := reminders.Select(context.Background(), db, tc.sel, false, 10)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, ids(got)); diff != "" {
				t.Errorf("%s: Select (-want +got):\n%s", tc.name, diff)
			}
		}
		got, err := reminders.Select(context.Background(), db, reminders.Selection{}, false, 2)
		if err != nil || len(got) != 2 {
			t.Errorf("Select(limit 2) = %d drafts, %v", len(got), err)
		}
	})
}

// TestBulkCounts: a bulk send queues its open drafts with their entries, all or none, and
// GetBulk counts them by state as delivery reports them.
func TestBulkCounts(t *testing.T) {
	storetest.Each(t, pg, func(t *testing.T, db store.DB) {
		ctx := context.Background()
		tpl := templates(t)
		var drafts []reminders.Record
		for _, c := range []string{"c1", "c2", "c3"} {
			r, _ := prepare(t, db, tpl, request(c, reminders.Friendly, inv1), t0)
			drafts = append(drafts, r)
		}
		b := reminders.Bulk{ID: ident.New(reminders.BulkIDPrefix), By: "ana", Actor: "bot", PlanHash: strings.Repeat("ab", 32), Total: 3, Skipped: 2, CreatedAt: t0}
		entries := make([]reminders.BulkEntry, len(drafts))
		for i, d := range drafts {
			entries[i] = reminders.BulkEntry{ID: d.ID, OutboxID: int64(100 + i), MessageID: "<m" + d.ID + "@x>"}
		}
		// A draft no longer open refuses the whole bulk: nothing is recorded.
		if _, err := reminders.DiscardOpen(ctx, db, "c3", t0); err != nil {
			t.Fatal(err)
		}
		err := db.InTx(ctx, func(ctx context.Context, tx store.Tx) error { return reminders.CreateBulk(ctx, tx, b, entries) })
		if err == nil || storetest.Count(t, db, "bulk_send") != 0 || count(t, db, "state = 'queued'") != 0 {
			t.Fatalf("CreateBulk with a discarded draft = %v; want a refusal and nothing recorded", err)
		}
		b.Total, entries = 2, entries[:2]
		bad := b
		bad.ID = "bulk-1"
		if err := db.InTx(ctx, func(ctx context.Context, tx store.Tx) error { return reminders.CreateBulk(ctx, tx, bad, entries) }); err == nil || storetest.Count(t, db, "bulk_send") != 0 {
			t.Fatalf("CreateBulk with an id GetBulk refuses = %v; want a refusal and nothing recorded", err)
		}
		if err := db.InTx(ctx, func(ctx context.Context, tx store.Tx) error { return reminders.CreateBulk(ctx, tx, b, entries) }); err != nil {
			t.Fatal(err)
		}
		got := func() reminders.BulkStatus {
			s, err := reminders.GetBulk(ctx, db, b.ID)
			if err != nil {
				t.Fatal(err)
			}
			return s
		}
		s := got()
		want := reminders.BulkStatus{Bulk: b, Queued: 2}
		if diff := cmp.Diff(want, s); diff != "" {
			t.Errorf("GetBulk (-want +got):\n%s", diff)
		}
		d0, err := reminders.Get(ctx, db, drafts[0].ID)
		if err != nil || d0.State != reminders.Queued || d0.Sending.OutboxID != 100 || d0.Sending.MessageID != entries[0].MessageID || d0.Sending.QueuedBy != "ana" {
			t.Errorf("draft 0 = %+v, %v; want queued under its entry", d0, err)
		}
		err = db.InTx(ctx, func(ctx context.Context, tx store.Tx) error {
			if err := (reminders.Delivery{}).Delivered(ctx, tx, []outbox.Accepted{{Ref: drafts[0].ID, Entry: 100, At: t0}}); err != nil {
				return err
			}
			return reminders.Delivery{}.Undeliverable(ctx, tx, drafts[1].ID, 101, "550", t0)
		})
		if err != nil {
			t.Fatal(err)
		}
		if s := got(); s.Queued != 0 || s.Sent != 1 || s.Undeliverable != 1 {
			t.Errorf("after delivery: queued %d, sent %d, undeliverable %d; want 0, 1, 1", s.Queued, s.Sent, s.Undeliverable)
		}
		addrs, err := reminders.UndeliverableAddresses(ctx, db)
		if err != nil || len(addrs) != 1 || addrs[0] != drafts[1].To.Email {
			t.Errorf("UndeliverableAddresses = %q, %v", addrs, err)
		}
		for _, id := range []string{ident.New(reminders.BulkIDPrefix), "b_x", drafts[0].ID} {
			if _, err := reminders.GetBulk(ctx, db, id); !errors.Is(err, reminders.ErrBulkNotFound) {
				t.Errorf("GetBulk(%q) = %v, want ErrBulkNotFound", id, err)
			}
		}
	})
}
