package auditlog

import (
	"bytes"
	"cmp"
	"context"
	"crypto/rand"
	"database/sql"
	"errors"
	"io/fs"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" database/sql driver, for goose
	"github.com/pressly/goose/v3"

	"github.com/cobranca/cobranca/internal/store"
	"github.com/cobranca/cobranca/internal/store/storetest"
	"github.com/cobranca/cobranca/migrations"
)

// insertRaw inserts an event row with the given MAC columns as someone holding only database
// credentials would: plausible content, any nonce and MAC they like.
func insertRaw(ctx context.Context, q store.Querier, d store.Dialect, requestID string, serverUS int64, nonce, mac []byte) error {
	stmt := `INSERT INTO audit_event (event, tool, risk, outcome, request_id, server_time, nonce, mac) VALUES ('collections.portfolio.analyzed', 'collections.analyze_portfolio', 'low', 'allowed', $1, $2, $3, $4)`
	if d == store.SQLite {
		stmt = `INSERT INTO audit_event (event, tool, risk, outcome, request_id, server_time, nonce, mac, occurred_at) VALUES ('collections.portfolio.analyzed', 'collections.analyze_portfolio', 'low', 'allowed', $1, $2, $3, $4, 1)`
	}
	_, err := q.Exec(ctx, stmt, requestID, serverUS, nonce, mac)
	return err
}

func randomBytes(n int) []byte {
	b := make([]byte, n)
	rand.Read(b)
	return b
}

// dropMACGuard removes what refuses a MAC-less event, as the owner could.
func dropMACGuard(d store.Dialect) string {
	if d == store.SQLite {
		return "DROP TRIGGER audit_event_authenticated"
	}
	return "DROP TRIGGER audit_event_check ON audit_event"
}

// TestMACDetectsForgery: every event carries a MAC under a key derived from the audit key;
// Verify names the first event the server did not write, even where the hash chain holds.
func TestMACDetectsForgery(t *testing.T) {
	tests := []struct {
		name    string
		do      func(t *testing.T, l *Log, db store.DB)
		wantSeq int64
		kind    Kind // default Forged
		detail  string
	}{
		{
			name: "INSERT a row with a made-up MAC",
			do: func(t *testing.T, l *Log, db store.DB) {
				if err := insertRaw(context.Background(), db, db.Dialect(), "forged", fixedTime.UnixMicro(), randomBytes(nonceLen), randomBytes(macLen)); err != nil {
					t.Fatal(err)
				}
			},
			wantSeq: 11, detail: "MAC mismatch: not written by this server",
		},
		{
			name: "UPDATE a MAC to another event's",
			do: func(t *testing.T, l *Log, db store.DB) {
				tamper(t, db, "UPDATE audit_event SET mac = (SELECT e.mac FROM audit_event e JOIN audit_seal s ON s.event_id = e.id WHERE s.seq = 3) WHERE id = (SELECT event_id FROM audit_seal WHERE seq = 4)")
			},
			wantSeq: 4, detail: "MAC mismatch",
		},
		{
			name: "UPDATE the server time, which the chain does not cover",
			do: func(t *testing.T, l *Log, db store.DB) {
				tamper(t, db, "UPDATE audit_event SET server_time = server_time - 3600000000 WHERE id = (SELECT event_id FROM audit_seal WHERE seq = 6)")
			},
			wantSeq: 6, detail: "MAC mismatch",
		},
		{
			name: "UPDATE content and rebuild the chain",
			do: func(t *testing.T, l *Log, db store.DB) {
				tamper(t, db,
					"UPDATE audit_event SET outcome = 'allowed' WHERE id = (SELECT event_id FROM audit_seal WHERE seq = 2)",
					"DELETE FROM audit_seal")
			},
			wantSeq: 2, detail: "MAC mismatch",
		},
		{
			name: "remove the guard and a MAC",
			do: func(t *testing.T, l *Log, db store.DB) {
				tamper(t, db, dropMACGuard(db.Dialect()),
					"UPDATE audit_event SET mac = NULL, nonce = NULL WHERE id = (SELECT event_id FROM audit_seal WHERE seq = 5)")
			},
			wantSeq: 5, detail: "no MAC, after seq 1 had one",
		},
		{
			name: "verify under another key",
			do: func(t *testing.T, l *Log, db store.DB) {
				*l = *mustLog(t, db, bytes.Repeat([]byte("x"), 32))
			},
			wantSeq: 1, kind: KeyMissing, detail: "sealed under key " + KeyID(testKey) + ", which is not among the keys given",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			eachStore(t, func(t *testing.T, f storetest.Fixture, db store.DB) {
				ctx := context.Background()
				l := verifiedLog(t, db, 10)
				tt.do(t, l, db)
				rep, err := l.Verify(ctx)
				if err != nil {
					t.Fatal(err)
				}
				kind := cmp.Or(tt.kind, Forged)
				if rep.Problem == nil || rep.Problem.Seq != tt.wantSeq || rep.Problem.Kind != kind || !strings.Contains(rep.Problem.Detail, tt.detail) {
					t.Fatalf("Verify() = %v, want seq %d: %s: %s", rep, tt.wantSeq, kind, tt.detail)
				}
				if rep.Count != tt.wantSeq-1 {
					t.Errorf("Verify().Count = %d, want %d", rep.Count, tt.wantSeq-1)
				}
				if want := "not written by this server"; kind == Forged && !strings.Contains(rep.String(), want) {
					t.Errorf("Report.String() = %q, want it to say %q", rep, want)
				}
			})
		})
	}
}

