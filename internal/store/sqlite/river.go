//go:build !386 && !arm && !mips && !mipsle

package sqlite

import (
	"context"

	"github.com/riverqueue/river/riverdriver/riversqlite"

	"github.com/cobranca/cobranca/internal/store"
)

// RiverDriver returns River's SQLite driver over the write connection (River claims and
// updates jobs: it writes), for the job queue (internal/outbox).
func (db *DB) RiverDriver() *riversqlite.Driver { return riversqlite.New(db.write) }

// migrateRiver applies River's own migrations (its river_* tables). The caller holds the
// migration lock file.
func (db *DB) migrateRiver(ctx context.Context) error {
	return store.MigrateRiver(ctx, db.RiverDriver())
}

// riverCurrent returns store.ErrPendingMigrations when one of River's migrations is not
// applied.
func (db *DB) riverCurrent(ctx context.Context) error {
	return store.RiverCurrent(ctx, riversqlite.New(db.read))
}
