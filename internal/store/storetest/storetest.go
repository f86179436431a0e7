// Package storetest runs tests against both store implementations: real SQLite files and
// real PostgreSQL databases (from internal/pgtest).
package storetest

import (
	"context"
	"log/slog"
	"path/filepath"
	"testing"

	"github.com/cobranca/cobranca/internal/pgtest"
	"github.com/cobranca/cobranca/internal/store"
	"github.com/cobranca/cobranca/internal/store/postgres"
	"github.com/cobranca/cobranca/internal/store/sqlite"
)

// Fixture makes databases of one dialect.
type Fixture struct {
	Dialect store.Dialect
	// NewDatabase makes a fresh, empty database and returns where it is (a URL or a path).
	NewDatabase func(t testing.TB) string
	// Open opens a new handle on the database at where, closed when the test ends.
	Open func(t testing.TB, where string) store.DB
}

// Fixtures returns a Fixture per dialect: SQLite, then PostgreSQL on pg.
func Fixtures(pg *pgtest.Cluster) []Fixture {
	return []Fixture{
		{
			Dialect:     store.SQLite,
			NewDatabase: func(t testing.TB) string { return filepath.Join(t.TempDir(), sqlite.FileName) },
			Open: func(t testing.TB, where string) store.DB {
				t.Helper()
				db, err := sqlite.Open(context.Background(), where, quiet())
				if err != nil {
					t.Fatalf("sqlite.Open: %v", err)
				}
				t.Cleanup(func() { db.Close() })
				return db
			},
		},
		{
			Dialect:     store.Postgres,
			NewDatabase: pg.Database,
			Open: func(t testing.TB, where string) store.DB {
				t.Helper()
				db, err := postgres.Open(context.Background(), where, quiet())
				if err != nil {
					t.Fatalf("postgres.Open: %v", err)
				}
				t.Cleanup(func() { db.Close() })
				return db
			},
		},
	}
}

// Migrated opens a fresh, migrated database.
func (f Fixture) Migrated(t testing.TB) store.DB {
	t.Helper()
	db := f.Open(t, f.NewDatabase(t))
	if _, err := db.Migrate(context.Background()); err != nil {
		t.Fatalf("Migrate: %v", err)
	}
	return db
}

// AppRole returns a fresh PostgreSQL database on pg, migrated by its owner (the superuser) and
// opened as a new login role that is a member of cobranca_app, the serving role: it can do
// exactly what the migrations grant. Closed, and the role dropped, when the test ends.
func AppRole(t testing.TB, pg *pgtest.Cluster) *postgres.DB {
	t.Helper()
	app, _ := AppRoleAndOwner(t, pg)
	return app
}

// AppRoleAndOwner is AppRole, with a handle on the same database as its owner (the
// superuser): for a test that changes what the serving role may do.
func AppRoleAndOwner(t testing.TB, pg *pgtest.Cluster) (app, owner *postgres.DB) {
	t.Helper()
	ctx := context.Background()
	pg.Exec(t, `DO $$ BEGIN CREATE ROLE cobranca_app NOLOGIN;
EXCEPTION WHEN duplicate_object OR unique_violation THEN NULL; END $$`)
	login := "cobranca_test_app_" + pgtest.RandomName()
	password := pgtest.RandomName()
	pg.Exec(t, "CREATE ROLE "+login+" LOGIN PASSWORD '"+password+"' IN ROLE cobranca_app")
	t.Cleanup(func() { pg.Exec(t, "DROP ROLE IF EXISTS "+login) })

	ownerURL := pg.Database(t)
	owner, err := postgres.Open(ctx, ownerURL, quiet())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { owner.Close() })
	if _, err := owner.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	app, err = postgres.Open(ctx, pgtest.WithUser(t, ownerURL, login, password), quiet())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { app.Close() })
	t.Cleanup(func() { owner.Pool().Exec(ctx, "DROP OWNED BY "+login) })
	return app, owner
}

// SQLite opens a fresh, migrated SQLite database in the test's temporary
// directory, closed when the test ends.
func SQLite(t testing.TB) *sqlite.DB {
	t.Helper()
	ctx := context.Background()
	db, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), sqlite.FileName), quiet())
	if err != nil {
		t.Fatalf("sqlite.Open: %v", err)
	}
	t.Cleanup(func() { db.Close() })
	if _, err := db.Migrate(ctx); err != nil {
		t.Fatalf("Migrate: %v", err)
	}
	return db
}

func quiet() *slog.Logger { return slog.New(slog.DiscardHandler) }
