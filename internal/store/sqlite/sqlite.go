// Package sqlite implements store.DB on an embedded SQLite database (modernc.org/sqlite, pure
// Go): the default, so `cobranca serve` needs no database server.
//
// Writes go through one connection whose transactions begin IMMEDIATE (they take the write
// lock at BEGIN, so a transaction never fails half way when another writer holds it); reads
// outside transactions use a pool of read-only connections, which WAL lets run alongside the
// writer. Other processes on the same file (cobranca migrate, cobranca audit verify) are
// handled by the busy timeout.
package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"runtime"

	_ "modernc.org/sqlite" // registers the "sqlite" database/sql driver

	"github.com/cobranca/cobranca/internal/store"
	"github.com/cobranca/cobranca/migrations"
)

// FileName is the database file created in the data directory.
const FileName = "cobranca.db"

// DB is an open SQLite database. It implements store.DB.
type DB struct {
	path     string
	write    *sql.DB
	read     *sql.DB
	migrator *store.Migrator
}

var _ store.DB = (*DB)(nil)

// Open opens (creating if needed) the database file at path, creating its directory with mode
// 0700 and the file with mode 0600, whatever the umask and the directory's mode; SQLite gives
// the -wal and -shm files the database file's mode. It does not migrate.
func Open(ctx context.Context, path string, logger *slog.Logger) (*DB, error) {
	if path == "" {
		return nil, errors.New("sqlite: empty path")
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("sqlite: %w", err)
	}
	if err := createPrivate(path); err != nil {
		return nil, fmt.Errorf("sqlite: %w", err)
	}
	pragmas := url.Values{}
	for _, p := range []string{"busy_timeout(10000)", "journal_mode(WAL)", "foreign_keys(1)", "synchronous(NORMAL)"} {
		pragmas.Add("_pragma", p)
	}
	wq := url.Values{"_txlock": {"immediate"}}
	for k, v := range pragmas {
		wq[k] = v
	}
	w, err := sql.Open("sqlite", "file:"+path+"?"+wq.Encode())
	if err != nil {
		return nil, fmt.Errorf("sqlite: %w", err)
	}
	w.SetMaxOpenConns(1)
	w.SetMaxIdleConns(1)
	w.SetConnMaxLifetime(0)
	w.SetConnMaxIdleTime(0)
	// The write connection is opened first so that WAL mode is set before readers arrive.
	if err := w.PingContext(ctx); err != nil {
		w.Close()
		return nil, fmt.Errorf("sqlite: open %s: %w", path, err)
	}
	rq := url.Values{"_pragma": append(pragmas["_pragma"], "query_only(1)")}
	r, err := sql.Open("sqlite", "file:"+path+"?"+rq.Encode())
	if err != nil {
		w.Close()
		return nil, fmt.Errorf("sqlite: %w", err)
	}
	n := max(2, runtime.GOMAXPROCS(0))
	r.SetMaxOpenConns(n)
	r.SetMaxIdleConns(n)
	db := &DB{path: path, write: w, read: r}
	db.migrator, err = store.NewMigrator(w, store.SQLite, migrations.SQLite(), logger, db.lockFile)
	if err != nil {
		db.Close()
		return nil, err
	}
	return db, nil
}

// createPrivate creates path, empty and with mode 0600, unless it exists: SQLite would create it
// 0644 less the umask. An existing file keeps the mode its operator gave it.
func createPrivate(path string) error {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return nil
	}
	if err != nil {
		return err
	}
	// The umask may have taken bits from 0600 (0o277 leaves 0400).
	return errors.Join(f.Chmod(0o600), f.Close())
}

// Path returns the database file's path.
func (db *DB) Path() string { return db.path }

// Dialect returns store.SQLite.
func (db *DB) Dialect() store.Dialect { return store.SQLite }

// Exec runs a statement on the write connection.
func (db *DB) Exec(ctx context.Context, query string, args ...any) (n int64, err error) {
	ctx, sp := store.StartSpan(ctx, store.SQLite, store.SpanExec)
	defer func() { store.EndSpan(sp, err) }()
	return exec(ctx, db.write, query, args)
}

// Query runs a query on a read-only connection. Its span ends when the rows are
// closed: SQLite steps through them as they are read, and reports its errors there.
func (db *DB) Query(ctx context.Context, query string, args ...any) (store.Rows, error) {
	ctx, sp := store.StartSpan(ctx, store.SQLite, store.SpanQuery)
	r, err := queryRows(ctx, db.read, query, args)
	if err != nil {
		store.EndSpan(sp, err)
		return nil, err
	}
	return store.SpanRows(sp, r), nil
}

