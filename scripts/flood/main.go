// Command flood holds many idle or trickling TCP connections open against a
// server on loopback, for scripts/flood.sh: it is an instrument for testing
// cobranca's own connection caps, bounded in count and time, and it refuses
// any target that is not a loopback address.
//
//	flood -addr 127.0.0.1:8080 -n 20000 -d 40s -mode mixed
//
// Each of n slots dials (from 127.0.0.2, 127.0.0.3, … in turn, -sources of
// them, so per-address caps see several clients), then either sends nothing
// (idle) or the start of a request one byte a second (trickle), and dials
// again when the server closes it, until -d has passed. It prints what the
// server did with the connections.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "flood:", err)
		os.Exit(1)
	}
}

func run() error {
	addr := flag.String("addr", "127.0.0.1:8080", "target host:port (loopback only)")
	n := flag.Int("n", 20000, "connections to hold open at once (at most the open-file limit less 100, at most 30000)")
	d := flag.Duration("d", 30*time.Second, "how long to flood (at most 2m)")
	mode := flag.String("mode", "mixed", "idle, trickle or mixed (every other slot trickles)")
	sources := flag.Int("sources", 64, "source addresses 127.0.0.2… to spread the connections over (1-250)")
	flag.Parse()

	target, err := netip.ParseAddrPort(*addr)
	if err != nil || !target.Addr().IsLoopback() || !target.Addr().Is4() {
		return fmt.Errorf("-addr %q: must be an IPv4 loopback ip:port (127.0.0.0/8)", *addr)
	}
	if *d <= 0 || *d > 2*time.Minute {
		return errors.New("-d: must be from 1ns to 2m")
	}
	if *sources < 1 || *sources > 250 {
		return errors.New("-sources: must be from 1 to 250")
	}
	if *mode != "idle" && *mode != "trickle" && *mode != "mixed" {
		return errors.New("-mode: must be idle, trickle or mixed")
	}
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err == nil && uint64(*n)+100 > lim.Cur {
		*n = int(lim.Cur) - 100
	}
	*n = min(*n, 30000)

	ctx, cancel := context.WithTimeout(context.Background(), *d)
	defer cancel()
	var dialed, failed, closedByServer, open, peak atomic.Int64
	var wg sync.WaitGroup
	for i := range *n {
		wg.Go(func() {
			src := netip.AddrFrom4([4]byte{127, 0, 0, byte(2 + i%*sources)})
			dialer := net.Dialer{LocalAddr: net.TCPAddrFromAddrPort(netip.AddrPortFrom(src, 0)), Timeout: 3 * time.Second}
			trickle := *mode == "trickle" || *mode == "mixed" && i%2 == 1
			for ctx.Err() == nil {
				c, err := dialer.DialContext(ctx, "tcp", target.String())
				if err != nil {
					failed.Add(1)
					sleep(ctx, time.Second)
					continue
				}
				dialed.Add(1)
				if o := open.Add(1); o > peak.Load() {
					peak.Store(o) // a racy maximum is close enough for a report
				}
				if hold(ctx, c, trickle) {
					closedByServer.Add(1)
				}
				open.Add(-1)
				c.Close()
				sleep(ctx, 100*time.Millisecond)
			}
		})
		if i%500 == 499 { // do not overrun the listen backlog all at once
			sleep(ctx, 50*time.Millisecond)
		}
	}
	wg.Wait()
	fmt.Printf("flood: %d slots for %s (%s): %d connections, %d closed by the server, %d dials failed, peak %d open at once\n",
		*n, *d, *mode, dialed.Load(), closedByServer.Load(), failed.Load(), peak.Load())
	return nil
}

// hold keeps c open until ctx ends or the server closes it (true).
func hold(ctx context.Context, c net.Conn, trickle bool) bool {
	closed := make(chan struct{})
	go func() {
		_, _ = io.Copy(io.Discard, c)
		close(closed)
	}()
	start := []byte("POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n")
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for i := 0; ; i++ {
		select {
		case <-closed:
			return true
		case <-ctx.Done():
			c.Close()
			<-closed
			return false
		case <-tick.C:
			if trickle {
				if _, err := c.Write(start[i%len(start) : i%len(start)+1]); err != nil {
					return true
				}
			}
		}
	}
}

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}
