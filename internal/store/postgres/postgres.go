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

// InTx runs fn in a READ COMMITTED transaction.
func (db *DB) InTx(ctx context.Context, fn func(ctx context.Context, tx store.Tx) error) error {
	err := pgx.BeginFunc(ctx, db.pool, func(t pgx.Tx) error {
		return fn(ctx, tx{t})
	})
	return err
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

type tx struct{ tx pgx.Tx }

func (t tx) Dialect() store.Dialect { return store.Postgres }

func (t tx) Exec(ctx context.Context, query string, args ...any) (int64, error) {
	tag, err := t.tx.Exec(ctx, query, args...)
	return tag.RowsAffected(), err
}

func (t tx) Query(ctx context.Context, query string, args ...any) (store.Rows, error) {
	r, err := t.tx.Query(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	return r, nil
}

func (t tx) QueryRow(ctx context.Context, query string, args ...any) store.Row {
	return row{t.tx.QueryRow(ctx, query, args...)}
}

type row struct{ r pgx.Row }

func (r row) Scan(dest ...any) error {
	err := r.r.Scan(dest...)
	if errors.Is(err, pgx.ErrNoRows) {
		return store.ErrNoRows
	}
	return err
}
