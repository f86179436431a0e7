package server_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/cobranca/cobranca/internal/auth"
	"github.com/cobranca/cobranca/internal/mcpapi"
	"github.com/cobranca/cobranca/internal/pipeline"
	"github.com/cobranca/cobranca/internal/server"
)

// limitedServer is the real route table behind the connection limiter, on
// a loopback port, with the given caps and timeouts.
type limitedServer struct {
	addr string
	ln   *server.ConnLimiter
	logs *bytes.Buffer
	mu   *sync.Mutex
	// token is a valid bearer token, for requests that must reach a
	// handler which reads their body.
	token string
}

func newLimitedServer(t *testing.T, caps server.ConnLimits, to server.Timeouts) *limitedServer {
	t.Helper()
	s := &limitedServer{logs: &bytes.Buffer{}, mu: &sync.Mutex{}}
	log := slog.New(slog.NewJSONHandler(lockedWriter{s.mu, s.logs}, nil))
	a := newTestAuth(t)
	s.token = mint(t, a, auth.MintOptions{})
	h := newMCP(t, mcpapi.Options{Logger: log, MaxBodyBytes: maxBody, Scopes: a}, pipeline.Options{})
	raw, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	caps.Logger = log
	s.ln = server.LimitConns(raw, caps)
	srv := s.ln.HTTPServer(server.Routes(server.Deps{Logger: log, MCP: h, MaxBodyBytes: maxBody, Auth: a}), to, nil)
	done := make(chan struct{})
	go func() { defer close(done); _ = srv.Serve(s.ln) }()
	t.Cleanup(func() { srv.Close(); <-done })
	s.addr = raw.Addr().String()
	return s
}

// slowRequest is the head of a request to /mcp and the first byte of its
// 10-byte body: the handler runs, reading a body that is still coming.
func (s *limitedServer) slowRequest() string {
	return "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer " + s.token +
		"\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: 10\r\n\r\n{"
}

// dial opens a connection to s from the loopback address src.
func (s *limitedServer) dial(t *testing.T, src string) net.Conn {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}, Timeout: 10 * time.Second}
	c, err := d.Dial("tcp", s.addr)
	if err != nil {
		t.Fatalf("dial from %s: %v", src, err)
	}
	return c
}

// healthz asks for /healthz on a connection of its own from src.
func (s *limitedServer) healthz(src string) (int, error) {
	tr := &http.Transport{DisableKeepAlives: true, DialContext: (&net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}}).DialContext}
	defer tr.CloseIdleConnections()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+s.addr+"/healthz", nil)
	resp, err := tr.RoundTrip(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, nil
}

// waitFor polls cond until it holds; the bound only keeps a broken test
// from hanging, it asserts no speed.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting for %s", what)
		}
	}
}

// closedByServer reports whether the server has closed c: a read sees the
// end of the stream rather than waiting.
func closedByServer(c net.Conn) bool {
	_ = c.SetReadDeadline(time.Now().Add(20 * time.Millisecond))
	_, err := c.Read(make([]byte, 1))
	var ne net.Error
	return !(errors.As(err, &ne) && ne.Timeout())
}

var long = server.Timeouts{ReadHeader: time.Minute, Read: time.Minute, Write: time.Minute, Idle: time.Minute}

