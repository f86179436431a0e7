package auditlog

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/cobranca/cobranca/internal/store"
	"github.com/cobranca/cobranca/internal/store/postgres"
	"github.com/cobranca/cobranca/internal/store/storetest"
)

// TestAppendOnlyForEveryone: the append-only triggers refuse UPDATE and DELETE (and TRUNCATE on
// PostgreSQL) even for the owner, here the superuser the tests migrate with.
func TestAppendOnlyForEveryone(t *testing.T) {
	eachStore(t, func(t *testing.T, f storetest.Fixture, db store.DB) {
		ctx := context.Background()
		appendN(t, newLog(t, db), 2)
		stmts := []string{
			"UPDATE audit_event SET outcome = 'allowed'",
			"UPDATE audit_event SET details = details",
			"DELETE FROM audit_event",
			"UPDATE audit_seal SET alg = 2",
			"DELETE FROM audit_seal",
		}
		if f.Dialect == store.Postgres {
			stmts = append(stmts, "TRUNCATE audit_event CASCADE", "TRUNCATE audit_seal")
		}
		for _, s := range stmts {
			if _, err := db.Exec(ctx, s); !refused(err) {
				t.Errorf("%s as owner: %v, want it refused by the append-only trigger", s, err)
			}
		}
		if rep, err := newLog(t, db).Verify(ctx); err != nil || rep.Problem != nil || rep.Count != 2 {
			t.Errorf("Verify() after the refused statements = %v, %v; want OK with 2", rep, err)
		}
	})
}

// TestAppRole: the serving role (a member of cobranca_app) can append, seal, verify and report
// ready, but cannot UPDATE, DELETE or TRUNCATE audit rows, nor choose an event's time or
// transaction id.
func TestAppRole(t *testing.T) {
	ctx := context.Background()
	app := appRoleDB(t)
	if err := app.Ready(ctx); err != nil {
		t.Fatalf("Ready() as the app role = %v", err)
	}
	l := newLog(t, app)
	appendN(t, l, 3)
	if rep, err := l.Verify(ctx); err != nil || rep.Problem != nil || rep.Count != 3 {
		t.Fatalf("Verify() as the app role = %v, %v; want OK with 3", rep, err)
	}
	for _, s := range []string{
		"UPDATE audit_event SET outcome = 'allowed'",
		"DELETE FROM audit_event",
		"TRUNCATE audit_event CASCADE",
		"UPDATE audit_seal SET alg = 2",
		"DELETE FROM audit_seal",
		"TRUNCATE audit_seal",
		"INSERT INTO audit_event (event, outcome, occurred_at) VALUES ('x.y', 'allowed', '2000-01-01')",
		"INSERT INTO audit_event (event, outcome, xid) VALUES ('x.y', 'allowed', '1')",
		"SET session_replication_role = replica",
		"ALTER TABLE audit_event DISABLE TRIGGER ALL",
	} {
		if _, err := app.Exec(ctx, s); !refused(err) {
			t.Errorf("%s as the app role: %v, want it refused", s, err)
		}
	}
	if rep, err := l.Verify(ctx); err != nil || rep.Problem != nil || rep.Count != 3 {
		t.Errorf("Verify() after the refused statements = %v, %v; want OK with 3", rep, err)
	}
}

// appRoleDB returns a database migrated by its owner and opened as a member of cobranca_app,
// the serving role.
func appRoleDB(t *testing.T) *postgres.DB { return storetest.AppRole(t, pg) }

// refused reports whether err is a refusal: insufficient_privilege on PostgreSQL (a missing
// grant, or the append-only trigger, which raises that code), the trigger's abort on SQLite.
func refused(err error) bool {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code == "42501"
	}
	return err != nil && strings.Contains(err.Error(), "append-only")
}
