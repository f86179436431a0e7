package reminders_test

import (
	"context"
	"database/sql"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"

	_ "github.com/jackc/pgx/v5/stdlib"

	"github.com/cobranca/cobranca/internal/store"
	"github.com/cobranca/cobranca/internal/store/postgres"
	_ "github.com/cobranca/cobranca/internal/store/sqlite" // the sqlite driver
	"github.com/cobranca/cobranca/internal/store/storetest"
	"github.com/cobranca/cobranca/migrations"
)

// TestMigrationEarliestDue: migration 00140 gives every draft written before it its earliest
// due date, read from its invoices (bulk sends filter on it), on both dialects. The serving
// role exists, as in production, so that the migrations make their grants.
func TestMigrationEarliestDue(t *testing.T) {
	ctx := context.Background()
	storetest.AppRole(t, pg) // creates cobranca_app
	for _, tc := range []struct {
		dialect store.Dialect
		driver  string
		dsn     func() string
		fsys    fs.FS
	}{
		{store.SQLite, "sqlite", func() string { return "file:" + filepath.Join(t.TempDir(), "m.db") }, migrations.SQLite()},
		{store.Postgres, "pgx", func() string { return pg.Database(t) }, migrations.Postgres()},
	} {
		t.Run(string(tc.dialect), func(t *testing.T) {
			dsn := tc.dsn()
			db, err := sql.Open(tc.driver, dsn)
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			before := fstest.MapFS{}
			all, err := fs.Glob(tc.fsys, "*.sql")
			if err != nil {
				t.Fatal(err)
			}
			for _, name := range all {
				if name < "00140" {
					b, err := fs.ReadFile(tc.fsys, name)
					if err != nil {
						t.Fatal(err)
					}
					before[name] = &fstest.MapFile{Data: b}
				}
			}
			migrate := func(fsys fs.FS) {
				t.Helper()
				m, err := store.NewMigrator(db, tc.dialect, fsys, nil, nil)
				if err != nil {
					t.Fatal(err)
				}
				if _, err := m.Up(ctx); err != nil {
					t.Fatal(err)
				}
			}
			if tc.dialect == store.Postgres {
				// River's tables first, as postgres.DB.Migrate makes them: 00080 grants on them.
				pdb, err := postgres.Open(ctx, dsn, nil)
				if err != nil {
					t.Fatal(err)
				}
				defer pdb.Close()
				if err := store.MigrateRiver(ctx, pdb.RiverDriver()); err != nil {
					t.Fatal(err)
				}
			}
			migrate(before)
			id := "d_" + strings.Repeat("a", 26)
			for _, q := range []string{
				`INSERT INTO customer (id, name, email, email_key, contact_status, created_at, updated_at) VALUES ('c1', 'Ana', 'a@x.example', 'a@x.example', 'contactable', 1, 1)`,
				`INSERT INTO reminder_draft (id, customer_id, recipient_name, recipient_email, tone, language, invoices, invoice_set_hash, invoice_count,
    total_cents, subject, body, state, created_by, created_at, updated_at)
VALUES ('` + id + `', 'c1', 'Ana', 'a@x.example', 'firm', 'en', '[{"id":"NF-1","dueDate":"2026-05-10","amountCents":1},{"id":"NF-2","dueDate":"2026-03-02","amountCents":1}]',
    ` + hashLiteral(tc.dialect) + `, 2, 2, 's', 'b', 'draft', 'ana', 1, 1)`,
			} {
				if _, err := db.ExecContext(ctx, q); err != nil {
					t.Fatalf("%s: %v", q, err)
				}
			}
			migrate(tc.fsys)
			var due string
			if err := db.QueryRowContext(ctx, `SELECT earliest_due_date FROM reminder_draft WHERE id = '`+id+`'`).Scan(&due); err != nil || due != "2026-03-02" {
				t.Errorf("earliest_due_date = %q, %v; want 2026-03-02", due, err)
			}
		})
	}
}

// hashLiteral is 32 zero bytes in d's SQL.
func hashLiteral(d store.Dialect) string {
	if d == store.Postgres {
		return `'\x` + strings.Repeat("00", 32) + `'::bytea`
	}
	return `zeroblob(32)`
}
