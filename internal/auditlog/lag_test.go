package auditlog

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cobranca/cobranca/internal/store"
	"github.com/cobranca/cobranca/internal/store/storetest"
)

// TestLag: the events written since the last seal are the lag, dated by the oldest of them;
// sealing brings it to zero; at most limit are counted.
func TestLag(t *testing.T) {
	eachStore(t, func(t *testing.T, _ storetest.Fixture, db store.DB) {
		ctx := context.Background()
		l := newLog(t, db)
		lag := func(limit int64) Lag {
			t.Helper()
			got, err := l.Lag(ctx, limit)
			if err != nil {
				t.Fatal(err)
			}
			return got
		}
		if got := lag(100); got != (Lag{}) {
			t.Errorf("Lag(empty log) = %+v, want zero", got)
		}
		record := func(from, to int) {
			for i := from; i < to; i++ {
				if err := l.Record(ctx, sampleEvent(i)); err != nil {
					t.Fatal(err)
				}
			}
		}
		start := time.Now()
		record(0, 3)
		got := lag(100)
		if got.Unsealed != 3 || !plausible(db, got.Oldest, start) {
			t.Errorf("Lag(3 unsealed, none sealed ever) = %+v, want 3 from about %v", got, start)
		}
		if _, err := l.Seal(ctx); err != nil {
			t.Fatal(err)
		}
		if got := lag(100); got != (Lag{}) {
			t.Errorf("Lag(all sealed) = %+v, want zero", got)
		}
		start = time.Now()
		record(3, 8)
		if got := lag(100); got.Unsealed != 5 || !plausible(db, got.Oldest, start) {
			t.Errorf("Lag(5 past the head) = %+v, want 5 from about %v", got, start)
		}
		if got := lag(2); got.Unsealed != 2 {
			t.Errorf("Lag(limit 2) = %+v, want 2 counted", got)
		}
		if _, err := l.Seal(ctx); err != nil {
			t.Fatal(err)
		}
		if got := lag(100); got != (Lag{}) {
			t.Errorf("Lag(all sealed again) = %+v, want zero", got)
		}
	})
}

// plausible reports whether oldest is the time of an event written after start: on SQLite
// the log's clock (fixedTime in these tests), on PostgreSQL the database's.
func plausible(db store.DB, oldest, start time.Time) bool {
	if db.Dialect() == store.SQLite {
		return oldest.Equal(fixedTime)
	}
	return !oldest.Before(start.Add(-time.Second)) && oldest.Before(time.Now().Add(time.Second))
}

