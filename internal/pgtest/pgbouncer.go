package pgtest

import (
	"cmp"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// PgBouncerBinary is where Debian's pgbouncer package installs the pooler.
const PgBouncerBinary = "/usr/sbin/pgbouncer"

// PgBouncer starts PgBouncer (Debian's, PgBouncerBinary) in transaction pooling mode in front
// of the server of databaseURL (a URL this Cluster gave), at most poolSize server connections
// per database and user, and returns databaseURL through it, with pgx's
// default_query_exec_mode=cache_describe (no named prepared statements, which a pooler in
// transaction mode loses between transactions). The pooler trusts every user (auth_type =
// trust) and stops when the test ends. Without PgBouncer the test is skipped, except when
// CI=true, where it fails, as without PostgreSQL.
func (c *Cluster) PgBouncer(t testing.TB, databaseURL string, poolSize int) string {
	t.Helper()
	if !isFile(PgBouncerBinary) {
		if os.Getenv("CI") == "true" {
			t.Fatalf("pgtest: PgBouncer is required when CI=true: no %s (apt-get install pgbouncer)", PgBouncerBinary)
		}
		t.Skipf("pgtest: PgBouncer is not installed: no %s", PgBouncerBinary)
	}
	u, err := url.Parse(databaseURL)
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	q := u.Query()
	host, port := q.Get("host"), q.Get("port")
	if host == "" {
		host = u.Hostname()
	}
	if port == "" {
		port = cmp.Or(u.Port(), "5432")
	}
	user := u.User.Username()
	dir, err := os.MkdirTemp(Dir(), "pgbouncer-")
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	listen := freePort(t)
	conf := fmt.Sprintf(`[databases]
* = host=%s port=%s

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = %d
unix_socket_dir =
auth_type = trust
auth_file = %s
pool_mode = transaction
default_pool_size = %d
max_client_conn = 200
ignore_startup_parameters = extra_float_digits
`, host, port, listen, filepath.Join(dir, "userlist.txt"), poolSize)
	if err := os.WriteFile(filepath.Join(dir, "pgbouncer.ini"), []byte(conf), 0o644); err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "userlist.txt"), []byte(strconv.Quote(user)+` ""`+"\n"), 0o644); err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	// PgBouncer refuses to run as root: as the postgres user then, as the server runs.
	cred, err := serverCredential()
	if err != nil {
		t.Fatalf("pgtest: pgbouncer: %v", err)
	}
	if cred != nil {
		if err := os.Chown(dir, int(cred.Uid), int(cred.Gid)); err != nil {
			t.Fatalf("pgtest: %v", err)
		}
	}
	var log strings.Builder
	proc := exec.Command(PgBouncerBinary, filepath.Join(dir, "pgbouncer.ini"))
	proc.Stdout, proc.Stderr = &log, &log
	proc.SysProcAttr = &syscall.SysProcAttr{Credential: cred, Pdeathsig: syscall.SIGKILL}
	if err := proc.Start(); err != nil {
		t.Fatalf("pgtest: pgbouncer: %v", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- proc.Wait() }()
	t.Cleanup(func() {
		proc.Process.Kill()
		<-exited
	})
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(listen))
	for deadline := time.Now().Add(10 * time.Second); ; {
		conn, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			conn.Close()
			break
		}
		select {
		case err := <-exited:
			t.Fatalf("pgtest: pgbouncer exited: %v\n%s", err, log.String())
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("pgtest: pgbouncer did not listen on %s: %v", addr, err)
		}
	}
	out := url.URL{Scheme: "postgres", User: u.User, Host: addr, Path: u.Path}
	out.RawQuery = url.Values{"sslmode": {"disable"}, "default_query_exec_mode": {"cache_describe"}}.Encode()
	return out.String()
}

// serverCredential is who runs the servers tests start: the postgres OS user when the test
// runs as root, nil (the test's own user) otherwise.
func serverCredential() (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		return nil, errors.New("running as root and no postgres user")
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
}

// freePort is a TCP port on 127.0.0.1 nothing listens on just now.
func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
