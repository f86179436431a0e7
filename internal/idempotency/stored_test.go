package idempotency_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/cobranca/cobranca/internal/idempotency"
	"github.com/cobranca/cobranca/internal/store"
	"github.com/cobranca/cobranca/internal/store/storetest"
)

// TestStored: Stored counts the keys whose answers are stored, at most limit.
func TestStored(t *testing.T) {
	storetest.Each(t, pg, func(t *testing.T, db store.DB) {
		ctx := context.Background()
		s, err := idempotency.New(db.Dialect(), time.Hour, nil)
		if err != nil {
			t.Fatal(err)
		}
		if n, err := idempotency.Stored(ctx, db, 100); n != 0 || err != nil {
			t.Errorf("Stored(empty) = %d, %v; want 0", n, err)
		}
		fp := make([]byte, 32)
		for i := range 5 {
			k := idempotency.Key{Principal: "alice", Tool: "test.write", Key: fmt.Sprintf("key-%d", i)}
			if err := db.InTx(ctx, func(ctx context.Context, tx store.Tx) error {
				if _, err := s.Begin(ctx, tx, k, fp); err != nil {
					return err
				}
				return s.Complete(ctx, tx, k, fp, []byte(`{"ok":true}`))
			}); err != nil {
				t.Fatal(err)
			}
		}
		for _, tt := range []struct{ limit, want int64 }{{100, 5}, {5, 5}, {3, 3}} {
			if n, err := idempotency.Stored(ctx, db, tt.limit); n != tt.want || err != nil {
				t.Errorf("Stored(limit %d) = %d, %v; want %d", tt.limit, n, err, tt.want)
			}
		}
	})
}
