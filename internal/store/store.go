// Package store defines what cobranca needs from its database, independent of the dialect:
// SQL with $n placeholders, transactions in one helper, readiness and migrations. The two
// implementations live in store/sqlite (the embedded default) and store/postgres (production,
// several replicas).
//
// Queries stay small and hand-written; where the dialects differ, the consumer picks its SQL
// by Dialect. Scan only into portable types: string, int64, bool, []byte.
package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/cobranca/cobranca/internal/telemetry"
)

// Dialect names the SQL a DB speaks.
type Dialect string

// The dialects.
const (
	Postgres Dialect = "postgres"
	SQLite   Dialect = "sqlite"
)

// ErrNoRows is returned by Row.Scan when the query selected no row, on both dialects.
var ErrNoRows = errors.New("store: no rows in result set")

// ErrPendingMigrations is returned by Ready when the schema is behind the binary.
var ErrPendingMigrations = errors.New("store: migrations pending")

// Row is the result of QueryRow.
type Row interface {
	Scan(dest ...any) error
}

// Rows is the result of Query. Close is idempotent; Err reports what ended the iteration.
type Rows interface {
	Next() bool
	Scan(dest ...any) error
	Err() error
	Close()
}

// Querier runs SQL, with $1, $2, … placeholders on both dialects.
type Querier interface {
	// Exec runs a statement and returns the number of rows it affected.
	Exec(ctx context.Context, sql string, args ...any) (int64, error)
	Query(ctx context.Context, sql string, args ...any) (Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) Row
}

// Tx is a transaction in progress, handed to the function given to DB.InTx.
type Tx interface {
	Querier
	Dialect() Dialect
	// Defer has stmts run at the commit, in order, after everything the function given to
	// InTx did: on PostgreSQL in the commit's round trip (one pipeline: the statements, then
	// COMMIT), on SQLite one after the other before it. If one fails, the statements after it
	// do not run, the transaction rolls back, and InTx returns the failure (Stmt.Fail's, when
	// set). When the function returns an error, the deferred statements never run. For
	// writes whose results the transaction does not read: an audit event, a stored answer.
	Defer(stmts ...Stmt)
	// QueryRows runs queries one after the other, each a statement of its own that selects
	// exactly one row, and scans the row of queries[i] into dests[i]: on PostgreSQL in one
	// round trip (with the BEGIN, when they are the transaction's first statements). Each
	// statement reads with a snapshot taken when it starts (READ COMMITTED), so a read after a
	// statement that takes a lock sees every commit made before the lock was granted. A query
	// that selects no row makes QueryRows fail with ErrNoRows; the queries after it may have
	// run.
	QueryRows(ctx context.Context, queries []Stmt, dests [][]any) error
}

// Stmt is one SQL statement with its arguments, built by the package that owns the rule and
// run by the one that owns the transaction (Tx.Defer).
type Stmt struct {
	SQL  string
	Args []any
	// Fail, when not nil, turns the statement's error into the one InTx returns, so that the
	// caller knows which statement failed.
	Fail func(error) error
}

// Failed is what InTx returns when s, deferred, failed with err.
func (s *Stmt) Failed(err error) error {
	if s.Fail != nil {
		return s.Fail(err)
	}
	return fmt.Errorf("store: deferred statement: %w", err)
}

// DB is a database handle: what the composition root opens and hands to the packages that
// define their own, smaller interfaces over it.
type DB interface {
	Querier
	Dialect() Dialect
	// InTx runs fn in a transaction: committed when fn returns nil, rolled back otherwise
	// (and when fn panics). On SQLite the transaction holds the write lock from its start
	// (BEGIN IMMEDIATE), so concurrent writers queue instead of failing with SQLITE_BUSY.
	InTx(ctx context.Context, fn func(ctx context.Context, tx Tx) error) error
	// Ready reports whether the database answers and its schema is current.
	Ready(ctx context.Context) error
	// Migrate applies the pending migrations. It is safe to call from several processes at
	// once: they take turns.
	Migrate(ctx context.Context) ([]Migration, error)
	// Migrations lists every migration the binary knows and whether it is applied.
	Migrations(ctx context.Context) ([]Migration, error)
	Close() error
}

// Migration describes one migration: applied by Migrate, or listed by Migrations.
type Migration struct {
	Version   int64
	Name      string // the file name
	Applied   bool
	AppliedAt time.Time     // zero when not applied, or when unknown
	Duration  time.Duration // set by Migrate
}

