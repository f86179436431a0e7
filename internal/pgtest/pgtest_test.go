package pgtest_test

import (
	"context"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/cobranca/cobranca/internal/pgtest"
)

var pg = pgtest.New()

func TestMain(m *testing.M) { pg.Run(m) }

func TestDatabasesAreSeparate(t *testing.T) {
	ctx := context.Background()
	a, b := pg.Database(t), pg.Database(t)
	if a == b {
		t.Fatalf("Database() returned %q twice", a)
	}
	connA, err := pgx.Connect(ctx, a)
	if err != nil {
		t.Fatal(err)
	}
	defer connA.Close(ctx)
	if _, err := connA.Exec(ctx, "CREATE TABLE only_in_a (x int)"); err != nil {
		t.Fatal(err)
	}
	connB, err := pgx.Connect(ctx, b)
	if err != nil {
		t.Fatal(err)
	}
	defer connB.Close(ctx)
	var n int
	if err := connB.QueryRow(ctx, "SELECT count(*) FROM pg_tables WHERE tablename = 'only_in_a'").Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Errorf("table created in database A is visible in database B")
	}
}

// TestStopStart: a cluster of the test's own can be stopped, refusing connections, and
// started again with its data.
func TestStopStart(t *testing.T) {
	ctx := context.Background()
	own := pgtest.Private()
	t.Cleanup(own.Close)
	url := own.Database(t)
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, "CREATE TABLE kept (x int)"); err != nil {
		t.Fatal(err)
	}
	conn.Close(ctx)

	own.Stop(t)
	if conn, err := pgx.Connect(ctx, url); err == nil {
		conn.Close(ctx)
		t.Fatal("Connect() to a stopped cluster succeeded")
	}
	own.Start(t)
	conn, err = pgx.Connect(ctx, url)
	if err != nil {
		t.Fatalf("Connect() after Start: %v", err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "INSERT INTO kept VALUES (1)"); err != nil {
		t.Errorf("the table made before Stop: %v", err)
	}
}

// TestTemplate: the template is built once, by one of two binaries sharing the server (two
// Clusters on one COBRANCA_TEST_DATABASE_URL, asking at the same time), and each database
// copied from it holds what the build made, apart from the others.
func TestTemplate(t *testing.T) {
	ctx := context.Background()
	t.Setenv("COBRANCA_TEST_DATABASE_URL", maintenance(t, pg.Database(t)))
	var builds atomic.Int32
	build := func(ctx context.Context, url string) error {
		builds.Add(1)
		conn, err := pgx.Connect(ctx, url)
		if err != nil {
			return err
		}
		defer conn.Close(ctx)
		_, err = conn.Exec(ctx, "CREATE TABLE built (x int); INSERT INTO built VALUES (1)")
		return err
	}
	name := "test_" + pgtest.RandomName()
	binaries := []*pgtest.Cluster{pgtest.New(), pgtest.New()}
	urls := make([]string, 4)
	var wg sync.WaitGroup
	for i := range urls {
		wg.Go(func() { urls[i] = binaries[i%2].Template(t, name, build) })
	}
	wg.Wait()
	if n := builds.Load(); n != 1 {
		t.Errorf("build ran %d times, want once", n)
	}
	for i, u := range urls {
		conn, err := pgx.Connect(ctx, u)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, "INSERT INTO built VALUES ($1)", i+2); err != nil {
			t.Fatalf("database %d: %v", i, err)
		}
	}
	for i, u := range urls {
		conn, err := pgx.Connect(ctx, u)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(ctx)
		var n int
		if err := conn.QueryRow(ctx, "SELECT count(*) FROM built").Scan(&n); err != nil || n != 2 {
			t.Errorf("database %d holds %d rows (%v), want the template's and its own", i, n, err)
		}
	}
}

// TestTemplateHalfBuilt: a template whose build failed is built again by the next test that
// asks, not copied half made.
func TestTemplateHalfBuilt(t *testing.T) {
	ctx := context.Background()
	name := "test_" + pgtest.RandomName()
	failing := func(ctx context.Context, url string) error {
		conn, err := pgx.Connect(ctx, url)
		if err != nil {
			return err
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, "CREATE TABLE half (x int)"); err != nil {
			return err
		}
		return context.Canceled
	}
	t.Run("fails", func(t *testing.T) {
		ft := &fatalTB{TB: t}
		func() {
			defer func() { _ = recover() }()
			pg.Template(ft, name, failing)
		}()
		if !ft.failed {
			t.Fatal("Template with a failing build did not fail the test")
		}
	})
	u := pg.Template(t, name, func(ctx context.Context, url string) error {
		conn, err := pgx.Connect(ctx, url)
		if err != nil {
			return err
		}
		defer conn.Close(ctx)
		_, err = conn.Exec(ctx, "CREATE TABLE whole (x int)")
		return err
	})
	conn, err := pgx.Connect(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var tables []string
	rows, _ := conn.Query(ctx, "SELECT tablename FROM pg_tables WHERE schemaname = 'public'")
	tables, err = pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil || len(tables) != 1 || tables[0] != "whole" {
		t.Errorf("copy of the rebuilt template has tables %v (%v), want [whole]", tables, err)
	}
}

// TestPrivate: a Private cluster is a server of its own even where COBRANCA_TEST_DATABASE_URL
// names a shared one.
func TestPrivate(t *testing.T) {
	shared := maintenance(t, pg.Database(t))
	t.Setenv("COBRANCA_TEST_DATABASE_URL", shared)
	own := pgtest.Private()
	t.Cleanup(own.Close)
	a, _ := url.Parse(shared)
	b, _ := url.Parse(own.Database(t))
	if a.Query().Get("host") == b.Query().Get("host") && a.Host == b.Host {
		t.Errorf("Private() database %s is on the shared server %s", b, a)
	}
}

// maintenance returns the URL of the server's maintenance database, from one of its databases.
func maintenance(t *testing.T, db string) string {
	u, err := url.Parse(db)
	if err != nil {
		t.Fatal(err)
	}
	u.Path = "/postgres"
	return u.String()
}

// fatalTB records Fatal instead of ending the goroutine's test, to see a failure happen.
type fatalTB struct {
	testing.TB
	failed bool
}

func (f *fatalTB) Fatalf(format string, args ...any) { f.failed = true; panic(f) }
func (f *fatalTB) Fatal(args ...any)                 { f.failed = true; panic(f) }
func (f *fatalTB) Errorf(format string, args ...any) { f.failed = true }
