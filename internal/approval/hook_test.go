package approval_test

import (
	"context"
	"crypto/sha256"
	"errors"
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
