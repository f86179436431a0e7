package server

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
)

// BenchmarkConnBookkeeping is what the connection limiter adds to every
// request: the handler wrapper's context lookup and the connection leaving
// and rejoining the waiting list. "bare" is the same handler alone.
func BenchmarkConnBookkeeping(b *testing.B) {
	noop := http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})
	client, srv := net.Pipe()
	defer client.Close()
	l := LimitConns(nil, ConnLimits{Total: 1024, PerAddr: 64})
	tc := l.admit(srv)
	hs := l.HTTPServer(noop, DefaultTimeouts, nil)
	ctx := hs.ConnContext(context.Background(), tc)
	req := httptest.NewRequest(http.MethodPost, "/mcp", nil)
	for _, bench := range []struct {
		name string
		h    http.Handler
		req  *http.Request
	}{{"bare", noop, req}, {"tracked", hs.Handler, req.WithContext(context.WithValue(ctx, http.ServerContextKey, hs))}} {
		b.Run(bench.name, func(b *testing.B) {
			w := httptest.NewRecorder()
			b.ReportAllocs()
			for b.Loop() {
				bench.h.ServeHTTP(w, bench.req)
			}
		})
	}
	if st := l.Stats(); st.Open != 1 || st.Waiting != 1 {
		b.Errorf("after the requests: %+v, want the connection open and waiting", st)
	}
}

// remoteConn is one end of a pipe that says it comes from addr.
type remoteConn struct {
	net.Conn
	addr *net.TCPAddr
}

func (c remoteConn) RemoteAddr() net.Addr { return c.addr }

// TestConnCapIPv6Prefix: IPv6 clients are counted by their /64, as the
// per-origin rate limit counts them (a client usually holds a whole /64),
// and an IPv4-mapped address as the IPv4 address.
func TestConnCapIPv6Prefix(t *testing.T) {
	l := LimitConns(nil, ConnLimits{PerAddr: 2})
	admit := func(ip string) bool {
		client, srv := net.Pipe()
		t.Cleanup(func() { client.Close(); srv.Close() })
		return l.admit(remoteConn{srv, &net.TCPAddr{IP: net.ParseIP(ip), Port: 40000}}) != nil
	}
	for _, tt := range []struct {
		ip   string
		want bool
	}{
		{"2001:db8:1:2::1", true},
		{"2001:db8:1:2:ffff:ffff:ffff:ffff", true},
		{"2001:db8:1:2::99", false}, // the same /64, at its cap
		{"2001:db8:1:3::1", true},   // the next /64
		{"192.0.2.7", true},
		{"::ffff:192.0.2.7", true},
		{"192.0.2.7", false}, // the same address, mapped or not
		{"192.0.2.8", true},
	} {
		if got := admit(tt.ip); got != tt.want {
			t.Errorf("connection from %s admitted = %v, want %v", tt.ip, got, tt.want)
		}
	}
	if st := l.Stats(); st.Open != 6 || st.RefusedPerAddr != 2 {
		t.Errorf("stats %+v, want 6 open and 2 refused", st)
	}
}
