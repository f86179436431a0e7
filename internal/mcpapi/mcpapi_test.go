package mcpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/cobranca/cobranca/internal/auditlog"
	"github.com/cobranca/cobranca/internal/auth"
	"github.com/cobranca/cobranca/internal/collections"
	"github.com/cobranca/cobranca/internal/contract"
	"github.com/cobranca/cobranca/internal/contract/contracttest"
	"github.com/cobranca/cobranca/internal/failure"
	"github.com/cobranca/cobranca/internal/files"
	goldenfile "github.com/cobranca/cobranca/internal/golden"
	"github.com/cobranca/cobranca/internal/outbox"
	"github.com/cobranca/cobranca/internal/outbox/outboxtest"
	"github.com/cobranca/cobranca/internal/pipeline"
	"github.com/cobranca/cobranca/internal/pipeline/pipelinetest"
	"github.com/cobranca/cobranca/internal/portfolio"
	"github.com/cobranca/cobranca/internal/request"
	"github.com/cobranca/cobranca/internal/store"
	"github.com/cobranca/cobranca/internal/store/storetest"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// golden compares got with testdata/name as JSON values (not bytes), or
// rewrites the file with -update.
func golden(t *testing.T, name string, got any) {
	t.Helper()
	goldenfile.JSON(t, filepath.Join("testdata", name), got, *update)
}

func newTestHandler(t *testing.T, extra ...pipeline.Tool) *Handler {
	t.Helper()
	return newHandler(t, Options{}, pipeline.Options{Tools: extra})
}

// newHandler is the endpoint opts configure (a discarding logger unless
// set) over a pipeline of the product's tools and popts.Tools, configured
// by popts.
func newHandler(t testing.TB, opts Options, popts pipeline.Options) *Handler {
	t.Helper()
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	opts.Pipeline = pipelinetest.Product(t, popts)
	h, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// testCaller holds every scope the product's tools and the test tools
// (testContract) require: the pipeline refuses a call without a principal.
var testCaller = &auth.Principal{Subject: "tester", Scopes: []string{"collections:read", "test:run"}}

// asCaller sends each request that has no principal as testCaller, as the
// server's token check would; a request that has one keeps it.
func asCaller(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, ok := auth.PrincipalFrom(r.Context()); !ok {
			r = r.WithContext(auth.WithPrincipal(r.Context(), testCaller))
		}
		h.ServeHTTP(w, r)
	})
}

// connect is a real go-sdk client of h, calling as testCaller.
func connect(t *testing.T, h http.Handler) *mcp.ClientSession {
	t.Helper()
	return connectAs(t, asCaller(h), "")
}

// connectAs is a real go-sdk client of h (which puts the caller in each
// request's context), speaking the protocol revision version ("": go-sdk's
// default).
func connectAs(t *testing.T, h http.Handler, version string) *mcp.ClientSession {
	t.Helper()
	ts := httptest.NewServer(h)
	t.Cleanup(ts.Close)
	c := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	sess, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: ts.URL}, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sess.Close() })
	return sess
}

// servedTools are every tool the product serves, as cmd/cobranca lists
// them: the collections tools, send_reminder enqueueing in mail, then the
// files tools signing under links (nil: contracts only).
func servedTools(t *testing.T, links *files.Links, mail *outbox.Outbox) []pipeline.Tool {
	t.Helper()
	tools, err := collections.Tools(collections.Settings{})
	if err != nil {
		t.Fatal(err)
	}
	send, err := collections.SendTools(collections.Settings{}, mail)
	if err != nil {
		t.Fatal(err)
	}
	more, err := files.Tools(links)
	if err != nil {
		t.Fatal(err)
	}
	return append(append(tools, send...), more...)
}

func TestGoldenContracts(t *testing.T) {
	for _, tool := range servedTools(t, nil, nil) {
		golden(t, filepath.Join("contracts", tool.Contract.Name+".json"), tool.Contract)
	}
}