// TestConnCapPerAddr: over its address's cap a new connection is closed at
// once, and other addresses are not affected.
func TestConnCapPerAddr(t *testing.T) {
	s := newLimitedServer(t, server.ConnLimits{PerAddr: 4}, long)
	var conns []net.Conn
	for range 10 {
		c := s.dial(t, "127.0.0.9")
		defer c.Close()
		conns = append(conns, c)
	}
	waitFor(t, "six refusals", func() bool { return s.ln.Stats().RefusedPerAddr == 6 })
	open := 0
	for _, c := range conns {
		if !closedByServer(c) {
			open++
		}
	}
	if st := s.ln.Stats(); open != 4 || st.Open != 4 || st.Evicted != 0 {
		t.Errorf("from one address: %d connections open (server: %+v), want 4", open, st)
	}
	if code, err := s.healthz("127.0.0.9"); err == nil {
		t.Errorf("a fifth connection from 127.0.0.9 was served (%d), want it closed", code)
	}
	if code, err := s.healthz("127.0.0.1"); code != http.StatusOK {
		t.Errorf("/healthz from another address: %d, %v; want 200", code, err)
	}
	// One log line however many refusals, and no address in it.
	s.mu.Lock()
	logs := s.logs.String()
	s.mu.Unlock()
	if n := strings.Count(logs, "connection cap reached"); n != 1 || strings.Contains(logs, "127.0.0.9") {
		t.Errorf("%d cap log lines, want 1, without the address:\n%s", n, logs)
	}
}

