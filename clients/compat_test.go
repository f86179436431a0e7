// The client compatibility suite: the official MCP clients, at the versions
// package-lock.json pins, and the go-sdk client of this module, each against
// the real routes over real HTTP with real tokens. Every client runs the
// same cases — connect, list, a valid call, an invalid call whose error
// code it reads, a call without a token, a call without the scope — and
// every expectation is here: the node scripts beside this file only report
// what their client made of each case.
//
// It runs in `go test ./...` once `npm ci` has installed this directory's
// node_modules (.ci/run does); without them it skips, except under CI=true,
// where it fails.
package clients_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cobranca/cobranca/internal/auth"
	"github.com/cobranca/cobranca/internal/collections"
	"github.com/cobranca/cobranca/internal/failure"
	"github.com/cobranca/cobranca/internal/mcpapi"
	"github.com/cobranca/cobranca/internal/pipeline"
	"github.com/cobranca/cobranca/internal/pipeline/pipelinetest"
	"github.com/cobranca/cobranca/internal/portfolio"
	"github.com/cobranca/cobranca/internal/server"
	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The cases' arguments: a valid portfolio, and the same with a date that is
// not on the calendar, which every client must see refused with its code
// and field.
const (
	validArgs = `{"asOf":"2026-11-29","invoices":[` +
		`{"id":"inv-1","customerId":"c-1","customerName":"Ana Ltda","dueDate":"2026-11-01","amountCents":150000,"status":"open","doNotContact":false},` +
		`{"id":"inv-2","customerId":"c-1","customerName":"Ana Ltda","dueDate":"2026-12-10","amountCents":60000,"status":"open","doNotContact":false},` +
		`{"id":"inv-3","customerId":"c-2","customerName":"Bruno SA","dueDate":"2026-11-20","amountCents":5000,"status":"open","doNotContact":false}]}`
	invalidArgs = `{"asOf":"2026-11-29","invoices":[` +
		`{"id":"inv-1","customerId":"c-1","customerName":"Ana Ltda","dueDate":"2026-11-01","amountCents":150000,"status":"open","doNotContact":false},` +
		`{"id":"inv-2","customerId":"c-1","customerName":"Ana Ltda","dueDate":"2025-02-30","amountCents":60000,"status":"open","doNotContact":false}]}`
	invalidCode  = "invalid_date"
	invalidField = "invoices[1].dueDate"
)

// The protocol revisions cobranca serves.
const (
	legacyRevision = "2025-11-25"
	modernRevision = "2026-07-28"
)

// report is what a client made of each case: the result it returned (as
// JSON), or the error it threw. The node scripts print it; the go-sdk
// client fills it in process.
type report struct {
	Connect step `json:"connect"`
	Tools   step `json:"tools"` // result: the listed tool names
	Valid   step `json:"valid"`
	Invalid step `json:"invalid"`
	NoToken step `json:"noToken"`
	NoScope step `json:"noScope"`
}

type step struct {
	Result json.RawMessage `json:"result"`
	Error  *clientError    `json:"error"`
}

type clientError struct {
	Name    string `json:"name"`
	Message string `json:"message"`
	Status  int    `json:"status"` // HTTP status, when the client keeps one
}

// callResult is a tools/call result as a client handed it over.
type callResult struct {
	Meta              map[string]json.RawMessage `json:"_meta"`
	Content           []struct{ Type, Text string }
	StructuredContent json.RawMessage `json:"structuredContent"`
	IsError           bool            `json:"isError"`
}

func TestClients(t *testing.T) {
	node := nodeModules(t)
	clients := []struct {
		name     string
		revision string // the revision its calls must carry
		run      func(t *testing.T, s *compatServer) report
	}{
		{"typescript-sdk-1.x", legacyRevision, nodeScript(node, "sdk1.mjs", "")},
		{"client-2.x/legacy", legacyRevision, nodeScript(node, "client2.mjs", "legacy")},
		{"client-2.x/modern", modernRevision, nodeScript(node, "client2.mjs", "modern")},
		{"inspector-cli/legacy", legacyRevision, nodeScript(node, "inspector.mjs", "legacy")},
		{"inspector-cli/modern", modernRevision, nodeScript(node, "inspector.mjs", "modern")},
		{"go-sdk/" + legacyRevision, legacyRevision, goSDK(legacyRevision)},
		{"go-sdk/" + modernRevision, modernRevision, goSDK(modernRevision)},
	}
	for _, c := range clients {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			s := newCompatServer(t)
			rep := c.run(t, s)
			s.check(t, rep, c.revision)
		})
	}
}

