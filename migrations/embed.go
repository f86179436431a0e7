// Package migrations holds the SQL schema of cobranca, one folder per dialect, embedded in the
// binary and applied with goose (see internal/store).
//
// Files are named NNNNN_name.sql and numbered in one sequence shared by both dialects: a change
// that needs a table adds the same version to migrations/postgres and migrations/sqlite.
//
// On PostgreSQL the tables belong to the owner role that runs migrations. Every migration that
// creates a table also grants the serving role, cobranca_app, what serving needs and no more,
// when that role exists (see 00001_audit_log.sql for the pattern).
package migrations

import (
	"embed"
	"io/fs"
)

//go:embed postgres/*.sql sqlite/*.sql
var files embed.FS

// Postgres returns the PostgreSQL migrations, at the root of the returned FS.
func Postgres() fs.FS { return sub("postgres") }

// SQLite returns the SQLite migrations, at the root of the returned FS.
func SQLite() fs.FS { return sub("sqlite") }

func sub(dir string) fs.FS {
	f, err := fs.Sub(files, dir)
	if err != nil {
		// fs.Sub fails only for an invalid path, and dir is a constant.
		panic(err)
	}
	return f
}
