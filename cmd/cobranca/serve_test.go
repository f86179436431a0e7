package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// syncBuffer is the server's stderr, read while it runs.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// logged returns the "addr" of the first log line with message msg.
func (s *syncBuffer) logged(msg string) (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sc := bufio.NewScanner(bytes.NewReader(s.b.Bytes()))
	for sc.Scan() {
		var line struct{ Msg, Addr string }
		if json.Unmarshal(sc.Bytes(), &line) == nil && line.Msg == msg {
			return line.Addr, true
		}
	}
	return "", false
}

// startServe runs `cobranca serve` on loopback ports of its own until the
// returned stop is called, which returns serve's error.
func startServe(t *testing.T, extra ...string) (logs *syncBuffer, stop func() error) {
	t.Helper()
	environ := append([]string{"COBRANCA_DATA_DIR=" + t.TempDir(), "COBRANCA_ADDR=127.0.0.1:0"}, extra...)
	ctx, cancel := context.WithCancel(t.Context())
	logs = &syncBuffer{}
	errc := make(chan error, 1)
	go func() { errc <- run(ctx, []string{"serve"}, environ, nil, io.Discard, logs) }()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if _, ok := logs.logged("cobranca listening"); ok {
			break
		}
		select {
		case err := <-errc:
			t.Fatalf("serve ended before listening: %v\n%s", err, logs.b.String())
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
		t.Fatalf("no metrics listener:\n%s", logs.b.String())
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
