package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"

	"github.com/cobranca/cobranca/internal/store"
)

// riverMigrationLockID is the advisory lock under which replicas take turns to apply River's
// migrations ("cobrrivr" in ASCII).
const riverMigrationLockID int64 = 0x636f627272697672

// RiverDriver returns River's pgx driver over this pool, for the job queue (internal/outbox).
func (db *DB) RiverDriver() *riverpgxv5.Driver { return riverpgxv5.New(db.pool) }

// migrateRiver applies River's own migrations (its river_* tables) under an advisory lock, so
// that replicas starting at once take turns.
func (db *DB) migrateRiver(ctx context.Context) error {
	c, err := db.pool.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("river migrate: %w", err)
	}
	defer c.Release()
	if _, err := c.Exec(ctx, "SELECT pg_advisory_lock($1)", riverMigrationLockID); err != nil {
		return fmt.Errorf("river migrate: lock: %w", err)
	}
	defer func() {
		_, _ = c.Exec(context.WithoutCancel(ctx), "SELECT pg_advisory_unlock($1)", riverMigrationLockID)
	}()
	return store.MigrateRiver(ctx, db.RiverDriver())
}

// riverCurrent returns store.ErrPendingMigrations when one of River's migrations is not
// applied.
func (db *DB) riverCurrent(ctx context.Context) error {
	return store.RiverCurrent(ctx, db.RiverDriver())
}

// PgxTx returns t, a transaction of InTx on PostgreSQL, as a pgx.Tx on the same connection and
// inside the same transaction, for a library that inserts with pgx (River's transactional
// insert). The transaction stays owned by InTx: Commit and Rollback through the pgx.Tx are
// refused. It reports false when t is not one of this package's transactions.
func PgxTx(ctx context.Context, t store.Tx) (pgx.Tx, bool, error) {
	pt, ok := t.(*tx)
	if !ok {
		return nil, false, nil
	}
	if err := pt.begin(ctx); err != nil {
		return nil, true, err
	}
	return borrowedTx{pt.c.Conn()}, true, nil
}

// errBorrowed is what ending a borrowed transaction returns: InTx ends it.
var errBorrowed = errors.New("postgres: the transaction belongs to InTx; it commits or rolls back")

// borrowedTx is a pgx.Tx over a connection inside a transaction that InTx owns.
type borrowedTx struct{ c *pgx.Conn }

// Begin is refused: nothing that borrows the transaction needs a nested one yet.
func (b borrowedTx) Begin(context.Context) (pgx.Tx, error) {
	return nil, errors.New("postgres: no nested transaction in a borrowed one")
}
func (b borrowedTx) Commit(context.Context) error   { return errBorrowed }
func (b borrowedTx) Rollback(context.Context) error { return errBorrowed }
func (b borrowedTx) CopyFrom(ctx context.Context, t pgx.Identifier, cols []string, src pgx.CopyFromSource) (int64, error) {
	return b.c.CopyFrom(ctx, t, cols, src)
}
func (b borrowedTx) SendBatch(ctx context.Context, batch *pgx.Batch) pgx.BatchResults {
	return b.c.SendBatch(ctx, batch)
}
func (b borrowedTx) LargeObjects() pgx.LargeObjects { return pgx.LargeObjects{} }
func (b borrowedTx) Prepare(ctx context.Context, name, sql string) (*pgconn.StatementDescription, error) {
	return b.c.Prepare(ctx, name, sql)
}
func (b borrowedTx) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	return b.c.Exec(ctx, sql, args...)
}
func (b borrowedTx) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	return b.c.Query(ctx, sql, args...)
}
func (b borrowedTx) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	return b.c.QueryRow(ctx, sql, args...)
}
func (b borrowedTx) Conn() *pgx.Conn { return b.c }
