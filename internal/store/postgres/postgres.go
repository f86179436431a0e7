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
	ctx, sp := store.StartSpan(ctx, store.Postgres, store.SpanExec)
	tag, err := db.pool.Exec(ctx, query, args...)
	store.EndSpan(sp, err)
	return tag.RowsAffected(), err
}

// Query runs a query. Its span ends when the rows are closed: pgx reports most
// of a query's errors while its rows are read.
func (db *DB) Query(ctx context.Context, query string, args ...any) (store.Rows, error) {
	ctx, sp := store.StartSpan(ctx, store.Postgres, store.SpanQuery)
	r, err := db.pool.Query(ctx, query, args...)
	if err != nil {
		store.EndSpan(sp, err)
		return nil, err
	}
	return store.SpanRows(sp, r), nil
}

// QueryRow runs a query expected to return at most one row. Its span ends in
// the row's Scan, where pgx reads the answer and reports the query's errors.
func (db *DB) QueryRow(ctx context.Context, query string, args ...any) store.Row {
	ctx, sp := store.StartSpan(ctx, store.Postgres, store.SpanQuery)
	return store.SpanRow(sp, row{db.pool.QueryRow(ctx, query, args...)})
}

// InTx runs fn in a READ COMMITTED transaction in as few round trips as its statements allow:
// BEGIN goes with the first statement fn runs (an Exec or a QueryRow), and the statements fn
// defers (store.Tx.Defer) go with the COMMIT. A transaction of one statement and a commit is
// then two round trips, not three; one that only defers is one.
func (db *DB) InTx(ctx context.Context, fn func(ctx context.Context, tx store.Tx) error) (err error) {
	ctx, sp := store.StartSpan(ctx, store.Postgres, store.SpanTx)
	defer func() { store.EndTxSpan(sp, err) }()
	c, err := db.pool.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("postgres: begin: %w", err)
	}
	// A connection released inside a transaction (a failed ROLLBACK) is closed by the pool,
	// never reused.
	defer c.Release()
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
	if err := db.migrator.Current(ctx); err != nil {
		return err
	}
	return db.riverCurrent(ctx)
}

