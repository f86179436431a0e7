package mcpapi

import (
	"bytes"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/cobranca/cobranca/internal/pipeline"
)

// lockedBuffer is a log destination the handler's goroutines share.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// take returns what was written so far, and forgets it.
func (l *lockedBuffer) take() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := l.b.String()
	l.b.Reset()
	return s
}

// TestClientCannotFillErrorLog: what a client sends — a 2026-07-28
// initialize or ping (methods the revision removed), the handshake of an
// older one repeated or out of order — is answered, and leaves no ERROR line
// in the server's log: any client could otherwise fill it.
func TestClientCannotFillErrorLog(t *testing.T) {
	var logs lockedBuffer
	logger := slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	h := asCaller(withRequest(newHandler(t, Options{Logger: logger}, pipeline.Options{})))
	const initParams = `{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"c","version":"1"}}`
	for _, c := range []struct {
		name, version, method, body string
	}{
		{"2026-07-28 initialize", protocol20260728, "initialize", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{` + meta2026 + `,"protocolVersion":"2026-07-28","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}`},
		{"2026-07-28 ping", protocol20260728, "ping", `{"jsonrpc":"2.0","id":2,"method":"ping","params":{` + meta2026 + `}}`},
		{"2026-07-28 initialized", protocol20260728, "notifications/initialized", `{"jsonrpc":"2.0","method":"notifications/initialized","params":{` + meta2026 + `}}`},
		{"2026-07-28 roots changed", protocol20260728, "notifications/roots/list_changed", `{"jsonrpc":"2.0","method":"notifications/roots/list_changed","params":{` + meta2026 + `}}`},
		{"initialize", "2025-11-25", "", `{"jsonrpc":"2.0","id":3,"method":"initialize","params":` + initParams + `}`},
		{"initialized", "2025-11-25", "", `{"jsonrpc":"2.0","method":"notifications/initialized"}`},
		{"ping", "2025-11-25", "", `{"jsonrpc":"2.0","id":4,"method":"ping"}`},
		{"tools/list", "2025-11-25", "", `{"jsonrpc":"2.0","id":5,"method":"tools/list"}`},
	} {
		for range 3 {
			r := httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader(c.body))
			r.Header.Set("Content-Type", "application/json")
			r.Header.Set("Accept", "application/json, text/event-stream")
			r.Header.Set("Mcp-Protocol-Version", c.version)
			if c.method != "" {
				r.Header.Set("Mcp-Method", c.method)
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, r)
			if rec.Code >= 500 {
				t.Errorf("%s: HTTP %d %s", c.name, rec.Code, rec.Body)
			}
		}
		if out := logs.take(); strings.Contains(out, `"level":"ERROR"`) {
			t.Errorf("%s, 3 times: %d ERROR lines in the log:\n%s", c.name, strings.Count(out, `"level":"ERROR"`), out)
		}
	}
}