// TestConnCapEvictsWaiting: at the total cap a newcomer is admitted and the
// connection waiting longest without a complete request is closed; a
// connection whose request is being served is never closed for it.
func TestConnCapEvictsWaiting(t *testing.T) {
	s := newLimitedServer(t, server.ConnLimits{Total: 8}, long)
	// A request whose headers are complete and whose body is still coming:
	// its handler is running.
	busy := s.dial(t, "127.0.0.1")
	defer busy.Close()
	if _, err := io.WriteString(busy, s.slowRequest()); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the request to be served", func() bool { st := s.ln.Stats(); return st.Open == 1 && st.Waiting == 0 })
	var idle []net.Conn
	for i := range 7 {
		c := s.dial(t, "127.0.0.2")
		defer c.Close()
		if i == 6 { // half a request line: still no complete request
			_, _ = io.WriteString(c, "GET /hea")
		}
		idle = append(idle, c)
		waitFor(t, "the connection to be accepted", func() bool { return s.ln.Stats().Open == i+2 })
	}
	// Each newcomer evicts the oldest waiting connection, and only it.
	for i := range 7 {
		c := s.dial(t, "127.0.0.3")
		defer c.Close()
		waitFor(t, "an eviction", func() bool { return s.ln.Stats().Evicted == uint64(i+1) })
		if !closedByServer(idle[i]) {
			t.Errorf("newcomer %d: idle connection %d still open, want it evicted", i, i)
		}
		if i < 6 && closedByServer(idle[i+1]) {
			t.Errorf("newcomer %d: idle connection %d closed too, want only the oldest", i, i+1)
		}
	}
	if code, err := s.healthz("127.0.0.4"); code != http.StatusOK {
		t.Fatalf("/healthz at the cap: %d, %v; want 200", code, err)
	}
	if st := s.ln.Stats(); st.Evicted != 8 || st.RefusedTotal != 0 {
		t.Errorf("stats %+v, want 8 evicted, none refused", st)
	}
	if closedByServer(busy) {
		t.Fatal("the connection inside a request was evicted")
	}
	if _, err := io.WriteString(busy, "}        "); err != nil {
		t.Fatal(err)
	}
	_ = busy.SetReadDeadline(time.Now().Add(20 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(busy), nil)
	if err != nil {
		t.Fatalf("the busy request got no answer: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode == http.StatusUnauthorized || resp.StatusCode >= 500 {
		t.Errorf("busy request: %d, want its answer from /mcp", resp.StatusCode)
	}
}

// TestConnCapAllBusy: when every connection is inside a request, a
// newcomer is refused rather than one of them cut.
func TestConnCapAllBusy(t *testing.T) {
	s := newLimitedServer(t, server.ConnLimits{Total: 16}, long)
	for i := range 16 {
		c := s.dial(t, "127.0.0.1")
		defer c.Close()
		if _, err := io.WriteString(c, s.slowRequest()); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "the connection to be accepted", func() bool { return s.ln.Stats().Open == i+1 })
	}
	waitFor(t, "every request to be served", func() bool { return s.ln.Stats().Waiting == 0 })
	if code, err := s.healthz("127.0.0.2"); err == nil {
		t.Errorf("/healthz with every connection busy: %d, want the newcomer closed", code)
	}
	if st := s.ln.Stats(); st.Evicted != 0 || st.Open != 16 || st.RefusedTotal != 1 {
		t.Errorf("stats %+v, want 16 open, 1 refused, none evicted", st)
	}
}

// TestConnectionFlood: thousands of idle and trickling connections from
// many loopback addresses. The caps hold, /healthz answers throughout, the
// timeouts drop every flooding connection, and the heap comes back.
func TestConnectionFlood(t *testing.T) {
	const total, perAddr, sources = 128, 16, 40
	// Two descriptors per connection in this process (client and server
	// side), and room for everything else.
	n := 3000
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err == nil {
		n = min(n, int(lim.Cur)-total-256)
	}
	if n < 4*total {
		t.Fatalf("open-file limit %d too low for a flood test", lim.Cur)
	}
	heapBefore := heapInUse()
	s := newLimitedServer(t, server.ConnLimits{Total: total, PerAddr: perAddr},
		server.Timeouts{ReadHeader: time.Second, Read: 2 * time.Second, Write: 5 * time.Second, Idle: time.Second})

	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	var wg sync.WaitGroup
	defer wg.Wait()
	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for i := range n {
		// One connection in three from one address, the rest from many.
		src := netip.AddrFrom4([4]byte{127, 0, 1, byte(1 + i%sources)}).String()
		if i%3 == 0 {
			src = "127.0.2.1"
		}
		c := s.dial(t, src)
		conns = append(conns, c)
		if i%4 == 0 { // trickle a request line, a byte at a time
			wg.Go(func() {
				line := []byte("POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n")
				for j := 0; ctx.Err() == nil; j = (j + 1) % len(line) {
					if _, err := c.Write(line[j : j+1]); err != nil {
						return
					}
					time.Sleep(200 * time.Millisecond)
				}
			})
		}
		if i%500 == 0 {
			if code, err := s.healthz("127.0.0.1"); code != http.StatusOK {
				t.Errorf("/healthz after %d flooding connections: %d, %v; want 200", i, code, err)
			}
		}
		if st := s.ln.Stats(); st.Open > total {
			t.Fatalf("%d connections open, cap %d", st.Open, total)
		}
	}
	st := s.ln.Stats()
	if st.RefusedPerAddr == 0 || st.Evicted == 0 {
		t.Errorf("after %d connections: %+v; want refusals at the address cap and evictions at the total", n, st)
	}
	// Every connection still open from one address is within its cap.
	open := map[string]int{}
	for _, c := range conns {
		if !closedByServer(c) {
			open[c.LocalAddr().(*net.TCPAddr).IP.String()]++
		}
	}
	for addr, k := range open {
		if k > perAddr {
			t.Errorf("%d connections from %s open, cap %d", k, addr, perAddr)
		}
	}
	if code, err := s.healthz("127.0.0.1"); code != http.StatusOK {
		t.Errorf("/healthz at the end of the flood: %d, %v; want 200", code, err)
	}
	// The trickling connections go on sending; the timeouts close them all.
	waitFor(t, "the timeouts to close every connection", func() bool { return s.ln.Stats().Open == 0 })
	for i, c := range conns {
		if !closedByServer(c) {
			t.Fatalf("flooding connection %d still open after the timeouts", i)
		}
	}
	stop()
	wg.Wait()
	for _, c := range conns {
		c.Close()
	}
	conns = nil
	if after := heapInUse(); after > heapBefore+8<<20 {
		t.Errorf("heap in use %d MiB after the flood, %d MiB before: want it back within 8 MiB", after>>20, heapBefore>>20)
	}
}

func heapInUse() uint64 {
	runtime.GC()
	debug.FreeOSMemory()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse
}
