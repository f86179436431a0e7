package mcpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/cobranca/cobranca/internal/auditlog"
	"github.com/cobranca/cobranca/internal/auth"
	"github.com/cobranca/cobranca/internal/collections"
	"github.com/cobranca/cobranca/internal/contract"
	"github.com/cobranca/cobranca/internal/pipeline"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	sjson "github.com/segmentio/encoding/json"
)

// frontServer is the endpoint over real HTTP, as the server mounts it: each
// request gets an Info and the principal scopes say (none: no principal).
type frontServer struct {
	*httptest.Server
	h   *Handler
	rec *recorder
	ran *atomic.Int64 // runs of test.counted
}

func newFrontServer(t *testing.T, slow bool, scopes ...string) *frontServer {
	t.Helper()
	var ran atomic.Int64
	counted := pipeline.Tool{Contract: testContract("test.counted", contract.Low), Logic: func(context.Context, json.RawMessage) (pipeline.Effect, error) {
		ran.Add(1)
		return pipeline.Effect{Structured: map[string]any{"ok": true}, Summary: "done"}, nil
	}}
	rec := newRecorder()
	h := newHandler(t, Options{Scopes: challenger{}, DisableFastPath: slow}, pipeline.Options{Tools: []pipeline.Tool{counted}, Auditor: rec})
	inner := withRequest(h)
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if scopes != nil {
			r = r.WithContext(auth.WithPrincipal(r.Context(), &auth.Principal{Subject: "s", Scopes: scopes}))
		}
		inner.ServeHTTP(w, r)
	}))
	t.Cleanup(s.Close)
	return &frontServer{Server: s, h: h, rec: rec, ran: &ran}
}

