//go:build 386 || arm || mips || mipsle

package sqlite

import "context"

// River's SQLite driver (riversqlite v0.51.2) does not compile on 32-bit platforms (a
// math.MaxInt64 constant overflows int), so a 32-bit build has no job queue on SQLite: River's
// migrations are not applied, and internal/outbox refuses to start on this store (use
// PostgreSQL there). 32-bit builds exist for the word-size tests of the parsers.

func (db *DB) migrateRiver(context.Context) error { return nil }

func (db *DB) riverCurrent(context.Context) error { return nil }
