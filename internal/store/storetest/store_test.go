package storetest_test

import (
	"context"
	"errors"
	"maps"
	"sync"
	"testing"

	"github.com/cobranca/cobranca/internal/pgtest"
	"github.com/cobranca/cobranca/internal/store"
	"github.com/cobranca/cobranca/internal/store/storetest"
)

var pg = pgtest.New()

func TestMain(m *testing.M) { pg.Run(m) }

func eachStore(t *testing.T, fn func(t *testing.T, f storetest.Fixture)) {
	for _, f := range storetest.Fixtures(pg) {
		t.Run(string(f.Dialect), func(t *testing.T) {
			t.Parallel()
			fn(t, f)
		})
	}
}

func TestInTx(t *testing.T) {
	eachStore(t, func(t *testing.T, f storetest.Fixture) {
		ctx := context.Background()
		db := f.Migrated(t)
		if _, err := db.Exec(ctx, "CREATE TABLE scratch (k TEXT PRIMARY KEY, v BIGINT NOT NULL)"); err != nil {
			t.Fatal(err)
		}
		insert := func(k string) func(ctx context.Context, tx store.Tx) error {
			return func(ctx context.Context, tx store.Tx) error {
				_, err := tx.Exec(ctx, "INSERT INTO scratch (k, v) VALUES ($1, $2)", k, int64(len(k)))
				return err
			}
		}
		errBoom := errors.New("boom")
		if err := db.InTx(ctx, insert("committed")); err != nil {
			t.Fatalf("InTx(commit) = %v", err)
		}
		err := db.InTx(ctx, func(ctx context.Context, tx store.Tx) error {
			if err := insert("rolled-back")(ctx, tx); err != nil {
				return err
			}
			return errBoom
		})
		if !errors.Is(err, errBoom) {
			t.Fatalf("InTx(fail) = %v, want %v", err, errBoom)
		}
		func() {
			defer func() {
				if recover() == nil {
					t.Error("InTx did not re-panic")
				}
			}()
			_ = db.InTx(ctx, func(ctx context.Context, tx store.Tx) error {
				_ = insert("panicked")(ctx, tx)
				panic("boom")
			})
		}()

		if got, want := scratch(t, db), map[string]int64{"committed": 9}; !maps.Equal(got, want) {
			t.Errorf("rows after commit, rollback and panic = %v, want %v", got, want)
		}

		var v int64
		err = db.QueryRow(ctx, "SELECT v FROM scratch WHERE k = $1", "absent").Scan(&v)
		if !errors.Is(err, store.ErrNoRows) {
			t.Errorf("QueryRow(absent).Scan = %v, want store.ErrNoRows", err)
		}
		err = db.InTx(ctx, func(ctx context.Context, tx store.Tx) error {
			return tx.QueryRow(ctx, "SELECT v FROM scratch WHERE k = $1", "absent").Scan(&v)
		})
		if !errors.Is(err, store.ErrNoRows) {
			t.Errorf("tx.QueryRow(absent).Scan = %v, want store.ErrNoRows", err)
		}
	})
}

