package storetest_test

import (
	"context"
	"testing"

	"github.com/cobranca/cobranca/internal/store"
	"github.com/cobranca/cobranca/internal/store/storetest"
)

// TestCountRoundTrips: through the proxy, the yardstick is three round trips (BEGIN, INSERT,
// COMMIT), a store transaction whose statements are all deferred one (sent in one pipeline
// with BEGIN and COMMIT), one whose QueryRows come first two (BEGIN and both queries, then
// the deferred insert and COMMIT), and a plain query one, once their statements are prepared on the
// connection; the yardstick's rows arrive.
func TestCountRoundTrips(t *testing.T) {
	f := storetest.Fixtures(pg)[1]
	u, rt := storetest.CountRoundTrips(t, f.NewDatabase(t))
	db := f.Open(t, u)
	ctx := context.Background()
	y := storetest.NewYardstick(t, db)
	for _, tc := range []struct {
		name string
		run  func() error
		want int64
	}{
		{"yardstick", func() error { return y.Insert(ctx, nil) }, 3},
		{"deferred only", func() error {
			return db.InTx(ctx, func(ctx context.Context, tx store.Tx) error {
				tx.Defer(store.Stmt{SQL: `INSERT INTO yardstick (note) VALUES ($1)`, Args: []any{"deferred"}})
				return nil
			})
		}, 1},
		{"query rows, then a deferred insert", func() error {
			return db.InTx(ctx, func(ctx context.Context, tx store.Tx) error {
				var locked bool
				var n int64
				if err := tx.QueryRows(ctx, []store.Stmt{{SQL: `SELECT pg_try_advisory_xact_lock(7)`}, {SQL: `SELECT count(*) FROM yardstick`}},
					[][]any{{&locked}, {&n}}); err != nil {
					return err
				}
				tx.Defer(store.Stmt{SQL: `INSERT INTO yardstick (note) VALUES ($1)`, Args: []any{"after rows"}})
				return nil
			})
		}, 2},
		{"query", func() error {
			var n int64
			return db.QueryRow(ctx, `SELECT count(*) FROM yardstick`).Scan(&n)
		}, 1},
	} {
		// The first run prepares the statements on the connection (pgx caches them per
		// connection): a round trip more, the first time only.
		if err := tc.run(); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		const calls = 5
		rt.Reset()
		for range calls {
			if err := tc.run(); err != nil {
				t.Fatalf("%s: %v", tc.name, err)
			}
		}
		if got := rt.Load(); got != tc.want*calls {
			t.Errorf("%s: %d round trips in %d calls, want %d each", tc.name, got, calls, tc.want)
		}
	}
	var n int64
	if err := db.QueryRow(ctx, `SELECT count(*) FROM yardstick`).Scan(&n); err != nil || n != 18 {
		t.Errorf("yardstick rows = %d, %v; want 18", n, err)
	}
}
