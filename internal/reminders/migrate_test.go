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
	acrossMigration(t, "00140", func(t *testing.T, db *sql.DB, id string) {
		var due string
		if err := db.QueryRowContext(context.Background(), `SELECT earliest_due_date FROM reminder_draft WHERE id = '`+id+`'`).Scan(&due); err != nil || due != "2026-03-02" {
			t.Errorf("earliest_due_date = %q, %v; want 2026-03-02", due, err)
		}
	})
}

// TestMigrationReminderPix: after migration 00181 a draft written before it reads back as it
// was, in reais, with no HTML part and no PIX code, on both dialects.
func TestMigrationReminderPix(t *testing.T) {
	acrossMigration(t, "00181", func(t *testing.T, db *sql.DB, id string) {
		var html, currency, code, txid string
		var amount int64
		err := db.QueryRowContext(context.Background(), `SELECT html, currency, pix_code, pix_txid, pix_amount_cents FROM reminder_draft WHERE id = '`+id+`'`).
			Scan(&html, &currency, &code, &txid, &amount)
		if err != nil || html != "" || currency != "BRL" || code != "" || txid != "" || amount != 0 {
			t.Errorf("a draft from before 00181 = html %q, %s, pix %q %q %d (%v); want no HTML, BRL, no PIX code", html, currency, code, txid, amount, err)
		}
	})
}

// acrossMigration migrates a database of each dialect to the version before version, writes a
// customer and a draft of two invoices (NF-1 due 2026-05-10, NF-2 due 2026-03-02) as the schema
// then stood, migrates it to the end and has check read the draft (id).
func acrossMigration(t *testing.T, version string, check func(t *testing.T, db *sql.DB, id string)) {
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
				if name < version {
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
    total_cents, subject, body, state, created_by, created_at, updated_at` + earliestDue(version) + `)
VALUES ('` + id + `', 'c1', 'Ana', 'a@x.example', 'firm', 'en', '[{"id":"NF-1","dueDate":"2026-05-10","amountCents":1},{"id":"NF-2","dueDate":"2026-03-02","amountCents":1}]',
    ` + hashLiteral(tc.dialect) + `, 2, 2, 's', 'b', 'draft', 'ana', 1, 1` + earliestDueValue(version) + `)`,
			} {
				if _, err := db.ExecContext(ctx, q); err != nil {
					t.Fatalf("%s: %v", q, err)
				}
			}
			migrate(tc.fsys)
			check(t, db, id)
		})
	}
}

// earliestDue is the column a draft written before version names beside the first ones: its
// earliest due date, from 00140 on.
func earliestDue(version string) string {
	if version > "00140" {
		return ", earliest_due_date"
	}
	return ""
}

func earliestDueValue(version string) string {
	if version > "00140" {
		return ", '2026-03-02'"
	}
	return ""
}

// hashLiteral is 32 zero bytes in d's SQL.
func hashLiteral(d store.Dialect) string {
	if d == store.Postgres {
		return `'\x` + strings.Repeat("00", 32) + `'::bytea`
	}
	return `zeroblob(32)`
}
