// Package pgtest gives tests a real, throwaway PostgreSQL: one cluster per test binary,
// started on first use, and a fresh database per test.
//
// When COBRANCA_TEST_DATABASE_URL is set, its server is used instead (the role must be allowed
// to create databases and roles): .ci/run starts one cluster for the whole run and exports it,
// so that no test binary pays for a cluster of its own. Otherwise the cluster is made with
// initdb and run with postgres, found on PATH or under /usr/lib/postgresql/*/bin, as the
// "postgres" OS user when the test runs as root, listening only on a unix socket in a
// temporary directory that is removed at the end. When PostgreSQL is missing, tests are
// skipped, except when CI=true, where that is a failure.
//
// A test that stops the server uses a cluster of its own, Private, never the shared one.
// Databases that start from the same state (migrated, say) are cloned from a template built
// once per server: Template.
//
// Use one Cluster per test binary:
//
//	var pg = pgtest.New()
//
//	func TestMain(m *testing.M) {
//		code := m.Run()
//		pg.Close()
//		os.Exit(code)
//	}
//
//	func TestSomething(t *testing.T) {
//		url := pg.Database(t)
//		…
//	}
package pgtest

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// Cluster is a PostgreSQL server for the tests of one binary. The zero value is not usable:
// call New.
type Cluster struct {
	once sync.Once
	err  error
	url  string // superuser URL of the maintenance database

	dir      string              // temporary directory of a cluster we started
	proc     *exec.Cmd           // the postmaster we started, nil while stopped
	postgres string              // its binary
	cred     *syscall.Credential // whom it runs as (nil: us)
	private  bool                // never COBRANCA_TEST_DATABASE_URL's server

	templates sync.Map // template names this Cluster has made or found built
}

// New returns a Cluster that starts on the first call to Database: the server named by
// COBRANCA_TEST_DATABASE_URL when it is set, else a cluster of its own.
func New() *Cluster { return &Cluster{} }

// Private returns a Cluster that always starts a cluster of its own, even when
// COBRANCA_TEST_DATABASE_URL is set: for a test that stops the server (Stop), which would break
// every test sharing it.
func Private() *Cluster { return &Cluster{private: true} }

// Database creates a new, empty database and returns a superuser URL for it. The database is
// dropped when the test ends.
func (c *Cluster) Database(t testing.TB) string {
	t.Helper()
	c.ensure(t)
	return c.create(t, "")
}

// create makes a database (a copy of template, when not empty), dropped when the test ends,
// and returns a superuser URL for it.
func (c *Cluster) create(t testing.TB, template string) string {
	t.Helper()
	name := "cobranca_test_" + randomName()
	ctx := context.Background()
	sql := "CREATE DATABASE " + pgx.Identifier{name}.Sanitize()
	if template != "" {
		sql += " TEMPLATE " + pgx.Identifier{template}.Sanitize()
	}
	if err := c.admin(ctx, sql); err != nil {
		t.Fatalf("pgtest: create database: %v", err)
	}
	t.Cleanup(func() {
		if err := c.admin(context.Background(), "DROP DATABASE "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)"); err != nil {
			t.Errorf("pgtest: drop database: %v", err)
		}
	})
	u, err := c.urlOf(name)
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	return u
}

// urlOf returns the superuser URL of database name.
func (c *Cluster) urlOf(name string) (string, error) {
	u, err := url.Parse(c.url)
	if err != nil {
		return "", err
	}
	u.Path = "/" + name
	return u.String(), nil
}

// Template returns a new database (dropped when the test ends) copied from the template
// database called name, which build makes, given its superuser URL, the first time any test
// on this server asks for it: later calls, from this test binary or any other sharing the
// server, only copy it (CREATE DATABASE … TEMPLATE), which is much cheaper than, say,
// migrating a database each time. name must say what build makes (for migrations, a hash of
// them), since a template is never rebuilt while the server lives. build must leave no
// connection open to the database: a template in use cannot be copied. Binaries that ask
// for the same template at the same time build it once, under an advisory lock.
func (c *Cluster) Template(t testing.TB, name string, build func(ctx context.Context, url string) error) string {
	t.Helper()
	c.ensure(t)
	name = "cobranca_template_" + name
	if len(name) > 63 {
		t.Fatalf("pgtest: template name %q is longer than PostgreSQL's 63 bytes", name)
	}
	if _, ok := c.templates.Load(name); !ok {
		if err := c.buildTemplate(name, build); err != nil {
			t.Fatalf("pgtest: template %s: %v", name, err)
		}
		c.templates.Store(name, true)
	}
	return c.create(t, name)
}

