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
