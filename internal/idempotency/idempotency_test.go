package idempotency_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cobranca/cobranca/internal/contract"
	"github.com/cobranca/cobranca/internal/failure"
	"github.com/cobranca/cobranca/internal/idempotency"
	"github.com/cobranca/cobranca/internal/limits/limitstest"
	"github.com/cobranca/cobranca/internal/pgtest"
	"github.com/cobranca/cobranca/internal/store"
	"github.com/cobranca/cobranca/internal/store/storetest"
)

var pg = pgtest.New()

func TestMain(m *testing.M) { pg.Run(m) }

const ttl = 24 * time.Hour

// env is one migrated database with a Store on a fake clock.
type env struct {
	f     storetest.Fixture
	db    store.DB
	s     *idempotency.Store
	clock *limitstest.Clock
}

func eachStore(t *testing.T, fn func(t *testing.T, e env)) {
	t.Helper()
	for _, f := range storetest.Fixtures(pg) {
		t.Run(string(f.Dialect), func(t *testing.T) {
			t.Parallel()
			db := f.Migrated(t)
			fn(t, newEnv(t, f, db))
		})
	}
}

func newEnv(t testing.TB, f storetest.Fixture, db store.DB) env {
	t.Helper()
	c := limitstest.NewClock()
	s, err := idempotency.New(db.Dialect(), ttl, c.Now)
	if err != nil {
		t.Fatal(err)
	}
	return env{f: f, db: db, s: s, clock: c}
}

func fp(s string) []byte { h := sha256.Sum256([]byte(s)); return h[:] }

var key = idempotency.Key{Principal: "user-1|client-9", Tool: "collections.send_reminder", Key: "k-2026-07-01-0001"}

// response is an answer with every byte value, invalid UTF-8 and NULs included: it must come
// back exactly.
func response() []byte {
	b := []byte(`{"structuredContent":{"sent":1},"isError":false}`)
	for i := range 256 {
		b = append(b, byte(i))
	}
	return b
}

// begin runs Begin in a transaction of its own and commits it.
func (e env) begin(t *testing.T, k idempotency.Key, fingerprint []byte) idempotency.Reservation {
	t.Helper()
	var r idempotency.Reservation
	err := e.db.InTx(context.Background(), func(ctx context.Context, tx store.Tx) error {
		var err error
		r, err = e.s.Begin(ctx, tx, k, fingerprint)
		return err
	})
	if err != nil {
		t.Fatalf("Begin(%+v) = %v", k, err)
	}
	return r
}

// call is what the pipeline does: Begin, and on Fresh an effect and Complete, in one
// transaction.
func (e env) call(t *testing.T, k idempotency.Key, fingerprint, resp []byte) idempotency.Reservation {
	t.Helper()
	var r idempotency.Reservation
	err := e.db.InTx(context.Background(), func(ctx context.Context, tx store.Tx) error {
		var err error
		if r, err = e.s.Begin(ctx, tx, k, fingerprint); err != nil || r.State != idempotency.Fresh {
			return err
		}
		return e.s.Complete(ctx, tx, k, fingerprint, resp)
	})
	if err != nil {
		t.Fatalf("call(%+v) = %v", k, err)
	}
	return r
}

