// Package postgres implements store.DB on PostgreSQL with a pgx connection pool: production,
// and several replicas sharing one database.
package postgres

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/cobranca/cobranca/internal/store"
	"github.com/cobranca/cobranca/migrations"
)

// DB is an open PostgreSQL connection pool. It implements store.DB.
type DB struct {
	pool     *pgxpool.Pool
	sqlDB    *sql.DB // the same pool seen through database/sql, for goose
	migrator *store.Migrator
}

var _ store.DB = (*DB)(nil)

// Open connects to the database at url (postgres://… or key=value). It does not migrate.
func Open(ctx context.Context, url string, logger *slog.Logger) (*DB, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		// The error may quote the URL, password included: say only what kind of problem it is.
		return nil, errors.New("postgres: invalid database URL")
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("postgres: %w", err)
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("postgres: connect: %w", err)
	}
	db := &DB{pool: pool, sqlDB: stdlib.OpenDBFromPool(pool)}
	db.migrator, err = store.NewMigrator(db.sqlDB, store.Postgres, migrations.Postgres(), logger, nil)
	if err != nil {
		db.Close()
		return nil, err
	}
	return db, nil
}

// Pool returns the underlying pool, for the few places that need pgx itself.
func (db *DB) Pool() *pgxpool.Pool { return db.pool }

// Dialect returns store.Postgres.
func (db *DB) Dialect() store.Dialect { return store.Postgres }

// Exec runs a statement.
func (db *DB) Exec(ctx context.Context, query string, args ...any) (int64, error) {
	tag, err := db.pool.Exec(ctx, query, args...)
	return tag.RowsAffected(), err
}

// Query runs a query.
func (db *DB) Query(ctx context.Context, query string, args ...any) (store.Rows, error) {
	r, err := db.pool.Query(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	return r, nil
}

// QueryRow runs a query expected to return at most one row.
func (db *DB) QueryRow(ctx context.Context, query string, args ...any) store.Row {
	return row{db.pool.QueryRow(ctx, query, args...)}
}

// InTx runs fn in a READ COMMITTED transaction. The statements fn defers (store.Tx.Defer) are
// sent with the COMMIT, in one round trip.
func (db *DB) InTx(ctx context.Context, fn func(ctx context.Context, tx store.Tx) error) error {
	c, err := db.pool.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("postgres: begin: %w", err)
	}
	// A connection released inside a transaction (a failed ROLLBACK) is closed by the pool,
	// never reused.
	defer c.Release()
	if _, err := c.Exec(ctx, "BEGIN"); err != nil {
		return fmt.Errorf("postgres: begin: %w", err)
	}
	t := &tx{c: c}
	ended := false
	defer func() {
		if !ended { // fn panicked
			t.rollback(ctx)
		}
	}()
	err = fn(ctx, t)
	ended = true
	if err != nil {
		t.rollback(ctx)
		return err
	}
	return t.commit(ctx)
}

// Ready reports whether the database answers and every migration is applied.
func (db *DB) Ready(ctx context.Context) error {
	if err := db.pool.Ping(ctx); err != nil {
		return fmt.Errorf("postgres: %w", err)
	}
	return db.migrator.Current(ctx)
}

// Migrate applies the pending migrations under a session advisory lock: replicas starting at
// once take turns, and all but the first find nothing to do.
func (db *DB) Migrate(ctx context.Context) ([]store.Migration, error) {
	return db.migrator.Up(ctx)
}

// Migrations lists the known migrations and their state.
func (db *DB) Migrations(ctx context.Context) ([]store.Migration, error) {
	return db.migrator.Status(ctx)
}

// Close closes the pool.
func (db *DB) Close() error {
	err := db.sqlDB.Close()
	db.pool.Close()
	return err
}

type tx struct {
	c        *pgxpool.Conn
	deferred []store.Stmt
}

func (t *tx) Dialect() store.Dialect { return store.Postgres }

func (t *tx) Exec(ctx context.Context, query string, args ...any) (int64, error) {
	tag, err := t.c.Exec(ctx, query, args...)
	return tag.RowsAffected(), err
}

func (t *tx) Query(ctx context.Context, query string, args ...any) (store.Rows, error) {
	r, err := t.c.Query(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	return r, nil
}

func (t *tx) QueryRow(ctx context.Context, query string, args ...any) store.Row {
	return row{t.c.QueryRow(ctx, query, args...)}
}

func (t *tx) Defer(stmts ...store.Stmt) { t.deferred = append(t.deferred, stmts...) }

// commit sends the deferred statements and COMMIT in one pipeline. After a failed statement
// the server skips the rest up to the pipeline's end, COMMIT included, and the transaction is
// rolled back here.
func (t *tx) commit(ctx context.Context) error {
	b := &pgx.Batch{QueuedQueries: make([]*pgx.QueuedQuery, 0, len(t.deferred)+1)}
	for i := range t.deferred {
		b.Queue(t.deferred[i].SQL, t.deferred[i].Args...)
	}
	b.Queue("COMMIT")
	br := t.c.SendBatch(ctx, b)
	var failed error
	for i := range t.deferred {
		if _, err := br.Exec(); err != nil {
			failed = t.deferred[i].Failed(err)
			break
		}
	}
	if failed == nil {
		tag, err := br.Exec()
		switch {
		case err != nil:
			failed = fmt.Errorf("postgres: commit: %w", err)
		case tag.String() == "ROLLBACK": // the transaction had failed: COMMIT rolled it back
			failed = fmt.Errorf("postgres: commit: %w", pgx.ErrTxCommitRollback)
		}
	}
	if err := br.Close(); err != nil && failed == nil {
		failed = fmt.Errorf("postgres: commit: %w", err)
	}
	if failed != nil {
		t.rollback(ctx)
	}
	return failed
}

// rollback ends the transaction; if it cannot, the connection stays inside it and the pool
// closes it on release.
func (t *tx) rollback(ctx context.Context) {
	if t.c.Conn().PgConn().TxStatus() != 'I' {
		_, _ = t.c.Exec(ctx, "ROLLBACK")
	}
}

type row struct{ r pgx.Row }

func (r row) Scan(dest ...any) error {
	err := r.r.Scan(dest...)
	if errors.Is(err, pgx.ErrNoRows) {
		return store.ErrNoRows
	}
	return err
}
