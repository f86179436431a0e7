package auditlog

import (
	"context"
	"fmt"
	"time"
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
	h, err := l.head(ctx, l.db)
	if err != nil {
		return Lag{}, fmt.Errorf("audit lag: %w", err)
	}
	var n, oldestUS int64
	if err := l.db.QueryRow(ctx, l.q.unsealed, l.after(h, limit)...).Scan(&n, &oldestUS); err != nil {
		return Lag{}, fmt.Errorf("audit lag: %w", err)
	}
	lag := Lag{Unsealed: n}
	if n > 0 {
		lag.Oldest = time.UnixMicro(oldestUS)
	}
	return lag, nil
}
