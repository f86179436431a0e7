package approval_test

import (
	"context"
	"crypto/sha256"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cobranca/cobranca/internal/approval"
	"github.com/cobranca/cobranca/internal/store"
	"github.com/cobranca/cobranca/internal/store/storetest"
)

// querier is a store.Querier that runs no transaction.
type querier struct{ store.Querier }

// TestHook: Create calls the hook in the transaction that records the action (the hook reads
// it there); the hook's error undoes the action; given a transaction, Create works in it; a
// handle that runs no transaction is refused rather than the hook run outside one.
func TestHook(t *testing.T) {
	storetest.Each(t, pg, func(t *testing.T, db store.DB) {
		ctx := context.Background()
		s, err := approval.New(15*time.Minute, nil)
		if err != nil {
			t.Fatal(err)
		}
		var seen []string
		refuse := errors.New("the notification could not be queued")
		fail := false
		s.OnCreate(func(ctx context.Context, tx store.Tx, a *approval.Action) error {
			got, err := s.Get(ctx, tx, a.ID)
			if err != nil || got.State != approval.Pending {
				t.Errorf("in the hook, Get(%s) = %v, %v; want the pending action", a.ID, got, err)
			}
			seen = append(seen, a.ID)
			if fail {
				return refuse
			}
			return nil
		})
		r := approval.Requester{Subject: "alice", Client: "agent"}
		create := func(q store.Querier, i byte) (*approval.Action, error) {
			return s.Create(ctx, q, "test.critical", sha256.Sum256([]byte{i}), "preview", nil, r)
		}
		a, err := create(db, 1)
		if err != nil || len(seen) != 1 || seen[0] != a.ID {
			t.Fatalf("Create = %v, %v; the hook saw %q", a, err, seen)
		}
		fail = true
		if a, err := create(db, 2); !errors.Is(err, refuse) {
			t.Errorf("Create with a failing hook = %v, %v; want its error", a, err)
		}
		if _, err := s.Get(ctx, db, seen[1]); !errors.Is(err, approval.ErrNotFound) {
			t.Errorf("the action whose hook failed: Get = %v, want ErrNotFound (rolled back)", err)
		}
		fail = false
		outer := errors.New("the caller's transaction rolls back")
		err = db.InTx(ctx, func(ctx context.Context, tx store.Tx) error {
			if _, err := create(tx, 3); err != nil {
				return err
			}
			return outer
		})
		if !errors.Is(err, outer) {
			t.Fatal(err)
		}
		if _, err := s.Get(ctx, db, seen[2]); !errors.Is(err, approval.ErrNotFound) {
			t.Errorf("an action created in a transaction rolled back: Get = %v, want ErrNotFound", err)
		}
		if _, err := create(querier{db}, 4); err == nil || !strings.Contains(err.Error(), "runs no transaction") {
			t.Errorf("Create on a handle without transactions = %v, want refused", err)
		}
		if len(seen) != 3 {
			t.Errorf("the hook ran %d times, want 3 (not for the refused handle)", len(seen))
		}
	})
}

// TestDecideHook: Decide calls the decide hook with the action as decided, in the deciding
// transaction (the hook reads it there), for an approval and a rejection alike; the hook's error
// undoes the decision; an action no longer pending calls no hook. CreateUntil gives an action
// the expiry asked for, and refuses one not after now.
func TestDecideHook(t *testing.T) {
	storetest.Each(t, pg, func(t *testing.T, db store.DB) {
		ctx := context.Background()
		now := time.Date(2026, 7, 1, 12, 0, 0, 0, time.UTC)
		s, err := approval.New(15*time.Minute, func() time.Time { return now })
		if err != nil {
			t.Fatal(err)
		}
		var seen []approval.State
		refuse := errors.New("the send could not be queued")
		fail := false
		s.OnDecide(func(ctx context.Context, tx store.Tx, a *approval.Action) error {
			got, err := s.Get(ctx, tx, a.ID)
			if err != nil || got.State != a.State {
				t.Errorf("in the hook, Get(%s) = %v, %v; want the action as decided (%s)", a.ID, got, err, a.State)
			}
			seen = append(seen, a.State)
			if fail {
				return refuse
			}
			return nil
		})
		r := approval.Requester{Subject: "alice", Client: "agent"}
		until := now.Add(8 * time.Hour)
		create := func(i byte) *approval.Action {
			t.Helper()
			a, err := s.CreateUntil(ctx, db, "test.critical", sha256.Sum256([]byte{i}), "preview", nil, r, until)
			if err != nil {
				t.Fatal(err)
			}
			if !a.Expires.Equal(until) {
				t.Errorf("CreateUntil's action expires %v, want %v", a.Expires, until)
			}
			return a
		}
		decide := func(id string, approve bool) (*approval.Action, error) {
			var a *approval.Action
			err := db.InTx(ctx, func(ctx context.Context, tx store.Tx) error {
				var err error
				a, err = s.Decide(ctx, tx, id, approve, approval.Approver{Subject: "bob"})
				return err
			})
			return a, err
		}
		a1, a2, a3 := create(1), create(2), create(3)
		now = now.Add(7 * time.Hour) // past the Store's TTL, before the action's own expiry
		if a, err := decide(a1.ID, true); err != nil || a.State != approval.Approved {
			t.Fatalf("approve = %v, %v", a, err)
		}
		if a, err := decide(a2.ID, false); err != nil || a.State != approval.Rejected {
			t.Fatalf("reject = %v, %v", a, err)
		}
		fail = true
		if _, err := decide(a3.ID, true); !errors.Is(err, refuse) {
			t.Errorf("approve with a failing hook = %v, want its error", err)
		}
		if a, err := s.Get(ctx, db, a3.ID); err != nil || a.State != approval.Pending {
			t.Errorf("the action whose hook failed = %v, %v; want still pending (rolled back)", a, err)
		}
		fail = false
		if _, err := decide(a1.ID, true); !errors.Is(err, approval.ErrDecided) {
			t.Errorf("deciding again = %v, want ErrDecided", err)
		}
		if want := []approval.State{approval.Approved, approval.Rejected, approval.Approved}; !slices.Equal(seen, want) {
			t.Errorf("the hook saw %v, want %v", seen, want)
		}
		if _, err := s.CreateUntil(ctx, db, "test.critical", sha256.Sum256([]byte{4}), "preview", nil, r, now); err == nil {
			t.Error("CreateUntil expiring now was accepted, want refused")
		}
	})
}
