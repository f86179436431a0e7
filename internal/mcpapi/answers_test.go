package mcpapi

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"mime"
	"net/http"
	"net/http/httptest"
	"net/textproto"
	"strings"
	"testing"

	"github.com/cobranca/cobranca/internal/pipeline"
)

// TestSDKQuotable: the strings whose Go quoting is not JSON's are the ones
// refused; every other string, however unusual, passes.
func TestSDKQuotable(t *testing.T) {
	for _, c := range []struct {
		s    string
		want bool
	}{
		{"ui://cobranca/portfolio-analysis.html", true},
		{"", true},
		{"tab\there, newline\n, quote \" backslash \\", true}, // escapes both write alike
		{"caf\u00e9 \U0001F600", true},
		{"line\u2028separator", true}, // unprintable in the BMP: \u2028 in both
		{"\ufeffbom", true},
		{"bell\a", false}, // \a
		{"vtab\v", false}, // \v
		{"nul\x00", false},
		{"esc\x1b[31m", false},
		{"del\x7f", false},
		{"not UTF-8 \xff", false},
		{"tag \U000E0001", false}, // unprintable beyond the BMP: \U000e0001
	} {
		if got := sdkQuotable(c.s); got != c.want {
			t.Errorf("sdkQuotable(%q) = %v, want %v", c.s, got, c.want)
		}
	}
}

// TestUnquotableURIRefused: a resources/read of a URI holding a character
// go-sdk's not-found answer cannot carry in JSON is a JSON-RPC error of the
// endpoint's own, on every revision, not go-sdk's HTTP 500 text/plain; a URI
// it can carry is not found, in JSON, and repeated nowhere.
func TestUnquotableURIRefused(t *testing.T) {
	for _, p := range bothPaths {
		for _, v := range bothRevisions {
			t.Run(p.name+"/"+v.version, func(t *testing.T) {
				s := newFrontServer(t, p.slow, "collections:read", "test:run")
				read := func(uri string) (int, []byte) {
					body := `{"jsonrpc":"2.0","id":7,"method":"resources/read","params":{` + v.meta() + `"uri":"` + uri + `"}}`
					return s.post(t, v.version, body, v.headers("resources/read", uri))
				}
				wantStatus := http.StatusOK
				if v.version == protocol20260728 {
					wantStatus = http.StatusBadRequest
				}
				for _, uri := range []string{`ui://x/\u0001`, `ui://x/\u0007`, `ui://x/\u000b`, `ui://x/\u007f`, `ui://x/\udb40\udc01`} {
					status, out := read(uri)
					if err := rpcAnswerOf(status, out); err != nil {
						t.Errorf("%s: %v", uri, err)
					}
					want := `{"jsonrpc":"2.0","id":7,"error":{"code":-32602,"message":"` + refuseURI.message + `"}}`
					if status != wantStatus || !bytes.HasSuffix(out, []byte(want)) {
						t.Errorf("%s: %d, want %d and %s:\n%s", uri, status, wantStatus, want, out)
					}
				}
				status, out := read(`ui://x/Maria\u2028Silva`)
				if err := rpcAnswerOf(status, out); err != nil || !bytes.Contains(out, []byte(`"error"`)) || bytes.Contains(out, []byte("Maria")) {
					t.Errorf("an unknown URI: %d (%v), want a JSON-RPC error that does not repeat it:\n%s", status, err, out)
				}
			})
		}
	}
}

// rpcAnswerOf checks that out (headers, a blank line, the body) is an answer
// of the endpoint: a JSON-RPC response under a JSON content type (or, for a
// call served as an event stream, events whose last is one), or 202 with
// no body (a notification).
func rpcAnswerOf(status int, out []byte) error {
	head, body, ok := bytes.Cut(out, []byte("\r\n\r\n"))
	if rest, none := bytes.CutPrefix(out, []byte("\r\n")); none {
		head, body, ok = nil, rest, true // no headers at all
	}
	if !ok {
		return fmt.Errorf("no blank line after the headers")
	}
	hdr, err := textproto.NewReader(bufio.NewReader(bytes.NewReader(append(head, "\r\n\r\n"...)))).ReadMIMEHeader()
	if err != nil {
		return fmt.Errorf("headers: %v", err)
	}
	if status == http.StatusAccepted && len(bytes.TrimSpace(body)) == 0 {
		return nil
	}
	mt, _, _ := mime.ParseMediaType(hdr.Get("Content-Type"))
	switch mt {
	case "application/json":
	case "text/event-stream":
		if status != http.StatusOK {
			return fmt.Errorf("an event stream under HTTP %d", status)
		}
		body = lastEventData(body)
	default:
		return fmt.Errorf("HTTP %d, Content-Type %q: not a JSON-RPC answer: %q", status, mt, body)
	}
	if status >= 500 {
		return fmt.Errorf("HTTP %d", status)
	}
	var msg struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"` // null: not nil
		Result  json.RawMessage `json:"result"`
		Error   *struct {
			Code    *int64  `json:"code"`
			Message *string `json:"message"`
		} `json:"error"`
	}
	var members map[string]json.RawMessage
	if err := json.Unmarshal(body, &members); err != nil {
		return fmt.Errorf("HTTP %d, body not a JSON object (%v): %q", status, err, body)
	}
	if _, ok := members["id"]; !ok {
		return fmt.Errorf("HTTP %d, a response without an id: %s", status, body)
	}
	if err := json.Unmarshal(body, &msg); err != nil {
		return fmt.Errorf("HTTP %d, body not JSON (%v): %q", status, err, body)
	}
	switch {
	case msg.JSONRPC != "2.0":
		return fmt.Errorf("HTTP %d, not a JSON-RPC 2.0 response: %s", status, body)
	case (msg.Result == nil) == (msg.Error == nil):
		return fmt.Errorf("HTTP %d, neither a result nor an error (or both): %s", status, body)
	case msg.Error != nil && (msg.Error.Code == nil || msg.Error.Message == nil):
		return fmt.Errorf("HTTP %d, an error without a code and a message: %s", status, body)
	}
	return nil
}

