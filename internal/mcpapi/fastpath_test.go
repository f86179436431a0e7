package mcpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/cobranca/cobranca/internal/auth"
	"github.com/cobranca/cobranca/internal/collections"
	"github.com/cobranca/cobranca/internal/contract"
	"github.com/cobranca/cobranca/internal/failure"
	"github.com/cobranca/cobranca/internal/pipeline"
	"github.com/cobranca/cobranca/internal/pipeline/pipelinetest"
	"github.com/cobranca/cobranca/internal/request"
	"github.com/cobranca/cobranca/internal/store/storetest"
	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

const meta2026 = `"_meta":{"io.modelcontextprotocol/clientCapabilities":{"roots":{"listChanged":true}},"io.modelcontextprotocol/clientInfo":{"name":"test","version":"1"},"io.modelcontextprotocol/protocolVersion":"2026-07-28"}`

func validArgs() string {
	return `{"asOf":"2026-11-29","invoices":[{"id":"a","customerId":"c","customerName":"Ana <&> \u00e9","dueDate":"2026-11-01","amountCents":5,"status":"open","doNotContact":false},` +
		`{"id":"b","customerId":"d","customerName":"Bia","dueDate":"2026-12-01","amountCents":250000,"status":"open","doNotContact":false}]}`
}

type fastCase struct {
	name string
	body string
	hdr  map[string]string
	fast bool // the fast path must answer it
}

