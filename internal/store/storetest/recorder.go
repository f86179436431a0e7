package storetest

import (
	"context"
	"slices"
	"strings"
	"sync"

	"github.com/cobranca/cobranca/internal/store"
)

// Query is a statement a Recorder saw, with its arguments.
type Query struct {
	SQL  string
	Args []any
}

// Select reports whether q only reads (SELECT or WITH): what EXPLAIN may be asked of without a
// side effect to think of.
func (q Query) Select() bool {
	s := strings.ToUpper(strings.TrimSpace(q.SQL))
	return strings.HasPrefix(s, "SELECT") || strings.HasPrefix(s, "WITH")
}

// Recorder is a store.DB that runs everything on the DB it wraps and records each statement
// run through it or its transactions (not those deferred to a commit, Tx.Defer): for a test
// of what a whole request reads — a page through its real handler — to EXPLAIN each query.
type Recorder struct {
	store.DB
	mu      sync.Mutex
	queries []Query
}

// Record wraps db.
func Record(db store.DB) *Recorder { return &Recorder{DB: db} }

// Take returns the statements recorded since the last Take, in order, and forgets them.
func (r *Recorder) Take() []Query {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.queries
	r.queries = nil
	return out
}

func (r *Recorder) add(sql string, args []any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.queries = append(r.queries, Query{SQL: sql, Args: slices.Clone(args)})
}

func (r *Recorder) Exec(ctx context.Context, sql string, args ...any) (int64, error) {
	r.add(sql, args)
	return r.DB.Exec(ctx, sql, args...)
}

func (r *Recorder) Query(ctx context.Context, sql string, args ...any) (store.Rows, error) {
	r.add(sql, args)
	return r.DB.Query(ctx, sql, args...)
}

func (r *Recorder) QueryRow(ctx context.Context, sql string, args ...any) store.Row {
	r.add(sql, args)
	return r.DB.QueryRow(ctx, sql, args...)
}

func (r *Recorder) InTx(ctx context.Context, fn func(ctx context.Context, tx store.Tx) error) error {
	return r.DB.InTx(ctx, func(ctx context.Context, tx store.Tx) error { return fn(ctx, &recordedTx{Tx: tx, r: r}) })
}

type recordedTx struct {
	store.Tx
	r *Recorder
}

func (t *recordedTx) Exec(ctx context.Context, sql string, args ...any) (int64, error) {
	t.r.add(sql, args)
	return t.Tx.Exec(ctx, sql, args...)
}

func (t *recordedTx) Query(ctx context.Context, sql string, args ...any) (store.Rows, error) {
	t.r.add(sql, args)
	return t.Tx.Query(ctx, sql, args...)
}

func (t *recordedTx) QueryRow(ctx context.Context, sql string, args ...any) store.Row {
	t.r.add(sql, args)
	return t.Tx.QueryRow(ctx, sql, args...)
}

func (t *recordedTx) QueryRows(ctx context.Context, queries []store.Stmt, dests [][]any) error {
	for _, q := range queries {
		t.r.add(q.SQL, q.Args)
	}
	return t.Tx.QueryRows(ctx, queries, dests)
}
