package main

import (
	"bytes"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cobranca/cobranca/internal/pgtest"
	"github.com/cobranca/cobranca/internal/tier"
)

// healthcheckRun runs `cobranca healthcheck args…` and returns its stdout, stderr and error.
func healthcheckRun(t *testing.T, environ []string, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	var out, errOut bytes.Buffer
	err = run(t.Context(), append([]string{"healthcheck"}, args...), environ, nil, &out, &errOut)
	return out.String(), errOut.String(), err
}

// TestHealthcheck: exit 0 on 200 only; every other answer, a refused connection or no answer
// in time is exit status 1 with one line on stderr saying why; a URL without a path asks
// /readyz; no redirect is followed.
func TestHealthcheck(t *testing.T) {
	var mu sync.Mutex
	var asked []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		asked = append(asked, r.URL.Path)
		mu.Unlock()
		switch r.URL.Path {
		case "/readyz", "/healthz":
			_, _ = w.Write([]byte("ready\n"))
		case "/unready":
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = w.Write([]byte("not ready: store unavailable\n\x1b[31mmore\n"))
		case "/moved":
			http.Redirect(w, r, "/readyz", http.StatusFound)
		case "/slow":
			time.Sleep(300 * time.Millisecond)
		}
	}))
	defer srv.Close()
	refused := freeAddr(t)

	tests := []struct {
		name    string
		args    []string
		healthy bool
		want    string // on stdout when healthy, on stderr otherwise
		path    string // asked of the server
	}{
		{"ready", []string{srv.URL + "/readyz"}, true, "healthy: GET " + srv.URL + "/readyz: 200 OK ready\n", "/readyz"},
		{"no path means readyz", []string{srv.URL}, true, "healthy: GET " + srv.URL + "/readyz: 200 OK ready\n", "/readyz"},
		{"liveness when named", []string{srv.URL + "/healthz"}, true, "healthy: GET " + srv.URL + "/healthz: 200 OK ready\n", "/healthz"},
		{"not ready", []string{srv.URL + "/unready"}, false, "cobranca healthcheck: unhealthy: GET " + srv.URL + "/unready: 503 Service Unavailable not ready: store unavailable\n", "/unready"},
		{"redirect not followed", []string{srv.URL + "/moved"}, false, "cobranca healthcheck: unhealthy: GET " + srv.URL + "/moved: 302 Found", "/moved"},
		{"no answer in time", []string{srv.URL + "/slow", "--timeout", "50ms"}, false, "cobranca healthcheck: unhealthy: GET " + srv.URL + "/slow: no answer within 50ms\n", "/slow"},
		{"refused", []string{"http://" + refused}, false, "cobranca healthcheck: unhealthy: GET http://" + refused + "/readyz: dial tcp " + refused + ": connect: connection refused\n", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mu.Lock()
			asked = nil
			mu.Unlock()
			out, errOut, err := healthcheckRun(t, nil, tt.args...)
			mu.Lock()
			defer mu.Unlock()
			if tt.healthy {
				if err != nil || out != tt.want || errOut != "" {
					t.Errorf("healthcheck %v = %v, stdout %q, stderr %q; want nil, %q", tt.args, err, out, errOut, tt.want)
				}
			} else {
				var ee exitError
				if !errors.As(err, &ee) || ee != 1 || out != "" || !strings.HasPrefix(errOut, tt.want) || strings.Count(errOut, "\n") != 1 {
					t.Errorf("healthcheck %v = %v, stdout %q, stderr %q; want exit status 1 and one line starting %q", tt.args, err, out, errOut, tt.want)
				}
			}
			if tt.path != "" && (len(asked) != 1 || asked[0] != tt.path) {
				t.Errorf("the server was asked %v, want [%s]", asked, tt.path)
			}
		})
	}
}