// post sends body with the headers of a plain call of the given revision,
// then hdr, and returns the status and the response bytes (headers
// included, so that nothing can hide in them).
func (s *frontServer) post(t *testing.T, version, body string, hdr map[string]string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, s.URL, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if version != "" {
		req.Header.Set("Mcp-Protocol-Version", version)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var raw bytes.Buffer
	_ = resp.Header.Write(&raw)
	raw.WriteString("\r\n")
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	raw.Write(b)
	return resp.StatusCode, raw.Bytes()
}

// records returns the audit records written so far.
func (r *recorder) drain() []pipeline.CallRecord {
	var out []pipeline.CallRecord
	for {
		select {
		case rec := <-r.recs:
			out = append(out, rec)
		default:
			return out
		}
	}
}

var bothPaths = []struct {
	name string
	slow bool
}{{"fast", false}, {"sdk", true}}

// revision builds the requests of one protocol revision: the 2026-07-28
// ones carry the _meta triple and the Mcp-Method/Mcp-Name headers.
type revision struct {
	version string
	// progress: the call's _meta carries a progress token (it is served
	// as an event stream).
	progress bool
}

var bothRevisions = []revision{{version: "2025-11-25"}, {version: protocol20260728}}

// withProgress are bothRevisions' calls carrying a progress token.
var withProgress = []revision{{version: "2025-11-25", progress: true}, {version: protocol20260728, progress: true}}

func (v revision) meta() string {
	switch {
	case v.version != protocol20260728 && v.progress:
		return `"_meta":{"progressToken":"p-1"},`
	case v.version != protocol20260728:
		return ""
	case v.progress:
		return strings.Replace(meta2026, `"_meta":{`, `"_meta":{"progressToken":"p-1",`, 1) + ","
	}
	return meta2026 + ","
}

// call is a tools/call of tool with raw arguments; extra goes into params.
func (v revision) call(id, tool, args, extra string) string {
	return `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{` + v.meta() + extra + `"name":"` + tool + `","arguments":` + args + `}}`
}

func (v revision) headers(method, name string) map[string]string {
	if v.version != protocol20260728 {
		return nil
	}
	h := map[string]string{"Mcp-Method": method}
	if name != "" {
		h["Mcp-Name"] = name
	}
	return h
}

// TestEnvelopeReadExactly: a call whose body holds a second member name
// differing only in case (or spelled with escapes) is read as JSON-RPC
// reads it — case-sensitive — by the front's scope check and by go-sdk
// alike: a caller without the tool's scope gets the 403 challenge and a
// denied audit event, whatever the extra members say; nothing runs.
func TestEnvelopeReadExactly(t *testing.T) {
	for _, p := range bothPaths {
		for _, v := range bothRevisions {
			t.Run(p.name+"/"+v.version, func(t *testing.T) {
				s := newFrontServer(t, p.slow, "other:read")
				args := `{}`
				bodies := map[string]string{
					"extra Name after":  v.call("1", "test.counted", args, `"Name":"no.such_tool",`),
					"extra Name before": `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{` + v.meta() + `"name":"test.counted","arguments":{},"Name":"no.such_tool"}}`,
					"extra NAME":        v.call("1", "test.counted", args, `"NAME":"no.such_tool",`),
					"extra Method":      `{"jsonrpc":"2.0","id":1,"Method":"tools/list","method":"tools/call","params":{` + v.meta() + `"name":"test.counted","arguments":{}}}`,
					"extra PARAMS":      `{"jsonrpc":"2.0","id":1,"method":"tools/call","PARAMS":{"name":"no.such_tool"},"params":{` + v.meta() + `"name":"test.counted","arguments":{}}}`,
					"escaped name key":  `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{` + v.meta() + `"Name":"no.such_tool","n\u0061me":"test.counted","arguments":{}}}`,
					"escaped method":    `{"jsonrpc":"2.0","id":1,"method":"tools\/call","params":{` + v.meta() + `"name":"test.counted","arguments":{},"Name":"x.y"}}`,
				}
				for name, body := range bodies {
					status, out := s.post(t, v.version, body, v.headers("tools/call", "test.counted"))
					if status != http.StatusForbidden {
						t.Errorf("%s: status %d, want 403:\n%s", name, status, out)
					}
					recs := s.rec.drain()
					if len(recs) != 1 || recs[0].Contract.Name != "test.counted" || recs[0].Outcome != auditlog.Denied || recs[0].Code != "insufficient_scope" {
						t.Errorf("%s: audit records %+v, want one denied test.counted insufficient_scope", name, recs)
					}
				}
				if n := s.ran.Load(); n != 0 {
					t.Errorf("the tool ran %d times", n)
				}
			})
		}
	}
}

// overriding returns hdr with k set to val.
func overriding(hdr map[string]string, k, val string) map[string]string {
	m := map[string]string{k: val}
	for hk, hv := range hdr {
		if hk != k {
			m[hk] = hv
		}
	}
	return m
}

// refusedCase is a request the endpoint refuses, and how.
type refusedCase struct {
	name, body string
	hdr        map[string]string
	status     int
	code       string
}

// refusedCalls are calls of test.counted that the endpoint (or go-sdk)
// refuses, for a caller who holds the tool's scope, before the tool runs.
func refusedCalls(v revision) []refusedCase {
	deep := strings.Repeat("[", 1001) + strings.Repeat("]", 1001)
	hdr := v.headers("tools/call", "test.counted")
	with := func(k, val string) map[string]string { return overriding(hdr, k, val) }
	call := v.call("7", "test.counted", `{}`, "")
	tests := []refusedCase{
		{"content type", call, with("Content-Type", "text/plain"), 415, "unsupported_media_type"},
		{"accept", call, with("Accept", "application/json"), 400, "not_acceptable"},
		{"protocol version", call, with("Mcp-Protocol-Version", "1999-01-01"), 400, "unsupported_protocol_version"},
		{"last event id", call, with("Last-Event-ID", "1"), 400, "bad_request"},
		{"trailing bytes", call + "garbage", hdr, 400, "trailing_data"},
		{"two objects", call + call, hdr, 400, "trailing_data"},
		{"fractional id", v.call("1.5", "test.counted", `{}`, ""), hdr, 400, "invalid_id"},
		{"duplicate id", `{"jsonrpc":"2.0","id":1,"id":2,"method":"tools/call","params":{` + v.meta() + `"name":"test.counted","arguments":{}}}`, hdr, 400, "duplicate_member"},
		{"no id", `{"jsonrpc":"2.0","method":"tools/call","params":{` + v.meta() + `"name":"test.counted","arguments":{}}}`, hdr, 400, "missing_id"},
		{"nesting too deep", v.call("7", "test.counted", `{"x":`+deep+`}`, ""), hdr, 400, "too_deep"},
		{"malformed arguments", v.call("7", "test.counted", `{"x":}`, ""), hdr, 400, "parse_error"},
		{"name twice", v.call("7", "test.counted", `{}`, `"name":"test.counted",`), hdr, 400, "duplicate_member"},
		{"name twice, escaped", v.call("7", "test.counted", `{}`, `"name":"test.c\u006funted",`), hdr, 400, "duplicate_member"},
		{"name twice, the other not served", v.call("7", "test.counted", `{}`, `"name":"no.such_tool",`), hdr, 400, "duplicate_member"},
		{"name twice, after the arguments", `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{` + v.meta() + `"name":"test.counted","arguments":{},"name":"test.counted"}}`, hdr, 400, "duplicate_member"},
	}
	if v.version != protocol20260728 {
		// go-sdk refuses these params before dispatch, inside its answer: on an event stream
		// when the call carries a progress token, read from it and rewritten all the same.
		tests = append(tests, refusedCase{"inputResponses not an object", v.call("7", "test.counted", `{}`, `"inputResponses":5,`), hdr, 200, "invalid_params"})
	}
	if v.version == protocol20260728 {
		tests = append(tests,
			refusedCase{"Mcp-Name mismatch", call, with("Mcp-Name", "test.other"), 400, "header_mismatch"},
			refusedCase{"Mcp-Method mismatch", call, with("Mcp-Method", "tools/list"), 400, "header_mismatch"},
			refusedCase{"_meta protocol mismatch", strings.Replace(call, `"io.modelcontextprotocol/protocolVersion":"2026-07-28"`, `"io.modelcontextprotocol/protocolVersion":"2025-11-25"`, 1), hdr, 400, "header_mismatch"},
		)
	}
	return tests
}

// TestRefusedCallsAudited: a tools/call refused before the pipeline runs —
// by the front or by go-sdk — leaves exactly one audit event, rejected with
// a stable code; a call the pipeline ran leaves exactly one too.
func TestRefusedCallsAudited(t *testing.T) {
	for _, p := range bothPaths {
		for _, v := range slices.Concat(bothRevisions, withProgress) {
			t.Run(fmt.Sprintf("%s/%s/progress=%v", p.name, v.version, v.progress), func(t *testing.T) {
				s := newFrontServer(t, p.slow, "test:run")
				for _, tt := range refusedCalls(v) {
					status, out := s.post(t, v.version, tt.body, tt.hdr)
					if status != tt.status {
						t.Errorf("%s: status %d, want %d:\n%s", tt.name, status, tt.status, out)
					}
					recs := s.rec.drain()
					if len(recs) != 1 || recs[0].Contract.Name != "test.counted" || recs[0].Outcome != auditlog.Rejected || string(recs[0].Code) != tt.code {
						t.Errorf("%s: audit records %+v, want one rejected test.counted %s", tt.name, recs, tt.code)
					}
				}
				if n := s.ran.Load(); n != 0 {
					t.Errorf("a refused call ran the tool %d times", n)
				}
				// A call that runs is audited once, by the pipeline.
				call, hdr := v.call("7", "test.counted", `{}`, ""), v.headers("tools/call", "test.counted")
				if status, out := s.post(t, v.version, call, hdr); status != http.StatusOK || s.ran.Load() != 1 {
					t.Errorf("valid call: status %d, ran %d:\n%s", status, s.ran.Load(), out)
				}
				if recs := s.rec.drain(); len(recs) != 1 || recs[0].Outcome != auditlog.Allowed {
					t.Errorf("valid call: audit records %+v, want one ok", recs)
				}
			})
		}
	}
}

// TestAmbiguousToolUnaudited: a call naming two different served tools is
// refused (duplicate_member) and audited under neither: there is no single
// tool it could be. So is one whose second name cannot be read.
func TestAmbiguousToolUnaudited(t *testing.T) {
	for _, p := range bothPaths {
		for _, v := range bothRevisions {
			t.Run(p.name+"/"+v.version, func(t *testing.T) {
				s := newFrontServer(t, p.slow, "test:run", "collections:read")
				hdr := v.headers("tools/call", "test.counted")
				for name, body := range map[string]string{
					"two served tools":    v.call("7", "test.counted", `{}`, `"name":"`+collections.AnalyzeName+`",`),
					"a name not a string": v.call("7", "test.counted", `{}`, `"name":1,`),
				} {
					status, out := s.post(t, v.version, body, hdr)
					if status != http.StatusBadRequest || !bytes.HasSuffix(out, []byte(`"message":"`+refuseDuplicate.message+`"}}`)) {
						t.Errorf("%s: status %d, want 400 duplicate member:\n%s", name, status, out)
					}
					if recs := s.rec.drain(); len(recs) != 0 {
						t.Errorf("%s: audit records %+v, want none", name, recs)
					}
				}
			})
		}
	}
}

// TestDeniedBeforeRefused: authorization comes before validation. Each call
// TestRefusedCallsAudited refuses, sent by a caller without the tool's
// scope (or with no token's principal at all), is the 403 challenge and one
// denied audit event — never the validation error — and nothing runs.
func TestDeniedBeforeRefused(t *testing.T) {
	for _, p := range bothPaths {
		for _, v := range bothRevisions {
			for _, scopes := range [][]string{{"other:read"}, nil} {
				t.Run(p.name+"/"+v.version+"/"+strings.Join(scopes, ","), func(t *testing.T) {
					s := newFrontServer(t, p.slow, scopes...)
					for _, tt := range refusedCalls(v) {
						status, out := s.post(t, v.version, tt.body, tt.hdr)
						if status != http.StatusForbidden || !bytes.Contains(out, []byte("insufficient scope: test:run")) {
							t.Errorf("%s: status %d, want 403 with the scope challenge:\n%s", tt.name, status, out)
						}
						recs := s.rec.drain()
						if len(recs) != 1 || recs[0].Contract.Name != "test.counted" || recs[0].Outcome != auditlog.Denied || recs[0].Code != "insufficient_scope" {
							t.Errorf("%s: audit records %+v, want one denied test.counted insufficient_scope", tt.name, recs)
						}
					}
					if n := s.ran.Load(); n != 0 {
						t.Errorf("a denied call ran the tool %d times", n)
					}
				})
			}
		}
	}
}

type echoCase struct {
	name, body string
	hdr        map[string]string
}

// TestAnswersNeverEchoRequest: whatever a malformed or refused request
// holds — a customer name, an invoice id — the answer (headers and body) is
// the endpoint's own and repeats none of it.
func TestAnswersNeverEchoRequest(t *testing.T) {
	const customer, invoice = "Maria Silva Comercio Ltda", "NF-2026-000042"
	inv := `{"id":"` + invoice + `","customerId":"c1","customerName":"` + customer + `","dueDate":"2026-11-01","amountCents":5,"status":"open","doNotContact":false}`
	args := `{"asOf":"2026-11-29","invoices":[` + inv + `]}`
	const notified = "notifications/initialized"
	const notification = `{"jsonrpc":"2.0","method":"` + notified + `"}`
	for _, p := range bothPaths {
		for _, v := range slices.Concat(bothRevisions, withProgress) {
			t.Run(fmt.Sprintf("%s/%s/progress=%v", p.name, v.version, v.progress), func(t *testing.T) {
				s := newFrontServer(t, p.slow, "collections:read", "test:run")
				hdr := v.headers("tools/call", collections.AnalyzeName)
				with := func(k, val string) map[string]string { return overriding(hdr, k, val) }
				call := v.call("1", collections.AnalyzeName, args, "")
				bodies := []echoCase{
					{"malformed arguments", v.call("1", collections.AnalyzeName, `{"asOf":"`+customer+`",}`, ""), hdr},
					{"malformed at the end", call[:len(call)-1] + `,"x":"` + invoice + `"`, hdr},
					{"trailing bytes", call + `"` + customer + `"`, hdr},
					{"two objects", call + call, hdr},
					{"unknown tool", v.call("1", "x."+invoice, args, ""), v.headers("tools/call", "x."+invoice)},
					{"customer as tool name", v.call("1", customer, args, ""), v.headers("tools/call", customer)},
					{"unknown method", `{"jsonrpc":"2.0","id":1,"method":"` + customer + `","params":{` + strings.TrimSuffix(v.meta(), ",") + `}}`, v.headers(customer, "")},
					{"name not a string", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{` + v.meta() + `"name":["` + customer + `"],"arguments":` + args + `}}`, hdr},
					{"params not an object", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":["` + customer + `",` + args + `]}`, hdr},
					{"string id not echoable", v.call(`"`+invoice+`\ud800"`, collections.AnalyzeName, args, ""), hdr},
					{"numeric id not echoable", v.call("1.5", collections.AnalyzeName, args, ""), hdr},
					{"duplicate name", v.call("1", collections.AnalyzeName, args, `"name":"`+customer+`",`), hdr},
					{"no jsonrpc", `{"id":1,"method":"tools/call","params":{"name":"` + collections.AnalyzeName + `","arguments":` + args + `}}`, hdr},
					{"batch", `[` + call + `]`, hdr},
					{"not an object", `"` + customer + `"`, hdr},
					{"wrong content type", call, with("Content-Type", "text/plain")},
					{"arguments not an object", v.call("1", collections.AnalyzeName, `"`+customer+`"`, ""), hdr},
					{"invalid arguments", v.call("1", collections.AnalyzeName, `{"asOf":"2026-11-29","invoices":[`+strings.Replace(inv, `"status":"open"`, `"status":"`+customer+`"`, 1)+`]}`, ""), hdr},
					{"unknown argument", v.call("1", collections.AnalyzeName, `{"asOf":"2026-11-29","invoices":[],"`+customer+`":1}`, ""), hdr},
					// go-sdk answers these notifications with an error
					// that has no id.
					{"notification, Mcp-Method not matching", notification, overriding(v.headers(notified, ""), "Mcp-Method", customer+" "+invoice)},
					{"notification, _meta protocol version", `{"jsonrpc":"2.0","method":"` + notified + `","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"` + customer + `"}}}`, v.headers(notified, "")},
					{"notification, both", `{"jsonrpc":"2.0","method":"` + notified + `","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"` + invoice + `"}}}`, overriding(v.headers(notified, ""), "Mcp-Method", customer)},
				}
				if v.version == protocol20260728 {
					bodies = append(bodies,
						echoCase{"Mcp-Name mismatch", call, with("Mcp-Name", customer)},
						echoCase{"Mcp-Method mismatch", call, with("Mcp-Method", invoice)},
						echoCase{"_meta protocol mismatch", strings.Replace(call, `"io.modelcontextprotocol/protocolVersion":"2026-07-28"`, `"io.modelcontextprotocol/protocolVersion":"`+customer+`"`, 1), hdr},
					)
				}
				for _, b := range bodies {
					_, out := s.post(t, v.version, b.body, b.hdr)
					for _, secret := range []string{customer, invoice, "Maria", "000042"} {
						if bytes.Contains(out, []byte(secret)) {
							t.Errorf("%s: the answer repeats %q:\n%s", b.name, secret, out)
						}
					}
				}
			})
		}
	}
}