// TestHeadEventMissing: on PostgreSQL the sealer reads on from the head's event's
// transaction id, so a deleted head event stops sealing and Lag with an error that says what
// to run, never a guess of where to go on; on SQLite the head's event id alone is where it
// reads on, and sealing goes on (audit verify reports the deletion).
func TestHeadEventMissing(t *testing.T) {
	eachStore(t, func(t *testing.T, _ storetest.Fixture, db store.DB) {
		ctx := context.Background()
		l := newLog(t, db)
		for i := range 3 {
			if err := l.Record(ctx, sampleEvent(i)); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := l.Seal(ctx); err != nil {
			t.Fatal(err)
		}
		tamper(t, db, "DELETE FROM audit_event WHERE id = (SELECT event_id FROM audit_seal WHERE seq = 3)")
		if err := l.Record(ctx, sampleEvent(3)); err != nil {
			t.Fatal(err)
		}
		_, lagErr := l.Lag(ctx, 100)
		_, sealErr := l.Seal(ctx)
		if db.Dialect() == store.SQLite {
			if lagErr != nil || sealErr != nil {
				t.Fatalf("Lag: %v; Seal: %v; want both to read on from the head's event id", lagErr, sealErr)
			}
			if got, err := l.Lag(ctx, 100); err != nil || got.Unsealed != 0 {
				t.Errorf("Lag after sealing = %+v, %v; want nothing unsealed", got, err)
			}
			return
		}
		for what, err := range map[string]error{"Lag": lagErr, "Seal": sealErr} {
			if err == nil || !strings.Contains(err.Error(), "the last sealed event (seq 3) is missing: run cobranca audit verify") {
				t.Errorf("%s with the head's event deleted: %v, want the missing event named", what, err)
			}
		}
	})
}

// TestSealCommitted: on PostgreSQL a transaction open anywhere holds sealing back, so one Seal
// leaves an event committed after it unsealed; SealCommitted waits until that transaction
// ends and then seals it, and gives up, saying so, when its context ends first.
func TestSealCommitted(t *testing.T) {
	eachStore(t, func(t *testing.T, _ storetest.Fixture, db store.DB) {
		ctx := context.Background()
		l := newLog(t, db)
		if db.Dialect() == store.SQLite { // no older transaction can be open: it seals at once
			if err := l.Record(ctx, sampleEvent(0)); err != nil {
				t.Fatal(err)
			}
			if n, err := l.SealCommitted(ctx); err != nil || n != 1 {
				t.Fatalf("SealCommitted = %d, %v; want 1 sealed", n, err)
			}
			return
		}
		held, release := make(chan struct{}), make(chan struct{})
		releaseOnce := sync.OnceFunc(func() { close(release) })
		ended := make(chan struct{})
		var txErr error
		go func() { // an older transaction, with its id, open until released
			defer close(ended)
			txErr = db.InTx(ctx, func(ctx context.Context, tx store.Tx) error {
				if _, err := tx.Exec(ctx, `SELECT pg_current_xact_id()`); err != nil {
					close(held)
					return err
				}
				close(held)
				<-release
				return nil
			})
		}()
		// Should the test stop early, the transaction still ends, before the store closes:
		// held open, it would hang the package to its timeout.
		t.Cleanup(func() {
			releaseOnce()
			<-ended
		})
		<-held
		if err := l.Record(ctx, sampleEvent(0)); err != nil {
			t.Fatal(err)
		}
		if n, err := l.Seal(ctx); err != nil || n != 0 {
			t.Fatalf("Seal with an older transaction open = %d, %v; want nothing sealed", n, err)
		}
		// SealCommitted, on a store that says each time it has counted what is left unsealed:
		// past the first count, the transaction still open, it waits.
		watched := &lagWatch{DB: db, unsealed: l.q.unsealed, counted: make(chan int64, 64)}
		wl, err := New(watched, testKey, Options{Now: func() time.Time { return fixedTime }})
		if err != nil {
			t.Fatal(err)
		}
		gaveUp, cancel := context.WithCancel(ctx)
		defer cancel()
		sealed := make(chan error, 1)
		go func() {
			n, err := wl.SealCommitted(gaveUp)
			if err == nil || n != 0 || !strings.Contains(err.Error(), "left unsealed") || !errors.Is(err, context.Canceled) {
				err = fmt.Errorf("SealCommitted until its context ends = %d, %v; want an error saying events are left unsealed", n, err)
			} else {
				err = nil
			}
			sealed <- err
		}()
		if n := <-watched.counted; n != 1 {
			t.Fatalf("SealCommitted counted %d events unsealed, want 1", n)
		}
		cancel()
		if err := <-sealed; err != nil {
			t.Fatal(err)
		}
		drain(watched.counted)
		// Once the transaction ends, SealCommitted, waiting for it, seals the event.
		go func() {
			n, err := wl.SealCommitted(ctx)
			if err == nil && n != 1 {
				err = fmt.Errorf("SealCommitted once the transaction ends = %d; want the event sealed", n)
			}
			sealed <- err
		}()
		if n := <-watched.counted; n != 1 {
			t.Fatalf("SealCommitted counted %d events unsealed, want 1", n)
		}
		releaseOnce()
		if err := <-sealed; err != nil {
			t.Fatal(err)
		}
		if <-ended; txErr != nil {
			t.Fatal(txErr)
		}
		if got, err := l.Lag(ctx, 10); err != nil || got.Unsealed != 0 {
			t.Errorf("Lag after SealCommitted = %+v, %v; want nothing unsealed", got, err)
		}
	})
}

// lagWatch is a store that sends on counted every count of unsealed events it answers.
type lagWatch struct {
	DB
	unsealed string // the query that counts them
	counted  chan int64
}

func (w *lagWatch) QueryRow(ctx context.Context, sql string, args ...any) store.Row {
	row := w.DB.QueryRow(ctx, sql, args...)
	if sql != w.unsealed {
		return row
	}
	return scanned{row, func(dest []any) {
		select {
		case w.counted <- *dest[0].(*int64):
		default: // nobody is counting
		}
	}}
}

// scanned is a Row that calls then with what a successful Scan read.
type scanned struct {
	store.Row
	then func(dest []any)
}

func (r scanned) Scan(dest ...any) error {
	err := r.Row.Scan(dest...)
	if err == nil {
		r.then(dest)
	}
	return err
}

// drain empties c of what is waiting in it.
func drain[T any](c chan T) {
	for {
		select {
		case <-c:
		default:
			return
		}
	}
}