// TestGoldenToolsList: the tools/list entry of every served tool, from a
// handler with a store (the tools that read or change it are served only
// with one), as a caller holding every scope; and no served tool is missing.
func TestGoldenToolsList(t *testing.T) {
	links, err := files.NewLinks(pipelinetest.Ring(t), "https://cobranca.example.com")
	if err != nil {
		t.Fatal(err)
	}
	fileTools, err := files.Tools(links)
	if err != nil {
		t.Fatal(err)
	}
	if strconv.IntSize == 32 {
		// The list is the same on every platform and CI's 64-bit step checks it; here the
		// outbox, which send_reminder needs to be served, cannot run on SQLite (River's
		// SQLite driver does not build on 32-bit; internal/outbox/sqlite_32bit.go).
		t.Skip("send_reminder's outbox needs a 64-bit platform on SQLite; the golden is checked by the 64-bit run")
	}
	db := storetest.SQLite(t)
	mail, err := outbox.New(db, outbox.Config{Driver: outboxtest.Driver(t, db), Sender: outbox.Dir{Path: t.TempDir()}, From: "cobranca@cobranca.test"})
	if err != nil {
		t.Fatal(err)
	}
	sendTools, err := collections.SendTools(collections.Settings{}, mail)
	if err != nil {
		t.Fatal(err)
	}
	h := newHandler(t, Options{}, pipelinetest.WithStore(t, db, pipeline.Options{Tools: append(sendTools, fileTools...)}))
	var everyScope []string
	for _, c := range h.Contracts() {
		everyScope = append(everyScope, c.Permissions...)
	}
	caller := &auth.Principal{Subject: "tester", Scopes: everyScope}
	sess := connect(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(w, r.WithContext(auth.WithPrincipal(r.Context(), caller)))
	}))
	res, err := sess.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	listed := map[string]bool{}
	for _, tool := range res.Tools {
		listed[tool.Name] = true
		golden(t, filepath.Join("tools_list", tool.Name+".json"), tool)
	}
	for _, tool := range servedTools(t, nil, nil) {
		if !listed[tool.Contract.Name] && tool.Contract.VisibleToAgents() {
			t.Errorf("tools/list lacks %s", tool.Contract.Name)
		}
	}
}

// TestFailureCodesInContract checks that every code analyze's logic returns
// for the validation cases is one of its contract's failure modes.
func TestFailureCodesInContract(t *testing.T) {
	tools, err := collections.Tools(collections.Settings{})
	if err != nil {
		t.Fatal(err)
	}
	c := tools[0].Contract
	docs := []string{
		`not json`, `[]`, `{}`, `{"asOf":"2026-01-01"}`, `{"asOf":"2026-01-01","invoices":[],"x":1}`,
		`{"asOf":"2026-02-30","invoices":[]}`, `{"asOf":"26-01-01","invoices":[]}`, `{"asOf":1,"invoices":[]}`,
		`{"asOf":"1999-12-31","invoices":[]}`, `{"asOf":"2026-01-01","invoices":[]}`,
		`{"asOf":"2026-01-01","invoices":[{"id":"","customerId":"c","customerName":"n","dueDate":"2026-01-01","amountCents":1,"status":"open","doNotContact":false}]}`,
		`{"asOf":"2026-01-01","invoices":[{"id":"a","customerId":"c","customerName":"n","dueDate":"2026-01-01","amountCents":1,"status":"late","doNotContact":false}]}`,
		`{"asOf":"2026-01-01","invoices":[{"id":"a","customerId":"c","customerName":"n","dueDate":"2026-01-01","amountCents":1,"status":"open","doNotContact":false},{"id":"a","customerId":"c","customerName":"n","dueDate":"2026-01-01","amountCents":1,"status":"open","doNotContact":false}]}`,
		`{"asOf":"2026-01-01","invoices":[{"id":"a","customerId":"c","customerName":"n","dueDate":"2026-01-01","amountCents":1,"status":"open","doNotContact":false},{"id":"b","customerId":"c","customerName":"m\u202e","dueDate":"2026-01-01","amountCents":1,"status":"open","doNotContact":false}]}`,
	}
	seen := map[failure.Code]bool{}
	for _, d := range docs {
		_, err := analyzeLogic(context.Background(), json.RawMessage(d))
		fe, ok := failure.As(err)
		if !ok {
			t.Errorf("analyze(%s) error = %v, want a *failure.Error", d, err)
			continue
		}
		if !c.Allows(fe.Code) {
			t.Errorf("analyze(%s) returned code %q, which is not in the contract's failureModes", d, fe.Code)
		}
		seen[fe.Code] = true
	}
	if len(seen) < 8 {
		t.Errorf("only %d distinct codes exercised: %v", len(seen), seen)
	}
	// Every code the decoder can return is a failure mode, and every failure
	// mode is one the decoder or the pipeline can return.
	known := map[failure.Code]bool{}
	for _, pc := range portfolio.Codes() {
		known[failure.Code(pc)] = true
		if !c.Allows(failure.Code(pc)) {
			t.Errorf("portfolio code %q is not in %s's failureModes", pc, c.Name)
		}
	}
	for _, f := range contract.PipelineFailureModes {
		known[f.Code] = true
	}
	for _, f := range c.FailureModes {
		if !known[f.Code] {
			t.Errorf("failure mode %q of %s is returned by nothing", f.Code, c.Name)
		}
	}
}