// TestInexactIDs: an id the server could not echo exactly is an Invalid
// Request answered with id null, on both paths, and nothing runs; an id it
// can echo is echoed byte for byte.
func TestInexactIDs(t *testing.T) {
	bad := []string{"1.5", "1.0", "1e3", "1E3", "10e-1", "-0", "9007199254740993", "-9007199254740993",
		"9223372036854775808", "123456789012345678901234567890", "1e400", `"\ud800"`, `"a\udc00"`, `"\ud800\u0041"`, "\"\xff\"", "\"caf\xe9\"", "null", "true", "{}", "[]"}
	good := []string{"0", "-1", "9007199254740992", "-9007199254740992", `"x"`, `""`, `"\u00e9\ud83d\ude00"`}
	for _, p := range bothPaths {
		for _, v := range bothRevisions {
			t.Run(p.name+"/"+v.version, func(t *testing.T) {
				s := newFrontServer(t, p.slow, "test:run")
				hdr := v.headers("tools/call", "test.counted")
				for _, id := range bad {
					status, out := s.post(t, v.version, v.call(id, "test.counted", `{}`, ""), hdr)
					body := out[bytes.Index(out, []byte("\r\n\r\n"))+4:]
					if status != http.StatusBadRequest || !bytes.Equal(body, []byte(`{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"`+refuseID.message+`"}}`)) {
						t.Errorf("id %s: status %d, answer %s; want 400 Invalid Request with id null", id, status, body)
					}
				}
				if n := s.ran.Load(); n != 0 {
					t.Errorf("calls with inexact ids ran %d times", n)
				}
				for _, id := range good {
					status, out := s.post(t, v.version, v.call(id, "test.counted", `{}`, ""), hdr)
					body := out[bytes.Index(out, []byte("\r\n\r\n"))+4:]
					want := id
					if id == `"\u00e9\ud83d\ude00"` {
						want = "\"\u00e9\U0001F600\"" // the same string, as go-sdk writes it
					}
					if status != http.StatusOK || !bytes.HasPrefix(body, []byte(`{"jsonrpc":"2.0","id":`+want+`,"result":`)) {
						t.Errorf("id %s: status %d, answer %s; want the result under id %s", id, status, body, want)
					}
				}
			})
		}
	}
}