// scratch returns the rows of the tests' scratch table.
func scratch(t *testing.T, db store.DB) map[string]int64 {
	t.Helper()
	rows, err := db.Query(context.Background(), "SELECT k, v FROM scratch")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	got := map[string]int64{}
	for rows.Next() {
		var k string
		var v int64
		if err := rows.Scan(&k, &v); err != nil {
			t.Fatal(err)
		}
		got[k] = v
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return got
}

func TestConcurrentWriters(t *testing.T) {
	eachStore(t, func(t *testing.T, f storetest.Fixture) {
		ctx := context.Background()
		db := f.Migrated(t)
		if _, err := db.Exec(ctx, "CREATE TABLE counter (id BIGINT PRIMARY KEY, n BIGINT NOT NULL)"); err != nil {
			t.Fatal(err)
		}
		if _, err := db.Exec(ctx, "INSERT INTO counter (id, n) VALUES (1, 0)"); err != nil {
			t.Fatal(err)
		}
		// Read-then-write transactions: on SQLite, a deferred transaction would fail here with
		// SQLITE_BUSY when two upgrade their read lock at once.
		const writers, each = 8, 25
		var wg sync.WaitGroup
		errs := make(chan error, writers)
		for range writers {
			wg.Go(func() {
				for range each {
					err := db.InTx(ctx, func(ctx context.Context, tx store.Tx) error {
						var n int64
						if err := tx.QueryRow(ctx, "SELECT n FROM counter WHERE id = 1"+forUpdate(f.Dialect)).Scan(&n); err != nil {
							return err
						}
						_, err := tx.Exec(ctx, "UPDATE counter SET n = $1 WHERE id = 1", n+1)
						return err
					})
					if err != nil {
						errs <- err
						return
					}
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Errorf("InTx: %v", err)
		}
		var n int64
		if err := db.QueryRow(ctx, "SELECT n FROM counter WHERE id = 1").Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n != writers*each {
			t.Errorf("counter = %d, want %d", n, writers*each)
		}
	})
}

// forUpdate completes "… FOR UPDATE" for the dialect: SQLite has no row locks and needs none.
func forUpdate(d store.Dialect) string {
	if d == store.SQLite {
		return ""
	}
	return " FOR UPDATE"
}

func TestReadyAndMigrations(t *testing.T) {
	eachStore(t, func(t *testing.T, f storetest.Fixture) {
		ctx := context.Background()
		db := f.Open(t, f.NewDatabase(t))
		if err := db.Ready(ctx); !errors.Is(err, store.ErrPendingMigrations) {
			t.Fatalf("Ready before Migrate = %v, want ErrPendingMigrations", err)
		}
		applied, err := db.Migrate(ctx)
		if err != nil {
			t.Fatalf("Migrate = %v", err)
		}
		if len(applied) == 0 {
			t.Fatal("Migrate applied nothing on an empty database")
		}
		if err := db.Ready(ctx); err != nil {
			t.Fatalf("Ready after Migrate = %v", err)
		}
		again, err := db.Migrate(ctx)
		if err != nil || len(again) != 0 {
			t.Fatalf("second Migrate = %v, %v; want nothing applied", again, err)
		}
		list, err := db.Migrations(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(list) != len(applied) {
			t.Errorf("Migrations() lists %d, Migrate applied %d", len(list), len(applied))
		}
		for _, m := range list {
			if !m.Applied || m.Name == "" || m.Version <= 0 {
				t.Errorf("Migrations() entry %+v: want applied, named, versioned", m)
			}
		}
	})
}

func TestConcurrentMigrate(t *testing.T) {
	eachStore(t, func(t *testing.T, f storetest.Fixture) {
		ctx := context.Background()
		where := f.NewDatabase(t)
		// Two handles, as two replicas starting at once would have.
		dbs := []store.DB{f.Open(t, where), f.Open(t, where), f.Open(t, where)}
		results := make([][]store.Migration, len(dbs))
		errs := make([]error, len(dbs))
		var wg sync.WaitGroup
		for i, db := range dbs {
			wg.Go(func() { results[i], errs[i] = db.Migrate(ctx) })
		}
		wg.Wait()
		total := 0
		for i := range dbs {
			if errs[i] != nil {
				t.Errorf("Migrate #%d = %v", i, errs[i])
			}
			total += len(results[i])
		}
		list, err := dbs[0].Migrations(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if total != len(list) {
			t.Errorf("migrations applied in total = %d, want each of the %d once", total, len(list))
		}
		for i, db := range dbs {
			if err := db.Ready(ctx); err != nil {
				t.Errorf("Ready #%d = %v", i, err)
			}
		}
	})
}

// markedError is what a deferred statement's Fail makes of its error.
type markedError struct{ err error }

func (e *markedError) Error() string { return "marked: " + e.err.Error() }
func (e *markedError) Unwrap() error { return e.err }

// TestInTxDefer: deferred statements run at the commit, after what the
// function did and in order; one that fails rolls back the whole
// transaction, the statements after it never run, and InTx returns its
// Fail's error; a function that fails never runs them.
func TestInTxDefer(t *testing.T) {
	eachStore(t, func(t *testing.T, f storetest.Fixture) {
		ctx := context.Background()
		db := f.Migrated(t)
		if _, err := db.Exec(ctx, "CREATE TABLE scratch (k TEXT PRIMARY KEY, v BIGINT NOT NULL)"); err != nil {
			t.Fatal(err)
		}
		ins := func(k string, v int64) store.Stmt {
			return store.Stmt{SQL: "INSERT INTO scratch (k, v) VALUES ($1, $2)", Args: []any{k, v}}
		}
		rowsNow := func() map[string]int64 { t.Helper(); return scratch(t, db) }

		// Deferred before the INSERT it updates: it still runs after it.
		err := db.InTx(ctx, func(ctx context.Context, tx store.Tx) error {
			tx.Defer(store.Stmt{SQL: "UPDATE scratch SET v = $1 WHERE k = $2", Args: []any{int64(100), "late"}})
			tx.Defer(ins("d1", 1), ins("d2", 2))
			_, err := tx.Exec(ctx, "INSERT INTO scratch (k, v) VALUES ($1, $2)", "late", int64(1))
			return err
		})
		if err != nil {
			t.Fatalf("InTx(deferred) = %v", err)
		}
		want := map[string]int64{"late": 100, "d1": 1, "d2": 2}
		if got := rowsNow(); !maps.Equal(got, want) {
			t.Fatalf("rows = %v, want %v", got, want)
		}

		// The second deferred INSERT repeats a key: nothing of the transaction stays.
		err = db.InTx(ctx, func(ctx context.Context, tx store.Tx) error {
			if _, err := tx.Exec(ctx, "INSERT INTO scratch (k, v) VALUES ($1, $2)", "x", int64(1)); err != nil {
				return err
			}
			dup := ins("d1", 9)
			dup.Fail = func(err error) error { return &markedError{err} }
			tx.Defer(ins("y", 1), dup, ins("z", 1))
			return nil
		})
		var me *markedError
		if !errors.As(err, &me) {
			t.Fatalf("InTx(failing deferred) = %v, want its Fail's error", err)
		}
		if got := rowsNow(); !maps.Equal(got, want) {
			t.Fatalf("rows after a failed deferred statement = %v, want %v", got, want)
		}

		// Without Fail the error still comes back.
		err = db.InTx(ctx, func(ctx context.Context, tx store.Tx) error {
			tx.Defer(ins("d2", 3))
			return nil
		})
		if err == nil || errors.As(err, &me) {
			t.Fatalf("InTx(failing deferred, no Fail) = %v, want an error", err)
		}

		// A function that fails never runs what it deferred.
		errBoom := errors.New("boom")
		err = db.InTx(ctx, func(ctx context.Context, tx store.Tx) error {
			tx.Defer(ins("never", 1))
			return errBoom
		})
		if !errors.Is(err, errBoom) {
			t.Fatalf("InTx(fail) = %v, want %v", err, errBoom)
		}
		if got := rowsNow(); !maps.Equal(got, want) {
			t.Fatalf("rows after a failed function = %v, want %v", got, want)
		}

		if f.Dialect == store.Postgres {
			// A statement that failed aborts the transaction: its COMMIT is a rollback, and
			// InTx says so even when the function ignored the failure.
			err = db.InTx(ctx, func(ctx context.Context, tx store.Tx) error {
				_, _ = tx.Exec(ctx, "INSERT INTO scratch (k, v) VALUES ($1, $2)", "d1", int64(9))
				tx.Defer(ins("after-abort", 1))
				return nil
			})
			if err == nil {
				t.Fatal("InTx(aborted transaction) = nil, want an error")
			}
			err = db.InTx(ctx, func(ctx context.Context, tx store.Tx) error {
				_, _ = tx.Exec(ctx, "INSERT INTO scratch (k, v) VALUES ($1, $2)", "d1", int64(9))
				return nil
			})
			if err == nil {
				t.Fatal("InTx(aborted transaction, nothing deferred) = nil, want an error")
			}
		}

		// The connections went back clean: a transaction works as before.
		for range 8 {
			if err := db.InTx(ctx, func(ctx context.Context, tx store.Tx) error {
				_, err := tx.Exec(ctx, "UPDATE scratch SET v = v + 1 WHERE k = $1", "d2")
				return err
			}); err != nil {
				t.Fatalf("InTx after failures = %v", err)
			}
		}
		if got := rowsNow()["d2"]; got != 10 {
			t.Errorf("d2 = %d, want 10", got)
		}
	})
}

// TestInTxFirstStatement: whatever a transaction's first statement is (on
// PostgreSQL it carries the BEGIN), the transaction holds: it commits what
// follows, a failing first statement rolls back, and the connection goes
// back clean.
func TestInTxFirstStatement(t *testing.T) {
	eachStore(t, func(t *testing.T, f storetest.Fixture) {
		ctx := context.Background()
		db := f.Migrated(t)
		if _, err := db.Exec(ctx, "CREATE TABLE scratch (k TEXT PRIMARY KEY, v BIGINT NOT NULL)"); err != nil {
			t.Fatal(err)
		}
		firsts := []struct {
			name string
			run  func(ctx context.Context, tx store.Tx, sql string) error
		}{
			{"Exec", func(ctx context.Context, tx store.Tx, sql string) error { _, err := tx.Exec(ctx, sql); return err }},
			{"QueryRow", func(ctx context.Context, tx store.Tx, sql string) error {
				var n int64
				return tx.QueryRow(ctx, sql).Scan(&n)
			}},
			{"Query", func(ctx context.Context, tx store.Tx, sql string) error {
				rows, err := tx.Query(ctx, sql)
				if err != nil {
					return err
				}
				defer rows.Close()
				for rows.Next() {
				}
				return rows.Err()
			}},
			{"QueryRows", func(ctx context.Context, tx store.Tx, sql string) error {
				var n, one int64
				return tx.QueryRows(ctx, []store.Stmt{{SQL: sql}, {SQL: "SELECT 1"}}, [][]any{{&n}, {&one}})
			}},
		}
		for _, c := range firsts {
			err := db.InTx(ctx, func(ctx context.Context, tx store.Tx) error {
				if err := c.run(ctx, tx, "SELECT count(*) FROM scratch"); err != nil {
					return err
				}
				_, err := tx.Exec(ctx, "INSERT INTO scratch (k, v) VALUES ($1, 1)", c.name)
				return err
			})
			if err != nil {
				t.Fatalf("%s first: InTx = %v", c.name, err)
			}
			errBoom := errors.New("boom")
			err = db.InTx(ctx, func(ctx context.Context, tx store.Tx) error {
				if err := c.run(ctx, tx, "SELECT count(*) FROM scratch"); err != nil {
					return err
				}
				if _, err := tx.Exec(ctx, "INSERT INTO scratch (k, v) VALUES ($1, 2)", c.name+"-then"); err != nil {
					return err
				}
				return errBoom
			})
			if !errors.Is(err, errBoom) {
				t.Fatalf("%s first, failing: InTx = %v, want %v", c.name, err, errBoom)
			}
			err = db.InTx(ctx, func(ctx context.Context, tx store.Tx) error {
				return c.run(ctx, tx, "SELECT count(*) FROM no_such_table")
			})
			if err == nil {
				t.Fatalf("%s first, failing statement: InTx = nil, want an error", c.name)
			}
		}
		var n int64
		if err := db.QueryRow(ctx, "SELECT count(*) FROM scratch").Scan(&n); err != nil || n != int64(len(firsts)) {
			t.Errorf("rows = %d, %v; want %d: only the committed transactions' rows", n, err, len(firsts))
		}
	})
}

// TestQueryRows: QueryRows scans each query's row into its destinations, fails on a query that
// selects no row and on destinations that do not match; on PostgreSQL a query after one that
// waits for a lock reads what the lock's holder committed before releasing it (a snapshot of
// its own, taken once the lock is held): what idempotency.Begin relies on.
func TestQueryRows(t *testing.T) {
	eachStore(t, func(t *testing.T, f storetest.Fixture) {
		ctx := context.Background()
		db := f.Migrated(t)
		if _, err := db.Exec(ctx, "CREATE TABLE scratch (k TEXT PRIMARY KEY, v BIGINT NOT NULL)"); err != nil {
			t.Fatal(err)
		}
		if _, err := db.Exec(ctx, "INSERT INTO scratch (k, v) VALUES ('a', 1), ('b', 2)"); err != nil {
			t.Fatal(err)
		}
		var a, b int64
		var k string
		err := db.InTx(ctx, func(ctx context.Context, tx store.Tx) error {
			return tx.QueryRows(ctx, []store.Stmt{{SQL: "SELECT v FROM scratch WHERE k = $1", Args: []any{"a"}},
				{SQL: "SELECT k, v FROM scratch WHERE v = $1", Args: []any{int64(2)}}}, [][]any{{&a}, {&k, &b}})
		})
		if err != nil || a != 1 || k != "b" || b != 2 {
			t.Errorf("QueryRows = %d, %q, %d, %v; want 1, \"b\", 2, nil", a, k, b, err)
		}
		err = db.InTx(ctx, func(ctx context.Context, tx store.Tx) error {
			return tx.QueryRows(ctx, []store.Stmt{{SQL: "SELECT v FROM scratch WHERE k = 'a'"}, {SQL: "SELECT v FROM scratch WHERE k = 'z'"}}, [][]any{{&a}, {&b}})
		})
		if !errors.Is(err, store.ErrNoRows) {
			t.Errorf("QueryRows of a query without a row = %v, want %v", err, store.ErrNoRows)
		}
		err = db.InTx(ctx, func(ctx context.Context, tx store.Tx) error {
			return tx.QueryRows(ctx, []store.Stmt{{SQL: "SELECT 1"}}, nil)
		})
		if err == nil {
			t.Error("QueryRows with one query and no destinations = nil, want an error")
		}
		if f.Dialect != store.Postgres {
			return
		}
		// The holder: takes the lock, inserts a row, and commits only once the reader waits
		// for the lock.
		holder := make(chan error, 1)
		locked := make(chan struct{})
		release := make(chan struct{})
		go func() {
			holder <- db.InTx(ctx, func(ctx context.Context, tx store.Tx) error {
				if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock(4242)"); err != nil {
					return err
				}
				if _, err := tx.Exec(ctx, "INSERT INTO scratch (k, v) VALUES ('held', 3)"); err != nil {
					return err
				}
				close(locked)
				<-release
				return nil
			})
		}()
		<-locked
		reader := make(chan error, 1)
		var n int64
		go func() {
			reader <- db.InTx(ctx, func(ctx context.Context, tx store.Tx) error {
				var got bool
				return tx.QueryRows(ctx, []store.Stmt{{SQL: "SELECT pg_advisory_xact_lock(4242) IS NOT NULL"},
					{SQL: "SELECT count(*) FROM scratch WHERE k = 'held'"}}, [][]any{{&got}, {&n}})
			})
		}()
		for waiting := false; !waiting; {
			if err := db.QueryRow(ctx, `SELECT EXISTS (SELECT FROM pg_locks WHERE locktype = 'advisory' AND objid = 4242 AND NOT granted)`).Scan(&waiting); err != nil {
				t.Fatal(err)
			}
		}
		close(release)
		if err := <-holder; err != nil {
			t.Fatalf("holder: %v", err)
		}
		if err := <-reader; err != nil || n != 1 {
			t.Errorf("reader after the lock: count = %d, %v; want 1 (the holder's row, committed before the lock was granted)", n, err)
		}
	})
}