// TestHealthcheckUsage: what cannot be a health check is a usage error (exit status 2).
func TestHealthcheckUsage(t *testing.T) {
	for _, args := range [][]string{
		{"ftp://example.com"}, {"127.0.0.1:8080"}, {"http://a", "http://b"}, {"--timeout", "0s"}, {"http://user:pw@127.0.0.1"},
	} {
		out, errOut, err := healthcheckRun(t, nil, args...)
		if !errors.Is(err, exitUsage) || out != "" || !strings.Contains(errOut, "usage: cobranca healthcheck") {
			t.Errorf("healthcheck %q = %v, stdout %q, stderr %q; want exit status 2 and the usage", args, err, out, errOut)
		}
	}
}

// TestLocalHealthURL: without a URL the check goes to COBRANCA_ADDR's port, a wildcard
// address on the loopback.
func TestLocalHealthURL(t *testing.T) {
	for addr, want := range map[string]string{
		"":               "http://127.0.0.1:8080/readyz", // COBRANCA_ADDR's default
		"0.0.0.0:8080":   "http://127.0.0.1:8080/readyz",
		"[::]:9000":      "http://127.0.0.1:9000/readyz",
		":7000":          "http://127.0.0.1:7000/readyz",
		"10.1.2.3:8080":  "http://10.1.2.3:8080/readyz",
		"[::1]:8080":     "http://[::1]:8080/readyz",
		"localhost:8081": "http://localhost:8081/readyz",
	} {
		var environ []string
		if addr != "" {
			environ = []string{"COBRANCA_ADDR=" + addr}
		}
		got, err := localHealthURL(environ)
		if err != nil || got != want {
			t.Errorf("localHealthURL(COBRANCA_ADDR=%s) = %q, %v; want %q", addr, got, err, want)
		}
	}
	// Another variable's mistake is the server's to report; a bad COBRANCA_ADDR is unhealthy.
	if got, err := localHealthURL([]string{"COBRANCA_ADDR=0.0.0.0:8080", "COBRANCA_LOG_LEVEL=loud"}); err != nil || got != "http://127.0.0.1:8080/readyz" {
		t.Errorf("localHealthURL with another variable invalid = %q, %v", got, err)
	}
	_, errOut, err := healthcheckRun(t, []string{"COBRANCA_ADDR=8080"})
	if !errors.Is(err, exitError(1)) || !strings.Contains(errOut, "COBRANCA_ADDR") {
		t.Errorf("healthcheck with COBRANCA_ADDR=8080 = %v, stderr %q; want exit status 1 naming COBRANCA_ADDR", err, errOut)
	}
}

// TestHealthcheckServe: the check of a real `cobranca serve`, found through COBRANCA_ADDR as
// in the container, is healthy while its PostgreSQL answers and unhealthy (the store is
// unavailable) once the database is gone: what the container's HEALTHCHECK reports is whether
// it can serve. End-to-end: it stops a PostgreSQL server; TestHealthcheck checks the command's
// answers and internal/server's TestReadyz the 503 of a store that does not answer.
func TestHealthcheckServe(t *testing.T) {
	tier.EndToEnd(t)
	pg := pgtest.Private() // stopped below
	t.Cleanup(pg.Close)
	addr := freeAddr(t)
	_, port, _ := net.SplitHostPort(addr)
	environ := []string{"COBRANCA_ADDR=127.0.0.1:" + port, "COBRANCA_DATABASE_URL=" + pg.Database(t)}
	startServe(t, append(environ, "COBRANCA_METRICS_ADDR=off")...)

	out, errOut, err := healthcheckRun(t, environ)
	if err != nil || out != "healthy: GET http://127.0.0.1:"+port+"/readyz: 200 OK ready\n" {
		t.Fatalf("healthcheck of a ready server = %v, stdout %q, stderr %q", err, out, errOut)
	}
	pg.Stop(t)
	defer pg.Start(t)
	out, errOut, err = healthcheckRun(t, environ)
	if !errors.Is(err, exitError(1)) || out != "" || errOut != "cobranca healthcheck: unhealthy: GET http://127.0.0.1:"+port+"/readyz: 503 Service Unavailable not ready: store unavailable\n" {
		t.Errorf("healthcheck with the store down = %v, stdout %q, stderr %q", err, out, errOut)
	}
}
