package approval_test

import (
	"context"
	"crypto/sha256"
	"testing"
	"time"

	"github.com/cobranca/cobranca/internal/approval"
	"github.com/cobranca/cobranca/internal/clocktest"
	"github.com/cobranca/cobranca/internal/store"
	"github.com/cobranca/cobranca/internal/store/storetest"
)

// TestInbox: ListPending pages through the actions waiting now, oldest first, one page after
// the other without a gap or a repeat, and leaves out the decided and the expired;
// ListDecided lists the decided ones asked for since, the latest decision first.
func TestInbox(t *testing.T) {
	storetest.Each(t, pg, func(t *testing.T, db store.DB) {
		ctx := context.Background()
		clock := &clocktest.Clock{}
		s, err := approval.New(time.Hour, clock.Now)
		if err != nil {
			t.Fatal(err)
		}
		r := approval.Requester{Subject: "alice", Client: "agent"}
		var made []*approval.Action
		for i := range 7 {
			a, err := s.Create(ctx, db, "test.critical", sha256.Sum256([]byte{byte(i)}), "preview", nil, r)
			if err != nil {
				t.Fatal(err)
			}
			made = append(made, a)
			if i == 0 {
				clock.Advance(50 * time.Minute) // the first expires first
			} else {
				clock.Advance(time.Second)
			}
		}
		// One asked for before the last: listed in the order of asking, not of making.
		clock.Advance(-3 * time.Second)
		early, err := s.Create(ctx, db, "test.critical", sha256.Sum256([]byte("early")), "preview", nil, r)
		if err != nil {
			t.Fatal(err)
		}
		clock.Advance(3 * time.Second)
		decide := func(a *approval.Action, approve bool) {
			t.Helper()
			if err := db.InTx(ctx, func(ctx context.Context, tx store.Tx) error {
				_, err := s.Decide(ctx, tx, a.ID, approve, approval.Approver{Subject: "bruno"})
				return err
			}); err != nil {
				t.Fatal(err)
			}
			clock.Advance(time.Second)
		}
		decide(made[2], true)
		decide(made[4], false)
		clock.Advance(10 * time.Minute) // made[0] expires

		var got []string
		var c approval.Cursor
		for range 10 {
			page, err := s.ListPending(ctx, db, c, 2)
			if err != nil {
				t.Fatal(err)
			}
			if len(page) == 0 {
				break
			}
			for _, a := range page {
				if a.State != approval.Pending {
					t.Errorf("ListPending gave %s in state %s", a.ID, a.State)
				}
				got = append(got, a.ID)
			}
			last := page[len(page)-1]
			c = approval.Cursor{Created: last.Created, ID: last.ID}
		}
		var want []string
		for _, a := range []*approval.Action{made[1], made[3], early, made[5], made[6]} {
			want = append(want, a.ID)
		}
		if !equal(got, want) {
			t.Errorf("ListPending, 2 at a time = %v, want %v", got, want)
		}

		decided, err := s.ListDecided(ctx, db, made[0].Created, 10)
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, a := range decided {
			ids = append(ids, a.ID)
		}
		if want := []string{made[4].ID, made[2].ID}; !equal(ids, want) || decided[0].Approver == nil || decided[0].Approver.Subject != "bruno" {
			t.Errorf("ListDecided = %v, want %v decided by bruno", ids, want)
		}
		if later, err := s.ListDecided(ctx, db, made[3].Created, 10); err != nil || len(later) != 1 || later[0].ID != made[4].ID {
			t.Errorf("ListDecided since the 4th = %d actions (%v), want the 5th only", len(later), err)
		}
	})
}

func equal(a, b []string) bool { // slices.Equal, spelled for the error text
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
