package files_test

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/cobranca/cobranca/internal/auditlog"
	"github.com/cobranca/cobranca/internal/files"
	"github.com/cobranca/cobranca/internal/store"
	"github.com/cobranca/cobranca/internal/store/storetest"
)

// smallBuffers is a listener whose connections have a small send buffer, so
// that a slow reader holds the server's writes back instead of the kernel
// taking the whole file at once.
type smallBuffers struct{ net.Listener }

func (l smallBuffers) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if tc, ok := c.(*net.TCPConn); ok {
		tc.SetWriteBuffer(16 << 10)
	}
	return c, err
}

// slowServer configures a download server whose write timeout (300 ms) is
// far shorter than a slow download of a few MiB, with the handler's Idle
// and MinRate (0: the default).
func slowServer(idle time.Duration, minRate int64) func(*httptest.Server, *files.Downloads) {
	return func(srv *httptest.Server, d *files.Downloads) {
		srv.Listener = smallBuffers{srv.Listener}
		srv.Config.WriteTimeout = 300 * time.Millisecond
		d.Idle, d.MinRate = idle, minRate
	}
}

// slowClient is an HTTP client whose connections have a small receive
// buffer, over a real socket.
func slowClient() *http.Client {
	dial := (&net.Dialer{}).DialContext
	return &http.Client{Transport: &http.Transport{DisableKeepAlives: true,
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			c, err := dial(ctx, network, addr)
			if tc, ok := c.(*net.TCPConn); ok {
				tc.SetReadBuffer(16 << 10)
			}
			return c, err
		}}}
}

// readSlowly reads r 8 KiB at a time with a pause after each, about
// 1.6 MB/s, until EOF or until limit bytes (limit < 0: no limit).
func readSlowly(r io.Reader, limit int) ([]byte, error) {
	var out []byte
	buf := make([]byte, 8<<10)
	for limit < 0 || len(out) < limit {
		n, err := r.Read(buf)
		out = append(out, buf[:n]...)
		if err != nil {
			if errors.Is(err, io.EOF) {
				return out, nil
			}
			return out, err
		}
		time.Sleep(5 * time.Millisecond)
	}
	return out, nil
}

// TestSlowDownload: a client reading a 3 MiB file (1 MiB under -short) at
// about 1.6 MB/s over a real socket takes several times the server's write
// timeout and still gets every byte; the download is audited allowed, and
// nothing else.
func TestSlowDownload(t *testing.T) {
	size := 3<<20 + 17
	if testing.Short() {
		size = 1<<20 + 17 // 650 ms: still twice the write timeout
	}
	storetest.Each(t, pg, func(t *testing.T, db store.DB) {
		e := newLinkEnvWith(t, db, slowServer(files.DefaultIdle, 0), newKey)
		f := add(t, db, files.Upload{Name: "boleto.pdf", Content: randomBytes(size), CreatedBy: "ana"})
		link := e.create(t, f.ID, t0.Add(time.Hour))

		resp, err := slowClient().Get(link.URL)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, err := readSlowly(resp.Body, -1)
		if resp.StatusCode != http.StatusOK || err != nil || sha256.Sum256(body) != f.SHA256 {
			t.Fatalf("slow GET = %d, %d of %d bytes, %v; want the whole file", resp.StatusCode, len(body), f.Size, err)
		}
		if got := outcomes(t, db, files.DownloadEvent); len(got) != 1 || got[0] != "allowed" {
			t.Errorf("download audit outcomes %v, want [allowed]", got)
		}
	})
}

// TestIncompleteDownload: a client that disconnects after 128 KiB, stops
// reading, or reads slower than the minimum rate does not get the whole
// file; the download is audited allowed when it starts and incomplete when
// it is cut, with the bytes sent.
func TestIncompleteDownload(t *testing.T) {
	for _, tc := range []struct {
		name    string
		minRate int64
		// leave stops taking the body after the first bytes; it returns
		// once the client is done with the connection.
		leave func(t *testing.T, e *linkEnv, db store.DB, body io.ReadCloser)
	}{
		{"disconnects", 0, func(t *testing.T, _ *linkEnv, _ store.DB, body io.ReadCloser) {
			body.Close()
		}},
		{"stops reading", 0, func(t *testing.T, _ *linkEnv, db store.DB, body io.ReadCloser) {
			// The connection stays open, unread, until the server gives up
			// on it after Idle.
			waitOutcome(t, db, 2)
			body.Close()
		}},
		// 3 MiB at 100 MB/s is 30 ms: the transfer's deadline is Idle
		// (400 ms) and 30 ms from its start, which this client's 2 s misses.
		{"reads below the minimum rate", 100e6, func(t *testing.T, _ *linkEnv, _ store.DB, body io.ReadCloser) {
			if _, err := readSlowly(body, -1); err == nil {
				t.Error("the whole file was read below the minimum rate")
			}
			body.Close()
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			storetest.Each(t, pg, func(t *testing.T, db store.DB) {
				e := newLinkEnvWith(t, db, slowServer(400*time.Millisecond, tc.minRate), newKey)
				f := add(t, db, files.Upload{Name: "boleto.pdf", Content: randomBytes(3 << 20), CreatedBy: "ana"})
				link := e.create(t, f.ID, t0.Add(time.Hour))
				resp, err := slowClient().Get(link.URL)
				if err != nil {
					t.Fatal(err)
				}
				if got, err := readSlowly(resp.Body, 128<<10); len(got) < 128<<10 || err != nil {
					t.Fatalf("first bytes: %d, %v", len(got), err)
				}
				tc.leave(t, e, db, resp.Body)

				events := waitOutcome(t, db, 2)
				if events[0].Outcome != auditlog.Allowed || events[1].Outcome != auditlog.Incomplete {
					t.Fatalf("download events %+v, want allowed then incomplete", events)
				}
				d := events[1].Details
				if sent := d[files.BytesSentDetail]; sent < 128<<10 || sent >= f.Size || d[files.FileBytesDetail] != f.Size {
					t.Errorf("incomplete details %v, want %s in [%d, %d) and %s %d", d, files.BytesSentDetail, 128<<10, f.Size, files.FileBytesDetail, f.Size)
				}
			})
		})
	}
}

type downloadEvent struct {
	Outcome auditlog.Outcome
	Details map[string]int64
}

// waitOutcome waits, up to 10 s, for n download events, and returns them in
// order: the server records an incomplete download once its write fails.
func waitOutcome(t *testing.T, db store.DB, n int) []downloadEvent {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		var out []downloadEvent
		rows, err := db.Query(context.Background(), `SELECT outcome, details FROM audit_event WHERE event = $1 ORDER BY id`, files.DownloadEvent)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var ev downloadEvent
			var details string
			if err := rows.Scan(&ev.Outcome, &details); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal([]byte(details), &ev.Details); err != nil {
				t.Fatal(err)
			}
			out = append(out, ev)
		}
		rows.Close()
		if len(out) >= n || time.Now().After(deadline) {
			if len(out) < n {
				t.Fatalf("download events %+v, want %d", out, n)
			}
			return out
		}
		time.Sleep(20 * time.Millisecond)
	}
}