// TestMissingArguments: a call with no arguments, or null ones, is told so
// by name rather than as malformed JSON.
func TestMissingArguments(t *testing.T) {
	for _, args := range []string{"", "null", " null "} {
		_, err := analyzeLogic(context.Background(), json.RawMessage(args))
		fe, ok := failure.As(err)
		if !ok || fe.Code != "missing_field" || fe.Field != "arguments" {
			t.Errorf("analyze(%q) error = %v, want missing_field on arguments", args, err)
		}
	}
}

type challenger struct{}

func (challenger) WriteInsufficientScope(w http.ResponseWriter, missing []string) {
	http.Error(w, "insufficient scope: "+strings.Join(missing, " "), http.StatusForbidden)
}

// TestDeniedCallAudited: a call refused for a missing scope never runs, and
// still leaves an audit record saying so.
func TestDeniedCallAudited(t *testing.T) {
	rec := newRecorder()
	h := newHandler(t, Options{Scopes: challenger{}}, pipeline.Options{Auditor: rec})
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"` + collections.AnalyzeName + `","arguments":` + validArgs() + `}}`
	for _, slow := range []bool{false, true} {
		h.slowOnly = slow
		req := httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		ctx := auth.WithPrincipal(req.Context(), &auth.Principal{Subject: "mallory", Scopes: []string{"other:read"}})
		w := httptest.NewRecorder()
		withRequest(h).ServeHTTP(w, req.WithContext(ctx))
		if w.Code != http.StatusForbidden {
			t.Fatalf("status %d, want 403", w.Code)
		}
		got := rec.last()
		if got.Contract == nil || got.Contract.Name != collections.AnalyzeName || got.Outcome != auditlog.Denied || got.Code != "insufficient_scope" || got.Result != nil {
			t.Errorf("audit record = %+v, want a denied %s with code insufficient_scope", got, collections.AnalyzeName)
		}
	}
}

func testContract(name string, risk contract.Risk) *contract.Contract {
	return contracttest.New(name, risk, "test:run")
}

func TestPipelineGuards(t *testing.T) {
	badOutput := pipeline.Tool{Contract: testContract("test.bad_output", contract.Low), Logic: func(context.Context, json.RawMessage) (pipeline.Effect, error) {
		return pipeline.Effect{Structured: map[string]any{"ok": "yes", "secret": "leak"}, Summary: "x"}, nil
	}}
	badCode := pipeline.Tool{Contract: testContract("test.bad_code", contract.Low), Logic: func(context.Context, json.RawMessage) (pipeline.Effect, error) {
		return pipeline.Effect{}, &failure.Error{Code: "not_in_contract", Message: "db host 10.0.0.1 down"}
	}}
	plainErr := pipeline.Tool{Contract: testContract("test.plain_error", contract.Low), Logic: func(context.Context, json.RawMessage) (pipeline.Effect, error) {
		return pipeline.Effect{}, io.ErrUnexpectedEOF
	}}
	allowed := pipeline.Tool{Contract: testContract("test.allowed_code", contract.Low), Logic: func(context.Context, json.RawMessage) (pipeline.Effect, error) {
		return pipeline.Effect{}, &failure.Error{Code: "test_refused", Field: "x", Message: "no"}
	}}
	rec := newRecorder()
	h := newHandler(t, Options{}, pipeline.Options{Tools: []pipeline.Tool{badOutput, badCode, plainErr, allowed}, Auditor: rec})
	sess := connect(t, withRequest(h))

	tests := []struct {
		tool, wantCode string
		wantOutcome    Outcome
	}{
		{"test.bad_output", "internal_error", auditlog.Failed},
		{"test.bad_code", "internal_error", auditlog.Failed},
		{"test.plain_error", "internal_error", auditlog.Failed},
		{"test.allowed_code", "test_refused", auditlog.Rejected},
	}
	for _, tt := range tests {
		t.Run(tt.tool, func(t *testing.T) {
			res, err := sess.CallTool(context.Background(), &mcp.CallToolParams{Name: tt.tool, Arguments: map[string]any{}})
			if err != nil {
				t.Fatal(err)
			}
			raw, _ := json.Marshal(res)
			if !res.IsError || !bytes.Contains(raw, []byte(`"code":"`+tt.wantCode+`"`)) {
				t.Errorf("%s result = %s, want isError with code %s", tt.tool, raw, tt.wantCode)
			}
			for _, leak := range []string{"leak", "10.0.0.1", "unexpected EOF"} {
				if bytes.Contains(raw, []byte(leak)) {
					t.Errorf("%s result leaks %q: %s", tt.tool, leak, raw)
				}
			}
			last := rec.last()
			if last.Contract.Name != tt.tool || last.Outcome != tt.wantOutcome || string(last.Code) != tt.wantCode {
				t.Errorf("audit record = %s %s %s, want %s %s %s", last.Contract.Name, last.Outcome, last.Code, tt.tool, tt.wantOutcome, tt.wantCode)
			}
			if tt.wantCode == "internal_error" && !regexp.MustCompile(`ref [0-9a-f]{32}`).Match(raw) {
				t.Errorf("internal error carries no request reference: %s", raw)
			}
		})
	}
}

func TestForbiddenToolIsUnknown(t *testing.T) {
	forbidden := pipelinetest.Effectful(testContract("test.forbidden_action", contract.Forbidden), func() {
		t.Error("a forbidden tool ran over MCP")
	})
	h := newHandler(t, Options{}, pipelinetest.WithStore(t, storetest.SQLite(t), pipeline.Options{Tools: []pipeline.Tool{forbidden}}))
	for _, c := range h.Contracts() {
		if c.Name == "test.forbidden_action" {
			t.Errorf("forbidden contract listed in Contracts()")
		}
	}
	sess := connect(t, h)
	list, err := sess.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tool := range list.Tools {
		if tool.Name == "test.forbidden_action" {
			t.Errorf("forbidden tool in tools/list")
		}
	}
	_, errForbidden := sess.CallTool(context.Background(), &mcp.CallToolParams{Name: "test.forbidden_action", Arguments: map[string]any{}})
	_, errUnknown := sess.CallTool(context.Background(), &mcp.CallToolParams{Name: "test.unknown_action", Arguments: map[string]any{}})
	if errForbidden == nil || errUnknown == nil {
		t.Fatalf("calls succeeded: forbidden %v, unknown %v", errForbidden, errUnknown)
	}
	norm := strings.ReplaceAll(errForbidden.Error(), "test.forbidden_action", "NAME")
	if want := strings.ReplaceAll(errUnknown.Error(), "test.unknown_action", "NAME"); norm != want {
		t.Errorf("forbidden call answered %q, unknown call %q; they must be indistinguishable", norm, want)
	}
}

// withRequest gives each request an Info, as the server's middleware does.
func withRequest(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(w, r.WithContext(request.With(r.Context(), &request.Info{ID: request.NewID()})))
	})
}

type recorder struct{ recs chan pipeline.CallRecord }

func newRecorder() *recorder {
	return &recorder{recs: make(chan pipeline.CallRecord, 100)}
}

func (r *recorder) RecordCall(_ context.Context, rec pipeline.CallRecord) error {
	r.recs <- rec
	return nil
}

// AppendCall keeps the record of a call with side effects as its
// transaction hands it over (whether the transaction then commits or not).
func (r *recorder) AppendCall(ctx context.Context, _ store.Tx, rec pipeline.CallRecord) error {
	return r.RecordCall(ctx, rec)
}

func (r *recorder) last() pipeline.CallRecord {
	var rec pipeline.CallRecord
	for {
		select {
		case rec = <-r.recs:
		default:
			return rec
		}
	}
}

type failingAuditor struct{}

func (failingAuditor) RecordCall(context.Context, pipeline.CallRecord) error { return io.ErrClosedPipe }

func (failingAuditor) AppendCall(context.Context, store.Tx, pipeline.CallRecord) error {
	return io.ErrClosedPipe
}

// TestAuditUnavailable: when the audit event cannot be written, a read-only
// call is still answered, and a call with side effects fails closed with
// unavailable, its effect rolled back.
func TestAuditUnavailable(t *testing.T) {
	ok := func(context.Context, json.RawMessage) (pipeline.Effect, error) {
		return pipeline.Effect{Structured: map[string]any{"ok": true}, Summary: "done"}, nil
	}
	read := pipeline.Tool{Contract: testContract("test.read_only", contract.Low), Logic: ok}
	ran := 0
	write := pipelinetest.Effectful(testContract("test.writes", contract.Medium), func() { ran++ })
	db := storetest.SQLite(t)
	h := newHandler(t, Options{}, pipelinetest.WithStore(t, db, pipeline.Options{Tools: []pipeline.Tool{read, write}, Auditor: failingAuditor{}}))
	sess := connect(t, withRequest(h))
	for _, tt := range []struct {
		tool    string
		isError bool
	}{{"test.read_only", false}, {"test.writes", true}, {collections.AnalyzeName, false}} {
		args := map[string]any{}
		switch tt.tool {
		case collections.AnalyzeName:
			_ = json.Unmarshal([]byte(validArgs()), &args)
		case "test.writes":
			args["idempotencyKey"] = "k1"
		}
		res, err := sess.CallTool(context.Background(), &mcp.CallToolParams{Name: tt.tool, Arguments: args})
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := json.Marshal(res)
		if res.IsError != tt.isError || (tt.isError && !bytes.Contains(raw, []byte(`"code":"unavailable"`))) {
			t.Errorf("%s with the audit log down: %s", tt.tool, raw)
		}
	}
	if n := pipelinetest.Effects(t, db, "test.writes"); ran != 1 || n != 0 {
		t.Errorf("the call with side effects ran %d times and left %d effects; want it run once and its effect rolled back", ran, n)
	}
}

// TestConfirmationNeedsFormElicitation: a high-tier call by an agent asks
// its person with a form elicitation, so only a 2026-07-28 client that shows
// forms is asked: one declaring elicitation with form, or with no mode
// (which means form). One declaring URL mode only (the TypeScript client 2.x
// throws on a form it did not declare) or no elicitation gets the JSON-RPC
// error -32021 naming elicitation.form, and is never asked.
func TestConfirmationNeedsFormElicitation(t *testing.T) {
	db := storetest.SQLite(t)
	high := pipelinetest.Effectful(testContract("test.confirmed", contract.High), nil)
	h := newHandler(t, Options{}, pipelinetest.WithStore(t, db, pipeline.Options{Tools: []pipeline.Tool{high}}))
	agent := &auth.Principal{Subject: "tester", Actor: "bot", Kind: auth.KindAgent, Scopes: []string{"collections:read", "test:run"}}
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		withRequest(h).ServeHTTP(w, r.WithContext(auth.WithPrincipal(r.Context(), agent)))
	}))
	t.Cleanup(ts.Close)
	effects := 0
	for i, tt := range []struct {
		name  string
		modes *mcp.ElicitationCapabilities // nil: no elicitation capability
		asked bool
	}{
		{"no elicitation", nil, false},
		{"elicitation {}", &mcp.ElicitationCapabilities{}, true},
		{"form", &mcp.ElicitationCapabilities{Form: &mcp.FormElicitationCapabilities{}}, true},
		{"url only", &mcp.ElicitationCapabilities{URL: &mcp.URLElicitationCapabilities{}}, false},
		{"form and url", &mcp.ElicitationCapabilities{Form: &mcp.FormElicitationCapabilities{}, URL: &mcp.URLElicitationCapabilities{}}, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			asked := 0
			opts := &mcp.ClientOptions{}
			if tt.modes != nil {
				opts.Capabilities = &mcp.ClientCapabilities{Elicitation: tt.modes}
				opts.ElicitationHandler = func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
					asked++
					return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"confirm": true}}, nil
				}
			}
			c := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, opts)
			sess, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: ts.URL}, &mcp.ClientSessionOptions{ProtocolVersion: protocol20260728})
			if err != nil {
				t.Fatal(err)
			}
			defer sess.Close()
			res, err := sess.CallTool(context.Background(), &mcp.CallToolParams{Name: "test.confirmed", Arguments: map[string]any{"idempotencyKey": fmt.Sprintf("k%d", i)}})
			if tt.asked {
				if err != nil || res.IsError || asked != 1 {
					t.Fatalf("call: %v, %+v, asked %d times; want it confirmed once and run", err, res, asked)
				}
				effects++
			} else {
				je, ok := errors.AsType[*jsonrpc.Error](err)
				if !ok || je.Code != mcp.CodeMissingRequiredClientCapabilities || !strings.Contains(string(je.Data), `"requiredCapabilities":{"elicitation":{"form":{}}}`) || asked != 0 {
					t.Fatalf("call: %v, %+v, asked %d times; want the JSON-RPC error %d requiring elicitation.form, nobody asked",
						err, res, asked, mcp.CodeMissingRequiredClientCapabilities)
				}
			}
			if n := pipelinetest.Effects(t, db, "test.confirmed"); n != effects {
				t.Errorf("%d effects, want %d", n, effects)
			}
		})
	}
}