// FuzzAnswersAreJSONRPC: whatever the body of a POST whose headers pass, on
// any served revision, /mcp answers a JSON-RPC message under a JSON content
// type (or accepts a notification): never go-sdk's plain-text 500, whatever
// method, params or string it is sent.
func FuzzAnswersAreJSONRPC(f *testing.F) {
	for _, c := range fastCases() {
		f.Add([]byte(c.body), uint8(1))
	}
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"\u0001"}}`,
		`{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"ui://x/\u007f"}}`,
		`{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"ui://cobranca/portfolio-analysis.html"}}`,
		`{"jsonrpc":"2.0","id":1,"method":"resources/templates/list","params":{"cursor":"\u0001"}}`,
		`{"jsonrpc":"2.0","id":1,"method":"resources/list","params":{"cursor":"\u000b"}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"cursor":"\u0007"}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"\u0001","arguments":{}}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"collections.analyze_portfolio","arguments":{"asOf":"\u0001"}}}`,
		`{"jsonrpc":"2.0","id":1,"method":"\u0001","params":{}}`,
		`{"jsonrpc":"2.0","id":"\u0001","method":"ping"}`,
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"\u0001","capabilities":{},"clientInfo":{"name":"\u0007","version":"1"}}}`,
		`{"jsonrpc":"2.0","id":1,"method":"ping","params":{` + meta2026 + `}}`,
		`{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{` + strings.Replace(meta2026, "2026-07-28", "\\u0001", 1) + `}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`[{"jsonrpc":"2.0","id":1,"method":"ping"}]`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"}}{}`,
		`{`,
	} {
		f.Add([]byte(s), uint8(0))
		f.Add([]byte(s), uint8(3))
	}
	h := asCaller(withRequest(newHandler(f, Options{}, pipeline.Options{})))
	f.Fuzz(func(t *testing.T, body []byte, rev uint8) {
		version := servedProtocols[int(rev)%len(servedProtocols)]
		r := httptest.NewRequest(http.MethodPost, "/mcp", bytes.NewReader(body))
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("Accept", "application/json, text/event-stream")
		r.Header.Set("Mcp-Protocol-Version", version)
		if version == protocol20260728 {
			// The headers a 2026-07-28 client derives from the body, as
			// far as the body can be read.
			if req, _ := readRequest(body); req.method != "" {
				r.Header.Set("Mcp-Method", req.method)
				if req.named {
					r.Header.Set("Mcp-Name", req.name)
				}
			}
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		var out bytes.Buffer
		_ = rec.Result().Header.Write(&out)
		out.WriteString("\r\n")
		out.Write(rec.Body.Bytes())
		if err := rpcAnswerOf(rec.Code, out.Bytes()); err != nil {
			t.Fatalf("%s %q: %v", version, body, err)
		}
	})
}

// TestSDKFailureAnsweredInJSON: should go-sdk ever fail to encode an answer
// the front did not foresee (its plain-text 500), or write neither a result
// nor an error, the client still gets a JSON-RPC error under its id.
func TestSDKFailureAnsweredInJSON(t *testing.T) {
	for _, c := range []struct {
		name   string
		status int
		body   string
	}{
		{"plain-text 500", http.StatusInternalServerError, "Internal Server Error\n"},
		{"200, not JSON-RPC", http.StatusOK, "{}"},
		{"200, empty", http.StatusOK, ""},
	} {
		sw := &sdkWriter{header: http.Header{"Content-Type": {"text/plain; charset=utf-8"}}}
		sw.WriteHeader(c.status)
		_, _ = sw.Write([]byte(c.body))
		w := httptest.NewRecorder()
		r := httptest.NewRequest(http.MethodPost, "/mcp", nil)
		f := sw.send(w, r, []byte("7"), false)
		var out bytes.Buffer
		_ = w.Result().Header.Write(&out)
		out.WriteString("\r\n")
		out.Write(w.Body.Bytes())
		if err := rpcAnswerOf(w.Code, out.Bytes()); err != nil || f == nil || f.code != refuseInternal.code || !strings.Contains(w.Body.String(), `"id":7,`) {
			t.Errorf("%s: refusal %v, answer %v:\n%s", c.name, f, err, out.Bytes())
		}
	}
}
