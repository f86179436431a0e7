package mcpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"testing"

	"github.com/cobranca/cobranca/internal/auditlog"
	"github.com/cobranca/cobranca/internal/auth"
	"github.com/cobranca/cobranca/internal/contract"
	"github.com/cobranca/cobranca/internal/pipeline"
)

// TestInvalidParamsStatus: on 2026-07-28 every -32602 is HTTP 400
// (SEP-2575; go-sdk's extractErrorStatus), whoever answers it: go-sdk (a
// request state that does not verify) or the front (an unknown tool).
func TestInvalidParamsStatus(t *testing.T) {
	v := revision{version: protocol20260728}
	for _, p := range bothPaths {
		t.Run(p.name, func(t *testing.T) {
			s := newFrontServer(t, p.slow, "test:run")
			cases := []struct{ name, body, tool string }{
				{"forged request state (go-sdk answers)", v.call("1", "test.counted", `{}`, `"requestState":"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",`), "test.counted"},
				{"unknown tool (the front answers)", v.call("1", "no.such_tool", `{}`, ""), "no.such_tool"},
			}
			for _, c := range cases {
				status, out := s.post(t, v.version, c.body, v.headers("tools/call", c.tool))
				if !bytes.Contains(out, []byte(`"code":-32602`)) {
					t.Errorf("%s: not -32602:\n%s", c.name, out)
					continue
				}
				if status != http.StatusBadRequest {
					t.Errorf("%s: -32602 with HTTP %d, want 400 (SEP-2575)", c.name, status)
				}
			}
		})
	}
}

// TestToolPanic: go-sdk runs a tool handler in a goroutine of its own
// (jsonrpc2 handleAsync), where a panic would end the whole process —
// every call in flight on it — unaudited; the pipeline recovers it. A child
// process serves a tool that panics and calls it once: it must survive,
// answer an internal error and audit the call as failed.
func TestToolPanic(t *testing.T) {
	if os.Getenv("COBRANCA_TEST_PANIC_CHILD") == "1" {
		boom := pipeline.Tool{Contract: testContract("test.boom", contract.Low), Logic: func(_ context.Context, raw json.RawMessage) (pipeline.Effect, error) {
			var counts []int
			counts[len(raw)]++ // an index bug in a tool: a runtime error
			return pipeline.Effect{}, nil
		}}
		rec := newRecorder()
		h := newHandler(t, Options{DisableFastPath: true}, pipeline.Options{Tools: []pipeline.Tool{boom}, Auditor: rec})
		inner := withRequest(h)
		s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			inner.ServeHTTP(w, r.WithContext(auth.WithPrincipal(r.Context(), &auth.Principal{Subject: "s", Scopes: []string{"test:run"}})))
		}))
		defer s.Close()
		fs := &frontServer{Server: s, h: h, rec: rec}
		v := revision{version: "2025-11-25"}
		status, out := fs.post(t, v.version, v.call("1", "test.boom", `{}`, ""), nil)
		if status != http.StatusOK || !bytes.Contains(out, []byte(`"code":"internal_error"`)) || bytes.Contains(out, []byte("index out of range")) {
			t.Fatalf("panicking tool answered %d:\n%s\nwant an internal error with no detail of the panic", status, out)
		}
		if recs := rec.drain(); len(recs) != 1 || recs[0].Outcome != auditlog.Failed {
			t.Fatalf("audit records %+v, want one failed", recs)
		}
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestToolPanic$", "-test.count=1")
	cmd.Env = append(os.Environ(), "COBRANCA_TEST_PANIC_CHILD=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		i := bytes.Index(out, []byte("panic:"))
		if i < 0 {
			i = 0
		}
		t.Errorf("a panicking tool ended the server process (%v):\n%.300s", err, out[i:])
	}
}
