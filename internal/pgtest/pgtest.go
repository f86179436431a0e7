// Package pgtest gives tests a real, throwaway PostgreSQL: one cluster per test binary,
// started on first use, and a fresh database per test.
//
// When COBRANCA_TEST_DATABASE_URL is set, its server is used (the role must be allowed to
// create databases and roles): .ci/run starts one cluster for the whole run and exports it.
// Otherwise every test binary of the machine's user shares one cluster too, made with initdb
// and run with postgres (found on PATH or under /usr/lib/postgresql/*/bin, as the "postgres"
// OS user when the test runs as root, durability off, listening only on a unix socket), in
// a directory kept between runs: the first binary that needs it starts it, and the last one
// to finish stops it (two lock files tell: see shared). `go test ./...` runs a few dozen
// binaries, and a cluster each cost each one an initdb and its templates' migrations.
// initdb itself runs once per initdb binary: every cluster, the shared one and each Private
// one, is a copy (cp -a) of a pristine cluster kept beside them (see pristine).
// When PostgreSQL is not installed, tests are skipped, except when CI=true, where that is a
// failure; an installed PostgreSQL that fails to start fails the test everywhere (a skip
// would hide a broken cluster behind green runs).
//
// Clusters live on /dev/shm when it has room (a RAM file system; see Dir): each test creates
// and drops a database of a few hundred files, and on this project's ext4 machines creating
// files where many were just deleted cost the server most of its CPU time (a kernel scan of
// recently deleted inodes: 86 of its 104 s in `go test -short ./...`).
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
	"hash/fnv"
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

	dir      string              // temporary directory of a private cluster
	proc     *exec.Cmd           // the private postmaster, nil while stopped
	postgres string              // its binary
	cred     *syscall.Credential // whom it runs as (nil: us)
	private  bool                // a cluster of this binary's own, never a shared one
	users    *os.File            // the shared cluster's users lock, held shared while we use it

	templates sync.Map // template names this Cluster has made or found built
}

// New returns a Cluster that starts on the first call to Database: the server named by
// COBRANCA_TEST_DATABASE_URL when it is set, else the cluster shared by the user's test
// binaries.
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

// templateTimeout bounds a template's build: a store of scale (storetest.ConsoleVolume, a
// million invoices) takes minutes on a machine shared with other builds.
const templateTimeout = 15 * time.Minute

