package pgtest_test

import (
	"bytes"
	"context"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

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

// TestSharedClusterLifetime: test binaries share one cluster (each child here is this binary
// run again, as go test runs packages' binaries side by side): the second finds the server
// the first started, the server outlives the first while the second uses it, and the last
// one out stops it. The next one starts it again on the same files, and, since no binary used
// it, drops the databases of a binary that died before its cleanups.
func TestSharedClusterLifetime(t *testing.T) {
	if os.Getenv("PGTEST_CHILD") != "" {
		sharedChild(t)
		return
	}
	if os.Getenv("COBRANCA_TEST_DATABASE_URL") != "" {
		t.Setenv("COBRANCA_TEST_DATABASE_URL", "")
	}
	base := pgtest.OwnDir(t, "pgtest-shared-")
	type child struct {
		cmd  *exec.Cmd
		dir  string // its files: url (written when it has a database), release (we write)
		done chan error
	}
	start := func(crash bool) *child {
		c := &child{dir: t.TempDir(), done: make(chan error, 1)}
		c.cmd = exec.Command(os.Args[0], "-test.run", "^TestSharedClusterLifetime$", "-test.count", "1")
		c.cmd.Env = append(os.Environ(), "CI=true", "PGTEST_CHILD="+c.dir, "PGTEST_CRASH="+strconv.FormatBool(crash))
		var out bytes.Buffer
		c.cmd.Stdout, c.cmd.Stderr = &out, &out
		if err := c.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		go func() {
			err := c.cmd.Wait()
			if err != nil {
				err = fmt.Errorf("%w\n%s", err, out.String())
			}
			c.done <- err
		}()
		return c
	}
	waitURL := func(c *child) string {
		for range 600 {
			if b, err := os.ReadFile(filepath.Join(c.dir, "url")); err == nil && len(b) > 0 {
				return string(b)
			}
			select {
			case err := <-c.done:
				if b, rerr := os.ReadFile(filepath.Join(c.dir, "url")); rerr == nil && len(b) > 0 {
					c.done <- err // for whoever waits on it next
					return string(b)
				}
				t.Fatalf("child ended before its database: %v", err)
			case <-time.After(50 * time.Millisecond):
			}
		}
		t.Fatal("child made no database in 30 s")
		return ""
	}
	finish := func(c *child) {
		if err := os.WriteFile(filepath.Join(c.dir, "release"), nil, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := <-c.done; err != nil {
			t.Fatalf("child: %v", err)
		}
	}
	up := func(u string) bool {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, maintenanceOf(t, u))
		if err != nil {
			return false
		}
		conn.Close(ctx)
		return true
	}
	exists := func(u, db string) bool {
		ctx := context.Background()
		conn, err := pgx.Connect(ctx, maintenanceOf(t, u))
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(ctx)
		var n int
		if err := conn.QueryRow(ctx, "SELECT count(*) FROM pg_database WHERE datname = $1", db).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n == 1
	}

	a := start(false)
	urlA := waitURL(a)
	b := start(false)
	urlB := waitURL(b)
	if hostOf(t, urlA) != hostOf(t, urlB) || !strings.HasPrefix(hostOf(t, urlA), base) {
		t.Fatalf("two binaries got servers %s and %s; want one, below %s", hostOf(t, urlA), hostOf(t, urlB), base)
	}
	finish(a)
	if !up(urlB) {
		t.Fatal("the server stopped when the first binary left, while the second used it")
	}
	finish(b)
	if up(urlB) {
		t.Fatal("the server still runs after the last binary left")
	}
	// A binary that dies keeps its database (no cleanup ran) and leaves the server running
	// with no user; the next binary uses it; once the last one out stopped it, the next start
	// drops the dead binary's database.
	d := start(true)
	urlD := waitURL(d)
	if err := <-d.done; err == nil {
		t.Fatal("the crashing child exited 0")
	}
	e := start(false)
	waitURL(e)
	finish(e)
	f := start(false)
	urlF := waitURL(f)
	if exists(urlF, dbOf(t, urlD)) {
		t.Errorf("database %s of a dead binary survived a restart of the shared server", dbOf(t, urlD))
	}
	if exists(urlF, "cobranca_template_lifetime_0") {
		t.Error("nine templates survived a restart of the shared server; want them dropped past eight")
	}
	finish(f)
}

// sharedChild is one test binary of TestSharedClusterLifetime: it joins the shared cluster,
// makes a database, says its URL, and waits to be released (or dies, without cleanups).
func sharedChild(t *testing.T) {
	dir := os.Getenv("PGTEST_CHILD")
	c := pgtest.New()
	t.Cleanup(c.Close) // after the database's own cleanup, which runs first
	u := c.Database(t)
	if err := os.WriteFile(filepath.Join(dir, "url.tmp"), []byte(u), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(dir, "url.tmp"), filepath.Join(dir, "url")); err != nil {
		t.Fatal(err)
	}
	if os.Getenv("PGTEST_CRASH") == "true" {
		// More templates than the sweep keeps, as many migration changes would leave.
		for i := range 9 {
			c.Template(t, fmt.Sprintf("lifetime_%d", i), func(context.Context, string) error { return nil })
		}
		os.Exit(3)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "release")); err == nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func hostOf(t *testing.T, u string) string {
	p, err := url.Parse(u)
	if err != nil {
		t.Fatal(err)
	}
	return p.Query().Get("host")
}

func dbOf(t *testing.T, u string) string {
	p, err := url.Parse(u)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimPrefix(p.Path, "/")
}

func maintenanceOf(t *testing.T, u string) string { return maintenance(t, u) }
