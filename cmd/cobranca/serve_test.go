package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cobranca/cobranca/internal/approval"
	"github.com/cobranca/cobranca/internal/ident"
	"github.com/cobranca/cobranca/internal/store/storetest"
)

// serveLog keeps, from serve's JSON log lines as they are written, the
// "addr" of each message.
type serveLog struct {
	mu    sync.Mutex
	addrs map[string]string
	all   strings.Builder
}

func (l *serveLog) read(r io.Reader) {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		var line struct{ Msg, Addr string }
		_ = json.Unmarshal(sc.Bytes(), &line)
		l.mu.Lock()
		if _, seen := l.addrs[line.Msg]; !seen {
			l.addrs[line.Msg] = line.Addr
		}
		l.all.Write(sc.Bytes())
		l.all.WriteByte('\n')
		l.mu.Unlock()
	}
}

// logged returns the "addr" of the first log line with message msg.
func (l *serveLog) logged(msg string) (string, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	addr, ok := l.addrs[msg]
	return addr, ok
}

func (l *serveLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.all.String()
}

// startServe runs `cobranca serve` on loopback ports of its own until the
// returned stop is called, which returns serve's error.
func startServe(t *testing.T, extra ...string) (logs *serveLog, stop func() error) {
	t.Helper()
	environ := append([]string{"COBRANCA_DATA_DIR=" + t.TempDir(), "COBRANCA_ADDR=127.0.0.1:0"}, extra...)
	ctx, cancel := context.WithCancel(t.Context())
	logs = &serveLog{addrs: map[string]string{}}
	pr, pw := io.Pipe()
	read := make(chan struct{})
	go func() { defer close(read); logs.read(pr) }()
	errc := make(chan error, 1)
	go func() {
		err := run(ctx, []string{"serve"}, environ, nil, io.Discard, pw)
		pw.Close()
		<-read
		errc <- err
	}()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if _, ok := logs.logged("cobranca listening"); ok {
			break
		}
		select {
		case err := <-errc:
			t.Fatalf("serve ended before listening: %v\n%s", err, logs.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("serve did not start listening")
		}
	}
	var once sync.Once
	var err error
	stop = func() error {
		once.Do(func() { cancel(); err = <-errc })
		return err
	}
	t.Cleanup(func() { _ = stop() })
	return logs, stop
}

// freeAddr returns a loopback address with a port nobody listens on, for a server whose
// address must be known before it starts (development mode's issuer and resource name it).
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// eachStore runs f as a subtest on SQLite (db empty: the data directory's) and on a
// PostgreSQL database of its own (db: its COBRANCA_DATABASE_URL) on the package's cluster,
// copied from the migrated template (a `cobranca migrate` in f finds nothing to do; the
// command migrating an empty PostgreSQL database is TestCustomersImport's). A test that seals
// or verifies the audit chain on PostgreSQL does not run in parallel: the sealer takes only
// events older than every transaction open on the cluster (pg_snapshot_xmin), so another
// test's transactions would hold its last events back.
func eachStore(t *testing.T, f func(t *testing.T, db []string)) {
	t.Helper()
	t.Run("sqlite", func(t *testing.T) { f(t, nil) })
	t.Run("postgres", func(t *testing.T) { f(t, []string{"COBRANCA_DATABASE_URL=" + storetest.MigratedPostgres(t, pg)}) })
}

