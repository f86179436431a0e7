package auditlog

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/cobranca/cobranca/internal/store"
	"github.com/cobranca/cobranca/internal/store/storetest"
)

// TestKeyRotation: a replica still on the old key and one on the new write side by side; each
// event verifies under its own key, events from before key ids under the legacy key; a missing
// key is named by its id; once the old key is retired, an event forged with it (or written by
// a replica never given the new key) is reported.
func TestKeyRotation(t *testing.T) {
	oldKey, newKey := testKey, bytes.Repeat([]byte("n"), 32)
	oldID, newID := KeyID(oldKey), KeyID(newKey)
	eachStore(t, func(t *testing.T, f storetest.Fixture, db store.DB) {
		ctx := context.Background()
		old := mustLog(t, db, oldKey) // a replica not yet updated, or whoever holds the old key
		rotated, err := New(db, newKey, Options{Now: func() time.Time { return fixedTime }, OldKeys: [][]byte{oldKey}})
		if err != nil {
			t.Fatal(err)
		}
		record := func(l *Log, i int) {
			t.Helper()
			if err := l.Record(ctx, sampleEvent(i)); err != nil {
				t.Fatal(err)
			}
		}
		verify := func(l *Log) Report {
			t.Helper()
			rep, err := l.Verify(ctx)
			if err != nil {
				t.Fatal(err)
			}
			return rep
		}
		// seq 1-3 under the old key, 4-5 under the new, 6 the old again (a rolling deploy).
		for i, l := range []*Log{old, old, old, rotated, rotated, old} {
			record(l, i)
		}

		// Each key alone: the other key's first event is named.
		if rep := verify(mustLog(t, db, newKey)); rep.Problem == nil || rep.Problem.Seq != 1 || rep.Problem.Kind != KeyMissing || !strings.Contains(rep.Problem.Detail, "key "+oldID+",") {
			t.Errorf("Verify() under the new key alone = %v, want seq 1: key_missing naming %s", rep, oldID)
		}
		if rep := verify(old); rep.Problem == nil || rep.Problem.Seq != 4 || rep.Problem.Kind != KeyMissing || !strings.Contains(rep.Problem.Detail, "key "+newID+",") {
			t.Errorf("Verify() under the old key alone = %v, want seq 4: key_missing naming %s", rep, newID)
		}

		// Events written before key ids (seq 1 and 2) are under the legacy key.
		tamper(t, db, "UPDATE audit_event SET key_id = NULL WHERE id IN (SELECT event_id FROM audit_seal WHERE seq <= 2)")
		rep := verify(rotated)
		if want := map[string]int64{oldID: 4, newID: 2}; rep.Problem != nil || rep.Count != 6 || !maps.Equal(rep.Keys, want) {
			t.Fatalf("Verify() under both keys = %v (keys %v), want OK 6 events, keys %v", rep, rep.Keys, want)
		}
		if want := fmt.Sprintf("events per key: %s 4, %s 2", oldID, newID); !strings.Contains(rep.String(), want) {
			t.Errorf("Report.String() = %q, want it to say %q", rep, want)
		}
		if rep := verify(mustLog(t, db, newKey)); rep.Problem == nil || rep.Problem.Seq != 1 || rep.Problem.Kind != Forged || !strings.Contains(rep.Problem.Detail, "names no key") {
			t.Errorf("Verify() of legacy events without the legacy key = %v, want seq 1: forged, naming no key", rep)
		}

		olds, err := rotated.OldKeys(ctx)
		if err != nil || len(olds) != 1 || olds[0].ID != oldID || olds[0].Events != 2 || olds[0].Retired || !olds[0].Last.Equal(fixedTime) {
			t.Fatalf("OldKeys() = %+v, %v; want %s with 2 events (2 before key ids), not retired", olds, err, oldID)
		}
		if err := rotated.RetireKey(ctx, newID, Event{Outcome: Allowed}); err == nil {
			t.Error("RetireKey(the current key) succeeded")
		}
		if err := rotated.RetireKey(ctx, oldID, Event{Subject: "ops", Outcome: Allowed}); err != nil {
			t.Fatal(err)
		}
		if olds, err := rotated.OldKeys(ctx); err != nil || len(olds) != 1 || !olds[0].Retired {
			t.Errorf("OldKeys() after RetireKey = %+v, %v; want it retired", olds, err)
		}
		if rep := verify(rotated); rep.Problem != nil || rep.Count != 7 {
			t.Fatalf("Verify() after the retirement = %v, want OK 7 events", rep)
		}

		// After seq 7 retired it, an event under the old key is reported, with or without
		// its key id.
		record(old, 8)
		record(rotated, 9)
		want := fmt.Sprintf("sealed under key %s, retired at seq 7", oldID)
		if rep := verify(rotated); rep.Problem == nil || rep.Problem.Seq != 8 || rep.Problem.Kind != RetiredKey || !strings.Contains(rep.Problem.Detail, want) {
			t.Errorf("Verify() with an event under the retired key = %v, want seq 8: retired_key: %s", rep, want)
		}
		tamper(t, db, "UPDATE audit_event SET key_id = NULL WHERE id = (SELECT event_id FROM audit_seal WHERE seq = 8)")
		if rep := verify(rotated); rep.Problem == nil || rep.Problem.Seq != 8 || rep.Problem.Kind != RetiredKey {
			t.Errorf("Verify() with a keyless event under the retired legacy key = %v, want seq 8: retired_key", rep)
		}
	})
}

// TestSpoolKeepsKeyID: events spooled under the old key and written after a restart under a
// rotated key keep the old key's id, and verify under it.
func TestSpoolKeepsKeyID(t *testing.T) {
	newKey := bytes.Repeat([]byte("n"), 32)
	eachStore(t, func(t *testing.T, f storetest.Fixture, db store.DB) {
		ctx := context.Background()
		path := t.TempDir() + "/" + SpoolFileName
		s := openSpool(t, path, SpoolOptions{})
		old := spoolLog(t, db, s)
		for i := range 2 {
			r, err := old.stamp(sampleEvent(i), time.Now())
			if err != nil {
				t.Fatal(err)
			}
			if err := s.add(&r); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		s = openSpool(t, path, SpoolOptions{})
		rotated, err := New(db, newKey, Options{Spool: s, OldKeys: [][]byte{testKey}})
		if err != nil {
			t.Fatal(err)
		}
		if n, err := rotated.drainSpool(ctx); err != nil || n != 2 {
			t.Fatalf("drainSpool() = %d, %v; want 2", n, err)
		}
		rows, err := db.Query(ctx, `SELECT coalesce(key_id, '') FROM audit_event ORDER BY id`)
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for rows.Next() {
			var id string
			if err := rows.Scan(&id); err != nil {
				t.Fatal(err)
			}
			ids = append(ids, id)
		}
		rows.Close()
		if want := []string{KeyID(testKey), KeyID(testKey)}; fmt.Sprint(ids) != fmt.Sprint(want) {
			t.Errorf("key ids of the drained events = %v, want %v", ids, want)
		}
		if rep, err := rotated.Verify(ctx); err != nil || rep.Problem != nil || rep.Keys[KeyID(testKey)] != 2 {
			t.Errorf("Verify() = %v (keys %v), %v; want OK, 2 events under the old key", rep, rep.Keys, err)
		}
	})
}
