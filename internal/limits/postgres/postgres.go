// Package postgres keeps the rate limiter's GCRA state in PostgreSQL, shared
// by every replica: one statement per decision, on the database's clock.
package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/cobranca/cobranca/internal/limits"
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
// synchronously on the store's pool. Close the Backend when done.
func Open(ctx context.Context, url string, maxConns int32) (*Backend, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("rate limit pool: %w", err)
	}
	cfg.ConnConfig.RuntimeParams["synchronous_commit"] = "off"
	cfg.ConnConfig.RuntimeParams["application_name"] = "cobranca-limits"
	if maxConns > 0 {
		cfg.MaxConns = maxConns
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("rate limit pool: %w", err)
	}
	return &Backend{pool: pool, owned: true}, nil
}

// Close closes the pool Open made; a Backend from New leaves its pool alone.
func (b *Backend) Close() {
	if b.owned {
		b.pool.Close()
	}
}

// takeSQL is one GCRA decision, atomic under the row lock ON CONFLICT takes.
// $1 is the key, $2 the interval T and $3 the tolerance Burst×T, both in
// microseconds; the TAT is microseconds since the epoch on the database's
// clock, the one clock every replica shares.
//
// The insert of a new key (TAT = now + T) is always admitted. For a known
// key, the update runs only when max(tat, now) + T − now ≤ τ; when it does
// not, nothing is written (a flood of refusals costs no WAL) and RETURNING is
// empty, so the outer query reads the unchanged TAT for Retry-After. That
// read sees the statement's snapshot: under a concurrent writer it may be a
// little stale, which only shortens the advised wait; a key inserted by a
// transaction our snapshot cannot see reads NULL, handled by limits.Decided.
const takeSQL = `
WITH clock AS (
    SELECT (extract(epoch FROM statement_timestamp()) * 1000000)::bigint AS now_us
), taken AS (
    INSERT INTO rate_limit AS r (key, tat)
    SELECT $1, now_us + $2 FROM clock
    ON CONFLICT (key) DO UPDATE
        SET tat = greatest(r.tat, excluded.tat - $2) + $2
        WHERE greatest(r.tat, excluded.tat - $2) + $2 - (excluded.tat - $2) <= $3
    RETURNING r.tat
)
SELECT clock.now_us,
       (SELECT tat FROM taken),
       CASE WHEN NOT EXISTS (SELECT FROM taken) THEN (SELECT tat FROM rate_limit WHERE key = $1) END
FROM clock`

// Take decides one request for key under lim.
func (b *Backend) Take(ctx context.Context, key string, lim limits.Limit) (limits.Decision, error) {
	t := lim.Interval().Microseconds()
	var now int64
	var taken, current *int64
	if err := b.pool.QueryRow(ctx, takeSQL, key, t, lim.Burst*t).Scan(&now, &taken, &current); err != nil {
		return limits.Decision{}, fmt.Errorf("rate limit: %w", err)
	}
	if taken != nil {
		return limits.Decided(lim, true, time.UnixMicro(now), time.UnixMicro(*taken)), nil
	}
	var tat time.Time
	if current != nil {
		tat = time.UnixMicro(*current)
	}
	return limits.Decided(lim, false, time.UnixMicro(now), tat), nil
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