func (c *Cluster) buildTemplate(name string, build func(ctx context.Context, url string) error) error {
	ctx, cancel := context.WithTimeout(context.Background(), templateTimeout)
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

// errNotInstalled is why a cluster cannot start on a machine without PostgreSQL.
var errNotInstalled = errors.New("PostgreSQL is not installed")

// ensure starts the cluster on first use; a failure to start skips or fails the test as
// startFailure says.
func (c *Cluster) ensure(t testing.TB) {
	t.Helper()
	c.once.Do(func() { c.err = c.start() })
	if c.err == nil {
		return
	}
	if skip, msg := startFailure(c.err, os.Getenv("CI") == "true"); skip {
		t.Skip(msg)
	} else {
		t.Fatal(msg)
	}
}

// startFailure is what a test does when the cluster did not start with err: skip it when
// PostgreSQL is not installed, unless ci (CI=true); fail it otherwise.
func startFailure(err error, ci bool) (skip bool, msg string) {
	switch {
	case errors.Is(err, errNotInstalled) && !ci:
		return true, "pgtest: " + err.Error()
	case errors.Is(err, errNotInstalled):
		return false, "pgtest: PostgreSQL is required when CI=true: " + err.Error()
	default:
		return false, "pgtest: PostgreSQL is installed but did not start: " + err.Error()
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

// Close stops a private cluster and removes its files; a binary leaving the shared cluster
// stops it when it is the last one using it.
func (c *Cluster) Close() {
	if err := c.leave(); err != nil {
		fmt.Fprintf(os.Stderr, "pgtest: leaving the shared cluster: %v\n", err)
	}
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
	var cred *syscall.Credential
	if os.Geteuid() == 0 {
		// PostgreSQL refuses to run as root.
		u, err := user.Lookup("postgres")
		if err != nil {
			return fmt.Errorf("%w for root: running as root and no postgres user: %w", errNotInstalled, err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
	}
	c.postgres, c.cred = postgres, cred
	if !c.private {
		return c.shared(initdb)
	}
	dir, err := os.MkdirTemp(Dir(), "pgtest-")
	if err != nil {
		return err
	}
	c.dir = dir
	if err := c.initdb(initdb, dir); err != nil {
		return err
	}
	c.url = socketURL(dir)
	return c.launch()
}

// socketURL is the superuser URL of the maintenance database of the cluster listening in dir.
func socketURL(dir string) string {
	return "postgres://postgres@/postgres?host=" + url.QueryEscape(dir) + "&port=5432&sslmode=disable"
}

// initdbArgs are the options of every cluster tests make, but its directory.
var initdbArgs = []string{"-U", "postgres", "-A", "trust", "-E", "UTF8", "--locale=C", "--no-sync"}

// initdb makes a cluster in dir/data, dir being ours (and the postgres user's, when root): a
// copy of the pristine cluster, which costs a tenth of running initdb.
func (c *Cluster) initdb(initdb, dir string) error {
	if err := c.chown(dir); err != nil {
		return err
	}
	pristine, err := c.pristine(initdb)
	if err != nil {
		return err
	}
	// cp -a keeps the owner (the postgres user's, when we are root) and the modes.
	if out, err := exec.Command("cp", "-a", pristine, filepath.Join(dir, "data")).CombinedOutput(); err != nil {
		return fmt.Errorf("copy the pristine cluster: %v\n%s", err, out)
	}
	return nil
}

// pristine returns the data directory of a cluster initdb made and no server ever ran on,
// made once per user and initdb binary: its path, size and time name the directory, so
// that a new PostgreSQL makes a new one. Binaries that need it at the same time make it
// once, under a lock; a file written last says it is whole.
func (c *Cluster) pristine(initdb string) (string, error) {
	st, err := os.Stat(initdb)
	if err != nil {
		return "", err
	}
	key := shortHash(fmt.Sprint(initdb, st.Size(), st.ModTime().UnixNano(), initdbArgs))
	dir := filepath.Join(Dir(), fmt.Sprintf("cobranca-pgtest-%d-pristine-%s", os.Getuid(), key))
	data, whole := filepath.Join(dir, "data"), filepath.Join(dir, "whole")
	if isFile(whole) {
		return data, nil
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	if err := c.chown(dir); err != nil {
		return "", err
	}
	l, err := lock(filepath.Join(dir, "lock"), syscall.LOCK_EX)
	if err != nil {
		return "", err
	}
	defer l.Close()
	if isFile(whole) { // made while we waited
		return data, nil
	}
	if err := os.RemoveAll(data); err != nil { // what a binary that died half way left
		return "", err
	}
	cmd := exec.Command(initdb, append([]string{"-D", data}, initdbArgs...)...)
	cmd.Dir = dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: c.cred}
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("initdb: %v\n%s", err, out)
	}
	return data, os.WriteFile(whole, nil, 0o600)
}

// chown gives dir to the user the server runs as, when that is not us.
func (c *Cluster) chown(dir string) error {
	if c.cred == nil {
		return nil
	}
	return os.Chown(dir, int(c.cred.Uid), int(c.cred.Gid))
}

// Dir is where clusters are made: PGTEST_DIR when it is set, else /dev/shm when it is a
// directory we may write with at least 1 GiB free (a container's default 64 MiB is not
// enough), else the temporary directory.
func Dir() string {
	if d := os.Getenv("PGTEST_DIR"); d != "" {
		return d
	}
	var st syscall.Statfs_t
	if syscall.Statfs("/dev/shm", &st) == nil && st.Bavail*uint64(st.Bsize) >= 1<<30 && syscall.Access("/dev/shm", 2 /* W_OK */) == nil {
		return "/dev/shm"
	}
	return os.TempDir()
}

// shared joins the cluster every test binary of this user shares, starting it if it is not
// running. Two lock files beside it say who uses it: a binary holds users.lock shared while
// it does, and takes state.lock exclusively to start the server or to stop it (Close): so a
// binary that finds the server running may count on it until it lets users.lock go, and the
// last binary out (the one that can take users.lock exclusively) stops it.
func (c *Cluster) shared(initdb string) error {
	dir := filepath.Join(Dir(), fmt.Sprintf("cobranca-pgtest-%d-%s", os.Getuid(), shortHash(c.postgres)))
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	state, err := lock(filepath.Join(dir, "state.lock"), syscall.LOCK_EX)
	if err != nil {
		return err
	}
	defer state.Close() // releases the lock
	c.users, err = lock(filepath.Join(dir, "users.lock"), syscall.LOCK_SH)
	if err != nil {
		return err
	}
	c.url = socketURL(dir)
	if c.ping() == nil {
		return nil
	}
	// Not running (never started, stopped by the last binary out, or left by a crash): start
	// it, on the files of before when they are whole.
	data := filepath.Join(dir, "data")
	if !isFile(filepath.Join(data, "PG_VERSION")) {
		if err := os.RemoveAll(data); err != nil {
			return err
		}
		if err := c.initdb(initdb, dir); err != nil {
			return err
		}
	}
	if err := c.run(dir, false); err != nil {
		return err
	}
	// No binary uses the server yet: the databases of the tests of a binary that died
	// before its cleanups are dropped, and old templates once they add up.
	return c.sweep()
}

// sweep drops, on a shared server no binary is using yet, the test databases a crashed binary
// left, and every template once there are more than maxTemplates (each migration change names
// a new one).
func (c *Cluster) sweep() error {
	const maxTemplates = 8
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, c.url)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	var tests, templates []string
	rows, err := conn.Query(ctx, `SELECT datname FROM pg_database WHERE datname LIKE 'cobranca\_%'`)
	if err != nil {
		return err
	}
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			return err
		}
		if strings.HasPrefix(name, "cobranca_template_") {
			templates = append(templates, name)
		} else {
			tests = append(tests, name)
		}
	}
	if err := rows.Err(); err != nil {
		return err
	}
	if len(templates) > maxTemplates {
		tests = append(tests, templates...)
	}
	for _, name := range tests {
		id := pgx.Identifier{name}.Sanitize()
		// A template cannot be dropped until it is no longer one.
		if _, err := conn.Exec(ctx, "ALTER DATABASE "+id+" WITH IS_TEMPLATE false"); err != nil {
			return err
		}
		if _, err := conn.Exec(ctx, "DROP DATABASE "+id+" WITH (FORCE)"); err != nil {
			return err
		}
	}
	return nil
}

// leave lets the shared server go, stopping it when no other binary uses it.
func (c *Cluster) leave() error {
	if c.users == nil {
		return nil
	}
	dir := filepath.Dir(c.users.Name())
	state, err := lock(filepath.Join(dir, "state.lock"), syscall.LOCK_EX)
	if err != nil {
		return err
	}
	defer state.Close()
	// Under state.lock no binary can join: if users.lock is ours alone, we are the last out.
	last := syscall.Flock(int(c.users.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) == nil
	defer func() { c.users.Close(); c.users = nil }()
	if !last {
		return nil
	}
	return stopServer(filepath.Join(dir, "data"))
}

// stopServer asks the postmaster of data to shut down (fast: clients are disconnected) and
// waits until it has: until it removed its postmaster.pid, which it does last.
func stopServer(data string) error {
	pidFile := filepath.Join(data, "postmaster.pid")
	b, err := os.ReadFile(pidFile)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	pid, err := strconv.Atoi(strings.TrimSpace(strings.SplitN(string(b), "\n", 2)[0]))
	if err != nil {
		return fmt.Errorf("%s: %w", pidFile, err)
	}
	if err := syscall.Kill(pid, syscall.SIGINT); err != nil {
		return nil // gone already (the pid file of a crash)
	}
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if _, err := os.Stat(pidFile); errors.Is(err, os.ErrNotExist) {
			return nil
		}
	}
	_ = syscall.Kill(pid, syscall.SIGQUIT)
	return errors.New("postgres did not stop within 30 s: sent an immediate shutdown")
}

// lock opens (creating) path and takes how (syscall.LOCK_SH or LOCK_EX) on it, waiting.
func lock(path string, how int) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	for {
		err = syscall.Flock(int(f.Fd()), how)
		if !errors.Is(err, syscall.EINTR) {
			break
		}
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	return f, nil
}

func shortHash(s string) string {
	h := fnv.New32a()
	h.Write([]byte(s))
	return strconv.FormatUint(uint64(h.Sum32()), 36)
}

func (c *Cluster) ping() error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, c.url)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	return conn.Ping(ctx)
}

