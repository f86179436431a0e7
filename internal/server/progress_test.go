package server_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/cobranca/cobranca/internal/contract"
	"github.com/cobranca/cobranca/internal/contract/contracttest"
	"github.com/cobranca/cobranca/internal/pipeline/pipelinetest"
)

const (
	progressTool  = "test.progress"
	progressSteps = 5
)

// heard collects the progress notifications a client received.
type heard struct {
	mu    sync.Mutex
	got   []mcp.ProgressNotificationParams
	first chan struct{} // closed at the first one
}

func (h *heard) handle(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.got = append(h.got, *req.Params)
	if len(h.got) == 1 {
		close(h.first)
	}
}

func (h *heard) all() []mcp.ProgressNotificationParams {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.got)
}

// TestProgressOverHTTP: a go-sdk client that sends a progress token with a call receives the
// tool's progress notifications, with its token, while the call runs (the tool waits after its
// first report until the client has heard it: an answer buffered to the end would never come),
// then the answer; on both revisions and both paths. A call without a token is answered
// application/json, and one with a token as an event stream.
func TestProgressOverHTTP(t *testing.T) {
	e := newTierEnv(t, 0)
	var mu sync.Mutex
	var listening *heard // the client of the call in progress (calls are made one at a time)
	c := contracttest.New(progressTool, contract.Medium, "test:progress")
	e.tools = append(e.tools, pipelinetest.Progressing(c, progressSteps, func(ctx context.Context, step int64) error {
		if step != 1 {
			return nil
		}
		mu.Lock()
		h := listening
		mu.Unlock()
		if h == nil {
			return nil // a call made without a client listening
		}
		select {
		case <-h.first:
			return nil
		case <-time.After(10 * time.Second):
			return errors.New("the client never heard of the first step")
		}
	}))
	tok := e.mint(t, "alice", "collector-bot", "test:progress")
	for _, p := range bothPaths {
		s := e.server(t, tierServer{slow: p.slow})
		for _, version := range protocolVersions {
			name := p.name + "/" + version
			h := &heard{first: make(chan struct{})}
			mu.Lock()
			listening = h
			mu.Unlock()
			sess := connectAs(t, s.URL, tok, version, &mcp.ClientOptions{ProgressNotificationHandler: h.handle})
			params := &mcp.CallToolParams{Name: progressTool, Arguments: map[string]any{"idempotencyKey": name}}
			params.SetProgressToken(name)
			res, err := sess.CallTool(context.Background(), params)
			if o := outcome(t, res, err); o != "complete" {
				t.Fatalf("%s: the call: %s, want complete", name, o)
			}
			var got []mcp.ProgressNotificationParams
			for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
				if got = h.all(); len(got) == progressSteps {
					break
				}
			}
			if len(got) != progressSteps {
				t.Fatalf("%s: %d progress notifications, want %d: %+v", name, len(got), progressSteps, got)
			}
			for i, n := range got {
				step := i + 1
				if n.ProgressToken != name || n.Progress != float64(step) || n.Total != progressSteps || n.Message != fmt.Sprintf("step %d of %d", step, progressSteps) {
					t.Errorf("%s: notification %d = %+v, want step %d of %d for token %q", name, step, n, step, progressSteps, name)
				}
			}
			mu.Lock()
			listening = nil
			mu.Unlock()
			// The wire: an event stream with a token, application/json without one.
			for _, withToken := range []bool{false, true} {
				meta := map[string]any{}
				if version == "2026-07-28" {
					meta = map[string]any{"io.modelcontextprotocol/protocolVersion": version,
						"io.modelcontextprotocol/clientInfo": map[string]any{"name": "test", "version": "1"}, "io.modelcontextprotocol/clientCapabilities": map[string]any{}}
				}
				if withToken {
					meta["progressToken"] = "raw"
				}
				b, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": map[string]any{
					"_meta": meta, "name": progressTool, "arguments": map[string]any{"idempotencyKey": fmt.Sprintf("%s-raw-%v", name, withToken)}}})
				if err != nil {
					t.Fatal(err)
				}
				resp, body := rawCallBody(t, s.URL, tok, version, progressTool, string(b))
				mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
				want := "application/json"
				if withToken {
					want = "text/event-stream"
				}
				if resp.StatusCode != http.StatusOK || mt != want {
					t.Errorf("%s: a call with a token %v: %d %s, want 200 %s:\n%s", name, withToken, resp.StatusCode, mt, want, body)
				}
				if n := strings.Count(string(body), `"method":"notifications/progress"`); withToken && n != progressSteps || !withToken && n != 0 {
					t.Errorf("%s: a call with a token %v carried %d progress notifications:\n%s", name, withToken, n, body)
				}
				if withToken && strings.LastIndex(string(body), `"method":"notifications/progress"`) > strings.Index(string(body), `"result"`) {
					t.Errorf("%s: a notification after the answer:\n%s", name, body)
				}
			}
		}
	}
	if n := pipelinetest.Effects(t, e.db, progressTool); n != 2*len(protocolVersions)*3 {
		t.Errorf("%d effects, want %d", n, 2*len(protocolVersions)*3)
	}
}

// TestProgressNeverWaitsForTheClient: a tool reports its progress from its transaction (its
// locks held; on SQLite, the one writer), so a report must never wait for the client to read.
// A client that sends a progress token and then does not read its answer (many reports:
// more than the sockets' buffers hold) must not hold the tool: the call's
// every step runs and commits at once. Read afterwards, the stream ends with the last report
// and then the answer.
func TestProgressNeverWaitsForTheClient(t *testing.T) {
	const steps = 50000
	e := newTierEnv(t, 0)
	finished := make(chan struct{})
	c := contracttest.New(progressTool, contract.Medium, "test:progress")
	e.tools = append(e.tools, pipelinetest.Progressing(c, steps, func(_ context.Context, step int64) error {
		if step == steps {
			close(finished)
		}
		return nil
	}))
	s := e.server(t, tierServer{slow: true})
	tok := e.mint(t, "alice", "collector-bot", "test:progress")
	token := strings.Repeat("p", 250) // 50 000 notifications of 400 bytes: more than the sockets' buffers hold (Linux: 4 MiB sent, and the receiver's, which grows only as it reads)
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": map[string]any{
		"_meta": map[string]any{"progressToken": token}, "name": progressTool, "arguments": map[string]any{"idempotencyKey": "k"}}})
	if err != nil {
		t.Fatal(err)
	}
	conn, err := net.Dial("tcp", s.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close() // before the server's cleanup, which waits for the call
	req := fmt.Sprintf("POST /mcp HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\n"+
		"Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2025-11-25\r\nContent-Length: %d\r\n\r\n",
		s.Listener.Addr(), tok, len(body))
	if _, err := conn.Write(append([]byte(req), body...)); err != nil {
		t.Fatal(err)
	}
	select {
	case <-finished:
	case <-time.After(10 * time.Second):
		t.Fatal("the tool waited in its transaction for a client that does not read its progress")
	}
	for deadline := time.Now().Add(5 * time.Second); pipelinetest.Effects(t, e.db, progressTool) != 1; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the call did not commit while its client was not reading")
		}
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	stream, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	n := strings.Count(string(stream), `"method":"notifications/progress"`)
	last := strings.LastIndex(string(stream), `"method":"notifications/progress"`)
	answer := strings.Index(string(stream), `"result"`)
	if n == 0 || answer < last || !strings.Contains(string(stream[last:answer]), fmt.Sprintf(`"progress":%d`, steps)) {
		t.Errorf("%d notifications, the last (at %d) must be step %d and come before the answer (at %d)", n, last, steps, answer)
	}
}