// nodeModules returns the node binary, having checked that npm ci installed
// exactly the versions package.json pins. Without node or the modules the
// suite skips, or fails under CI=true.
func nodeModules(t *testing.T) string {
	t.Helper()
	unavailable := func(format string, args ...any) {
		t.Helper()
		msg := fmt.Sprintf(format, args...)
		if os.Getenv("CI") == "true" {
			t.Fatal(msg + " (CI=true: the client compatibility suite must run; .ci/run installs it)")
		}
		t.Skip(msg + "; run `npm ci` in clients/ to run the client compatibility suite")
	}
	node, err := exec.LookPath("node")
	if err != nil {
		unavailable("node is not installed: %v", err)
	}
	raw, err := os.ReadFile("package.json")
	if err != nil {
		t.Fatal(err)
	}
	var pkg struct{ Dependencies map[string]string }
	if err := json.Unmarshal(raw, &pkg); err != nil {
		t.Fatalf("package.json: %v", err)
	}
	for _, name := range slices.Sorted(maps.Keys(pkg.Dependencies)) {
		raw, err := os.ReadFile(filepath.Join("node_modules", name, "package.json"))
		if os.IsNotExist(err) {
			unavailable("clients/node_modules has no %s", name)
		}
		if err != nil {
			t.Fatal(err)
		}
		var got struct{ Version string }
		if err := json.Unmarshal(raw, &got); err != nil {
			t.Fatalf("node_modules/%s/package.json: %v", name, err)
		}
		if want := pkg.Dependencies[name]; got.Version != want {
			t.Fatalf("node_modules has %s %s, package.json pins %s: run `npm ci` in clients/", name, got.Version, want)
		}
	}
	return node
}

// compatServer is cobranca's real route table on a loopback port, its
// development-mode authenticator (tokens' audience is this very server), and
// a record of every exchange, so the test sees what each client was answered.
type compatServer struct {
	url         string
	auth        *auth.Authenticator
	mcp         *mcpapi.Handler
	token       string // holds every scope a listed tool needs
	noScope     string // valid, without those scopes
	mu          sync.Mutex
	exchanges   []exchange
	metadataURL string
}

// exchange is one request to the server and the answer it got.
type exchange struct {
	path, rpcMethod, revision string
	holder                    string // "token", "noScope", or "" for no Authorization header
	status                    int
	challenge                 string // WWW-Authenticate
}

func newCompatServer(t *testing.T) *compatServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + ln.Addr().String()
	log := slog.New(slog.DiscardHandler)
	a, err := auth.New(context.Background(), auth.Config{DataDir: t.TempDir(), BaseURL: base, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	h, err := mcpapi.New(mcpapi.Options{Logger: log, Scopes: a, Pipeline: pipelinetest.Product(t, pipeline.Options{Logger: log})})
	if err != nil {
		t.Fatal(err)
	}
	var scopes []string
	for _, c := range h.Contracts() {
		scopes = append(scopes, c.Permissions...)
	}
	s := &compatServer{url: base + "/mcp", auth: a, mcp: h, metadataURL: a.ResourceMetadataURL()}
	if s.token, err = a.Mint(auth.MintOptions{Subject: "alice", Agent: "compat-agent", Scopes: scopes}); err != nil {
		t.Fatal(err)
	}
	if s.noScope, err = a.Mint(auth.MintOptions{Subject: "mallory", Agent: "compat-agent", Scopes: []string{"other:read"}}); err != nil {
		t.Fatal(err)
	}
	routes := server.Routes(server.Deps{Logger: log, MCP: h, MaxBodyBytes: 1 << 20, Auth: a})
	ts := httptest.NewUnstartedServer(s.record(routes))
	ts.Listener.Close()
	ts.Listener = ln
	ts.Start()
	t.Cleanup(ts.Close)
	return s
}

// record notes each exchange: who called (by token), the JSON-RPC method and
// protocol revision, and the status and challenge answered.
func (s *compatServer) record(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ex := exchange{path: r.URL.Path, revision: r.Header.Get("Mcp-Protocol-Version")}
		switch r.Header.Get("Authorization") {
		case "":
		case "Bearer " + s.token:
			ex.holder = "token"
		case "Bearer " + s.noScope:
			ex.holder = "noScope"
		default:
			ex.holder = "other"
		}
		if r.Body != nil {
			body, err := io.ReadAll(r.Body)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			var env struct{ Method string }
			_ = json.Unmarshal(body, &env)
			ex.rpcMethod = env.Method
			r.Body = io.NopCloser(bytes.NewReader(body))
		}
		sw := &statusWatch{ResponseWriter: w, status: http.StatusOK}
		next.ServeHTTP(sw, r)
		ex.status, ex.challenge = sw.status, w.Header().Get("WWW-Authenticate")
		s.mu.Lock()
		s.exchanges = append(s.exchanges, ex)
		s.mu.Unlock()
	})
}