// DialectOf returns the dialect of q, a DB or a Tx of this package's implementations (false
// for another Querier).
func DialectOf(q Querier) (Dialect, bool) {
	d, ok := q.(interface{ Dialect() Dialect })
	if !ok {
		return "", false
	}
	return d.Dialect(), true
}

// InList is the SQL condition "column is one of the strings of the JSON array at placeholder"
// in dialect d: a list of any length as one argument (the JSON text of a []string), where
// neither dialect takes an array parameter the other does.
func InList(d Dialect, column, placeholder string) string {
	if d == Postgres {
		return column + " IN (SELECT jsonb_array_elements_text(" + placeholder + "::jsonb))"
	}
	return column + " IN (SELECT value FROM json_each(" + placeholder + "))"
}

// The spans of a store's work (internal/telemetry), children of the span of
// the step or job that asked for it: one per transaction, and one per
// statement run outside a transaction; never one per statement inside a
// transaction, nor per row. They name the database system and, for a
// transaction, whether it committed; never SQL or its arguments. A query's
// span covers reading its rows: a QueryRow's ends in the row's Scan
// (SpanRow), a Query's when its rows are closed (SpanRows), for both
// drivers report most of a query's errors only there.
const (
	SpanTx    = "store.tx"
	SpanExec  = "store.exec"
	SpanQuery = "store.query"
)

// StartSpan starts the span name of a store of dialect d when ctx's span
// records (telemetry.Start); otherwise it costs nothing.
func StartSpan(ctx context.Context, d Dialect, name string) (context.Context, trace.Span) {
	ctx, sp := telemetry.Start(ctx, name)
	if sp.IsRecording() {
		system := semconv.DBSystemNameSQLite
		if d == Postgres {
			system = semconv.DBSystemNamePostgreSQL
		}
		sp.SetAttributes(system)
	}
	return ctx, sp
}

// EndSpan ends the span of a statement, failed when err is not nil (a
// driver's text, which may quote a value, never goes on a span).
func EndSpan(sp trace.Span, err error) { telemetry.EndErr(sp, err, "error") }

// EndTxSpan ends the span of a transaction, saying whether it committed (a
// rollback is how many calls end on purpose: a repeat, a conflict).
func EndTxSpan(sp trace.Span, err error) {
	if sp.IsRecording() {
		outcome := "committed"
		if err != nil {
			outcome = "rolled_back"
		}
		sp.SetAttributes(telemetry.Outcome.String(outcome))
	}
	sp.End()
}

// SpanRow returns r, the row of a QueryRow outside a transaction, such that
// its Scan ends sp, the query's span, once: failed when Scan fails, except
// with ErrNoRows, which is an answer, not a failure. When sp does not record,
// r is returned as it is, and costs nothing more.
func SpanRow(sp trace.Span, r Row) Row {
	if !sp.IsRecording() {
		sp.End()
		return r
	}
	return &spanRow{r: r, sp: sp}
}

type spanRow struct {
	r     Row
	sp    trace.Span
	ended bool
}

func (r *spanRow) Scan(dest ...any) error {
	err := r.r.Scan(dest...)
	if !r.ended {
		r.ended = true
		failed := err
		if errors.Is(err, ErrNoRows) {
			failed = nil
		}
		EndSpan(r.sp, failed)
	}
	return err
}

// SpanRows returns r, the rows of a query outside a transaction, such that
// closing it ends sp, the query's span, once however many times Close is
// called: failed when r.Err reports a failure or when a Scan failed. When sp
// does not record, r is returned as it is, and costs nothing more.
func SpanRows(sp trace.Span, r Rows) Rows {
	if !sp.IsRecording() {
		sp.End()
		return r
	}
	return &spanRows{Rows: r, sp: sp}
}

type spanRows struct {
	Rows
	sp       trace.Span
	scanErr  error // the first Scan's failure (database/sql does not keep it for Err)
	finished bool  // sp has ended
}

func (r *spanRows) Scan(dest ...any) error {
	err := r.Rows.Scan(dest...)
	if err != nil && r.scanErr == nil {
		r.scanErr = err
	}
	return err
}

func (r *spanRows) Close() {
	r.Rows.Close()
	if r.finished {
		return
	}
	r.finished = true
	err := r.Rows.Err()
	if err == nil {
		err = r.scanErr
	}
	EndSpan(r.sp, err)
}