func (e env) count(t *testing.T, table string) int64 {
	t.Helper()
	var n int64
	if err := e.db.QueryRow(context.Background(), "SELECT count(*) FROM "+table).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func TestFreshReplayConflict(t *testing.T) {
	eachStore(t, func(t *testing.T, e env) {
		want := response()
		if r := e.call(t, key, fp("a"), want); r.State != idempotency.Fresh {
			t.Fatalf("first call: %v, want fresh", r.State)
		}
		r := e.call(t, key, fp("a"), []byte("another answer"))
		if r.State != idempotency.Replay || !bytes.Equal(r.Response, want) {
			t.Errorf("same key, same fingerprint: %v %q; want replay of %q", r.State, r.Response, want)
		}
		if r := e.call(t, key, fp("b"), []byte("x")); r.State != idempotency.Conflict || r.Response != nil {
			t.Errorf("same key, other fingerprint: %v %q; want conflict, no response", r.State, r.Response)
		}
		// (principal, tool, key) is the reservation: each part on its own makes another one.
		for _, other := range []idempotency.Key{
			{Principal: "user-2|client-9", Tool: key.Tool, Key: key.Key},
			{Principal: key.Principal, Tool: "collections.write_off", Key: key.Key},
			{Principal: key.Principal, Tool: key.Tool, Key: key.Key + "x"},
		} {
			if r := e.begin(t, other, fp("a")); r.State != idempotency.Fresh {
				t.Errorf("Begin(%+v) = %v, want fresh", other, r.State)
			}
		}
		// An empty answer is stored as one.
		empty := idempotency.Key{Principal: "p", Tool: "t", Key: "empty"}
		e.call(t, empty, fp("a"), nil)
		if r := e.begin(t, empty, fp("a")); r.State != idempotency.Replay || len(r.Response) != 0 {
			t.Errorf("replay of an empty answer: %v %q", r.State, r.Response)
		}
	})
}

func TestExpiredIsFresh(t *testing.T) {
	eachStore(t, func(t *testing.T, e env) {
		e.call(t, key, fp("a"), []byte("first"))
		e.clock.Advance(ttl - time.Microsecond)
		if r := e.begin(t, key, fp("b")); r.State != idempotency.Conflict {
			t.Fatalf("just before expiry: %v, want conflict", r.State)
		}
		e.clock.Advance(time.Microsecond)
		// Expired: fresh whatever the fingerprint, and the key can be completed anew in the
		// same transaction (Begin deleted the old row).
		if r := e.call(t, key, fp("b"), []byte("second")); r.State != idempotency.Fresh {
			t.Fatalf("at expiry: %v, want fresh", r.State)
		}
		if r := e.begin(t, key, fp("b")); r.State != idempotency.Replay || string(r.Response) != "second" {
			t.Errorf("after the new call: %v %q, want replay of the second answer", r.State, r.Response)
		}
		if n := e.count(t, "idempotency_key"); n != 1 {
			t.Errorf("rows = %d, want 1", n)
		}
	})
}

func TestRollbackFreesKey(t *testing.T) {
	eachStore(t, func(t *testing.T, e env) {
		errEffect := errors.New("audit insert failed")
		err := e.db.InTx(context.Background(), func(ctx context.Context, tx store.Tx) error {
			r, err := e.s.Begin(ctx, tx, key, fp("a"))
			if err != nil || r.State != idempotency.Fresh {
				t.Fatalf("Begin = %v, %v; want fresh", r.State, err)
			}
			if err := e.s.Complete(ctx, tx, key, fp("a"), []byte("never sent")); err != nil {
				t.Fatal(err)
			}
			return errEffect
		})
		if !errors.Is(err, errEffect) {
			t.Fatalf("InTx = %v", err)
		}
		if r := e.begin(t, key, fp("b")); r.State != idempotency.Fresh {
			t.Errorf("after the rollback: %v, want fresh", r.State)
		}
		if n := e.count(t, "idempotency_key"); n != 0 {
			t.Errorf("rows after the rollback = %d, want 0", n)
		}
	})
}

func TestSpendNonce(t *testing.T) {
	eachStore(t, func(t *testing.T, e env) {
		ctx := context.Background()
		nonce := bytes.Repeat([]byte{0xa5}, idempotency.NonceLen)
		exp := e.clock.Now().Add(5 * time.Minute)
		spend := func(n []byte, fail error) error {
			return e.db.InTx(ctx, func(ctx context.Context, tx store.Tx) error {
				if err := e.s.SpendNonce(ctx, tx, n, exp); err != nil {
					return err
				}
				return fail
			})
		}
		errLater := errors.New("the call failed after spending")
		if err := spend(nonce, errLater); !errors.Is(err, errLater) {
			t.Fatalf("spend, rolled back = %v", err)
		}
		if err := spend(nonce, nil); err != nil {
			t.Fatalf("spend after a rollback = %v, want nil", err)
		}
		if err := spend(nonce, nil); !errors.Is(err, idempotency.ErrSpent) {
			t.Fatalf("spend again = %v, want ErrSpent", err)
		}
		other := bytes.Repeat([]byte{0x5a}, idempotency.NonceLen)
		if err := spend(other, nil); err != nil {
			t.Errorf("another nonce = %v", err)
		}
		// ErrSpent leaves the transaction usable (no unique violation on PostgreSQL).
		err := e.db.InTx(ctx, func(ctx context.Context, tx store.Tx) error {
			if err := e.s.SpendNonce(ctx, tx, nonce, exp); !errors.Is(err, idempotency.ErrSpent) {
				t.Errorf("spent in a transaction = %v, want ErrSpent", err)
			}
			return e.s.SpendNonce(ctx, tx, bytes.Repeat([]byte{1}, idempotency.NonceLen), exp)
		})
		if err != nil {
			t.Errorf("the transaction after ErrSpent = %v", err)
		}
		for _, bad := range [][]byte{nil, nonce[:15], append(nonce, 0)} {
			if err := spend(bad, nil); err == nil || errors.Is(err, idempotency.ErrSpent) {
				t.Errorf("nonce of %d bytes = %v, want a length error", len(bad), err)
			}
		}
	})
}

// TestSpendNonceConcurrently: a request state sent many times at once lets exactly one call
// through.
func TestSpendNonceConcurrently(t *testing.T) {
	eachStore(t, func(t *testing.T, e env) {
		ctx := context.Background()
		nonce := bytes.Repeat([]byte{0x42}, idempotency.NonceLen)
		const n = 20
		var spent, refused atomic.Int32
		var wg sync.WaitGroup
		for range n {
			wg.Go(func() {
				err := e.db.InTx(ctx, func(ctx context.Context, tx store.Tx) error {
					return e.s.SpendNonce(ctx, tx, nonce, e.clock.Now().Add(time.Minute))
				})
				switch {
				case err == nil:
					spent.Add(1)
				case errors.Is(err, idempotency.ErrSpent):
					refused.Add(1)
				default:
					t.Errorf("SpendNonce = %v", err)
				}
			})
		}
		wg.Wait()
		if spent.Load() != 1 || refused.Load() != n-1 {
			t.Errorf("spent %d times, refused %d; want 1 and %d", spent.Load(), refused.Load(), n-1)
		}
	})
}

func TestReap(t *testing.T) {
	eachStore(t, func(t *testing.T, e env) {
		ctx := context.Background()
		old := idempotency.Key{Principal: "p", Tool: "t", Key: "old"}
		e.call(t, old, fp("a"), []byte("old"))
		e.clock.Advance(time.Hour)
		e.call(t, key, fp("a"), []byte("new")) // expires an hour after old
		now := e.clock.Now()
		err := e.db.InTx(ctx, func(ctx context.Context, tx store.Tx) error {
			for i, exp := range []time.Time{now.Add(ttl - time.Hour), now.Add(ttl)} {
				if err := e.s.SpendNonce(ctx, tx, bytes.Repeat([]byte{byte(i)}, idempotency.NonceLen), exp); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if n, err := e.s.Reap(ctx, e.db); err != nil || n != 0 {
			t.Fatalf("Reap before any expiry = %d, %v; want 0", n, err)
		}
		e.clock.Advance(ttl - time.Hour)
		if n, err := e.s.Reap(ctx, e.db); err != nil || n != 2 {
			t.Fatalf("Reap = %d, %v; want the old key and the first nonce", n, err)
		}
		if r := e.begin(t, key, fp("a")); r.State != idempotency.Replay {
			t.Errorf("the live key after Reap: %v, want replay", r.State)
		}
		if n := e.count(t, "idempotency_key") + e.count(t, "request_state_nonce"); n != 2 {
			t.Errorf("rows left = %d, want 2", n)
		}
	})
}

func TestRunReaper(t *testing.T) {
	eachStore(t, func(t *testing.T, e env) {
		e.call(t, key, fp("a"), []byte("x"))
		e.clock.Advance(ttl)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() {
			e.s.RunReaper(ctx, e.db, 5*time.Millisecond, quietLogger())
			close(done)
		}()
		deadline := time.Now().Add(10 * time.Second)
		for e.count(t, "idempotency_key") != 0 {
			if time.Now().After(deadline) {
				t.Fatal("RunReaper did not delete the expired key within 10 s")
			}
			time.Sleep(5 * time.Millisecond)
		}
		cancel()
		select {
		case <-done:
		case <-time.After(2 * time.Second):
			t.Fatal("RunReaper did not return within 2 s of its context's end")
		}
	})
}

// TestConcurrentDuplicates: 50 identical calls at once, each Begin → effect → Complete in its
// own transaction: one runs, every other one replays its answer or is told it is in progress.
func TestConcurrentDuplicates(t *testing.T) {
	eachStore(t, func(t *testing.T, e env) {
		ctx := context.Background()
		if _, err := e.db.Exec(ctx, "CREATE TABLE effect (id TEXT PRIMARY KEY)"); err != nil {
			t.Fatal(err)
		}
		const n = 50
		var start, wg sync.WaitGroup
		start.Add(1)
		results := make([]idempotency.Reservation, n)
		errs := make([]error, n)
		var begun atomic.Int32 // calls past Begin
		for i := range n {
			wg.Go(func() {
				start.Wait()
				errs[i] = e.db.InTx(ctx, func(ctx context.Context, tx store.Tx) error {
					r, err := e.s.Begin(ctx, tx, key, fp("a"))
					results[i] = r
					begun.Add(1)
					if err != nil || r.State != idempotency.Fresh {
						return err
					}
					if _, err := tx.Exec(ctx, "INSERT INTO effect (id) VALUES ($1)", "only-once"); err != nil {
						return err
					}
					// The effect takes a while: long enough for duplicates to come (on
					// PostgreSQL; on SQLite none can before this transaction ends, so
					// it does not wait for them).
					for deadline := time.Now().Add(time.Second); e.f.Dialect == store.Postgres && begun.Load() < 4 && time.Now().Before(deadline); {
						time.Sleep(time.Millisecond)
					}
					return e.s.Complete(ctx, tx, key, fp("a"), response())
				})
			})
		}
		start.Done()
		wg.Wait()
		counts := map[idempotency.State]int{}
		for i := range n {
			if errs[i] != nil {
				t.Errorf("call %d (%v): %v", i, results[i].State, errs[i])
			}
			counts[results[i].State]++
			switch results[i].State {
			case idempotency.Replay:
				if !bytes.Equal(results[i].Response, response()) {
					t.Errorf("call %d replayed %q", i, results[i].Response)
				}
			case idempotency.InProgress:
				if e.f.Dialect == store.SQLite {
					t.Errorf("call %d: in progress on SQLite, where writers are serialized", i)
				}
			case idempotency.Conflict:
				t.Errorf("call %d: conflict with identical arguments", i)
			}
		}
		if counts[idempotency.Fresh] != 1 {
			t.Errorf("fresh answers = %d, want exactly 1 (all: %v)", counts[idempotency.Fresh], counts)
		}
		if got := e.count(t, "effect"); got != 1 {
			t.Errorf("effects = %d, want 1", got)
		}
		t.Logf("%s: %v", e.f.Dialect, counts)
	})
}

// TestInProgress: on PostgreSQL a duplicate of a call whose transaction is still open is told
// so at once, and replays once the first has committed.
func TestInProgress(t *testing.T) {
	f := storetest.Fixtures(pg)[1]
	if f.Dialect != store.Postgres {
		t.Fatalf("fixture %s, want postgres", f.Dialect)
	}
	e := newEnv(t, f, f.Migrated(t))
	ctx := context.Background()
	holding, release := make(chan struct{}), make(chan struct{})
	first := make(chan error, 1)
	go func() {
		first <- e.db.InTx(ctx, func(ctx context.Context, tx store.Tx) error {
			if r, err := e.s.Begin(ctx, tx, key, fp("a")); err != nil || r.State != idempotency.Fresh {
				t.Errorf("first Begin = %v, %v; want fresh", r.State, err)
			}
			if err := e.s.Complete(ctx, tx, key, fp("a"), []byte("done")); err != nil {
				return err
			}
			close(holding)
			<-release
			return nil
		})
	}()
	<-holding
	start := time.Now()
	for _, fingerprint := range [][]byte{fp("a"), fp("b")} {
		if r := e.begin(t, key, fingerprint); r.State != idempotency.InProgress {
			t.Errorf("while the first is open: %v, want in progress", r.State)
		}
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("in progress took %v: Begin must not wait for the holder", d)
	}
	close(release)
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	if r := e.begin(t, key, fp("a")); r.State != idempotency.Replay || string(r.Response) != "done" {
		t.Errorf("after the commit: %v %q, want replay", r.State, r.Response)
	}
}

func TestBadInput(t *testing.T) {
	eachStore(t, func(t *testing.T, e env) {
		ctx := context.Background()
		tests := []struct {
			name string
			k    idempotency.Key
			fp   []byte
			code failure.Code // "" when the error is the server's, not the caller's
		}{
			{"empty key", idempotency.Key{Principal: "p", Tool: "t"}, fp("a"), failure.InvalidArguments},
			{"control character", idempotency.Key{Principal: "p", Tool: "t", Key: "a\nb"}, fp("a"), failure.InvalidArguments},
			{"no principal", idempotency.Key{Tool: "t", Key: "k"}, fp("a"), ""},
			{"no tool", idempotency.Key{Principal: "p", Key: "k"}, fp("a"), ""},
			{"short fingerprint", key, fp("a")[:31], ""},
		}
		for _, tt := range tests {
			err := e.db.InTx(ctx, func(ctx context.Context, tx store.Tx) error {
				if _, err := e.s.Begin(ctx, tx, tt.k, tt.fp); err == nil {
					t.Errorf("%s: Begin accepted it", tt.name)
				} else if fe, ok := failure.As(err); ok != (tt.code != "") || ok && (fe.Code != tt.code || fe.Field != contract.ArgIdempotencyKey) {
					t.Errorf("%s: Begin = %v, want code %q", tt.name, err, tt.code)
				}
				if err := e.s.Complete(ctx, tx, tt.k, tt.fp, []byte("x")); err == nil {
					t.Errorf("%s: Complete accepted it", tt.name)
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
		}
		if n := e.count(t, "idempotency_key"); n != 0 {
			t.Errorf("rows after refused input = %d, want 0", n)
		}
		other := store.SQLite
		if e.db.Dialect() == store.SQLite {
			other = store.Postgres
		}
		wrong, err := idempotency.New(other, ttl, nil)
		if err != nil {
			t.Fatal(err)
		}
		err = e.db.InTx(ctx, func(ctx context.Context, tx store.Tx) error {
			_, err := wrong.Begin(ctx, tx, key, fp("a"))
			return err
		})
		if err == nil {
			t.Errorf("a %s store accepted a %s transaction", other, e.db.Dialect())
		}
	})
}

func TestNew(t *testing.T) {
	for _, tt := range []struct {
		d   store.Dialect
		ttl time.Duration
	}{{"mysql", time.Hour}, {store.Postgres, 0}, {store.SQLite, -time.Second}} {
		if _, err := idempotency.New(tt.d, tt.ttl, nil); err == nil {
			t.Errorf("New(%q, %v) accepted it", tt.d, tt.ttl)
		}
	}
}

// TestAppRole: the serving role (a member of cobranca_app) can do all of it with what
// migration 00030 grants, and cannot rewrite a stored answer.
func TestAppRole(t *testing.T) {
	ctx := context.Background()
	app := storetest.AppRole(t, pg)
	e := newEnv(t, storetest.Fixtures(pg)[1], app)
	e.call(t, key, fp("a"), []byte("answer"))
	if r := e.begin(t, key, fp("a")); r.State != idempotency.Replay {
		t.Fatalf("replay as the app role: %v", r.State)
	}
	err := app.InTx(ctx, func(ctx context.Context, tx store.Tx) error {
		return e.s.SpendNonce(ctx, tx, bytes.Repeat([]byte{7}, idempotency.NonceLen), e.clock.Now().Add(time.Minute))
	})
	if err != nil {
		t.Fatalf("SpendNonce as the app role: %v", err)
	}
	e.clock.Advance(ttl)
	if n, err := e.s.Reap(ctx, app); err != nil || n != 2 {
		t.Fatalf("Reap as the app role = %d, %v; want 2", n, err)
	}
	e.call(t, key, fp("b"), []byte("second")) // Begin deletes nothing now, Complete inserts
	e.clock.Advance(ttl)
	if r := e.call(t, key, fp("c"), []byte("third")); r.State != idempotency.Fresh {
		t.Fatalf("expired key as the app role: %v", r.State) // Begin deleted the expired row
	}
	if _, err := app.Exec(ctx, "UPDATE idempotency_key SET response = 'forged'"); err == nil {
		t.Error("the app role rewrote a stored answer")
	}
}