func fastCases() []fastCase {
	legacy := map[string]string{"Mcp-Protocol-Version": "2025-11-25"}
	v2026 := map[string]string{"Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": collections.AnalyzeName}
	call := func(id, params string) string {
		return `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":` + params + `}`
	}
	p := func(args string) string { return `{"name":"` + collections.AnalyzeName + `","arguments":` + args + `}` }
	p26m := func(meta string) string {
		return `{` + meta + `,"name":"` + collections.AnalyzeName + `","arguments":` + validArgs() + `}`
	}
	p26 := func(args string) string {
		return `{` + meta2026 + `,"name":"` + collections.AnalyzeName + `","arguments":` + args + `}`
	}
	return []fastCase{
		{"legacy valid", call("1", p(validArgs())), legacy, true},
		{"legacy no version header", call("7", p(validArgs())), map[string]string{}, true},
		{"legacy 2025-06-18", call("7", p(validArgs())), map[string]string{"Mcp-Protocol-Version": "2025-06-18"}, true},
		{"legacy string id", call(`"req-42"`, p(validArgs())), legacy, true},
		{"legacy negative id", call(`-3`, p(validArgs())), legacy, true},
		{"legacy id 2^53", call(`9007199254740992`, p(validArgs())), legacy, true},
		{"legacy id -2^53", call(`-9007199254740992`, p(validArgs())), legacy, true},
		{"id beyond 2^53", call(`9007199254740993`, p(validArgs())), legacy, false},
		{"id -0", call(`-0`, p(validArgs())), legacy, false},
		{"exponent id", call(`1e3`, p(validArgs())), legacy, false},
		{"legacy whitespace", " \n" + strings.ReplaceAll(call("1", p(validArgs())), ",", " , ") + "\n", legacy, true},
		{"legacy invalid date", call("2", p(`{"asOf":"2026-02-30","invoices":[]}`)), legacy, true},
		{"legacy html in error", call("2", p(`{"asOf":"<b>&","invoices":[]}`)), legacy, true},
		{"legacy unknown field", call("3", p(`{"asOf":"2026-01-01","invoices":[],"x<y":1}`)), legacy, true},
		{"legacy empty args", call("3", p(`{}`)), legacy, true},
		{"legacy arguments before name", call("3", `{"arguments":`+validArgs()+`,"name":"`+collections.AnalyzeName+`"}`), legacy, true},
		{"legacy arguments before name, a name inside them", call("3", `{"arguments":{"asOf":"2026-01-01","invoices":[],"note":{"name":"test.other"}},"name":"`+collections.AnalyzeName+`"}`), legacy, true},
		{"legacy arguments before name, invalid", call("3", `{"arguments":{"asOf":"2026-01-01","x":1},"name":"`+collections.AnalyzeName+`"}`), legacy, true},
		{"legacy refused early, then well-formed", call("3", p(`{"x":{"deep":[1,2,{"y":null}]},"asOf":"2026-01-01","invoices":[]}`)), legacy, true},
		{"2026 valid", call("2", p26(validArgs())), v2026, true},
		{"2026 invalid", call("2", p26(`{"asOf":"2026-01-01"}`)), v2026, true},
		// The guess from the body's last "name" is the client's name: no
		// decoder, so the arguments are skipped and decoded in the pipeline.
		{"2026 arguments before name, wrong guess", call("2", `{"arguments":`+validArgs()+`,"name":"`+collections.AnalyzeName+`",`+meta2026+`}`), v2026, true},
		// Everything below is the SDK's to answer.
		{"2026 missing Mcp-Name", call("2", p26(validArgs())), map[string]string{"Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call"}, false},
		{"2026 wrong Mcp-Name", call("2", p26(validArgs())), map[string]string{"Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "x.y"}, false},
		{"2026 no meta", call("2", p(validArgs())), v2026, false},
		// _meta keys and fields are matched exactly, as go-sdk reads them.
		{"2026 meta key in another case", call("2", p26m(strings.Replace(meta2026, metaProtocol, "io.modelcontextprotocol/PROTOCOLVERSION", 1))), v2026, false},
		{"2026 meta key escaped", call("2", p26m(strings.Replace(meta2026, metaProtocol, `io.modelcontextprotocol/protocol\u0056ersion`, 1))), v2026, true},
		{"2026 meta key twice", call("2", p26m(strings.Replace(meta2026, `"`+metaProtocol+`"`, `"`+metaProtocol+`":"2025-11-25","`+metaProtocol+`"`, 1))), v2026, false},
		{"2026 client info field in another case", call("2", p26m(strings.Replace(meta2026, `"name":"test"`, `"NAME":"test"`, 1))), v2026, false},
		{"2026 capabilities field in another case", call("2", p26m(strings.Replace(meta2026, `"roots"`, `"ROOTS"`, 1))), v2026, false},
		{"2026 no client info", call("2", p26m(strings.Replace(meta2026, `"io.modelcontextprotocol/clientInfo":{"name":"test","version":"1"},`, "", 1))), v2026, true},
		{"2026 null client info", call("2", p26m(strings.Replace(meta2026, `{"name":"test","version":"1"}`, "null", 1))), v2026, false},
		{"legacy with meta", call("2", p26(validArgs())), legacy, false},
		{"meta progress token", call("2", `{"_meta":{"progressToken":1},"name":"`+collections.AnalyzeName+`","arguments":`+validArgs()+`}`), legacy, false},
		{"unknown tool", call("4", `{"name":"no.such_tool","arguments":{}}`), legacy, false},
		{"float id", call("1.5", p(validArgs())), legacy, false},
		{"null arguments", call("4", `{"name":"`+collections.AnalyzeName+`","arguments":null}`), legacy, false},
		{"no arguments", call("4", `{"name":"`+collections.AnalyzeName+`"}`), legacy, false},
		{"extra member", `{"jsonrpc":"2.0","id":1,"method":"tools/call","x":1,"params":` + p(validArgs()) + `}`, legacy, false},
		{"duplicate id", `{"jsonrpc":"2.0","id":1,"id":2,"method":"tools/call","params":` + p(validArgs()) + `}`, legacy, false},
		{"batch", `[` + call("1", p(validArgs())) + `]`, map[string]string{"Mcp-Protocol-Version": "2025-03-26"}, false},
		{"tools/list", `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}`, legacy, false},
		{"malformed", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"` + collections.AnalyzeName + `","arguments":{"asOf":}}}`, legacy, false},
		// The decoder refuses "x" at once; the JSON after it is malformed, so
		// the whole request is the SDK's, as if the decoder had not run.
		{"refused early, then malformed", call("3", p(`{"x":1,"asOf":"2026-01-01","invoices":[}`)), legacy, false},
		{"valid arguments, malformed after", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"` + collections.AnalyzeName + `","arguments":` + validArgs() + `,}}`, legacy, false},
		{"unsupported version", call("1", p(validArgs())), map[string]string{"Mcp-Protocol-Version": "1999-01-01"}, false},
		{"escaped name", call("1", `{"name":"collections.analyze\u005fportfolio","arguments":`+validArgs()+`}`), legacy, false},
		{"wrong content type", call("1", p(validArgs())), map[string]string{"Content-Type": "text/plain"}, false},
		{"accept json only", call("1", p(validArgs())), map[string]string{"Accept": "application/json"}, false},
	}
}

func serve(h http.Handler, c fastCase) *httptest.ResponseRecorder {
	req := httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader(c.body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range c.hdr {
		req.Header.Set(k, v)
	}
	rec := httptest.NewRecorder()
	withRequest(asCaller(h)).ServeHTTP(rec, req)
	return rec
}

// TestFastPathMatchesSDK sends each request through the fast path and
// through go-sdk alone: status, the headers a client reads and body must be
// the same bytes. The framing differs on purpose: the fast path sends a
// Content-Length where net/http chunks the SDK's large responses.
func TestFastPathMatchesSDK(t *testing.T) {
	fast := newTestHandler(t)
	slow := newHandler(t, Options{DisableFastPath: true}, pipeline.Options{Now: time.Now})
	for _, c := range fastCases() {
		t.Run(c.name, func(t *testing.T) {
			before := fast.fastCalls.Load()
			got := serve(fast, c)
			want := serve(slow, c)
			if served := fast.fastCalls.Load() > before; served != c.fast {
				t.Errorf("fast path served = %v, want %v", served, c.fast)
			}
			if got.Code != want.Code {
				t.Errorf("status = %d, SDK %d", got.Code, want.Code)
			}
			for _, k := range []string{"Content-Type", "Cache-Control", "Allow"} {
				if got.Header().Get(k) != want.Header().Get(k) {
					t.Errorf("header %s = %q, SDK %q", k, got.Header().Get(k), want.Header().Get(k))
				}
			}
			if !bytes.Equal(got.Body.Bytes(), want.Body.Bytes()) {
				t.Errorf("body differs from the SDK's:\n%s", cmp.Diff(want.Body.String(), got.Body.String()))
			}
			if c.fast && slow.fastCalls.Load() != 0 {
				t.Errorf("the SDK-only handler used the fast path")
			}
		})
	}
}

func FuzzScanCall(f *testing.F) {
	for _, c := range fastCases() {
		f.Add([]byte(c.body))
	}
	fast := newHandler(f, Options{}, pipeline.Options{})
	slow := newHandler(f, Options{DisableFastPath: true}, pipeline.Options{})
	f.Fuzz(func(t *testing.T, body []byte) {
		env, ok := scanCall(body, nil)
		if ok && (len(env.args.raw) == 0 || env.args.raw[0] != '{' || env.name == "" || env.args.decoded) {
			t.Fatalf("scanCall accepted %q with args %q name %q", body, env.args.raw, env.name)
		}
		// Reading the arguments with the tool's Decoder finds the same
		// envelope as skipping them, and what it accepts is well-formed.
		denv, dok := scanCall(body, fastDecoders(fast))
		if dok != ok || string(denv.id) != string(env.id) || denv.name != env.name ||
			!bytes.Equal(denv.args.raw, env.args.raw) || !bytes.Equal(denv.meta, env.meta) {
			t.Fatalf("scanCall(%q): skipping the arguments gives %v %+v, decoding them %v %+v", body, ok, env, dok, denv)
		}
		if dok && denv.args.decoded && fastDecoders(fast)(denv.name) == nil {
			t.Fatalf("scanCall(%q) kept arguments decoded for another tool than %q", body, denv.name)
		}
		if dok && denv.args.decoded && denv.args.err == nil {
			if n, ok := skipJSON(denv.args.raw, 0); !ok || n != len(denv.args.raw) {
				t.Fatalf("the decoder accepted arguments %q that skipJSON does not (%d, %v)", denv.args.raw, n, ok)
			}
		}
		// Both revisions: on 2026-07-28 the fast path reads the _meta too,
		// and must take it exactly as go-sdk does.
		hdrs := []map[string]string{{"Mcp-Protocol-Version": "2025-11-25"}}
		if ok {
			hdrs = append(hdrs, map[string]string{"Mcp-Protocol-Version": protocol20260728, "Mcp-Method": "tools/call", "Mcp-Name": env.name})
		}
		for _, hdr := range hdrs {
			c := fastCase{body: string(body), hdr: hdr}
			got, want := serve(fast, c), serve(slow, c)
			if got.Code != want.Code || !bytes.Equal(got.Body.Bytes(), want.Body.Bytes()) {
				t.Fatalf("%v: fast path answered %d %q, SDK %d %q", hdr, got.Code, got.Body, want.Code, want.Body)
			}
		}
	})
}

// FuzzSkipJSON holds the envelope scanner's value skipper to encoding/json:
// what it accepts is valid JSON, and valid JSON (UTF-8, nesting within
// maxDepth) is accepted whole.
func FuzzSkipJSON(f *testing.F) {
	for _, s := range []string{`{}`, `[]`, `{"a":[1,2,{"b":null}],"c":"\u00e9\n"}`, `[1e5,-0.5,true,false]`, `"x"`, `{"a":}`, `[1,]`, `{"a" 1}`, validArgs()} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		n, ok := skipJSON(b, 0)
		if ok && !json.Valid(b[:n]) {
			t.Fatalf("skipJSON accepted %q, which is not JSON", b[:n])
		}
		trimmed := bytes.TrimRight(b, " \t\r\n")
		if len(trimmed) > 0 && trimmed[0] != ' ' && trimmed[0] != '\t' && trimmed[0] != '\r' && trimmed[0] != '\n' &&
			json.Valid(trimmed) && utf8.Valid(trimmed) && nesting(trimmed) <= maxDepth {
			if !ok || n != len(trimmed) {
				t.Fatalf("skipJSON(%q) = %d, %v; want %d, true", trimmed, n, ok, len(trimmed))
			}
		}
	})
}

