//go:build !unix

package sqlite

import "context"

// lockFile is a no-op where flock is not available: run one migrating process at a time.
func (db *DB) lockFile(context.Context) (func(), error) { return func() {}, nil }