func (c *Cluster) buildTemplate(name string, build func(ctx context.Context, url string) error) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, c.url)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	// Session-level: held across the build, released when conn closes, also on a crash.
	if _, err := conn.Exec(ctx, "SELECT pg_advisory_lock(hashtext($1))", name); err != nil {
		return err
	}
	var ready bool
	err = conn.QueryRow(ctx, "SELECT datistemplate FROM pg_database WHERE datname = $1", name).Scan(&ready)
	switch {
	case err == nil && ready:
		return nil
	case err == nil:
		// A build that died half way: start over.
		if _, err := conn.Exec(ctx, "DROP DATABASE "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)"); err != nil {
			return err
		}
	case !errors.Is(err, pgx.ErrNoRows):
		return err
	}
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		return err
	}
	u, err := c.urlOf(name)
	if err != nil {
		return err
	}
	if err := build(ctx, u); err != nil {
		return fmt.Errorf("build: %w", err)
	}
	// Only a finished build is a template: the mark is what later binaries look for.
	_, err = conn.Exec(ctx, "ALTER DATABASE "+pgx.Identifier{name}.Sanitize()+" WITH IS_TEMPLATE true ALLOW_CONNECTIONS false")
	return err
}

// Exec runs statements as the superuser in the maintenance database: roles, mostly.
func (c *Cluster) Exec(t testing.TB, sql string) {
	t.Helper()
	c.ensure(t)
	if err := c.admin(context.Background(), sql); err != nil {
		t.Fatalf("pgtest: %s: %v", sql, err)
	}
}

// ensure starts the cluster on first use; without PostgreSQL it skips the test, or fails it
// when CI=true.
func (c *Cluster) ensure(t testing.TB) {
	t.Helper()
	c.once.Do(func() { c.err = c.start() })
	if c.err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("PostgreSQL is required when CI=true: %v", c.err)
		}
		t.Skipf("PostgreSQL not available: %v", c.err)
	}
}

// WithUser returns databaseURL with its user and password replaced.
func WithUser(t testing.TB, databaseURL, user, password string) string {
	t.Helper()
	u, err := url.Parse(databaseURL)
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	u.User = url.UserPassword(user, password)
	return u.String()
}

// RandomName returns a short random lower-case identifier suffix, for roles and databases.
func RandomName() string { return randomName() }

func randomName() string {
	const letters = "abcdefghijklmnopqrstuvwxyz0123456789"
	b := make([]byte, 12)
	rand.Read(b)
	for i := range b {
		b[i] = letters[int(b[i])%len(letters)]
	}
	return string(b)
}

func (c *Cluster) admin(ctx context.Context, sql string) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, c.url)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, sql)
	return err
}

// Close stops the cluster and removes its files, if this Cluster started one.
func (c *Cluster) Close() {
	_ = c.stopProc()
	if c.dir != "" {
		_ = os.RemoveAll(c.dir)
	}
}

func (c *Cluster) start() error {
	if u := os.Getenv("COBRANCA_TEST_DATABASE_URL"); u != "" && !c.private {
		c.url = u
		return c.waitReady(10 * time.Second)
	}
	initdb, postgres, err := binaries()
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "pgtest-")
	if err != nil {
		return err
	}
	c.dir = dir
	var cred *syscall.Credential
	if os.Geteuid() == 0 {
		// PostgreSQL refuses to run as root.
		u, err := user.Lookup("postgres")
		if err != nil {
			return fmt.Errorf("running as root and no postgres user: %w", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
		if err := os.Chown(dir, uid, gid); err != nil {
			return err
		}
	}
	data := filepath.Join(dir, "data")
	cmd := exec.Command(initdb, "-D", data, "-U", "postgres", "-A", "trust", "-E", "UTF8", "--locale=C", "--no-sync")
	cmd.Dir = dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("initdb: %v\n%s", err, out)
	}
	c.postgres, c.cred = postgres, cred
	c.url = "postgres://postgres@/postgres?host=" + url.QueryEscape(dir) + "&port=5432&sslmode=disable"
	return c.launch()
}

