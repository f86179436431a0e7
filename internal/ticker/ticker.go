// Package ticker runs background work on a schedule: the sweepers and reapers that keep
// cobranca's tables and memory tidy, each stopped by its context.
package ticker

import (
	"context"
	"time"
)

// Run calls fn every interval, the first time one interval after it starts, until ctx ends,
// and returns promptly then (a call of fn in progress finishes first; fn should watch ctx).
func Run(ctx context.Context, interval time.Duration, fn func(ctx context.Context)) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			fn(ctx)
		}
	}
}