// statusWatch notes the status a handler answers: the one it writes, or 200.
type statusWatch struct {
	http.ResponseWriter
	status int
}

func (w *statusWatch) WriteHeader(code int) {
	w.status = code
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWatch) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// calls returns the exchanges on /mcp by holder.
func (s *compatServer) calls(holder string) []exchange {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []exchange
	for _, ex := range s.exchanges {
		if ex.path == "/mcp" && ex.holder == holder {
			out = append(out, ex)
		}
	}
	return out
}

// check holds a client's report and the exchanges it caused to what every
// client must get.
func (s *compatServer) check(t *testing.T, rep report, revision string) {
	t.Helper()
	if rep.Connect.Error != nil {
		t.Fatalf("connect: %+v", *rep.Connect.Error)
	}

	// List: the tools the server serves, by name.
	var names []string
	if err := result(rep.Tools, &names); err != nil {
		t.Errorf("tools/list: %v", err)
	}
	var want []string
	for _, c := range s.mcp.Contracts() {
		want = append(want, c.Name)
	}
	if !slices.Equal(names, want) {
		t.Errorf("tools/list = %v, want %v", names, want)
	}

	// A valid call: the analysis, as structured content.
	var valid callResult
	if err := result(rep.Valid, &valid); err != nil {
		t.Errorf("valid call: %v", err)
	} else {
		in, err := portfolio.Parse([]byte(validArgs))
		if err != nil {
			t.Fatal(err)
		}
		a := portfolio.Analyze(in)
		if diff := cmp.Diff(jsonValue(t, a.AppendJSON(nil)), jsonValue(t, valid.StructuredContent)); valid.IsError || diff != "" {
			t.Errorf("valid call: isError %v, structuredContent (-want +got):\n%s", valid.IsError, diff)
		}
	}

	// An invalid call: an error result whose code and field a program reads.
	var invalid callResult
	if err := result(rep.Invalid, &invalid); err != nil {
		t.Errorf("invalid call: %v", err)
	} else {
		var d failure.Detail
		if err := json.Unmarshal(invalid.Meta[mcpapi.ErrorMetaKey], &d); err != nil {
			t.Errorf("invalid call: _meta[%s] = %s (%v); result %+v", mcpapi.ErrorMetaKey, invalid.Meta[mcpapi.ErrorMetaKey], err, invalid)
		} else if !invalid.IsError || d.Code != invalidCode || d.Field != invalidField || invalid.StructuredContent != nil {
			t.Errorf("invalid call: isError %v, error %+v, structuredContent %s; want isError, %s on %s, no structuredContent",
				invalid.IsError, d, invalid.StructuredContent, invalidCode, invalidField)
		} else if text := (&failure.Error{Code: d.Code, Field: d.Field, Message: d.Message}).Text(); len(invalid.Content) != 1 || invalid.Content[0].Text != text {
			t.Errorf("invalid call: content %+v, want the text %q", invalid.Content, text)
		}
	}

	// Without a token: the client fails, having been answered 401 with a
	// challenge pointing at the resource metadata.
	if rep.NoToken.Error == nil {
		t.Errorf("call without a token: the client reported success: %s", rep.NoToken.Result)
	}
	wantChallenge := `resource_metadata="` + s.metadataURL + `"`
	anon := s.calls("")
	if len(anon) == 0 {
		t.Errorf("call without a token: no request reached /mcp without a token")
	}
	for _, ex := range anon {
		if ex.status != http.StatusUnauthorized || !strings.Contains(ex.challenge, wantChallenge) {
			t.Errorf("without a token, %s %q was answered %d, WWW-Authenticate %q; want 401 with %s", ex.path, ex.rpcMethod, ex.status, ex.challenge, wantChallenge)
		}
	}

	// Without the scope: the call is refused with 403 insufficient_scope,
	// naming the scope.
	if rep.NoScope.Error == nil {
		t.Errorf("call without the scope: the client reported success: %s", rep.NoScope.Result)
	}
	refused := false
	for _, ex := range s.calls("noScope") {
		if ex.rpcMethod == "tools/call" {
			refused = ex.status == http.StatusForbidden && strings.Contains(ex.challenge, `error="insufficient_scope"`) &&
				strings.Contains(ex.challenge, `scope="collections:read"`)
			if !refused {
				t.Errorf("call without the scope answered %d, WWW-Authenticate %q; want 403 insufficient_scope", ex.status, ex.challenge)
			}
		}
	}
	if !refused {
		t.Errorf("call without the scope: no refused tools/call reached the server")
	}

	// The client spoke the revision it was meant to.
	for _, ex := range s.calls("token") {
		if (ex.rpcMethod == "tools/call" || ex.rpcMethod == "tools/list") && ex.revision != revision {
			t.Errorf("%s sent with Mcp-Protocol-Version %q, want %s", ex.rpcMethod, ex.revision, revision)
		}
	}
}