// launch starts the postmaster on the cluster's data directory and waits until it answers.
func (c *Cluster) launch() error {
	logFile, err := os.OpenFile(filepath.Join(c.dir, "postgres.log"), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer logFile.Close()
	// Unix socket only; durability off: the cluster lives as long as the test binary.
	c.proc = exec.Command(c.postgres, "-D", filepath.Join(c.dir, "data"), "-k", c.dir, "-p", "5432",
		"-c", "listen_addresses=", "-c", "fsync=off", "-c", "synchronous_commit=off",
		"-c", "full_page_writes=off", "-c", "max_connections=300", "-c", "shared_buffers=64MB")
	c.proc.Dir = c.dir
	c.proc.Stdout, c.proc.Stderr = logFile, logFile
	// Pdeathsig: should the test binary die, the postmaster does an immediate shutdown.
	c.proc.SysProcAttr = &syscall.SysProcAttr{Credential: c.cred, Pdeathsig: syscall.SIGQUIT}
	if err := c.proc.Start(); err != nil {
		return fmt.Errorf("postgres: %w", err)
	}
	if err := c.waitReady(60 * time.Second); err != nil {
		log, _ := os.ReadFile(filepath.Join(c.dir, "postgres.log"))
		return fmt.Errorf("%w\n%s", err, log)
	}
	return nil
}

// Stop shuts the server down (fast shutdown: every client is disconnected) and keeps its
// files, so that a test sees its database go away; Start brings it back. Only for a Cluster
// of the test's own (pgtest.Private() in the test): stopping a shared server would break the
// tests running beside it, so Stop on the server named by COBRANCA_TEST_DATABASE_URL fails
// the test.
func (c *Cluster) Stop(t testing.TB) {
	t.Helper()
	c.ensure(t)
	if c.proc == nil {
		t.Fatal("pgtest: Stop on the shared server of COBRANCA_TEST_DATABASE_URL: a test that stops PostgreSQL uses pgtest.Private()")
	}
	if err := c.stopProc(); err != nil {
		t.Fatalf("pgtest: stop: %v", err)
	}
}

// Start starts the server Stop stopped, on the same files, and waits until it answers.
func (c *Cluster) Start(t testing.TB) {
	t.Helper()
	if err := c.launch(); err != nil {
		t.Fatalf("pgtest: start: %v", err)
	}
}

func (c *Cluster) stopProc() error {
	if c.proc == nil || c.proc.Process == nil {
		return nil
	}
	defer func() { c.proc = nil }()
	// SIGINT is PostgreSQL's fast shutdown: disconnect everyone, stop.
	if err := c.proc.Process.Signal(syscall.SIGINT); err != nil {
		return err
	}
	done := make(chan struct{})
	go func() { _ = c.proc.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-time.After(30 * time.Second):
		_ = c.proc.Process.Kill()
		<-done
		return errors.New("postgres did not stop within 30 s: killed")
	}
}

func (c *Cluster) waitReady(timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		conn, err := pgx.Connect(ctx, c.url)
		if err == nil {
			err = conn.Ping(ctx)
			conn.Close(ctx)
		}
		cancel()
		if err == nil {
			return nil
		}
		if c.proc != nil && c.proc.ProcessState != nil {
			return errors.New("postgres exited")
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("postgres not ready after %v: %w", timeout, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// binaries finds initdb and postgres: on PATH, else the newest /usr/lib/postgresql/*/bin.
func binaries() (initdb, postgres string, err error) {
	if i, err := exec.LookPath("initdb"); err == nil {
		if p, err := exec.LookPath("postgres"); err == nil {
			return i, p, nil
		}
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	slices.SortFunc(dirs, func(a, b string) int {
		return versionOf(b) - versionOf(a)
	})
	for _, d := range dirs {
		i, p := filepath.Join(d, "initdb"), filepath.Join(d, "postgres")
		if isFile(i) && isFile(p) {
			return i, p, nil
		}
	}
	return "", "", errors.New("initdb and postgres not found on PATH nor in /usr/lib/postgresql/*/bin")
}

func versionOf(binDir string) int {
	v, _ := strconv.Atoi(strings.Split(filepath.Base(filepath.Dir(binDir)), ".")[0])
	return v
}

func isFile(p string) bool {
	st, err := os.Stat(p)
	return err == nil && !st.IsDir()
}

// Run is a test binary's TestMain body: it runs the tests, removes the
// cluster c started (if any), and exits with the tests' status.
func (c *Cluster) Run(m *testing.M) {
	code := m.Run()
	c.Close()
	os.Exit(code)
}