// TestConcurrentCalls: the fast path recycles its buffers between calls, so
// calls of different sizes and outcomes run at once over real HTTP, and each
// must get exactly the answer the SDK alone gives it (run under -race in CI).
func TestConcurrentCalls(t *testing.T) {
	fast := httptest.NewServer(withRequest(asCaller(newTestHandler(t))))
	defer fast.Close()
	slow := newHandler(t, Options{DisableFastPath: true}, pipeline.Options{})
	var cases []fastCase
	for i, n := range []int{1, 7, 60, 500} {
		cases = append(cases, fastCase{body: `{"jsonrpc":"2.0","id":` + strconv.Itoa(i) + `,"method":"tools/call","params":{"name":"` + collections.AnalyzeName + `","arguments":` + string(benchArgs(n)) + `}}`})
	}
	for _, c := range fastCases() {
		if c.fast {
			cases = append(cases, c)
		}
	}
	want := make([][]byte, len(cases))
	for i, c := range cases {
		want[i] = serve(slow, c).Body.Bytes()
	}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for k := range 30 {
				i := (g*7 + k) % len(cases)
				req, _ := http.NewRequest(http.MethodPost, fast.URL, strings.NewReader(cases[i].body))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Accept", "application/json, text/event-stream")
				for k, v := range cases[i].hdr {
					req.Header.Set(k, v)
				}
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Error(err)
					return
				}
				got, err := io.ReadAll(resp.Body)
				resp.Body.Close()
				if err != nil || !bytes.Equal(got, want[i]) {
					t.Errorf("case %d under concurrency: %v\n%s", i, err, cmp.Diff(string(want[i]), string(got)))
					return
				}
			}
		})
	}
	wg.Wait()
}

