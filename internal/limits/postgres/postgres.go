// Package postgres keeps the rate limiter's GCRA state in PostgreSQL, shared
// by every replica: one statement per decision (and one for the HTTP edge's
// chain of two), on the database's clock.
package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/cobranca/cobranca/internal/limits"
	"github.com/cobranca/cobranca/internal/store"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Backend implements limits.Backend on the rate_limit table (migration 00010).
type Backend struct {
	pool  *pgxpool.Pool
	owned bool
}

// New returns a Backend over pool.
func New(pool *pgxpool.Pool) *Backend { return &Backend{pool: pool} }

// Open returns a Backend on its own small pool to the database at url, whose
// connections commit with synchronous_commit off: a decision's commit does
// not wait for its WAL flush, which measured here was three quarters of
// PostgreSQL's CPU per call. A crash of the database can lose the last few
// hundred milliseconds of decisions (wal_writer_delay), never corrupt one; a
// restart keeps every decision made before it. The setting is on these
// connections only: audit events and every other write keep committing
// synchronously on the store's pool. Behind a pooler in transaction mode (pooled), which
// keeps no session parameter, decisions commit synchronously. Close the Backend when done.
func Open(ctx context.Context, url string, maxConns int32, pooled bool) (*Backend, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("rate limit pool: %w", err)
	}
	if !pooled {
		cfg.ConnConfig.RuntimeParams["synchronous_commit"] = "off"
	}
	cfg.ConnConfig.RuntimeParams["application_name"] = "cobranca-limits"
	// The pool runs a handful of statements (take, chain, sweep); pgx's
	// default caches of 512 each are maps sized up front, 22 KB a connection
	// held for nothing.
	cfg.ConnConfig.StatementCacheCapacity, cfg.ConnConfig.DescriptionCacheCapacity = limitStatements, limitStatements
	if maxConns > 0 {
		cfg.MaxConns = maxConns
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("rate limit pool: %w", err)
	}
	return &Backend{pool: pool, owned: true}, nil
}

// limitStatements bounds each connection's cache of prepared statements and
// descriptions: more than the statements this package runs.
const limitStatements = 16

// Close closes the pool Open made; a Backend from New leaves its pool alone.
func (b *Backend) Close() {
	if b.owned {
		b.pool.Close()
	}
}

// takeSQL is one GCRA decision, atomic under the row lock ON CONFLICT takes.
// $1 is the key, $2 the interval and $3 the tolerance, both in microseconds
// (limits.Limit.Span: T and Burst×T for one unit, more for a cost); the TAT is microseconds since the epoch on the database's
// clock, the one clock every replica shares.
//
// The insert of a new key (TAT = now + T) is always admitted. For a known
// key, the update runs only when max(tat, now) + T − now ≤ τ; when it does
// not, nothing is written (a flood of refusals costs no WAL) and RETURNING is
// empty, so the outer query reads the unchanged TAT for Retry-After. That
// read sees the statement's snapshot: under a concurrent writer it may be a
// little stale, which only shortens the advised wait; a key inserted by a
// transaction our snapshot cannot see reads NULL, handled by limits.Decided.
var takeSQL = `
WITH clock AS (
    SELECT (extract(epoch FROM statement_timestamp()) * 1000000)::bigint AS now_us
), taken AS (
    ` + gcraUpsert("$1", "$2", "$3", "") + `
)
SELECT clock.now_us,
       (SELECT tat FROM taken),
       CASE WHEN NOT EXISTS (SELECT FROM taken) THEN (SELECT tat FROM rate_limit WHERE key = $1) END
FROM clock`

// gcraUpsert is one GCRA decision as an upsert of the key (placeholder k)
// with its emission interval T (t) and tolerance τ (tau), on the clock CTE's
// now_us; when, if not empty, is a further condition for inserting or
// updating at all. It returns the new TAT when it admitted, no row when it
// refused. takeSQL and chainSQL use it, so the rule is written once.
func gcraUpsert(k, t, tau, when string) string {
	return `INSERT INTO rate_limit AS r (key, tat)
    SELECT ` + k + `, now_us + ` + t + ` FROM clock` + when + `
    ON CONFLICT (key) DO UPDATE
        SET tat = greatest(r.tat, excluded.tat - ` + t + `) + ` + t + `
        WHERE greatest(r.tat, excluded.tat - ` + t + `) + ` + t + ` - (excluded.tat - ` + t + `) <= ` + tau + `
    RETURNING r.tat`
}

// Take decides one request for key under lim.
func (b *Backend) Take(ctx context.Context, key string, lim limits.Limit) (d limits.Decision, err error) {
	ctx, sp := store.StartSpan(ctx, store.Postgres, store.SpanQuery)
	defer func() { store.EndSpan(sp, err) }()
	return take(ctx, b.pool, limits.Request{Key: key, Limit: lim})
}

// querier is a pool or a transaction.
type querier interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

