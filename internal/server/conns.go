package server

import (
	"context"
	"log"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"sync"
	"time"

	"github.com/cobranca/cobranca/internal/limits"
)

// Timeouts bound how long the public listener waits for a client. A
// connection that has not sent a request's headers within ReadHeader, or
// its whole request within Read, or stays idle between requests longer
// than Idle, is closed: idle and trickling connections cannot pile up.
type Timeouts struct {
	ReadHeader time.Duration
	Read       time.Duration
	Write      time.Duration
	Idle       time.Duration
}

// DefaultTimeouts are the public listener's. Read admits the largest body
// (COBRANCA_MAX_BODY_BYTES, 1 MiB by default) at about 50 KB/s; Idle is
// longer than the few seconds an agent pauses between calls and short
// enough that idle keep-alive connections do not hold descriptors for long.
var DefaultTimeouts = Timeouts{ReadHeader: 5 * time.Second, Read: 20 * time.Second, Write: 60 * time.Second, Idle: 30 * time.Second}

// ConnLimits caps the connections the public listener holds.
type ConnLimits struct {
	// Total caps the open connections; 0 means no cap.
	Total int
	// PerAddr caps the open connections of one client address (IPv6: one
	// /64, as limits.OriginPrefix counts clients); 0 means no cap.
	PerAddr int
	// Logger receives one line, at most every LogEvery (default one
	// minute), while connections are refused or evicted: counts only,
	// never an address.
	Logger   *slog.Logger
	LogEvery time.Duration
}

// ConnStats are the connection limiter's counters.
type ConnStats struct {
	Open           int
	Waiting        int    // open, and not inside a request
	RefusedPerAddr uint64 // closed at once: their address was at its cap
	RefusedTotal   uint64 // closed at once: at the total cap, every connection was inside a request
	Evicted        uint64 // closed to make room: waiting longest without a complete request
}

// ConnLimiter is a net.Listener that caps connections in total and per
// client address.
//
// Over an address's cap a new connection is closed at once. At the total
// cap the newcomer is admitted and the connection that has waited longest
// without a complete request is closed instead: one that has not finished
// sending its first request's headers, or an idle keep-alive connection
// (least recently used first). A connection whose request is being served
// is never evicted; only if every connection is, the newcomer is refused.
// Why evict rather than refuse: in a flood of idle or trickling
// connections every slot is held by a connection that sends nothing, and
// refusing newcomers would refuse exactly the health checker and the
// clients that would send a request at once; evicting the stalest waiter
// lets every newcomer in, costs a flooder its oldest connections, and costs
// a legitimate client at most a reconnect of an idle keep-alive
// connection, never a request in flight.
//
// Serve the listener with the http.Server from HTTPServer, which tells the
// limiter when a connection's request is being served.
type ConnLimiter struct {
	net.Listener
	limits ConnLimits

	mu      sync.Mutex
	open    int
	perAddr map[netip.Prefix]int
	// waiting lists the open connections not inside a request, the one
	// waiting longest first.
	waiting connList
	stats   ConnStats
	// lastLog and logged throttle the refusal log line.
	lastLog time.Time
	logged  ConnStats
}

// LimitConns caps the connections ln accepts.
func LimitConns(ln net.Listener, l ConnLimits) *ConnLimiter {
	if l.LogEvery <= 0 {
		l.LogEvery = time.Minute
	}
	if l.Logger == nil {
		l.Logger = slog.New(slog.DiscardHandler)
	}
	return &ConnLimiter{Listener: ln, limits: l, perAddr: map[netip.Prefix]int{}}
}

// Accept returns the next connection within the caps; connections over
// them are closed before Accept returns.
func (l *ConnLimiter) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if tc := l.admit(c); tc != nil {
			return tc, nil
		}
	}
}

// admit registers c, or closes it and returns nil. At the total cap it
// closes the longest waiting connection to make room.
func (l *ConnLimiter) admit(c net.Conn) *trackedConn {
	var addr netip.Prefix
	if ta, ok := c.RemoteAddr().(*net.TCPAddr); ok {
		addr = limits.OriginPrefix(ta.AddrPort().Addr())
	}
	l.mu.Lock()
	var victim *trackedConn
	refused := false
	switch {
	case l.limits.PerAddr > 0 && l.perAddr[addr] >= l.limits.PerAddr:
		refused = true
		l.stats.RefusedPerAddr++
	case l.limits.Total > 0 && l.open >= l.limits.Total:
		if victim = l.waiting.front(); victim != nil {
			l.forget(victim)
			l.stats.Evicted++
		} else {
			refused = true
			l.stats.RefusedTotal++
		}
	}
	var tc *trackedConn
	if !refused {
		tc = &trackedConn{Conn: c, l: l, addr: addr, registered: true}
		l.open++
		l.perAddr[addr]++
		l.waiting.pushBack(tc)
	}
	report := l.report(time.Now())
	l.mu.Unlock()

	if victim != nil {
		_ = victim.Conn.Close()
	}
	if refused {
		_ = c.Close()
	}
	if report != nil {
		l.limits.Logger.Warn("connection cap reached: connections closed (counts since the last such line)",
			"refused_address_cap", report.RefusedPerAddr, "refused_total_cap", report.RefusedTotal,
			"evicted", report.Evicted, "open", report.Open,
			"cap_total", l.limits.Total, "cap_per_address", l.limits.PerAddr)
	}
	return tc
}