// TestScanCallWrongGuess: arguments decoded for a guessed name that the body
// then contradicts are dropped, and decoded again in the pipeline for the
// tool actually named.
func TestScanCallWrongGuess(t *testing.T) {
	// test.other has a Decoder too, one the scanner may run (a fast-output
	// read, as analyze), which accepts any object: the analyze decoder's
	// value must not reach it.
	h := newTestHandler(t, pipeline.Tool{Contract: testContract("test.other", contract.Low), FastOutput: true,
		Decode: func(b []byte) (any, int, error) { n, _ := skipJSON(b, 0); return "other", n, nil },
		Run: func(context.Context, any) (pipeline.Effect, error) {
			return pipeline.Effect{Structured: map[string]any{"ok": true}}, nil
		},
	})
	if fastDecoders(h)("test.other") == nil {
		t.Fatal("test.other has no decoder the scanner may run: the test proves nothing")
	}
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"arguments":` + validArgs() + `,"name":"test.other","_meta":{"x":{"name":"` + collections.AnalyzeName + `"}}}}`
	if hint := nameHint([]byte(body)); hint != collections.AnalyzeName {
		t.Fatalf("nameHint = %q, want the misleading %q", hint, collections.AnalyzeName)
	}
	env, ok := scanCall([]byte(body), fastDecoders(h))
	if !ok || env.name != "test.other" || env.args.decoded || env.args.value != nil || string(env.args.raw) != validArgs() {
		t.Fatalf("scanCall = %v, %+v; want test.other with undecoded arguments", ok, env)
	}
	// Guessed right, the decoded arguments are kept.
	body = `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"arguments":` + validArgs() + `,"name":"` + collections.AnalyzeName + `"}}`
	if env, ok := scanCall([]byte(body), fastDecoders(h)); !ok || !env.args.decoded || env.args.err != nil || env.args.value == nil {
		t.Fatalf("scanCall = %v, %+v; want decoded arguments", ok, env)
	}
}

// fastDecoders is the scanner's decoder lookup for a plain tools/call
// request of testCaller.
func fastDecoders(h *Handler) func(string) Decoder {
	return func(name string) Decoder { return h.pipe.Decoder(testCaller, name) }
}

func plainRequest() *http.Request {
	r := httptest.NewRequest(http.MethodPost, "/mcp", nil)
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("Accept", "application/json, text/event-stream")
	return r
}

// tierStub is a TierLimits whose tiers in budgeted spend a budget (never
// exhausted).
type tierStub struct{ budgeted []contract.Risk }

func (tierStub) Tier(context.Context, string, contract.Risk) error { return nil }
func (tierStub) TierRest(context.Context, string, contract.Risk, int64) error {
	return nil
}
func (s tierStub) Budgeted(r contract.Risk) bool        { return slices.Contains(s.budgeted, r) }
func (tierStub) Approval(context.Context, string) error { return nil }

// TestDecodeInPlaceOnlyWhenNothingComesFirst: the scanner decodes a tool's
// arguments only where the pipeline would run nothing before decoding them —
// not for a caller the scope check will refuse, not for a tool whose tier
// budget must be spent first, not for a request its headers send to the SDK.
func TestDecodeInPlaceOnlyWhenNothingComesFirst(t *testing.T) {
	write := pipelinetest.Effectful(testContract("test.write_decoded", contract.Medium), nil)
	h := newHandler(t, Options{Scopes: challenger{}}, pipelinetest.WithStore(t, storetest.SQLite(t),
		pipeline.Options{Limits: tierStub{budgeted: []contract.Risk{contract.Medium, contract.High, contract.Critical}}, Tools: []pipeline.Tool{write}}))
	caller := func(scopes ...string) *auth.Principal { return &auth.Principal{Subject: "s", Scopes: scopes} }
	if h.pipe.Decoder(caller("collections:read"), collections.AnalyzeName) == nil {
		t.Error("a permitted low-tier call is not decoded in place")
	}
	if h.pipe.Decoder(caller("other:read"), collections.AnalyzeName) != nil {
		t.Error("a call the scope check refuses is decoded in place")
	}
	if h.pipe.Decoder(caller("collections:read", "test:run"), "test.write_decoded") != nil {
		t.Error("a call whose tier budget comes first is decoded in place")
	}
	// The budget alone keeps a read's arguments from being decoded first:
	// with the low tier budgeted, analyze is not decoded in place.
	budgeted := newHandler(t, Options{Scopes: challenger{}}, pipeline.Options{Limits: tierStub{budgeted: []contract.Risk{contract.Low}}})
	if budgeted.pipe.Decoder(caller("collections:read"), collections.AnalyzeName) != nil {
		t.Error("a low-tier call whose tier budget comes first is decoded in place")
	}
	with := func(scopes ...string) *http.Request {
		r := plainRequest()
		return r.WithContext(auth.WithPrincipal(r.Context(), caller(scopes...)))
	}
	// ServeHTTP looks decoders up only for requests whose headers pass.
	if checkHeaders(with("collections:read")) != nil {
		t.Error("a plain request is not left to the fast path")
	}
	r := with("collections:read")
	r.Header.Set("Accept", "application/json")
	if checkHeaders(r) == nil {
		t.Error("a request the SDK will answer is decoded in place")
	}
	r = with("collections:read")
	r.Header.Set("Mcp-Protocol-Version", "1999-01-01")
	if checkHeaders(r) == nil {
		t.Error("a request of an unknown protocol revision is decoded in place")
	}
}

// refuseArgs is what the test.refuse tool is told to fail with.
type refuseArgs struct {
	Code    string `json:"code"`
	Field   string `json:"field"`
	Message string `json:"message"`
	RetryMs int64  `json:"retryMs"`
}

// refuseTool fails every call with the error its arguments describe. It is
// a fast-output read, as analyze is, so that the fast path answers it.
func refuseTool() pipeline.Tool {
	return pipeline.Tool{Contract: testContract("test.refuse", contract.Low), FastOutput: true, Decode: pipeline.Strict[refuseArgs](),
		Run: func(_ context.Context, v any) (pipeline.Effect, error) {
			r := v.(*refuseArgs)
			return pipeline.Effect{}, &failure.Error{Code: failure.Code(r.Code), Field: r.Field, Message: r.Message, RetryAfter: time.Duration(r.RetryMs) * time.Millisecond}
		}}
}

// FuzzErrorResult holds error results to one shape on both paths and both
// protocol revisions: the fast path writes the SDK's bytes; the result has
// no structuredContent (the outputSchema is the success shape, which clients
// check it against), its _meta carries the failure detail under ErrorMetaKey
// (beside the server info on 2026-07-28), and its text is "code: field:
// message".
func FuzzErrorResult(f *testing.F) {
	f.Add(uint8(0), "invoices[1].dueDate", "2025-02-30 is not a calendar date", int64(0), false)
	f.Add(uint8(1), "", "too many low-tier calls; retry in 1500 ms", int64(1500), true)
	f.Add(uint8(2), "x<y>&z", "<b>\u2028</b> \xff", int64(-3), true)
	f.Add(uint8(3), "", "", int64(1), false)
	codes := []string{"test_refused", "rate_limited", "unavailable", "internal_error"}
	pin := func(h http.Handler) http.Handler { // one request id: internal errors cite it
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			h.ServeHTTP(w, r.WithContext(request.With(r.Context(), &request.Info{ID: "ref-1"})))
		})
	}
	fast := newHandler(f, Options{}, pipeline.Options{Tools: []pipeline.Tool{refuseTool()}})
	slow := newHandler(f, Options{DisableFastPath: true}, pipeline.Options{Tools: []pipeline.Tool{refuseTool()}})
	f.Fuzz(func(t *testing.T, code uint8, field, message string, retryMs int64, newProtocol bool) {
		r := refuseArgs{Code: codes[int(code)%len(codes)], Field: field, Message: message, RetryMs: retryMs}
		args, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		_ = json.Unmarshal(args, &r) // as the tool reads it: invalid UTF-8 replaced
		c := fastCase{hdr: map[string]string{"Mcp-Protocol-Version": "2025-11-25"}}
		params := `{"name":"test.refuse","arguments":` + string(args) + `}`
		if newProtocol {
			c.hdr = map[string]string{"Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "test.refuse"}
			params = `{` + meta2026 + `,"name":"test.refuse","arguments":` + string(args) + `}`
		}
		c.body = `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":` + params + `}`
		before := fast.fastCalls.Load()
		got, want := serve(pin(fast), c), serve(pin(slow), c)
		if fast.fastCalls.Load() == before {
			t.Fatalf("the fast path did not answer %s", c.body)
		}
		if got.Code != want.Code || !bytes.Equal(got.Body.Bytes(), want.Body.Bytes()) {
			t.Fatalf("fast path answered %d:\n%s\nSDK %d:\n%s", got.Code, got.Body, want.Code, want.Body)
		}
		var resp struct {
			Result struct {
				Meta              map[string]json.RawMessage `json:"_meta"`
				Content           []mcp.TextContent          `json:"content"`
				StructuredContent json.RawMessage            `json:"structuredContent"`
				IsError           bool                       `json:"isError"`
			} `json:"result"`
		}
		if err := json.Unmarshal(got.Body.Bytes(), &resp); err != nil {
			t.Fatalf("%v: %s", err, got.Body)
		}
		res := resp.Result
		fe := &failure.Error{Code: failure.Code(r.Code), Field: r.Field, Message: r.Message, RetryAfter: time.Duration(r.RetryMs) * time.Millisecond}
		if fe.Code == failure.Internal || fe.Code == failure.Unavailable { // the server's fault: cited by request
			fe = &failure.Error{Code: fe.Code, Message: r.Message + " (ref ref-1)", RetryAfter: fe.RetryAfter}
		}
		var detail failure.Detail
		if err := json.Unmarshal(res.Meta[ErrorMetaKey], &detail); err != nil || detail != fe.Detail() {
			t.Errorf("_meta[%s] = %s (%v), want %+v", ErrorMetaKey, res.Meta[ErrorMetaKey], err, fe.Detail())
		}
		if _, ok := res.Meta[mcp.MetaKeyServerInfo]; ok != newProtocol || len(res.Meta) != 1+btoi(newProtocol) {
			t.Errorf("_meta has keys %v; want the error, and the server info on 2026-07-28 only", slices.Sorted(maps.Keys(res.Meta)))
		}
		if !res.IsError || res.StructuredContent != nil || len(res.Content) != 1 || res.Content[0].Text != fe.Text() {
			t.Errorf("result = %s; want isError, no structuredContent, text %q", got.Body, fe.Text())
		}
	})
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// TestFastPathEncodeFailure: once the pipeline has run, the fast path
// answers whatever happens — a result it cannot encode (no tool of the
// pipeline's yields one; the writer is driven directly) is a fixed internal
// error under the call's id, logged once, repeating nothing of the result —
// and it has no way to hand the call on (serveFast answers; fastCall
// decides before anything runs).
func TestFastPathEncodeFailure(t *testing.T) {
	var logged bytes.Buffer
	h := newHandler(t, Options{Logger: slog.New(slog.NewTextHandler(&logged, nil))}, pipeline.Options{})
	res := &mcp.CallToolResult{
		Content:           []mcp.Content{&mcp.TextContent{Text: "Maria Silva"}},
		StructuredContent: map[string]any{"customer": "Maria Silva", "bad": func() {}},
	}
	w := httptest.NewRecorder()
	h.writeFast(w, plainRequest(), []byte("5"), res, true, 64)
	if got, want := w.Body.String(), `{"jsonrpc":"2.0","id":5,"error":{"code":-32603,"message":"Internal error"}}`; w.Code != http.StatusOK || got != want {
		t.Errorf("answer %d %s, want 200 %s", w.Code, got, want)
	}
	if n := strings.Count(logged.String(), "fast path could not encode a result"); n != 1 || strings.Contains(logged.String(), "Maria") {
		t.Errorf("logged %d times, want once and without the result:\n%s", n, logged.String())
	}
	if h.FastCalls() != 0 {
		t.Error("an unanswered call counted as served by the fast path")
	}
}