// TestTrailingBytes: a body with anything after its JSON value is refused
// with 400 and runs nothing, however valid the first value.
func TestTrailingBytes(t *testing.T) {
	for _, p := range bothPaths {
		for _, v := range bothRevisions {
			t.Run(p.name+"/"+v.version, func(t *testing.T) {
				s := newFrontServer(t, p.slow, "test:run")
				hdr := v.headers("tools/call", "test.counted")
				call := v.call("1", "test.counted", `{}`, "")
				for _, body := range []string{call + "garbage", call + call, call + " {}", call + "\n" + call, call + "]", call + "\x00"} {
					status, out := s.post(t, v.version, body, hdr)
					if status != http.StatusBadRequest || !bytes.Contains(out, []byte(`"code":-32700`)) {
						t.Errorf("%q: status %d, want 400 with a parse error:\n%s", body, status, out)
					}
				}
				if n := s.ran.Load(); n != 0 {
					t.Errorf("bodies with trailing bytes ran the tool %d times", n)
				}
				// White space after the value is no trailing data.
				if status, out := s.post(t, v.version, call+" \r\n\t", hdr); status != http.StatusOK || s.ran.Load() != 1 {
					t.Errorf("trailing white space: status %d:\n%s", status, out)
				}
			})
		}
	}
}