// launch starts the private cluster's postmaster on its data directory and waits until it
// answers.
func (c *Cluster) launch() error { return c.run(c.dir, true) }

// run starts the postmaster of dir/data and waits until it answers. A private one is this
// binary's child, and dies with it; a shared one outlives the binary that started it, in a
// session of its own.
func (c *Cluster) run(dir string, private bool) error {
	logFile, err := os.OpenFile(filepath.Join(dir, "postgres.log"), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer logFile.Close()
	// Unix socket only; durability off: the cluster holds only throwaway test databases.
	proc := exec.Command(c.postgres, "-D", filepath.Join(dir, "data"), "-k", dir, "-p", "5432",
		"-c", "listen_addresses=", "-c", "fsync=off", "-c", "synchronous_commit=off",
		"-c", "full_page_writes=off", "-c", "max_connections=500", "-c", "shared_buffers=128MB")
	proc.Dir = dir
	proc.Stdout, proc.Stderr = logFile, logFile
	proc.SysProcAttr = &syscall.SysProcAttr{Credential: c.cred, Setsid: true}
	if private {
		// Pdeathsig: should the test binary die, the postmaster does an immediate shutdown.
		proc.SysProcAttr = &syscall.SysProcAttr{Credential: c.cred, Pdeathsig: syscall.SIGQUIT}
	}
	if err := proc.Start(); err != nil {
		return fmt.Errorf("postgres: %w", err)
	}
	if private {
		c.proc = proc
	} else {
		go proc.Wait() // reaps it, should it stop while this binary lives
	}
	if err := c.waitReady(60 * time.Second); err != nil {
		log, _ := os.ReadFile(filepath.Join(dir, "postgres.log"))
		return fmt.Errorf("%w\n%s", err, log)
	}
	return nil
}

// Stop shuts the server down (fast shutdown: every client is disconnected) and keeps its
// files, so that a test sees its database go away; Start brings it back. Only for a Cluster
// of the test's own (pgtest.Private() in the test): stopping a shared server would break the
// tests running beside it (in this binary and others), so Stop on a shared server fails the
// test.
func (c *Cluster) Stop(t testing.TB) {
	t.Helper()
	c.ensure(t)
	if c.proc == nil {
		t.Fatal("pgtest: Stop on a shared server: a test that stops PostgreSQL uses pgtest.Private()")
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
	return "", "", fmt.Errorf("%w: initdb and postgres not found on PATH nor in /usr/lib/postgresql/*/bin", errNotInstalled)
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
