// Package storetest runs tests against both store implementations: real SQLite files and
// real PostgreSQL databases (from internal/pgtest).
package storetest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/cobranca/cobranca/internal/pgtest"
	"github.com/cobranca/cobranca/internal/store"
	"github.com/cobranca/cobranca/internal/store/postgres"
	"github.com/cobranca/cobranca/internal/store/sqlite"
	"github.com/cobranca/cobranca/migrations"
)

// Fixture makes databases of one dialect.
type Fixture struct {
	Dialect store.Dialect
	// NewDatabase makes a fresh, empty database and returns where it is (a URL or a path).
	NewDatabase func(t testing.TB) string
	// Open opens a new handle on the database at where, closed when the test ends.
	Open func(t testing.TB, where string) store.DB
	pg   *pgtest.Cluster // PostgreSQL's, for Serving
}

// Fixtures returns a Fixture per dialect: SQLite, then PostgreSQL on pg.
func Fixtures(pg *pgtest.Cluster) []Fixture {
	return []Fixture{
		{
			Dialect:     store.SQLite,
			NewDatabase: func(t testing.TB) string { return filepath.Join(t.TempDir(), sqlite.FileName) },
			Open:        openSQLite,
		},
		{
			Dialect:     store.Postgres,
			pg:          pg,
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

// Migrated opens a fresh, migrated database (on PostgreSQL, a copy of MigratedPostgres's
// template).
func (f Fixture) Migrated(t testing.TB) store.DB {
	t.Helper()
	if f.pg != nil {
		return f.Open(t, MigratedPostgres(t, f.pg))
	}
	return migratedSQLite(t, f.NewDatabase(t), f.Open)
}

// migratedSQLite writes a copy of the migrated SQLite template at path, opens it with open and
// runs Migrate (which finds nothing to do): the cost of migrating once per test binary, not per
// test, while a test still sees what Migrate leaves.
func migratedSQLite(t testing.TB, path string, open func(t testing.TB, where string) store.DB) store.DB {
	t.Helper()
	tpl, err := sqliteTemplate()
	if err != nil {
		t.Fatalf("the migrated SQLite template: %v", err)
	}
	// Chmod as well: WriteFile's mode is what the umask leaves of 0600, as sqlite.Open's is not.
	if err := errors.Join(os.WriteFile(path, tpl, 0o600), os.Chmod(path, 0o600)); err != nil {
		t.Fatal(err)
	}
	db := open(t, path)
	if _, err := db.Migrate(context.Background()); err != nil {
		t.Fatalf("Migrate: %v", err)
	}
	return db
}

// sqliteTemplate is the file of a SQLite database migrated once per test binary, read after
// Close has folded the write-ahead log into it.
var sqliteTemplate = sync.OnceValues(func() ([]byte, error) {
	dir, err := os.MkdirTemp("", "storetest-sqlite-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	ctx := context.Background()
	path := filepath.Join(dir, sqlite.FileName)
	db, err := sqlite.Open(ctx, path, quiet())
	if err != nil {
		return nil, err
	}
	if _, err := db.Migrate(ctx); err != nil {
		db.Close()
		return nil, err
	}
	if err := db.Close(); err != nil {
		return nil, err
	}
	for _, side := range []string{"-wal", "-shm"} {
		if _, err := os.Stat(path + side); err == nil {
			return nil, fmt.Errorf("%s%s left after Close: the file alone is not the database", sqlite.FileName, side)
		}
	}
	return os.ReadFile(path)
})

// MigratedPostgres returns the superuser URL of a fresh PostgreSQL database on pg, migrated
// (River's migrations and ours) with the serving role cobranca_app granted what they grant
// it: a copy of a template migrated once per server, not a migration per test.
func MigratedPostgres(t testing.TB, pg *pgtest.Cluster) string {
	t.Helper()
	return pg.Template(t, migratedTemplate(), func(ctx context.Context, url string) error {
		db, err := postgres.Open(ctx, url, quiet())
		if err != nil {
			return err
		}
		defer db.Close()
		// The migrations grant cobranca_app what it needs when the role exists.
		if _, err := db.Exec(ctx, createAppRole); err != nil {
			return err
		}
		_, err = db.Migrate(ctx)
		return err
	})
}

const createAppRole = `DO $$ BEGIN CREATE ROLE cobranca_app NOLOGIN;
EXCEPTION WHEN duplicate_object OR unique_violation THEN NULL; END $$`

// migratedTemplate names the migrated template after what makes it: our PostgreSQL migrations
// (their names and contents) and River's version, so that a changed migration gets a template
// of its own on a server that outlives a run.
var migratedTemplate = sync.OnceValue(func() string {
	h := sha256.New()
	err := fs.WalkDir(migrations.Postgres(), ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(migrations.Postgres(), path)
		h.Write([]byte(path + "\x00"))
		h.Write(b)
		return err
	})
	if err != nil {
		panic("storetest: reading the migrations: " + err.Error())
	}
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, m := range info.Deps {
			if strings.HasPrefix(m.Path, "github.com/riverqueue/") {
				h.Write([]byte(m.Path + "@" + m.Version + "\x00"))
			}
		}
	}
	return "migrated_" + hex.EncodeToString(h.Sum(nil))[:16]
})

// Serving opens a fresh, migrated database as the server works on it: on PostgreSQL as a
// member of the serving role (AppRole), so that a test fails where a grant is missing; on
// SQLite, which has no roles, the file itself.
func (f Fixture) Serving(t testing.TB) store.DB {
	t.Helper()
	if f.pg != nil {
		return AppRole(t, f.pg)
	}
	return f.Migrated(t)
}

// Each runs fn, in parallel subtests named after the dialects, on a fresh database of each:
// SQLite, and PostgreSQL on pg as the serving role (Serving).
func Each(t *testing.T, pg *pgtest.Cluster, fn func(t *testing.T, db store.DB)) {
	t.Helper()
	for _, f := range Fixtures(pg) {
		t.Run(string(f.Dialect), func(t *testing.T) {
			t.Parallel()
			fn(t, f.Serving(t))
		})
	}
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
	ownerURL := MigratedPostgres(t, pg) // creates cobranca_app too
	login := "cobranca_test_app_" + pgtest.RandomName()
	password := pgtest.RandomName()
	pg.Exec(t, "CREATE ROLE "+login+" LOGIN PASSWORD '"+password+"' IN ROLE cobranca_app")
	t.Cleanup(func() { pg.Exec(t, "DROP ROLE IF EXISTS "+login) })

	owner, err := postgres.Open(ctx, ownerURL, quiet())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { owner.Close() })
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
	return migratedSQLite(t, filepath.Join(t.TempDir(), sqlite.FileName), openSQLite).(*sqlite.DB)
}

// openSQLite opens the SQLite database at where, closed when the test ends.
func openSQLite(t testing.TB, where string) store.DB {
	t.Helper()
	db, err := sqlite.Open(context.Background(), where, quiet())
	if err != nil {
		t.Fatalf("sqlite.Open: %v", err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func quiet() *slog.Logger { return slog.New(slog.DiscardHandler) }

// Count returns how many rows table holds (a constant name: it is written into the query).
func Count(t testing.TB, q store.Querier, table string) int64 {
	t.Helper()
	var n int64
	if err := q.QueryRow(context.Background(), `SELECT count(*) FROM `+table).Scan(&n); err != nil {
		t.Fatalf("count %s: %v", table, err)
	}
	return n
}

// Yardstick is the cheapest transactional write on a database, against which the benchmarks
// of writes through the store are quoted. On PostgreSQL: BEGIN, a one-row INSERT, COMMIT, three
// round trips on the pgx pool directly, whatever store.DB.InTx does. On SQLite, which has no
// round trips: the same three statements through store.DB.InTx (BEGIN IMMEDIATE on the one
// write connection), as every write of the store runs.
type Yardstick struct {
	pool *pgxpool.Pool // PostgreSQL's; nil on SQLite
	db   store.DB
}

// NewYardstick creates in db the table the yardstick writes.
func NewYardstick(tb testing.TB, db store.DB) *Yardstick {
	tb.Helper()
	y := &Yardstick{db: db}
	ddl := `CREATE TABLE yardstick (id INTEGER PRIMARY KEY, note TEXT NOT NULL)`
	if pg, ok := db.(*postgres.DB); ok {
		y.pool = pg.Pool()
		ddl = `CREATE TABLE yardstick (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, note text NOT NULL)`
	}
	if _, err := db.Exec(context.Background(), ddl); err != nil {
		tb.Fatal(err)
	}
	return y
}

const yardstickInsert = `INSERT INTO yardstick (note) VALUES ($1)`

// Insert runs one yardstick transaction. mark, when not nil, is called after BEGIN and after
// the INSERT, for timing each step.
func (y *Yardstick) Insert(ctx context.Context, mark func()) error {
	if y.pool == nil {
		return y.db.InTx(ctx, func(ctx context.Context, tx store.Tx) error {
			step(mark)
			_, err := tx.Exec(ctx, yardstickInsert, "one row")
			step(mark)
			return err
		})
	}
	tx, err := y.pool.Begin(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback(ctx)
	step(mark)
	if _, err := tx.Exec(ctx, yardstickInsert, "one row"); err != nil {
		return err
	}
	step(mark)
	return tx.Commit(ctx)
}

func step(mark func()) {
	if mark != nil {
		mark()
	}
}

// Parallel runs call with b.RunParallel on 4 goroutines per GOMAXPROCS (over pgxpool's
// default of 4 connections on 2 cores, 4 transactions in flight) and reports calls/s.
func Parallel(b *testing.B, call func() error) {
	b.ReportAllocs()
	b.SetParallelism(4)
	b.ResetTimer()
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if err := call(); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "calls/s")
}