// eachStoreAtOnce is eachStore with the two subtests side by side: for end-to-end tests that
// mostly wait on their serve processes. Only the PostgreSQL one uses the cluster, so nothing
// holds its sealer back.
func eachStoreAtOnce(t *testing.T, f func(t *testing.T, db []string)) {
	t.Helper()
	eachStore(t, func(t *testing.T, db []string) {
		t.Parallel()
		f(t, db)
	})
}

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestServeMetricsListener: serve answers /metrics on the metrics listener
// only, the public port says 404, and both listeners are closed when serve
// returns from its shutdown.
func TestServeMetricsListener(t *testing.T) {
	logs, stop := startServe(t, "COBRANCA_METRICS_ADDR=127.0.0.1:0")
	public, _ := logs.logged("cobranca listening")
	metricsURL, ok := logs.logged("metrics served")
	if !ok {
		t.Fatalf("no metrics listener:\n%s", logs.String())
	}
	if code, _ := get(t, "http://"+public+"/metrics"); code != http.StatusNotFound {
		t.Errorf("public GET /metrics = %d, want 404", code)
	}
	if code, _ := get(t, "http://"+public+"/healthz"); code != http.StatusOK {
		t.Errorf("public GET /healthz = %d, want 200", code)
	}
	code, body := get(t, metricsURL)
	if code != http.StatusOK {
		t.Fatalf("GET %s = %d", metricsURL, code)
	}
	for _, want := range []string{"cobranca_connections_open ", "cobranca_connections_refused_total 0", "cobranca_connections_evicted_total 0", "cobranca_fastpath_calls_total"} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	if err := stop(); err != nil {
		t.Fatalf("serve: %v", err)
	}
	metricsAddr := strings.TrimSuffix(strings.TrimPrefix(metricsURL, "http://"), "/metrics")
	for _, addr := range []string{public, metricsAddr} {
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			t.Errorf("%s still accepts connections after serve returned", addr)
		}
	}
}

// TestServeMetricsOff: COBRANCA_METRICS_ADDR=off serves no metrics at all.
func TestServeMetricsOff(t *testing.T) {
	logs, stop := startServe(t, "COBRANCA_METRICS_ADDR=off")
	public, _ := logs.logged("cobranca listening")
	if code, _ := get(t, "http://"+public+"/metrics"); code != http.StatusNotFound {
		t.Errorf("public GET /metrics = %d, want 404", code)
	}
	if err := stop(); err != nil {
		t.Fatalf("serve: %v", err)
	}
	if _, ok := logs.logged("metrics served"); ok {
		t.Error("a metrics listener was started")
	}
}

// TestConnCap: the total connection cap stays at half the open-file limit
// at most, so that at the cap the process still has descriptors left.
func TestConnCap(t *testing.T) {
	nofile, ok := openFileLimit()
	if !ok {
		t.Fatal("no open-file limit to read")
	}
	log := slog.New(slog.DiscardHandler)
	half := int(max(nofile/2, 16))
	for _, tt := range []struct{ configured, want int }{
		{0, 0},
		{16, 16},
		{half, half},
		{int(nofile), half},
		{int(nofile) * 4, half},
	} {
		if got := connCap(tt.configured, log); got != tt.want {
			t.Errorf("connCap(%d) with an open-file limit of %d = %d, want %d", tt.configured, nofile, got, tt.want)
		}
	}
}

// TestServePages: serve serves the approval page and sign-in; in development mode sign-in
// discovers the server's own authorization server, as the built-in web client.
func TestServePages(t *testing.T) {
	// The development issuer is the base URL, so the port must be known before serve starts.
	addr := freeAddr(t)
	startServe(t, "COBRANCA_ADDR="+addr, "COBRANCA_METRICS_ADDR=off")
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	hop := func(path string) (int, string) {
		resp, err := noRedirect.Get("http://" + addr + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode, resp.Header.Get("Location")
	}
	id := ident.New(approval.Prefix)
	if code, loc := hop("/approvals/" + id); code != http.StatusSeeOther || loc != "/signin?return=%2Fapprovals%2F"+id {
		t.Fatalf("GET the approval page signed out = %d to %q, want 303 to sign in", code, loc)
	}
	code, loc := hop("/signin?return=%2Fapprovals%2F" + id)
	want := "http://" + addr + "/oauth/authorize?"
	if code != http.StatusFound || !strings.HasPrefix(loc, want) || !strings.Contains(loc, "client_id=cobranca-web") {
		t.Fatalf("GET /signin = %d to %q, want 302 to %s… as cobranca-web", code, loc, want)
	}
	if code, _ := hop(strings.TrimPrefix(loc, "http://"+addr)); code != http.StatusOK {
		t.Errorf("the development sign-in page = %d, want 200", code)
	}
}