// TestUnadvertisedMethods: the server advertises tools only; a real go-sdk
// client asking for prompts or resources gets "method not found", on both
// revisions and both paths, and so does any raw call of a method not served
// (logging/setLevel among them: the client's call for it is deprecated).
func TestUnadvertisedMethods(t *testing.T) {
	for _, p := range bothPaths {
		for _, v := range bothRevisions {
			t.Run(p.name+"/"+v.version, func(t *testing.T) {
				s := newFrontServer(t, p.slow, "test:run")
				c := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
				sess, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: s.URL}, &mcp.ClientSessionOptions{ProtocolVersion: v.version})
				if err != nil {
					t.Fatal(err)
				}
				defer sess.Close()
				ctx := context.Background()
				// resources/list, resources/read and resources/templates/list
				// are served for the product's result view (views_test.go).
				calls := map[string]func() error{
					"prompts/list": func() error { _, err := sess.ListPrompts(ctx, nil); return err },
					"prompts/get": func() error {
						_, err := sess.GetPrompt(ctx, &mcp.GetPromptParams{Name: "p"})
						return err
					},
				}
				for method, call := range calls {
					var rpcErr *jsonrpc.Error
					if err := call(); !errors.As(err, &rpcErr) || rpcErr.Code != jsonrpc.CodeMethodNotFound {
						t.Errorf("%s: error %v, want JSON-RPC method not found (-32601)", method, err)
					}
				}
				if _, err := sess.ListTools(ctx, nil); err != nil {
					t.Errorf("tools/list: %v", err)
				}
				wantStatus := http.StatusOK
				if v.version == protocol20260728 {
					wantStatus = http.StatusNotFound
				}
				for _, method := range []string{"logging/setLevel", "resources/subscribe", "completion/complete", "subscriptions/listen", "tasks/list", "no/such"} {
					body := `{"jsonrpc":"2.0","id":"q","method":"` + method + `","params":{` + strings.TrimSuffix(v.meta(), ",") + `}}`
					status, out := s.post(t, v.version, body, v.headers(method, ""))
					if status != wantStatus || !bytes.HasSuffix(out, []byte(`{"jsonrpc":"2.0","id":"q","error":{"code":-32601,"message":"Method not found"}}`)) {
						t.Errorf("%s: status %d, want %d and method not found:\n%s", method, status, wantStatus, out)
					}
				}
			})
		}
	}
}

