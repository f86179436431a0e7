package reminders_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/cobranca/cobranca/internal/failure"
	"github.com/cobranca/cobranca/internal/ident"
	"github.com/cobranca/cobranca/internal/outbox"
	"github.com/cobranca/cobranca/internal/reminders"
	"github.com/cobranca/cobranca/internal/store"
	"github.com/cobranca/cobranca/internal/store/storetest"
)

// TestListSending: the console's outbox lists the drafts of one delivery
// state, the latest queued first, in keyset pages of any size that end
// where they should, with the mail server's reply of the undeliverable;
// open drafts are in none of them.
func TestListSending(t *testing.T) {
	tpl := templates(t)
	storetest.Each(t, pg, func(t *testing.T, db store.DB) {
		ctx := context.Background()
		byState := map[reminders.State][]string{}
		for i := range 9 {
			r, _ := prepare(t, db, tpl, request(fmt.Sprint("c", i), reminders.Friendly, inv1), t0)
			if i == 8 {
				continue // stays open
			}
			// Two share each queuing time: the id breaks the tie.
			at := t0.Add(time.Duration(1+i/2) * time.Minute)
			err := db.InTx(ctx, func(ctx context.Context, tx store.Tx) error {
				if err := reminders.MarkQueued(ctx, tx, r.ID, reminders.Queue{OutboxID: int64(i + 1), MessageID: fmt.Sprintf("<m%d@x>", i), By: "ana"}, at); err != nil {
					return err
				}
				switch i % 3 {
				case 1:
					return reminders.Delivery{}.Delivered(ctx, tx, []outbox.Accepted{{Ref: r.ID, Entry: int64(i + 1), At: at}})
				case 2:
					return reminders.Delivery{}.Undeliverable(ctx, tx, r.ID, int64(i+1), "smtp: mailbox unavailable (reply 550 5.1.1)", at)
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			st := []reminders.State{reminders.Queued, reminders.Sent, reminders.Undeliverable}[i%3]
			byState[st] = append([]string{r.ID}, byState[st]...) // the latest queued first…
		}
		for st, ids := range byState { // …and, at one time, the greater id first
			for i := 0; i+1 < len(ids); i++ {
				a, _ := reminders.Get(ctx, db, ids[i])
				b, _ := reminders.Get(ctx, db, ids[i+1])
				if a.Sending.QueuedAt.Equal(b.Sending.QueuedAt) && a.ID < b.ID {
					ids[i], ids[i+1] = ids[i+1], ids[i]
				}
			}
			byState[st] = ids
		}
		for _, st := range []reminders.State{reminders.Queued, reminders.Sent, reminders.Undeliverable} {
			for _, limit := range []int{1, 2, 500} {
				var got []string
				f := reminders.SendingFilter{State: st, Limit: limit}
				for range 10 {
					page, next, err := reminders.ListSending(ctx, db, f)
					if err != nil {
						t.Fatal(err)
					}
					for _, r := range page {
						got = append(got, r.ID)
						if r.State != st || r.Sending == nil {
							t.Errorf("%s: a draft %s, sending %+v", st, r.State, r.Sending)
						}
						if st == reminders.Undeliverable && !strings.Contains(r.Sending.FailureReason, "550") {
							t.Errorf("undeliverable %s: reason %q, want the reply code", r.ID, r.Sending.FailureReason)
						}
					}
					if next == nil {
						break
					}
					f.After = next
				}
				if diff := cmp.Diff(byState[st], got); diff != "" {
					t.Errorf("%s in pages of %d (-want +got):\n%s", st, limit, diff)
				}
			}
		}
		for _, tc := range []struct {
			f     reminders.SendingFilter
			field string
		}{
			{reminders.SendingFilter{State: reminders.Draft, Limit: 5}, "state"},
			{reminders.SendingFilter{Limit: 5}, "state"},
			{reminders.SendingFilter{State: reminders.Sent}, "limit"},
			{reminders.SendingFilter{State: reminders.Sent, Limit: reminders.MaxSendingPage + 1}, "limit"},
		} {
			if _, _, err := reminders.ListSending(ctx, db, tc.f); !refused(err, tc.field) {
				t.Errorf("ListSending(%+v) = %v; want invalid_arguments naming %s", tc.f, err, tc.field)
			}
		}
	})
}

// TestListBulks: the bulk sends, the latest first, in keyset pages, each
// with its progress as GetBulk counts it.
func TestListBulks(t *testing.T) {
	tpl := templates(t)
	storetest.Each(t, pg, func(t *testing.T, db store.DB) {
		ctx := context.Background()
		var want []reminders.BulkStatus
		for i := range 5 {
			var entries []reminders.BulkEntry
			for j := range i + 1 {
				r, _ := prepare(t, db, tpl, request(fmt.Sprintf("c%d-%d", i, j), reminders.Friendly, inv1), t0)
				entries = append(entries, reminders.BulkEntry{ID: r.ID, OutboxID: int64(100*i + j), MessageID: fmt.Sprintf("<m%d.%d@x>", i, j)})
			}
			b := reminders.Bulk{ID: ident.New(reminders.BulkIDPrefix), By: "ana", PlanHash: strings.Repeat("ab", 32), Total: len(entries),
				CreatedAt: t0.Add(time.Duration(i/2) * time.Minute)}
			err := db.InTx(ctx, func(ctx context.Context, tx store.Tx) error {
				if err := reminders.CreateBulk(ctx, tx, b, entries); err != nil {
					return err
				}
				return reminders.Delivery{}.Delivered(ctx, tx, []outbox.Accepted{{Ref: entries[0].ID, Entry: entries[0].OutboxID, At: t0}})
			})
			if err != nil {
				t.Fatal(err)
			}
			s, err := reminders.GetBulk(ctx, db, b.ID)
			if err != nil || s.Sent != 1 || s.Queued != i {
				t.Fatalf("GetBulk = %+v, %v; want 1 sent, %d queued", s, err, i)
			}
			want = append([]reminders.BulkStatus{s}, want...)
		}
		for i := 0; i+1 < len(want); i++ { // at one time, the greater id first
			if want[i].CreatedAt.Equal(want[i+1].CreatedAt) && want[i].ID < want[i+1].ID {
				want[i], want[i+1] = want[i+1], want[i]
			}
		}
		for _, limit := range []int{1, 2, reminders.MaxBulkPage} {
			var got []reminders.BulkStatus
			var after *reminders.BulkPosition
			for range 10 {
				page, next, err := reminders.ListBulks(ctx, db, after, limit)
				if err != nil {
					t.Fatal(err)
				}
				got = append(got, page...)
				if next == nil {
					break
				}
				after = next
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("pages of %d (-want +got):\n%s", limit, diff)
			}
		}
		for _, limit := range []int{0, reminders.MaxBulkPage + 1} {
			if _, _, err := reminders.ListBulks(ctx, db, nil, limit); !refused(err, "limit") {
				t.Errorf("ListBulks(limit %d) = %v; want invalid_arguments naming limit", limit, err)
			}
		}
	})
}

func refused(err error, field string) bool {
	fe, ok := failure.As(err)
	return ok && fe.Code == failure.InvalidArguments && fe.Field == field
}
