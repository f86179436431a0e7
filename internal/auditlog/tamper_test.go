package auditlog

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"strconv"
	"testing"

	"github.com/cobranca/cobranca/internal/store"
	"github.com/cobranca/cobranca/internal/store/storetest"
)

// tamper runs stmts the way an attacker with full control of the database would: on
// PostgreSQL as superuser with triggers (including foreign keys) disabled, on SQLite with the
// append-only triggers dropped and foreign keys off.
func tamper(t *testing.T, db store.DB, stmts ...string) {
	t.Helper()
	ctx := context.Background()
	if db.Dialect() == store.SQLite {
		for _, s := range []string{
			"PRAGMA foreign_keys = OFF",
			"DROP TRIGGER IF EXISTS audit_event_no_update", "DROP TRIGGER IF EXISTS audit_event_no_delete",
			"DROP TRIGGER IF EXISTS audit_seal_no_update", "DROP TRIGGER IF EXISTS audit_seal_no_delete",
		} {
			if _, err := db.Exec(ctx, s); err != nil {
				t.Fatalf("%s: %v", s, err)
			}
		}
		defer db.Exec(ctx, "PRAGMA foreign_keys = ON")
	}
	err := db.InTx(ctx, func(ctx context.Context, tx store.Tx) error {
		if tx.Dialect() == store.Postgres {
			if _, err := tx.Exec(ctx, "SET LOCAL session_replication_role = replica"); err != nil {
				return err
			}
		}
		for _, s := range stmts {
			if _, err := tx.Exec(ctx, s); err != nil {
				t.Errorf("tamper %q: %v", s, err)
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("tamper: %v", err)
	}
}

func TestTamperDetected(t *testing.T) {
	tests := []struct {
		name     string
		stmts    []string
		forge    int64 // when set, insert a forged event with a valid hash at this seq first
		wantSeq  int64
		wantKind Kind
	}{
		{
			name:     "UPDATE one field",
			stmts:    []string{"UPDATE audit_event SET outcome = 'allowed' WHERE id = (SELECT event_id FROM audit_seal WHERE seq = 4)"},
			wantSeq:  4,
			wantKind: Altered,
		},
		{
			name:     "UPDATE the details",
			stmts:    []string{"UPDATE audit_event SET details = '{\"accountCount\":6,\"invoiceCount\":1}' WHERE id = (SELECT event_id FROM audit_seal WHERE seq = 7)"},
			wantSeq:  7,
			wantKind: Altered,
		},
		{
			name:     "UPDATE a hash",
			stmts:    []string{"UPDATE audit_seal SET hash = prev_hash WHERE seq = 6"},
			wantSeq:  6,
			wantKind: Altered,
		},
		{
			name: "DELETE one row and its seal",
			stmts: []string{
				"DELETE FROM audit_event WHERE id = (SELECT event_id FROM audit_seal WHERE seq = 5)",
				"DELETE FROM audit_seal WHERE seq = 5",
			},
			wantSeq:  5,
			wantKind: Missing,
		},
		{
			name:     "DELETE one event row only",
			stmts:    []string{"DELETE FROM audit_event WHERE id = (SELECT event_id FROM audit_seal WHERE seq = 5)"},
			wantSeq:  5,
			wantKind: Missing,
		},
		{
			name: "DELETE one row and renumber the rest",
			stmts: []string{
				"DELETE FROM audit_event WHERE id = (SELECT event_id FROM audit_seal WHERE seq = 5)",
				"DELETE FROM audit_seal WHERE seq = 5",
				"UPDATE audit_seal SET seq = seq + 999999 WHERE seq > 5",
				"UPDATE audit_seal SET seq = seq - 1000000 WHERE seq > 1000000",
			},
			wantSeq:  5,
			wantKind: Missing,
		},
		{
			name:     "INSERT a forged row",
			forge:    4,
			wantSeq:  4,
			wantKind: Inserted,
		},
		{
			name:     "INSERT a forged first row",
			forge:    1,
			wantSeq:  1,
			wantKind: Inserted,
		},
		{
			name: "swap two rows' contents",
			stmts: []string{
				"UPDATE audit_seal SET event_id = 0 WHERE seq = 3",
				"UPDATE audit_seal SET event_id = (SELECT id FROM audit_event WHERE request_id = 'req-000002') WHERE seq = 7",
				"UPDATE audit_seal SET event_id = (SELECT id FROM audit_event WHERE request_id = 'req-000006') WHERE seq = 3",
			},
			wantSeq:  3,
			wantKind: Reordered,
		},
		{
			name: "swap two seals",
			stmts: []string{
				"UPDATE audit_seal SET seq = 1000003 WHERE seq = 3",
				"UPDATE audit_seal SET seq = 3 WHERE seq = 7",
				"UPDATE audit_seal SET seq = 7 WHERE seq = 1000003",
			},
			wantSeq:  3,
			wantKind: Reordered,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			eachStore(t, func(t *testing.T, f storetest.Fixture, db store.DB) {
				ctx := context.Background()
				l := verifiedLog(t, db, 10)
				if tt.forge > 0 {
					forge(t, l, db, tt.forge)
				}
				tamper(t, db, tt.stmts...)
				rep, err := l.Verify(ctx)
				if err != nil {
					t.Fatal(err)
				}
				if rep.Problem == nil || rep.Problem.Seq != tt.wantSeq || rep.Problem.Kind != tt.wantKind {
					t.Errorf("Verify() = %v, want a problem at seq %d: %s", rep, tt.wantSeq, tt.wantKind)
				}
				if rep.Count != tt.wantSeq-1 {
					t.Errorf("Verify().Count = %d, want %d verified before the problem", rep.Count, tt.wantSeq-1)
				}
				// An export of the tampered chain fails offline where Verify failed.
				fileRep := verifyExport(t, exportAll(t, l), testKey)
				if p := fileRep.Problem; p == nil || p.Seq != tt.wantSeq || p.Kind != tt.wantKind || p.Line < 2 {
					t.Errorf("VerifyFile(export) = %v, want a problem at seq %d: %s, on its line", fileRep, tt.wantSeq, tt.wantKind)
				}
			})
		})
	}
}

// forge inserts an event at seq, moving the later seals up by one, with a hash that is valid
// for its content and predecessor: what a careful attacker who knows the algorithm would do.
func forge(t *testing.T, l *Log, db store.DB, seq int64) {
	t.Helper()
	ctx := context.Background()
	prev := genesis[:]
	if seq > 1 {
		if err := db.QueryRow(ctx, "SELECT hash FROM audit_seal WHERE seq = $1", seq-1).Scan(&prev); err != nil {
			t.Fatal(err)
		}
	}
	tamper(t, db,
		"UPDATE audit_seal SET seq = seq + 1000001 WHERE seq >= "+strconv.FormatInt(seq, 10),
		"UPDATE audit_seal SET seq = seq - 1000000 WHERE seq > 1000000",
	)
	ev := sampleEvent(99)
	ev.RequestID = "forged"
	ev.Outcome = Allowed
	err := db.InTx(ctx, func(ctx context.Context, tx store.Tx) error {
		if err := l.Append(ctx, tx, ev); err != nil {
			return err
		}
		var id int64
		if err := tx.QueryRow(ctx, "SELECT id FROM audit_event WHERE request_id = 'forged'").Scan(&id); err != nil {
			return err
		}
		var stored Event
		var lead int64
		if err := scanEvent(tx.QueryRow(ctx, contentByID(tx.Dialect()), id), &lead, &stored); err != nil {
			return err
		}
		h := chainHash(seq, &stored, prev)
		_, err := tx.Exec(ctx, insertSeal, seq, id, int64(hashAlg), prev, h[:])
		return err
	})
	if err != nil {
		t.Fatalf("forge: %v", err)
	}
}

func contentByID(d store.Dialect) string {
	if d == store.Postgres {
		return `SELECT e.id, (extract(epoch FROM e.occurred_at) * 1000000)::bigint, ` + columns + `, e.details::text FROM audit_event e WHERE e.id = $1`
	}
	return `SELECT e.id, e.occurred_at, ` + columns + `, e.details FROM audit_event e WHERE e.id = $1`
}

func TestCheckpointDetectsRebuiltChain(t *testing.T) {
	_, key, _ := ed25519.GenerateKey(rand.Reader)
	pub := key.Public().(ed25519.PublicKey)
	eachStore(t, func(t *testing.T, f storetest.Fixture, db store.DB) {
		ctx := context.Background()
		l := newLog(t, db)
		appendN(t, l, 10)
		doc, cp, err := l.Checkpoint(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		if cp.Seq != 10 {
			t.Fatalf("Checkpoint().Seq = %d, want 10", cp.Seq)
		}
		parsed, err := ParseCheckpoint(doc, pub)
		if err != nil {
			t.Fatalf("ParseCheckpoint: %v", err)
		}
		appendN(t, l, 5)
		if rep, err := l.Verify(ctx, parsed); err != nil || rep.Problem != nil || rep.Count != 15 {
			t.Fatalf("Verify(checkpoint) of an honest chain = %v, %v", rep, err)
		}

		// Rebuild: remove event 2, throw the seals away and let the sealer recompute them all.
		// (Altering an event instead is caught by its MAC: TestMACDetectsForgery.)
		tamper(t, db,
			"DELETE FROM audit_event WHERE id = (SELECT event_id FROM audit_seal WHERE seq = 2)",
			"DELETE FROM audit_seal",
		)
		if _, err := l.Seal(ctx); err != nil {
			t.Fatal(err)
		}
		if rep, err := l.Verify(ctx); err != nil || rep.Problem != nil {
			t.Fatalf("Verify() of the rebuilt chain without checkpoint = %v, %v; want OK (that is what checkpoints are for)", rep, err)
		}
		rep, err := l.Verify(ctx, parsed)
		if err != nil {
			t.Fatal(err)
		}
		if rep.Problem == nil || rep.Problem.Seq != 10 || rep.Problem.Kind != Rebuilt {
			t.Errorf("Verify(checkpoint) of the rebuilt chain = %v, want a problem at seq 10: rebuilt", rep)
		}
	})
}

func TestCheckpointDetectsTruncation(t *testing.T) {
	_, key, _ := ed25519.GenerateKey(rand.Reader)
	eachStore(t, func(t *testing.T, f storetest.Fixture, db store.DB) {
		ctx := context.Background()
		l := newLog(t, db)
		appendN(t, l, 10)
		doc, _, err := l.Checkpoint(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		cp, err := ParseCheckpoint(doc, key.Public().(ed25519.PublicKey))
		if err != nil {
			t.Fatal(err)
		}
		tamper(t, db,
			"DELETE FROM audit_event WHERE id IN (SELECT event_id FROM audit_seal WHERE seq > 8)",
			"DELETE FROM audit_seal WHERE seq > 8",
		)
		rep, err := l.Verify(ctx, cp)
		if err != nil {
			t.Fatal(err)
		}
		if rep.Problem == nil || rep.Problem.Seq != 9 || rep.Problem.Kind != Missing {
			t.Errorf("Verify(checkpoint) of a truncated chain = %v, want a problem at seq 9: missing", rep)
		}
	})
}
