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

// TestPending: Pending counts the actions waiting for a decision now — not the decided ones,
// nor those past their expiry, which stay 'pending' in the table — and dates the oldest of
// them; at most limit are counted.
func TestPending(t *testing.T) {
	storetest.Each(t, pg, func(t *testing.T, db store.DB) {
		ctx := context.Background()
		clock := &clocktest.Clock{}
		s, err := approval.New(15*time.Minute, clock.Now)
		if err != nil {
			t.Fatal(err)
		}
		check := func(limit, wantN int64, wantOldest time.Time) {
			t.Helper()
			n, oldest, err := s.Pending(ctx, db, limit)
			if err != nil || n != wantN || !oldest.Equal(wantOldest) {
				t.Errorf("Pending(limit %d) = %d, %v, %v; want %d, %v", limit, n, oldest, err, wantN, wantOldest)
			}
		}
		check(100, 0, time.Time{})
		r := approval.Requester{Subject: "alice", Client: "agent"}
		create := func(i byte) *approval.Action {
			a, err := s.Create(ctx, db, "test.critical", sha256.Sum256([]byte{i}), "preview", nil, r)
			if err != nil {
				t.Fatal(err)
			}
			return a
		}
		create(1) // expires before the check below
		clock.Advance(10 * time.Minute)
		oldest := create(2)
		clock.Advance(time.Minute)
		decided := create(3)
		clock.Advance(time.Minute)
		create(4)
		if err := db.InTx(ctx, func(ctx context.Context, tx store.Tx) error {
			_, err := s.Decide(ctx, tx, decided.ID, false, approval.Approver{Subject: "bob"})
			return err
		}); err != nil {
			t.Fatal(err)
		}
		clock.Advance(4 * time.Minute) // the first is 16 minutes old: expired
		check(100, 2, oldest.Created.Truncate(time.Microsecond))
		if n, _, err := s.Pending(ctx, db, 1); n != 1 || err != nil {
			t.Errorf("Pending(limit 1) = %d, %v; want 1", n, err)
		}
	})
}