// FuzzReadRequest holds the front's reading of a request to go-sdk's: every
// request the front accepts, go-sdk decodes as the same method, the same
// tool name and an id it answers under the same JSON value — so no request
// can pass the front's checks with one reading and be dispatched by go-sdk
// with another. The one-pass reading of the fast path (scanCall) agrees
// with both wherever it accepts.
func FuzzReadRequest(f *testing.F) {
	for _, c := range fastCases() {
		f.Add([]byte(c.body))
	}
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a.b","Name":"c.d","arguments":{}}}`,
		`{"jsonrpc":"2.0","id":1,"Method":"tools/list","method":"tools/call","PARAMS":{},"params":{"n\u0061me":"a.b"}}`,
		`{"jsonrpc":"2\u002e0","id":"\ud83d\ude00","method":"tools\/call","params":{"name":"a\u00e9"}}`,
		`{"jsonrpc":"2.0","id":9007199254740992,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":-0,"method":"ping"} `,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a.b"}}{}`,
		`{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"ui:\/\/cobranca\/portfolio-analysis.html"}}`,
		`{"jsonrpc":"2.0","id":1,"params":{"URI":"ui://x/y.html","uri":"ui://a/b.html"},"method":"resources/read"}`,
		`{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"ui://a/b.html","uri":"ui://x/y.html"}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		req, bad := readRequest(body)
		if env, plain := scanCall(body, nil); plain {
			if bad != nil || req.method != "tools/call" || !req.named || req.name != env.name || string(req.id) != string(env.id) {
				t.Fatalf("scanCall read %q as %q id %s; readRequest %+v, %v", body, env.name, env.id, req, bad)
			}
		}
		if bad != nil {
			return
		}
		msg, err := jsonrpc.DecodeMessage(body)
		if err != nil {
			t.Fatalf("the front accepted %q, go-sdk refuses it: %v", body, err)
		}
		call, ok := msg.(*jsonrpc.Request)
		if !ok || call.Method != req.method {
			t.Fatalf("%q: the front reads method %q, go-sdk %#v", body, req.method, msg)
		}
		if (req.id != nil) != call.ID.IsValid() {
			t.Fatalf("%q: the front reads id %s, go-sdk %v", body, req.id, call.ID.Raw())
		}
		if req.id != nil {
			answered, err := json.Marshal(call.ID.Raw())
			if err != nil || !sameJSON(answered, req.id) {
				t.Fatalf("%q: id %s would be answered as %s", body, req.id, answered)
			}
		}
		if req.uri != "" {
			var p struct {
				URI string `json:"uri"`
			}
			dec := sjson.NewDecoder(bytes.NewReader(call.Params))
			dec.DontMatchCaseInsensitiveStructFields()
			if err := dec.Decode(&p); err != nil || p.URI != req.uri || req.method != "resources/read" {
				t.Fatalf("%q: the front reads uri %q, go-sdk %q (%v)", body, req.uri, p.URI, err)
			}
		}
		if req.named {
			var p struct {
				Name string `json:"name"`
			}
			dec := sjson.NewDecoder(bytes.NewReader(call.Params))
			dec.DontMatchCaseInsensitiveStructFields() // as go-sdk decodes params
			if err := dec.Decode(&p); err != nil || p.Name != req.name {
				t.Fatalf("%q: the front reads tool %q, go-sdk %q (%v)", body, req.name, p.Name, err)
			}
		}
	})
}

// sameJSON reports whether a and b are the same JSON value.
func sameJSON(a, b []byte) bool {
	var va, vb any
	da, db := json.NewDecoder(bytes.NewReader(a)), json.NewDecoder(bytes.NewReader(b))
	da.UseNumber()
	db.UseNumber()
	return da.Decode(&va) == nil && db.Decode(&vb) == nil && reflect.DeepEqual(va, vb)
}

// TestSDKRefusalAfterDispatchAuditedOnce: should a request ever reach a
// tool through go-sdk that the front's scope check did not see (a reading
// disagreement FuzzReadRequest exists to rule out), the tool handler's own
// check refuses it, audits it denied once, and its answer is the fixed one
// (the pipeline's denial, sent as written: it repeats nothing of the call).
func TestSDKRefusalAfterDispatchAuditedOnce(t *testing.T) {
	s := newFrontServer(t, true)
	body := `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"test.counted","arguments":{"note":"Maria Silva"}}}`
	req := httptest.NewRequest(http.MethodPost, "/mcp", nil)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	caller := &auth.Principal{Subject: "s", Scopes: []string{"other:read"}}
	req = req.WithContext(auth.WithPrincipal(req.Context(), caller))
	w := httptest.NewRecorder()
	s.h.serveSDK(w, req, caller, []byte(body), nil, "test.counted", false) // past the front's checks
	want := `{"jsonrpc":"2.0","id":3,"error":{"code":` + strconv.FormatInt(errInsufficientScope.Code, 10) + `,"message":"` + errInsufficientScope.Message + `"}}`
	if got := w.Body.String(); got != want || errInsufficientScope.Code != jsonrpc.CodeInvalidRequest {
		t.Errorf("answer %s, want %s", got, want)
	}
	recs := s.rec.drain()
	if len(recs) != 1 || recs[0].Outcome != auditlog.Denied || recs[0].Code != "insufficient_scope" {
		t.Errorf("audit records %+v, want one denied insufficient_scope", recs)
	}
	if s.ran.Load() != 0 {
		t.Error("the tool ran")
	}
}

// TestUnknownNotificationDropped: a notification of a method not served is
// accepted (JSON-RPC never answers a notification) and reaches nothing; one
// of a method that needs an id is refused.
func TestUnknownNotificationDropped(t *testing.T) {
	for _, p := range bothPaths {
		s := newFrontServer(t, p.slow, "test:run")
		if status, out := s.post(t, "2025-11-25", `{"jsonrpc":"2.0","method":"notifications/no_such","params":{"x":"Maria Silva"}}`, nil); status != http.StatusAccepted || bytes.Contains(out, []byte("Maria")) {
			t.Errorf("%s: unknown notification: status %d:\n%s", p.name, status, out)
		}
		if status, out := s.post(t, "2025-11-25", `{"jsonrpc":"2.0","method":"tools/list"}`, nil); status != http.StatusBadRequest || !bytes.Contains(out, []byte(`"code":-32600`)) {
			t.Errorf("%s: tools/list without id: status %d:\n%s", p.name, status, out)
		}
		if status, out := s.post(t, "2025-11-25", `{"jsonrpc":"2.0","method":"notifications/initialized"}`, nil); status != http.StatusAccepted {
			t.Errorf("%s: notifications/initialized: status %d:\n%s", p.name, status, out)
		}
	}
}

// TestNestingLimit pins what the README says is enforced: a member value
// may nest maxDepth levels, itself included — so arguments and _meta reach
// maxDepth+2 levels in the body, counting the request and params objects —
// and one level more is refused too_deep, on both paths.
func TestNestingLimit(t *testing.T) {
	nest := func(levels int) string { // levels objects, the outermost included
		return strings.Repeat(`{"a":`, levels-1) + `{}` + strings.Repeat(`}`, levels-1)
	}
	for _, p := range bothPaths {
		t.Run(p.name, func(t *testing.T) {
			s := newFrontServer(t, p.slow, "test:run")
			for levels, want := range map[int]int{maxDepth: http.StatusOK, maxDepth + 1: http.StatusBadRequest} {
				body := revision{version: "2025-11-25"}.call("1", "test.counted", nest(levels), "")
				if n := nesting([]byte(body)); n != levels+2 {
					t.Fatalf("the body nests %d levels, want %d", n, levels+2)
				}
				status, out := s.post(t, "2025-11-25", body, nil)
				if status != want || want != http.StatusOK && !bytes.Contains(out, []byte(refuseTooDeep.message)) {
					t.Errorf("arguments %d levels deep: status %d, want %d:\n%s", levels, status, want, out)
				}
				if recs := s.rec.drain(); len(recs) != 1 || (want == http.StatusOK) != (recs[0].Outcome == auditlog.Allowed) {
					t.Errorf("arguments %d levels deep: audit records %+v", levels, recs)
				}
			}
		})
	}
}

// TestNewerProtocolVersion: a request for a revision newer than any served
// (in _meta and header alike) gets SEP-2575's UnsupportedProtocolVersionError
// — HTTP 400, -32022, the served versions and the requested one in its data,
// under the request's id — on both paths, as go-sdk answers it; a call so
// sent runs nothing and is audited as refused. An unknown revision older
// than 2026-07-28 keeps go-sdk's plain-text 400.
func TestNewerProtocolVersion(t *testing.T) {
	const newer = "v999.0.0"
	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"` + newer + `","io.modelcontextprotocol/clientCapabilities":{}}`
	supported, err := json.Marshal(servedProtocols)
	if err != nil {
		t.Fatal(err)
	}
	want := func(id string) string {
		return `{"jsonrpc":"2.0","id":` + id + `,"error":{"code":-32022,"message":"Unsupported protocol version","data":{"supported":` + string(supported) + `,"requested":"` + newer + `"}}}`
	}
	for _, p := range bothPaths {
		t.Run(p.name, func(t *testing.T) {
			s := newFrontServer(t, p.slow, "test:run")
			discover := `{"jsonrpc":"2.0","id":301,"method":"server/discover","params":{` + meta + `}}`
			status, out := s.post(t, newer, discover, map[string]string{"Mcp-Method": "server/discover"})
			if status != http.StatusBadRequest || !bytes.HasSuffix(out, []byte("\r\n\r\n"+want("301"))) {
				t.Errorf("server/discover: status %d, want 400 and\n%s\ngot:\n%s", status, want("301"), out)
			}
			call := `{"jsonrpc":"2.0","id":"c","method":"tools/call","params":{` + meta + `,"name":"test.counted","arguments":{}}}`
			status, out = s.post(t, newer, call, map[string]string{"Mcp-Method": "tools/call", "Mcp-Name": "test.counted"})
			if status != http.StatusBadRequest || !bytes.HasSuffix(out, []byte("\r\n\r\n"+want(`"c"`))) {
				t.Errorf("tools/call: status %d, want 400 and\n%s\ngot:\n%s", status, want(`"c"`), out)
			}
			if n := s.ran.Load(); n != 0 {
				t.Errorf("the call ran the tool %d times", n)
			}
			if recs := s.rec.drain(); len(recs) != 1 || recs[0].Outcome != auditlog.Rejected || recs[0].Code != refuseVersion.code {
				t.Errorf("audit records %+v, want one rejected %s", recs, refuseVersion.code)
			}
			status, out = s.post(t, "2025-12-01", discover, nil)
			if status != http.StatusBadRequest || !bytes.HasSuffix(out, []byte("\r\n\r\n"+refuseVersion.message+"\n")) {
				t.Errorf("older unknown revision: status %d, want 400 and %q:\n%s", status, refuseVersion.message, out)
			}
		})
	}
}