// verifiedLog is a log of n legitimate events that verify, MACs included.
func verifiedLog(t *testing.T, db store.DB, n int) *Log {
	t.Helper()
	l := newLog(t, db)
	appendN(t, l, n)
	rep, err := l.Verify(context.Background())
	if err != nil || rep.Problem != nil || rep.Count != int64(n) || !rep.MACsChecked || rep.Unauthenticated != 0 {
		t.Fatalf("Verify() of legitimate events = %+v, %v; want %d authenticated events", rep, err, n)
	}
	return l
}

func mustLog(t *testing.T, db store.DB, key []byte) *Log {
	t.Helper()
	l, err := New(db, key, Options{Now: func() time.Time { return fixedTime }})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// TestMACGuards: the database refuses an event without a MAC and a copy of an authentic event;
// a Log without the key verifies the chain only and says so, and cannot write.
func TestMACGuards(t *testing.T) {
	eachStore(t, func(t *testing.T, f storetest.Fixture, db store.DB) {
		ctx := context.Background()
		l := newLog(t, db)
		appendN(t, l, 3)
		if err := insertRaw(ctx, db, db.Dialect(), "no-mac", fixedTime.UnixMicro(), nil, nil); err == nil {
			t.Error("INSERT of an event without a MAC succeeded")
		}
		var serverUS int64
		var nonce, mac []byte
		if err := db.QueryRow(ctx, "SELECT server_time, nonce, mac FROM audit_event WHERE request_id = 'req-000001'").Scan(&serverUS, &nonce, &mac); err != nil {
			t.Fatal(err)
		}
		if err := insertRaw(ctx, db, db.Dialect(), "req-000001", serverUS, nonce, mac); err == nil {
			t.Error("INSERT of a copy of an authentic event (its nonce and MAC) succeeded")
		}

		keyless := mustLog(t, db, nil)
		rep, err := keyless.Verify(ctx)
		if err != nil || rep.Problem != nil || rep.Count != 3 || rep.MACsChecked {
			t.Errorf("Verify() without the key = %+v, %v; want the chain of 3 verified, MACs not checked", rep, err)
		}
		if want := "MACs NOT checked"; !strings.Contains(rep.String(), want) {
			t.Errorf("Report.String() without the key = %q, want it to say %q", rep, want)
		}
		if err := keyless.Record(ctx, sampleEvent(1)); !errors.Is(err, ErrNoKey) {
			t.Errorf("Record() without the key = %v, want ErrNoKey", err)
		}
		if _, err := New(db, []byte("short"), Options{}); err == nil {
			t.Error("New() with a 5-byte key succeeded")
		}
	})
}

// TestMACForgedByAppRole: the serving role can INSERT events, so it can forge one with any
// content; Verify, run as that same role, reports it at its sequence number.
func TestMACForgedByAppRole(t *testing.T) {
	ctx := context.Background()
	app := appRoleDB(t)
	l := newLog(t, app)
	appendN(t, l, 3)
	if err := insertRaw(ctx, app, store.Postgres, "forged", time.Now().UnixMicro(), randomBytes(nonceLen), randomBytes(macLen)); err != nil {
		t.Fatalf("forged INSERT as the app role: %v (the role may insert events: that is the threat)", err)
	}
	appendN(t, l, 2)
	rep, err := l.Verify(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Problem == nil || rep.Problem.Seq != 4 || rep.Problem.Kind != Forged || rep.Count != 3 {
		t.Fatalf("Verify() = %v, want seq 4: forged after 3 verified", rep)
	}
	var pe *pgconn.PgError
	if err := insertRaw(ctx, app, store.Postgres, "no-mac", time.Now().UnixMicro(), nil, nil); !errors.As(err, &pe) || pe.Code != "23514" {
		t.Errorf("MAC-less INSERT as the app role = %v, want a check violation", err)
	}
}

// TestEventRules: on PostgreSQL the trigger of migration 00240 refuses, for the serving role,
// every row the CHECK constraints it replaced refused, each with SQLSTATE 23514 naming that
// constraint, and lets through the row they let through (a NULL key id: a replica of before
// key ids).
func TestEventRules(t *testing.T) {
	ctx := context.Background()
	app := appRoleDB(t)
	const ins = `INSERT INTO audit_event (event, outcome, details, key_id, server_time, nonce, mac) VALUES ($1, $2, $3::text::jsonb, $4, $5, $6, $7)`
	type row struct {
		event, outcome, details string
		keyID                   any
		serverTime              any
		nonce, mac              []byte
	}
	good := func(change func(r *row)) row {
		r := row{"collections.portfolio.analyzed", "allowed", "{}", "0123456789abcdef", int64(1), randomBytes(nonceLen), randomBytes(macLen)}
		change(&r)
		return r
	}
	for _, tc := range []struct {
		name, constraint string // "" when the row is accepted
		r                row
	}{
		{"whole", "", good(func(*row) {})},
		{"no key id", "", good(func(r *row) { r.keyID = nil })},
		{"no server time", "audit_event_authenticated", good(func(r *row) { r.serverTime = nil })},
		{"no nonce", "audit_event_authenticated", good(func(r *row) { r.nonce = nil })},
		{"short nonce", "audit_event_authenticated", good(func(r *row) { r.nonce = randomBytes(nonceLen - 1) })},
		{"no MAC", "audit_event_authenticated", good(func(r *row) { r.mac = nil })},
		{"long MAC", "audit_event_authenticated", good(func(r *row) { r.mac = randomBytes(macLen + 1) })},
		{"empty event", "audit_event_event_check", good(func(r *row) { r.event = "" })},
		{"empty outcome", "audit_event_outcome_check", good(func(r *row) { r.outcome = "" })},
		{"details not an object", "audit_event_details_check", good(func(r *row) { r.details = "[]" })},
		{"key id not hex", "audit_event_key_id_check", good(func(r *row) { r.keyID = "0123456789ABCDEF" })},
		{"key id too short", "audit_event_key_id_check", good(func(r *row) { r.keyID = "0123" })},
	} {
		_, err := app.Exec(ctx, ins, tc.r.event, tc.r.outcome, tc.r.details, tc.r.keyID, tc.r.serverTime, tc.r.nonce, tc.r.mac)
		var pe *pgconn.PgError
		switch {
		case tc.constraint == "" && err != nil:
			t.Errorf("%s: INSERT = %v, want it accepted", tc.name, err)
		case tc.constraint != "" && (!errors.As(err, &pe) || pe.Code != "23514" || pe.ConstraintName != tc.constraint):
			t.Errorf("%s: INSERT = %v, want SQLSTATE 23514 naming %s", tc.name, err, tc.constraint)
		}
	}
}

// TestEventsBeforeMACs: events written before migration 00020 have no MAC. Verify reports
// them as unauthenticated and does not fail; events written after it are authenticated.
func TestEventsBeforeMACs(t *testing.T) {
	for _, f := range storetest.Fixtures(pg) {
		t.Run(string(f.Dialect), func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			where := f.NewDatabase(t)
			// Migrate to the version before MACs and write events as that version did.
			driver, dsn, gd, fsys := "pgx", where, goose.DialectPostgres, migrations.Postgres()
			old := `INSERT INTO audit_event (event, outcome) VALUES ('collections.portfolio.analyzed', 'allowed')`
			if f.Dialect == store.SQLite {
				driver, dsn, gd, fsys = "sqlite", "file:"+where, goose.DialectSQLite3, migrations.SQLite()
				old = `INSERT INTO audit_event (event, outcome, occurred_at) VALUES ('collections.portfolio.analyzed', 'allowed', 1)`
			}
			sqlDB, err := sql.Open(driver, dsn)
			if err != nil {
				t.Fatal(err)
			}
			before := fstest.MapFS{}
			entries, _ := fs.ReadDir(fsys, ".")
			for _, e := range entries {
				if e.Name() < "00020" {
					b, _ := fs.ReadFile(fsys, e.Name())
					before[e.Name()] = &fstest.MapFile{Data: b}
				}
			}
			p, err := goose.NewProvider(gd, sqlDB, before, goose.WithDisableGlobalRegistry(true))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := p.Up(ctx); err != nil {
				t.Fatal(err)
			}
			for range 2 {
				if _, err := sqlDB.ExecContext(ctx, old); err != nil {
					t.Fatal(err)
				}
			}
			sqlDB.Close()

			db := f.Open(t, where)
			if _, err := db.Migrate(ctx); err != nil {
				t.Fatalf("Migrate over events without MACs: %v", err)
			}
			l := newLog(t, db)
			appendN(t, l, 3)
			rep, err := l.Verify(ctx)
			if err != nil || rep.Problem != nil || rep.Count != 5 || rep.Unauthenticated != 2 || !rep.MACsChecked {
				t.Fatalf("Verify() = %+v, %v; want OK: 5 events, 2 unauthenticated", rep, err)
			}
			if want := ", 2 unauthenticated (written before MACs)"; !strings.Contains(rep.String(), want) {
				t.Errorf("Report.String() = %q, want it to say %q", rep, want)
			}
		})
	}
}
