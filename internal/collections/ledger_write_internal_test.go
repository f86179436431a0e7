package collections

import (
	"context"
	"testing"

	"github.com/cobranca/cobranca/internal/store"
	"github.com/cobranca/cobranca/internal/store/storetest"
)

// TestRehearseTakesEverythingBack: what a rehearsal writes is gone after it, whether it ran
// in a transaction of its own or inside another (a savepoint), which goes on and commits; a
// rehearsal that defers a statement to the commit — which no savepoint takes back — fails.
func TestRehearseTakesEverythingBack(t *testing.T) {
	db := storetest.SQLite(t)
	ctx := context.Background()
	if _, err := db.Exec(ctx, `CREATE TABLE rehearsed (n integer)`); err != nil {
		t.Fatal(err)
	}
	write := func(ctx context.Context, tx store.Tx) error {
		_, err := tx.Exec(ctx, `INSERT INTO rehearsed (n) VALUES (1)`)
		return err
	}
	if err := rehearse(ctx, db, write); err != nil {
		t.Fatalf("rehearse on the DB: %v", err)
	}
	err := db.InTx(ctx, func(ctx context.Context, tx store.Tx) error {
		if err := rehearse(ctx, tx, write); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `INSERT INTO rehearsed (n) VALUES (2)`)
		return err
	})
	if err != nil {
		t.Fatalf("rehearse in a transaction: %v", err)
	}
	var sum int64
	if err := db.QueryRow(ctx, `SELECT coalesce(sum(n), 0) FROM rehearsed`).Scan(&sum); err != nil || sum != 2 {
		t.Errorf("after the rehearsals: sum %d, %v; want 2 (the transaction's own row only)", sum, err)
	}
	deferring := func(ctx context.Context, tx store.Tx) error {
		tx.Defer(store.Stmt{SQL: `INSERT INTO rehearsed (n) VALUES (100)`})
		return nil
	}
	if err := rehearse(ctx, db, deferring); err == nil {
		t.Error("a rehearsal deferring a statement succeeded")
	}
	err = db.InTx(ctx, func(ctx context.Context, tx store.Tx) error { return rehearse(ctx, tx, deferring) })
	if err == nil {
		t.Error("a rehearsal deferring a statement in a transaction succeeded")
	}
	if err := db.QueryRow(ctx, `SELECT coalesce(sum(n), 0) FROM rehearsed`).Scan(&sum); err != nil || sum != 2 {
		t.Errorf("after the deferring rehearsals: sum %d, %v; want 2", sum, err)
	}
}