// report returns the counts since the last log line when one is due: some
// connection was refused or evicted since, and LogEvery has passed.
// l.mu is held.
func (l *ConnLimiter) report(now time.Time) *ConnStats {
	s := l.stats
	if s.RefusedPerAddr == l.logged.RefusedPerAddr && s.RefusedTotal == l.logged.RefusedTotal && s.Evicted == l.logged.Evicted {
		return nil
	}
	if !l.lastLog.IsZero() && now.Sub(l.lastLog) < l.limits.LogEvery {
		return nil
	}
	d := ConnStats{Open: l.open, RefusedPerAddr: s.RefusedPerAddr - l.logged.RefusedPerAddr,
		RefusedTotal: s.RefusedTotal - l.logged.RefusedTotal, Evicted: s.Evicted - l.logged.Evicted}
	l.lastLog, l.logged = now, s
	return &d
}

// forget removes c from the books; l.mu is held.
func (l *ConnLimiter) forget(c *trackedConn) {
	if !c.registered {
		return
	}
	c.registered = false
	if c.busy == 0 {
		l.waiting.remove(c)
	}
	l.open--
	if n := l.perAddr[c.addr] - 1; n > 0 {
		l.perAddr[c.addr] = n
	} else {
		delete(l.perAddr, c.addr)
	}
}

// Stats returns the counters and the open connections.
func (l *ConnLimiter) Stats() ConnStats {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := l.stats
	s.Open, s.Waiting = l.open, l.waiting.n
	return s
}

// HTTPServer returns the http.Server for the limited listener: h, with
// the limiter told when each request is being served, and timeouts t.
func (l *ConnLimiter) HTTPServer(h http.Handler, t Timeouts, errorLog *log.Logger) *http.Server {
	return &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			c, _ := r.Context().Value(connKey{}).(*trackedConn)
			if c != nil {
				c.begin()
				defer c.end()
			}
			h.ServeHTTP(w, r)
		}),
		ConnContext: func(ctx context.Context, c net.Conn) context.Context {
			if tc, ok := c.(*trackedConn); ok && tc.l == l {
				return context.WithValue(ctx, connKey{}, tc)
			}
			return ctx
		},
		ReadHeaderTimeout: t.ReadHeader,
		ReadTimeout:       t.Read,
		WriteTimeout:      t.Write,
		IdleTimeout:       t.Idle,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          errorLog,
	}
}

type connKey struct{}

// trackedConn is a connection the limiter counts until it is closed.
type trackedConn struct {
	net.Conn
	l    *ConnLimiter
	addr netip.Prefix
	// Guarded by l.mu:
	registered bool
	busy       int // requests being served (more than one only over HTTP/2)
	prev, next *trackedConn
}

// begin marks a request as being served: its headers are complete.
func (c *trackedConn) begin() {
	c.l.mu.Lock()
	if c.registered && c.busy == 0 {
		c.l.waiting.remove(c)
	}
	c.busy++
	c.l.mu.Unlock()
}

// end marks the request served; the connection waits again, last in line.
func (c *trackedConn) end() {
	c.l.mu.Lock()
	c.busy--
	if c.registered && c.busy == 0 {
		c.l.waiting.pushBack(c)
	}
	c.l.mu.Unlock()
}

func (c *trackedConn) Close() error {
	c.l.mu.Lock()
	c.l.forget(c)
	c.l.mu.Unlock()
	return c.Conn.Close()
}

// connList is an intrusive doubly linked list: moving a connection in and
// out of it on every request allocates nothing.
type connList struct {
	head, tail *trackedConn
	n          int
}

func (q *connList) front() *trackedConn { return q.head }

func (q *connList) pushBack(c *trackedConn) {
	c.prev, c.next = q.tail, nil
	if q.tail != nil {
		q.tail.next = c
	} else {
		q.head = c
	}
	q.tail = c
	q.n++
}

func (q *connList) remove(c *trackedConn) {
	if c.prev != nil {
		c.prev.next = c.next
	} else {
		q.head = c.next
	}
	if c.next != nil {
		c.next.prev = c.prev
	} else {
		q.tail = c.prev
	}
	c.prev, c.next = nil, nil
	q.n--
}
