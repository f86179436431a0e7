package approval

import (
	"context"
	"fmt"
	"time"

	"github.com/cobranca/cobranca/internal/store"
)

// Cursor is a place in the list of pending actions (ListPending): the last one read, by its
// creation time and id. The zero Cursor is the list's start.
type Cursor struct {
	Created time.Time
	ID      string
}

// ListPending returns the actions waiting for a decision now (pending, not expired), oldest
// first, after c, at most limit: the approvers' inbox, a page at a time. It reads the index
// of live pending actions (migration 00160), so its cost is the number waiting.
func (s *Store) ListPending(ctx context.Context, q store.Querier, c Cursor, limit int) ([]*Action, error) {
	rows, err := q.Query(ctx, `SELECT `+columns+` FROM approval
WHERE state = 'pending' AND expires_at > $1 AND (created_at > $2 OR created_at = $2 AND id > $3)
ORDER BY created_at, id LIMIT $4`, micros(s.now()), micros(c.Created), c.ID, limit)
	if err != nil {
		return nil, fmt.Errorf("approval: list pending: %w", err)
	}
	return s.collect(rows)
}

// ListDecided returns the actions asked for since and decided (approved, rejected or
// executed), the latest decision first, at most limit: the inbox's "recently decided". It
// reads the approvals created since (the created_at index), so since bounds its cost.
func (s *Store) ListDecided(ctx context.Context, q store.Querier, since time.Time, limit int) ([]*Action, error) {
	rows, err := q.Query(ctx, `SELECT `+columns+` FROM approval
WHERE created_at >= $1 AND state IN ('approved', 'rejected', 'executed')
ORDER BY decided_at DESC, id DESC LIMIT $2`, micros(since), limit)
	if err != nil {
		return nil, fmt.Errorf("approval: list decided: %w", err)
	}
	return s.collect(rows)
}

func (s *Store) collect(rows store.Rows) ([]*Action, error) {
	defer rows.Close()
	var out []*Action
	for rows.Next() {
		a, err := s.scan(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, a)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("approval: list: %w", err)
	}
	return out, nil
}
