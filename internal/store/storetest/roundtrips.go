package storetest

import (
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"
)

// RoundTrips counts the round trips of the PostgreSQL connections made through a proxy from
// CountRoundTrips: one each time a client sends after the server has answered it (and its
// first send). A pipelined batch is one round trip however many statements it carries; an
// asynchronous message from the server (a notice) between two sends of one batch would count
// one more, which the statements of this repository do not cause.
type RoundTrips struct{ n atomic.Int64 }

// Load returns the round trips counted since the last Reset.
func (r *RoundTrips) Load() int64 { return r.n.Load() }

// Reset sets the count to zero.
func (r *RoundTrips) Reset() { r.n.Store(0) }

// CountRoundTrips starts a proxy in front of the PostgreSQL database at dbURL (a URL from
// pgtest) on a Unix socket of its own, and returns the URL of the same database through it and
// its counter. It stops when the test ends.
func CountRoundTrips(tb testing.TB, dbURL string) (string, *RoundTrips) {
	tb.Helper()
	cfg, err := pgx.ParseConfig(dbURL)
	if err != nil {
		tb.Fatalf("storetest: %v", err)
	}
	port := strconv.Itoa(int(cfg.Port))
	network, target := "tcp", net.JoinHostPort(cfg.Host, port)
	if strings.HasPrefix(cfg.Host, "/") {
		network, target = "unix", filepath.Join(cfg.Host, ".s.PGSQL."+port)
	}
	// Not tb.TempDir(): a Unix socket's path has at most 107 bytes, and a benchmark's name is
	// part of its temporary directory's.
	dir, err := os.MkdirTemp("", "pgrt-")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { os.RemoveAll(dir) })
	ln, err := net.Listen("unix", filepath.Join(dir, ".s.PGSQL."+port))
	if err != nil {
		tb.Fatal(err)
	}
	rt := &RoundTrips{}
	var wg sync.WaitGroup
	var mu sync.Mutex
	conns := map[net.Conn]struct{}{}
	track := func(c net.Conn, add bool) bool {
		mu.Lock()
		defer mu.Unlock()
		if conns == nil {
			return false
		}
		if add {
			conns[c] = struct{}{}
		} else {
			delete(conns, c)
		}
		return true
	}
	wg.Go(func() {
		for {
			client, err := ln.Accept()
			if err != nil {
				return
			}
			if !track(client, true) {
				client.Close()
				return
			}
			wg.Go(func() {
				defer track(client, false)
				defer client.Close()
				server, err := net.Dial(network, target)
				if err != nil {
					return
				}
				track(server, true)
				defer track(server, false)
				defer server.Close()
				rt.relay(client, server)
			})
		}
	})
	tb.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for c := range conns {
			c.Close()
		}
		conns = nil
		mu.Unlock()
		wg.Wait()
	})
	u, err := url.Parse(dbURL)
	if err != nil {
		tb.Fatalf("storetest: %v", err)
	}
	q := u.Query()
	q.Set("host", dir)
	q.Set("port", port)
	u.Host, u.RawQuery = "", q.Encode()
	return u.String(), rt
}

// relay copies between client and server until either ends, counting the client's sends that
// follow an answer.
func (rt *RoundTrips) relay(client, server net.Conn) {
	var answered atomic.Bool
	answered.Store(true)
	done := make(chan struct{})
	go func() {
		defer close(done)
		buf := make([]byte, 32<<10)
		for {
			n, err := server.Read(buf)
			if n > 0 {
				answered.Store(true)
				if _, werr := client.Write(buf[:n]); werr != nil {
					break
				}
			}
			if err != nil {
				break
			}
		}
		client.Close()
	}()
	buf := make([]byte, 32<<10)
	for {
		n, err := client.Read(buf)
		if n > 0 {
			if answered.Swap(false) {
				rt.n.Add(1)
			}
			if _, werr := server.Write(buf[:n]); werr != nil {
				break
			}
		}
		if err != nil {
			break
		}
	}
	server.Close()
	<-done
}