// QueryRow runs a query on a read-only connection. Its span ends in the row's
// Scan, where database/sql reports the query's errors.
func (db *DB) QueryRow(ctx context.Context, query string, args ...any) store.Row {
	ctx, sp := store.StartSpan(ctx, store.SQLite, store.SpanQuery)
	return store.SpanRow(sp, row{db.read.QueryRowContext(ctx, query, args...)})
}

// InTx runs fn in a write transaction (BEGIN IMMEDIATE), then the statements it deferred
// (store.Tx.Defer), one after the other, then COMMIT.
func (db *DB) InTx(ctx context.Context, fn func(ctx context.Context, tx store.Tx) error) (err error) {
	ctx, sp := store.StartSpan(ctx, store.SQLite, store.SpanTx)
	defer func() { store.EndTxSpan(sp, err) }()
	sqlTx, err := db.write.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("sqlite: begin: %w", err)
	}
	defer func() {
		if p := recover(); p != nil {
			_ = sqlTx.Rollback()
			panic(p)
		}
		if err != nil {
			_ = sqlTx.Rollback()
		}
	}()
	t := &tx{tx: sqlTx}
	if err := fn(ctx, t); err != nil {
		return err
	}
	for i := range t.deferred {
		if _, err := sqlTx.ExecContext(ctx, t.deferred[i].SQL, t.deferred[i].Args...); err != nil {
			return t.deferred[i].Failed(err)
		}
	}
	if err := sqlTx.Commit(); err != nil {
		return fmt.Errorf("sqlite: commit: %w", err)
	}
	return nil
}

// Ready reports whether the database answers and every migration is applied.
func (db *DB) Ready(ctx context.Context) error {
	if err := db.read.PingContext(ctx); err != nil {
		return fmt.Errorf("sqlite: %w", err)
	}
	if err := db.migrator.Current(ctx); err != nil {
		return err
	}
	return db.riverCurrent(ctx)
}

// Migrate applies River's migrations (the job queue's tables), then ours, each holding an
// exclusive lock on a file next to the database so that two processes migrating at once take
// turns.
func (db *DB) Migrate(ctx context.Context) ([]store.Migration, error) {
	unlock, err := db.lockFile(ctx)
	if err != nil {
		return nil, fmt.Errorf("migrate: %w", err)
	}
	err = db.migrateRiver(ctx)
	unlock()
	if err != nil {
		return nil, err
	}
	return db.migrator.Up(ctx)
}

// Migrations lists the known migrations and their state.
func (db *DB) Migrations(ctx context.Context) ([]store.Migration, error) {
	return db.migrator.Status(ctx)
}

// Close closes the database.
func (db *DB) Close() error {
	return errors.Join(db.read.Close(), db.write.Close())
}

type tx struct {
	tx       *sql.Tx
	deferred []store.Stmt
}

func (t *tx) Defer(stmts ...store.Stmt) { t.deferred = append(t.deferred, stmts...) }

func (t *tx) Dialect() store.Dialect { return store.SQLite }

func (t *tx) Exec(ctx context.Context, query string, args ...any) (int64, error) {
	return exec(ctx, t.tx, query, args)
}

func (t *tx) Query(ctx context.Context, query string, args ...any) (store.Rows, error) {
	return queryRows(ctx, t.tx, query, args)
}

func (t *tx) QueryRow(ctx context.Context, query string, args ...any) store.Row {
	return row{t.tx.QueryRowContext(ctx, query, args...)}
}

// QueryRows runs the queries one after the other: the transaction holds the write lock, so
// nothing commits between them.
func (t *tx) QueryRows(ctx context.Context, queries []store.Stmt, dests [][]any) error {
	if len(queries) != len(dests) {
		return fmt.Errorf("sqlite: %d queries, %d destinations", len(queries), len(dests))
	}
	for i, q := range queries {
		if err := t.QueryRow(ctx, q.SQL, q.Args...).Scan(dests[i]...); err != nil {
			return err
		}
	}
	return nil
}

type querier interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

func exec(ctx context.Context, q querier, query string, args []any) (int64, error) {
	res, err := q.ExecContext(ctx, query, args...)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

func queryRows(ctx context.Context, q querier, query string, args []any) (store.Rows, error) {
	r, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	return rows{r}, nil
}

type row struct{ r *sql.Row }

func (r row) Scan(dest ...any) error {
	err := r.r.Scan(dest...)
	if errors.Is(err, sql.ErrNoRows) {
		return store.ErrNoRows
	}
	return err
}

type rows struct{ *sql.Rows }

func (r rows) Close() { _ = r.Rows.Close() }
