package auditlog

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/cobranca/cobranca/internal/store"
)

// Lag is how far the log is ahead of its sealed chain: the committed events the sealer has
// not given a place in the hash chain yet, and when the oldest of them was written. Until an
// event is sealed, `cobranca audit verify` and a checkpoint do not cover it.
type Lag struct {
	Unsealed int64
	// Oldest is the time of the oldest unsealed event; zero when Unsealed is 0.
	Oldest time.Time
}

// Lag reads the sealing lag, counting at most limit events, so that its cost is bounded
// however far behind the sealer is: the events past the chain head's cursor (the range the
// sealer reads next, by index) that have no seal.
func (l *Log) Lag(ctx context.Context, limit int64) (Lag, error) {
	var lastID int64
	var seq int64
	var prev []byte
	err := l.db.QueryRow(ctx, head).Scan(&seq, &prev, &lastID)
	if err != nil && !errors.Is(err, store.ErrNoRows) {
		return Lag{}, fmt.Errorf("audit lag: %w", err)
	}
	var n, oldestUS int64
	if l.db.Dialect() == store.Postgres {
		xid := "0"
		if seq > 0 {
			if err := l.db.QueryRow(ctx, l.q.cursor, lastID).Scan(&xid); err != nil {
				return Lag{}, fmt.Errorf("audit lag: the chain head's event: %w", err)
			}
		}
		err = l.db.QueryRow(ctx, l.q.unsealed, xid, lastID, limit).Scan(&n, &oldestUS)
	} else {
		err = l.db.QueryRow(ctx, l.q.unsealed, lastID, limit).Scan(&n, &oldestUS)
	}
	if err != nil {
		return Lag{}, fmt.Errorf("audit lag: %w", err)
	}
	lag := Lag{Unsealed: n}
	if n > 0 {
		lag.Oldest = time.UnixMicro(oldestUS)
	}
	return lag, nil
}