// Migrate applies River's migrations (the job queue's tables), then ours (which grant the
// serving role its rights on River's tables), each under a session advisory lock: replicas
// starting at once take turns, and all but the first find nothing to do.
func (db *DB) Migrate(ctx context.Context) ([]store.Migration, error) {
	if err := db.migrateRiver(ctx); err != nil {
		return nil, err
	}
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

// tx is a transaction on one pooled connection. Its BEGIN is sent with its first statement.
type tx struct {
	c        *pgxpool.Conn
	begun    bool // BEGIN was sent
	deferred []store.Stmt
}

func (t *tx) Dialect() store.Dialect { return store.Postgres }

// first sends BEGIN and query in one round trip, and returns the results positioned after
// BEGIN's, for the caller to read query's and Close. Only for the first statement.
func (t *tx) first(ctx context.Context, query string, args []any) (pgx.BatchResults, error) {
	t.begun = true
	b := &pgx.Batch{QueuedQueries: make([]*pgx.QueuedQuery, 0, 2)}
	b.Queue("BEGIN")
	b.Queue(query, args...)
	br := t.c.SendBatch(ctx, b)
	if _, err := br.Exec(); err != nil {
		br.Close()
		return nil, fmt.Errorf("postgres: begin: %w", err)
	}
	return br, nil
}

// begin sends BEGIN on its own, before a statement that cannot go with it.
func (t *tx) begin(ctx context.Context) error {
	if t.begun {
		return nil
	}
	t.begun = true
	if _, err := t.c.Exec(ctx, "BEGIN"); err != nil {
		return fmt.Errorf("postgres: begin: %w", err)
	}
	return nil
}

func (t *tx) Exec(ctx context.Context, query string, args ...any) (int64, error) {
	if t.begun {
		tag, err := t.c.Exec(ctx, query, args...)
		return tag.RowsAffected(), err
	}
	br, err := t.first(ctx, query, args)
	if err != nil {
		return 0, err
	}
	tag, err := br.Exec()
	return tag.RowsAffected(), closeBatch(br, err)
}

// Query sends BEGIN on its own first: rows the caller might not close would hold a pipeline
// open.
func (t *tx) Query(ctx context.Context, query string, args ...any) (store.Rows, error) {
	if err := t.begin(ctx); err != nil {
		return nil, err
	}
	r, err := t.c.Query(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	return r, nil
}

func (t *tx) QueryRow(ctx context.Context, query string, args ...any) store.Row {
	if t.begun {
		return row{t.c.QueryRow(ctx, query, args...)}
	}
	br, err := t.first(ctx, query, args)
	if err != nil {
		return errRow{err}
	}
	return batchRow{br}
}

func (t *tx) Defer(stmts ...store.Stmt) { t.deferred = append(t.deferred, stmts...) }

// QueryRows sends the queries in one pipeline (BEGIN first, if no statement sent it): the
// server runs them one after the other, each with a snapshot of its own.
func (t *tx) QueryRows(ctx context.Context, queries []store.Stmt, dests [][]any) error {
	if len(queries) != len(dests) {
		return fmt.Errorf("postgres: %d queries, %d destinations", len(queries), len(dests))
	}
	b := &pgx.Batch{QueuedQueries: make([]*pgx.QueuedQuery, 0, len(queries)+1)}
	begin := !t.begun
	if begin {
		t.begun = true
		b.Queue("BEGIN")
	}
	for _, q := range queries {
		b.Queue(q.SQL, q.Args...)
	}
	br := t.c.SendBatch(ctx, b)
	var err error
	if begin {
		if _, err = br.Exec(); err != nil {
			err = fmt.Errorf("postgres: begin: %w", err)
		}
	}
	for i := 0; err == nil && i < len(queries); i++ {
		err = row{br.QueryRow()}.Scan(dests[i]...)
	}
	return closeBatch(br, err)
}

// commit sends the deferred statements and COMMIT in one pipeline (BEGIN first, if no
// statement sent it). After a failed statement the server skips the rest up to the
// pipeline's end, COMMIT included, and the transaction is rolled back here.
func (t *tx) commit(ctx context.Context) error {
	if !t.begun && len(t.deferred) == 0 {
		return nil // nothing was run: nothing to commit
	}
	if t.begun && t.c.Conn().PgConn().TxStatus() == 'I' {
		// The BEGIN sent with the first statement failed, and fn went on regardless.
		return errors.New("postgres: commit: the transaction never began")
	}
	b := &pgx.Batch{QueuedQueries: make([]*pgx.QueuedQuery, 0, len(t.deferred)+2)}
	if !t.begun {
		b.Queue("BEGIN")
	}
	for i := range t.deferred {
		b.Queue(t.deferred[i].SQL, t.deferred[i].Args...)
	}
	b.Queue("COMMIT")
	br := t.c.SendBatch(ctx, b)
	var failed error
	if !t.begun {
		t.begun = true
		if _, err := br.Exec(); err != nil {
			failed = fmt.Errorf("postgres: begin: %w", err)
		}
	}
	for i := range t.deferred {
		if failed != nil {
			break
		}
		if _, err := br.Exec(); err != nil {
			failed = t.deferred[i].Failed(err)
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

// batchRow is the row of a statement sent with BEGIN: reading it ends the pipeline.
type batchRow struct{ br pgx.BatchResults }

func (r batchRow) Scan(dest ...any) error {
	return closeBatch(r.br, row{r.br.QueryRow()}.Scan(dest...))
}

// closeBatch ends the pipeline of br, whose last result gave err, and returns err or else
// what ending it reports.
func closeBatch(br pgx.BatchResults, err error) error {
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	return err
}

type errRow struct{ err error }

func (r errRow) Scan(...any) error { return r.err }

type row struct{ r pgx.Row }

func (r row) Scan(dest ...any) error {
	err := r.r.Scan(dest...)
	if errors.Is(err, pgx.ErrNoRows) {
		return store.ErrNoRows
	}
	return err
}