func take(ctx context.Context, q querier, r limits.Request) (limits.Decision, error) {
	t, tau := r.Limit.Span(r.Cost)
	var now int64
	var taken, current *int64
	if err := q.QueryRow(ctx, takeSQL, r.Key, t, tau).Scan(&now, &taken, &current); err != nil {
		return limits.Decision{}, fmt.Errorf("rate limit: %w", err)
	}
	return decided(r, now, taken, current), nil
}

// decided is the decision a statement reported for r: admitted with the new
// TAT taken, or refused with the TAT as it stood (current; nil when the
// statement's snapshot could not see the key).
func decided(r limits.Request, now int64, taken, current *int64) limits.Decision {
	if taken != nil {
		return limits.Decided(r.Limit, r.Cost, true, time.UnixMicro(now), time.UnixMicro(*taken))
	}
	var tat time.Time
	if current != nil {
		tat = time.UnixMicro(*current)
	}
	return limits.Decided(r.Limit, r.Cost, false, time.UnixMicro(now), tat)
}

// chainSQL decides two keys in one statement, hence one round trip and one
// commit: $1 the first key with its T ($2) and τ ($3), $4 the second with
// its own ($5, $6). Each upsert is gcraUpsert, as in takeSQL; the second
// inserts nothing unless the first returned a row, i.e. admitted, so the
// second key is charged only when the first admits. Reading the first CTE's RETURNING is
// what orders the two (data-modifying CTEs otherwise run in no set order);
// rows are locked first key first, the order every chain uses, so chains do
// not deadlock. The keys must differ: one statement cannot update a row
// twice.
var chainSQL = `
WITH clock AS (
    SELECT (extract(epoch FROM statement_timestamp()) * 1000000)::bigint AS now_us
), first AS (
    ` + gcraUpsert("$1", "$2", "$3", "") + `
), second AS (
    ` + gcraUpsert("$4", "$5", "$6", " WHERE EXISTS (SELECT FROM first)") + `
)
SELECT clock.now_us,
       (SELECT tat FROM first),
       CASE WHEN NOT EXISTS (SELECT FROM first) THEN (SELECT tat FROM rate_limit WHERE key = $1) END,
       (SELECT tat FROM second),
       CASE WHEN EXISTS (SELECT FROM first) AND NOT EXISTS (SELECT FROM second)
            THEN (SELECT tat FROM rate_limit WHERE key = $4) END
FROM clock`

// TakeChain decides reqs in order, stopping at the first refusal (see
// limits.Backend). A chain of two, the HTTP edge's origin and principal, is
// one statement; a longer one runs Take's statement per key in one
// transaction (one commit, a round trip per key).
func (b *Backend) TakeChain(ctx context.Context, reqs []limits.Request) (_ []limits.Decision, err error) {
	switch len(reqs) {
	case 0:
		return nil, nil
	case 1:
		ctx, sp := store.StartSpan(ctx, store.Postgres, store.SpanQuery)
		d, err := take(ctx, b.pool, reqs[0])
		store.EndSpan(sp, err)
		if err != nil {
			return nil, err
		}
		return []limits.Decision{d}, nil
	}
	// The span of the statement, or of the transaction of a longer chain.
	name := store.SpanQuery
	if len(reqs) > 2 {
		name = store.SpanTx
	}
	ctx, sp := store.StartSpan(ctx, store.Postgres, name)
	defer func() { store.EndSpan(sp, err) }()
	if len(reqs) == 2 {
		t1, tau1 := reqs[0].Limit.Span(reqs[0].Cost)
		t2, tau2 := reqs[1].Limit.Span(reqs[1].Cost)
		var now int64
		var taken1, current1, taken2, current2 *int64
		err = b.pool.QueryRow(ctx, chainSQL, reqs[0].Key, t1, tau1, reqs[1].Key, t2, tau2).
			Scan(&now, &taken1, &current1, &taken2, &current2)
		if err != nil {
			return nil, fmt.Errorf("rate limit: %w", err)
		}
		first := decided(reqs[0], now, taken1, current1)
		if !first.Allowed {
			return []limits.Decision{first}, nil
		}
		return []limits.Decision{first, decided(reqs[1], now, taken2, current2)}, nil
	}
	var ds []limits.Decision
	err = pgx.BeginFunc(ctx, b.pool, func(tx pgx.Tx) error {
		var err error
		ds, err = limits.DecideChain(reqs, func(r limits.Request) (limits.Decision, error) { return take(ctx, tx, r) })
		return err
	})
	if err != nil {
		return nil, err
	}
	return ds, nil
}

// Sweep deletes the keys whose TAT has passed: they hold a full burst, which
// is what a missing key means too.
func (b *Backend) Sweep(ctx context.Context) (int64, error) {
	tag, err := b.pool.Exec(ctx, `DELETE FROM rate_limit WHERE tat < (extract(epoch FROM statement_timestamp()) * 1000000)::bigint`)
	if err != nil {
		return 0, fmt.Errorf("rate limit sweep: %w", err)
	}
	return tag.RowsAffected(), nil
}

// Pool is the backend's pool.
func (b *Backend) Pool() *pgxpool.Pool { return b.pool }