// result decodes a step's result into v, or says what the client threw.
func result(s step, v any) error {
	if s.Error != nil {
		return fmt.Errorf("the client threw %s: %s", s.Error.Name, s.Error.Message)
	}
	if err := json.Unmarshal(s.Result, v); err != nil {
		return fmt.Errorf("result %s: %v", s.Result, err)
	}
	return nil
}

func jsonValue(t *testing.T, b []byte) any {
	t.Helper()
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("%v: %s", err, b)
	}
	return v
}

// nodeScript runs a client script on s's cases and returns its report.
func nodeScript(node, script, era string) func(t *testing.T, s *compatServer) report {
	return func(t *testing.T, s *compatServer) report {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, node, script)
		cmd.Env = append(os.Environ(),
			"HOME="+t.TempDir(), // the Inspector keeps its state there
			"COMPAT_URL="+s.url,
			"COMPAT_TOKEN="+s.token,
			"COMPAT_TOKEN_NO_SCOPE="+s.noScope,
			"COMPAT_TOOL="+collections.AnalyzeName,
			"COMPAT_VALID_ARGS="+validArgs,
			"COMPAT_INVALID_ARGS="+invalidArgs,
			"COMPAT_ERA="+era,
		)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("node %s: %v\n%s", script, err, tail(stderr.String()))
		}
		var rep report
		if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
			t.Fatalf("node %s printed no report (%v):\n%s\n%s", script, err, tail(stdout.String()), tail(stderr.String()))
		}
		return rep
	}
}

func tail(s string) string {
	if len(s) > 4000 {
		return "…" + s[len(s)-4000:]
	}
	return s
}

// goSDK runs the cases with this module's go-sdk client on revision.
func goSDK(revision string) func(t *testing.T, s *compatServer) report {
	return func(t *testing.T, s *compatServer) report {
		ctx := context.Background()
		connect := func(token string) (*mcp.ClientSession, error) {
			c := mcp.NewClient(&mcp.Implementation{Name: "cobranca-compat-go", Version: "1.0.0"}, nil)
			hc := &http.Client{Transport: bearer{token: token}, Timeout: time.Minute}
			return c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: s.url, HTTPClient: hc}, &mcp.ClientSessionOptions{ProtocolVersion: revision})
		}
		call := func(sess *mcp.ClientSession, args string) step {
			var v map[string]any
			if err := json.Unmarshal([]byte(args), &v); err != nil {
				t.Fatal(err)
			}
			return stepOf(sess.CallTool(ctx, &mcp.CallToolParams{Name: collections.AnalyzeName, Arguments: v}))
		}
		var rep report
		sess, err := connect(s.token)
		rep.Connect = stepOf(struct{}{}, err)
		if err == nil {
			defer sess.Close()
			if got := sess.InitializeResult().ProtocolVersion; got != revision {
				t.Errorf("go-sdk negotiated %s, want %s", got, revision)
			}
			list, err := sess.ListTools(ctx, nil)
			var names []string
			if err == nil {
				for _, tool := range list.Tools {
					names = append(names, tool.Name)
				}
			}
			rep.Tools = stepOf(names, err)
			rep.Valid = call(sess, validArgs)
			rep.Invalid = call(sess, invalidArgs)
		}
		if anon, err := connect(""); err != nil {
			rep.NoToken = stepOf[any](nil, err)
		} else {
			rep.NoToken = call(anon, validArgs)
			anon.Close()
		}
		if other, err := connect(s.noScope); err != nil {
			rep.NoScope = stepOf[any](nil, err)
		} else {
			rep.NoScope = call(other, validArgs)
			other.Close()
		}
		return rep
	}
}

// stepOf records a go-sdk outcome as a node script would.
func stepOf[T any](v T, err error) step {
	if err != nil {
		return step{Error: &clientError{Name: fmt.Sprintf("%T", err), Message: err.Error()}}
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return step{Error: &clientError{Name: "marshal", Message: err.Error()}}
	}
	return step{Result: raw}
}

// bearer sends token, if any, in the Authorization header.
type bearer struct{ token string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	if b.token == "" {
		return http.DefaultTransport.RoundTrip(r)
	}
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}
