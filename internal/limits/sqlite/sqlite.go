// Package sqlite keeps the rate limiter's GCRA state in the embedded SQLite
// database: one process, one file, so the clock is the process's own
// (injected, for tests).
package sqlite

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/cobranca/cobranca/internal/limits"
	"github.com/cobranca/cobranca/internal/store"
)

// DB is what the backend needs of the store: write transactions.
type DB interface {
	InTx(ctx context.Context, fn func(ctx context.Context, tx store.Tx) error) error
}

// Backend implements limits.Backend on the rate_limit table (migration 00010).
type Backend struct {
	db  DB
	now func() time.Time
}

// New returns a Backend over db, on the clock now.
func New(db DB, now func() time.Time) *Backend {
	if now == nil {
		now = time.Now
	}
	return &Backend{db: db, now: now}
}

// takeSQL is one GCRA decision: $1 the key, $2 now, $3 the interval and $4
// the tolerance (limits.Limit.Span: T and Burst×T for one unit, more for a
// cost), all in microseconds. A new key is admitted with TAT = now + t; a
// known one is advanced only when max(tat, now) + t − now ≤ τ, otherwise
// nothing is written and RETURNING is empty.
const takeSQL = `
INSERT INTO rate_limit (key, tat) VALUES ($1, $2 + $3)
ON CONFLICT (key) DO UPDATE
    SET tat = max(tat, $2) + $3
    WHERE max(tat, $2) + $3 - $2 <= $4
RETURNING tat`

// Take decides one request for key under lim, in one write transaction: the
// upsert, and on refusal the read of the unchanged TAT for Retry-After.
func (b *Backend) Take(ctx context.Context, key string, lim limits.Limit) (limits.Decision, error) {
	ds, err := b.TakeChain(ctx, []limits.Request{{Key: key, Limit: lim}})
	if err != nil {
		return limits.Decision{}, err
	}
	return ds[0], nil
}

// TakeChain decides reqs in order, stopping at the first refusal (see
// limits.Backend), in one write transaction on one clock reading.
func (b *Backend) TakeChain(ctx context.Context, reqs []limits.Request) ([]limits.Decision, error) {
	now := b.now()
	var ds []limits.Decision
	err := b.db.InTx(ctx, func(ctx context.Context, tx store.Tx) error {
		var err error
		ds, err = limits.DecideChain(reqs, func(r limits.Request) (limits.Decision, error) { return take(ctx, tx, r, now) })
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("rate limit: %w", err)
	}
	return ds, nil
}

func take(ctx context.Context, tx store.Tx, r limits.Request, now time.Time) (limits.Decision, error) {
	t, tau := r.Limit.Span(r.Cost)
	var tat int64
	err := tx.QueryRow(ctx, takeSQL, r.Key, now.UnixMicro(), t, tau).Scan(&tat)
	if err == nil {
		return limits.Decided(r.Limit, r.Cost, true, now, time.UnixMicro(tat)), nil
	}
	if !errors.Is(err, store.ErrNoRows) {
		return limits.Decision{}, err
	}
	if err := tx.QueryRow(ctx, `SELECT tat FROM rate_limit WHERE key = $1`, r.Key).Scan(&tat); err != nil {
		return limits.Decision{}, err
	}
	return limits.Decided(r.Limit, r.Cost, false, now, time.UnixMicro(tat)), nil
}

// Sweep deletes the keys whose TAT has passed: they hold a full burst, which
// is what a missing key means too.
func (b *Backend) Sweep(ctx context.Context) (int64, error) {
	var n int64
	err := b.db.InTx(ctx, func(ctx context.Context, tx store.Tx) error {
		var err error
		n, err = tx.Exec(ctx, `DELETE FROM rate_limit WHERE tat < $1`, b.now().UnixMicro())
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("rate limit sweep: %w", err)
	}
	return n, nil
}
