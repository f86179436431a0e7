// The client compatibility suite: the official MCP clients, at the versions
// package-lock.json pins, and the go-sdk client of this module, each against
// the real routes over real HTTP with real tokens. Every client runs the
// same cases — connect, list, a valid call, an invalid call whose error
// code it reads, a call without a token, a call without the scope, the
// analysis' MCP Apps result view found in tools/list and read as a host
// reads it (and the Inspector CLI's own MCP Apps probe of it); a
// medium-tier tool with side effects called with an idempotency key, again,
// with other arguments under that key, and as a dry run; and, but for the
// Inspector CLI, a high-tier tool called by an agent whose person accepts,
// then declines, the confirmation, and by a client without the elicitation
// capability; then the journey through the product's own tools
// (journey_test.go): reminder drafts, the customer and draft reads, a
// draft sent once a person approved it out of band (the test server
// approves at the approval's URL; the message reaches a real SMTP server), a
// contact status a person confirms, a download link the test fetches — and
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
	"errors"
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
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cobranca/cobranca/internal/approval"
	"github.com/cobranca/cobranca/internal/auditlog"
	"github.com/cobranca/cobranca/internal/auth"
	"github.com/cobranca/cobranca/internal/collections"
	"github.com/cobranca/cobranca/internal/contract"
	"github.com/cobranca/cobranca/internal/contract/contracttest"
	"github.com/cobranca/cobranca/internal/failure"
	"github.com/cobranca/cobranca/internal/files"
	"github.com/cobranca/cobranca/internal/mcpapi"
	"github.com/cobranca/cobranca/internal/outbox"
	"github.com/cobranca/cobranca/internal/outbox/outboxtest"
	"github.com/cobranca/cobranca/internal/pipeline"
	"github.com/cobranca/cobranca/internal/pipeline/pipelinetest"
	"github.com/cobranca/cobranca/internal/pix"
	"github.com/cobranca/cobranca/internal/portfolio"
	"github.com/cobranca/cobranca/internal/reminders"
	"github.com/cobranca/cobranca/internal/server"
	"github.com/cobranca/cobranca/internal/smtptest"
	"github.com/cobranca/cobranca/internal/store"
	"github.com/cobranca/cobranca/internal/store/storetest"
	"github.com/cobranca/cobranca/internal/tier"
	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The cases' arguments: a valid portfolio, which uses analyze_portfolio
// 1.1.0's optional fields too (a USD invoice and its rate, a disputed one,
// a promise to pay, a last contact), so that every client reads a result
// with conversions and the summary against the output schema; and a
// portfolio with a date that is not on the calendar, which every client
// must see refused with its code and field.
const (
	validArgs = `{"asOf":"2026-11-29","invoices":[` +
		`{"id":"inv-1","customerId":"c-1","customerName":"Ana Ltda","dueDate":"2026-11-01","amountCents":150000,"status":"open","doNotContact":false},` +
		`{"id":"inv-2","customerId":"c-1","customerName":"Ana Ltda","dueDate":"2026-12-10","amountCents":60000,"status":"open","doNotContact":false},` +
		`{"id":"inv-3","customerId":"c-2","customerName":"Bruno SA","dueDate":"2026-11-20","amountCents":5000,"status":"open","doNotContact":false},` +
		`{"id":"inv-4","customerId":"c-2","customerName":"Bruno SA","dueDate":"2026-11-25","amountCents":2500,"status":"open","doNotContact":false,"currency":"USD"},` +
		`{"id":"inv-5","customerId":"c-3","customerName":"Carla ME","dueDate":"2026-10-01","amountCents":9000,"status":"open","doNotContact":false,"disputed":true},` +
		`{"id":"inv-6","customerId":"c-4","customerName":"Davi Com","dueDate":"2026-11-02","amountCents":4000,"status":"open","doNotContact":false,"promiseToPayDate":"2026-11-20"}],` +
		`"rates":[{"currency":"USD","rate":5.17,"date":"2026-11-27"}],"customers":[{"customerId":"c-1","lastContactedAt":"2026-11-27T10:00:00-03:00"}]}`
	invalidArgs = `{"asOf":"2026-11-29","invoices":[` +
		`{"id":"inv-1","customerId":"c-1","customerName":"Ana Ltda","dueDate":"2026-11-01","amountCents":150000,"status":"open","doNotContact":false},` +
		`{"id":"inv-2","customerId":"c-1","customerName":"Ana Ltda","dueDate":"2025-02-30","amountCents":60000,"status":"open","doNotContact":false}]}`
	invalidCode  = "invalid_date"
	invalidField = "invoices[1].dueDate"
)

// The test tools with side effects (real rows in a SQLite store, through
// pipelinetest.Effectful) and their cases' arguments. Every call carries an
// idempotency key, which both tools require.
const (
	mediumTool            = "compat.mark_contacted"
	mediumArgs            = `{"idempotencyKey":"compat-medium-1","customerId":"c-1"}`
	mediumConflictArgs    = `{"idempotencyKey":"compat-medium-1","customerId":"c-2"}`
	mediumDryRunArgs      = `{"idempotencyKey":"compat-medium-2","customerId":"c-1","dryRun":true}`
	highTool              = "compat.pause_collection"
	highAcceptArgs        = `{"idempotencyKey":"compat-high-1","customerId":"c-1"}`
	highDeclineArgs       = `{"idempotencyKey":"compat-high-2","customerId":"c-2"}`
	highNoElicitationArgs = `{"idempotencyKey":"compat-high-3","customerId":"c-3"}`
	highURLOnlyArgs       = `{"idempotencyKey":"compat-high-4","customerId":"c-4"}`
	testWriteScope        = "compat:write"
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
	Connect  step `json:"connect"`
	Tools    step `json:"tools"`    // result: the listed tool names
	ToolDefs step `json:"toolDefs"` // result: the listed entries of the test tools
	View     step `json:"view"`     // result: viewReport (lib.mjs), the MCP Apps result view
	// AppInfo is the Inspector CLI's own MCP Apps probe of the tool, which
	// it prints with the result of a call of a tool that has an app (the
	// tool's _meta.ui and the resource, read); the other clients have none.
	AppInfo step `json:"appInfo"`
	Valid   step `json:"valid"`
	Invalid step `json:"invalid"`
	NoToken step `json:"noToken"`
	NoScope step `json:"noScope"`

	Medium         step `json:"medium"`
	MediumRepeat   step `json:"mediumRepeat"`
	MediumConflict step `json:"mediumConflict"`
	MediumDryRun   step `json:"mediumDryRun"`

	HighAccept        step `json:"highAccept"`
	HighDecline       step `json:"highDecline"`
	HighNoElicitation step `json:"highNoElicitation"`
	HighURLOnly       step `json:"highUrlOnly"` // elicitation {url: {}}: no form
	// Elicited are the params of each elicitation/create the client's
	// handler was given, in order.
	Elicited []json.RawMessage `json:"elicited"`

	// Journey is what the client made of each step of the journey through
	// the product's tools (nil: a step the client left out), and
	// JourneyElicited the confirmations it was shown on the way.
	Journey         []*step           `json:"journey"`
	JourneyElicited []json.RawMessage `json:"journeyElicited"`
	// JourneyApprovals are the first answers to the journey's critical
	// steps, by step, that were approval_required (the client then
	// retried); a step is absent when the client was asked by a URL
	// elicitation, or refused.
	JourneyApprovals map[int]*step `json:"journeyApprovals"`
}

type step struct {
	Result json.RawMessage `json:"result"`
	Error  *clientError    `json:"error"`
}

type clientError struct {
	Name    string          `json:"name"`
	Message string          `json:"message"`
	Status  int             `json:"status"` // HTTP status, when the client keeps one
	Code    int64           `json:"code"`   // JSON-RPC error code, when the client keeps one
	Data    json.RawMessage `json:"data"`   // its data
}

// callResult is a tools/call result as a client handed it over.
type callResult struct {
	Meta              map[string]json.RawMessage `json:"_meta"`
	Content           []struct{ Type, Text string }
	StructuredContent json.RawMessage `json:"structuredContent"`
	IsError           bool            `json:"isError"`
}

func TestClients(t *testing.T) {
	tier.EndToEnd(t)
	node := nodeModules(t)
	clients := []struct {
		name     string
		revision string // the revision its calls must carry
		// high: the client runs the high-tier cases (an SDK a host embeds,
		// with an elicitation handler; not the Inspector CLI).
		high bool
		run  func(t *testing.T, s *compatServer) report
	}{
		{"typescript-sdk-1.x", legacyRevision, true, nodeScript(node, "sdk1.mjs", "")},
		{"client-2.x/legacy", legacyRevision, true, nodeScript(node, "client2.mjs", "legacy")},
		{"client-2.x/modern", modernRevision, true, nodeScript(node, "client2.mjs", "modern")},
		{"inspector-cli/legacy", legacyRevision, false, nodeScript(node, "inspector.mjs", "legacy")},
		{"inspector-cli/modern", modernRevision, false, nodeScript(node, "inspector.mjs", "modern")},
		{"go-sdk/" + legacyRevision, legacyRevision, true, goSDK(legacyRevision)},
		{"go-sdk/" + modernRevision, modernRevision, true, goSDK(modernRevision)},
	}
	for _, c := range clients {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			s := newCompatServer(t)
			rep := c.run(t, s)
			s.check(t, rep, c.revision)
			s.checkView(t, rep, c.name)
			s.checkMedium(t, rep)
			if c.high {
				s.checkHigh(t, rep, c.revision)
			} else if n := pipelinetest.Effects(t, s.db, highTool); n != 0 {
				t.Errorf("%s: %d effects without a high-tier case", highTool, n)
			}
			s.checkJourney(t, rep, c.revision, c.high && c.revision == modernRevision, c.high)
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
	db          store.DB         // where the test tools' effects commit
	smtp        *smtptest.Server // where the outbox delivers send_reminder's messages
	approvals   *approval.Store
	medium      *contract.Contract
	high        *contract.Contract
	token       string // holds every scope a listed tool needs
	noScope     string // valid, without those scopes
	mu          sync.Mutex
	exchanges   []exchange
	metadataURL string
	base        string // scheme://host of the server
	fileID      string // a stored file the journey links to
	fileContent []byte
	sendDraft   reminders.Record   // the draft the journey sends
	bulkDrafts  []reminders.Record // the drafts it sends in one bulk
	journey     string             // the journey's steps, as the scripts read them
	scheduleID  string             // the schedule the journey previews and pauses
}

// exchange is one request to the server and the answer it got.
type exchange struct {
	path, rpcMethod, revision string
	tool                      string // the tool a tools/call names
	retry                     bool   // a tools/call carrying a requestState
	key                       string // its arguments' idempotencyKey
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
	// The medium-tier tool offers a dry run, so that its input schema
	// declares both arguments the pipeline reads (idempotencyKey, dryRun).
	medium := contracttest.WithDryRun(contracttest.New(mediumTool, contract.Medium, testWriteScope))
	high := contracttest.New(highTool, contract.High, testWriteScope)
	db := storetest.SQLite(t)
	// The product's tools, files.create_download_link with them, audited
	// like the server audits them; downloads of the links it makes.
	alog, digest := pipelinetest.AuditLog(t, db)
	links, err := files.NewLinks(pipelinetest.Ring(t), base)
	if err != nil {
		t.Fatal(err)
	}
	fileTools, err := files.Tools(links)
	if err != nil {
		t.Fatal(err)
	}
	// send_reminder, with the outbox delivering to a real SMTP server, and
	// approvals at this server's own URL (approveRoute).
	smtpd := smtptest.New(t)
	sendTools := sendTools(t, db, smtpd)
	approvals, err := approval.New(15*time.Minute, nil)
	if err != nil {
		t.Fatal(err)
	}
	tools := append(append(sendTools, fileTools...), pipelinetest.Effectful(medium, nil), pipelinetest.Effectful(high, nil))
	// The operator's PIX receiving account: every reminder in reais carries a PIX code.
	merchant, err := pix.NewMerchant(journeyPixKey, "Cobranca Jornada Ltda", "SAO PAULO")
	if err != nil {
		t.Fatal(err)
	}
	pipe := pipelinetest.ProductWith(t, collections.Settings{Pix: &merchant}, pipelinetest.WithStore(t, db, pipeline.Options{Logger: log, Auditor: pipeline.NewAuditor(alog, digest),
		Tools: tools, Approvals: approvals, PublicURL: base}))
	h, err := mcpapi.New(mcpapi.Options{Logger: log, Scopes: a, Pipeline: pipe})
	if err != nil {
		t.Fatal(err)
	}
	var scopes []string
	for _, c := range h.Contracts() {
		scopes = append(scopes, c.Permissions...)
	}
	s := &compatServer{url: base + "/mcp", auth: a, mcp: h, db: db, smtp: smtpd, approvals: approvals, medium: medium, high: high,
		metadataURL: a.ResourceMetadataURL(), base: base}
	s.addFile(t)
	s.journey = s.journeySteps(t)
	if s.token, err = a.Mint(auth.MintOptions{Subject: "alice", Agent: "compat-agent", Scopes: scopes}); err != nil {
		t.Fatal(err)
	}
	if s.noScope, err = a.Mint(auth.MintOptions{Subject: "mallory", Agent: "compat-agent", Scopes: []string{"other:read"}}); err != nil {
		t.Fatal(err)
	}
	routes := server.Routes(server.Deps{Logger: log, MCP: h, MaxBodyBytes: 1 << 20, Auth: a,
		Downloads: &files.Downloads{DB: db, Links: links, Audit: alog, Logger: log}})
	ts := httptest.NewUnstartedServer(s.record(s.approveRoute(t, routes, alog, h)))
	ts.Listener.Close()
	ts.Listener = ln
	ts.Start()
	t.Cleanup(ts.Close)
	return s
}

// sendTools are collections.SendTools on an outbox of db that delivers to
// smtpd, running until the test ends.
func sendTools(t *testing.T, db store.DB, smtpd *smtptest.Server) []pipeline.Tool {
	t.Helper()
	mail := outboxtest.Deliver(t, db, smtpd, outbox.Config{Owner: reminders.Delivery{}})
	tools, err := collections.SendTools(collections.Settings{}, mail)
	if err != nil {
		t.Fatal(err)
	}
	return tools
}

// approveRoute answers GET /approvals/{id} by approving the call as a
// stepped-up person, bruno, with a real token, through approval.Decider —
// the check the approval page runs: it stands in for a person who opens the
// approval's URL, signs in and approves (the page itself is tested where it
// is served). Every other request goes to next.
func (s *compatServer) approveRoute(t *testing.T, next http.Handler, alog *auditlog.Log, h *mcpapi.Handler) http.Handler {
	person, err := s.auth.Mint(auth.MintOptions{Subject: "bruno", ACR: "urn:mfa", TTL: time.Hour, Roles: []string{collections.ApproverRole}})
	if err != nil {
		t.Fatal(err)
	}
	d := &approval.Decider{Store: s.approvals, DB: s.db, Verifier: s.auth, Audit: alog,
		Contract: func(name string) *contract.Contract {
			for _, c := range h.Contracts() {
				if c.Name == name {
					return c
				}
			}
			return nil
		}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /approvals/{id}", func(w http.ResponseWriter, r *http.Request) {
		if _, err := d.Decide(r.Context(), r.PathValue("id"), person, true); err != nil {
			http.Error(w, err.Error(), http.StatusConflict)
			return
		}
		_, _ = io.WriteString(w, "approved\n")
	})
	mux.Handle("/", next)
	return mux
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
			var env struct {
				Method string
				Params struct {
					Name         string
					RequestState *string `json:"requestState"`
					Arguments    struct{ IdempotencyKey string }
				}
			}
			_ = json.Unmarshal(body, &env)
			ex.rpcMethod = env.Method
			if env.Method == "tools/call" {
				ex.tool, ex.retry, ex.key = env.Params.Name, env.Params.RequestState != nil, env.Params.Arguments.IdempotencyKey
			}
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
	slices.Sort(want) // go-sdk lists tools by name
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
	wantToolError(t, "invalid call", rep.Invalid, invalidCode, invalidField)

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

// wantToolError checks that the client accepted st as a tool error result
// (isError, no structuredContent: the TypeScript SDKs validate one against
// the outputSchema) whose _meta[mcpapi.ErrorMetaKey] carries code and field,
// and whose one text content says them; it returns the detail.
func wantToolError(t *testing.T, what string, st step, code failure.Code, field string) failure.Detail {
	t.Helper()
	var r callResult
	var d failure.Detail
	if err := result(st, &r); err != nil {
		t.Errorf("%s: %v", what, err)
		return d
	}
	if err := json.Unmarshal(r.Meta[mcpapi.ErrorMetaKey], &d); err != nil {
		t.Errorf("%s: _meta[%s] = %s (%v); result %+v", what, mcpapi.ErrorMetaKey, r.Meta[mcpapi.ErrorMetaKey], err, r)
	} else if !r.IsError || d.Code != code || d.Field != field || r.StructuredContent != nil {
		t.Errorf("%s: isError %v, error %+v, structuredContent %s; want isError, %s on %q, no structuredContent",
			what, r.IsError, d, r.StructuredContent, code, field)
	} else if text := (&failure.Error{Code: d.Code, Field: d.Field, Message: d.Message}).Text(); len(r.Content) != 1 || r.Content[0].Text != text {
		t.Errorf("%s: content %+v, want the text %q", what, r.Content, text)
	}
	return d
}

// wantComplete checks that the client accepted st as a result with the
// structured content want.
func wantComplete(t *testing.T, what string, st step, want string) {
	t.Helper()
	var r callResult
	if err := result(st, &r); err != nil {
		t.Errorf("%s: %v", what, err)
	} else if r.IsError || r.StructuredContent == nil || !cmp.Equal(jsonValue(t, []byte(want)), jsonValue(t, r.StructuredContent)) {
		t.Errorf("%s: isError %v, structuredContent %s; want %s", what, r.IsError, r.StructuredContent, want)
	}
}

// listedTool is a tools/list entry as a client handed it over.
type listedTool struct {
	Name        string
	InputSchema json.RawMessage
	Annotations map[string]any
	Meta        map[string]json.RawMessage `json:"_meta"`
}

// checkToolDefs holds the listed entries of the test tools to their
// contracts: the input schema as the contract declares it, which names the
// arguments the pipeline reads (idempotencyKey on both, dryRun where the
// contract offers a dry run); the four hints, each set; the contract under
// its _meta key.
func (s *compatServer) checkToolDefs(t *testing.T, rep report) {
	t.Helper()
	var defs []listedTool
	if err := result(rep.ToolDefs, &defs); err != nil {
		t.Errorf("tools/list: %v", err)
		return
	}
	for _, c := range []*contract.Contract{s.medium, s.high} {
		i := slices.IndexFunc(defs, func(d listedTool) bool { return d.Name == c.Name })
		if i < 0 {
			t.Errorf("tools/list: no %s", c.Name)
			continue
		}
		d := defs[i]
		want, err := json.Marshal(c.InputSchema)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(jsonValue(t, want), jsonValue(t, d.InputSchema)); diff != "" {
			t.Errorf("%s: inputSchema (-contract +listed):\n%s", c.Name, diff)
		}
		var in struct {
			Properties map[string]struct{ Type string }
			Required   []string
			// With a dry run offered, the key is required when dryRun is not true.
			AllOf []struct {
				If struct {
					Required   []string
					Properties map[string]struct{ Const *bool }
				}
				Else struct{ Required []string }
			}
		}
		if err := json.Unmarshal(d.InputSchema, &in); err != nil {
			t.Errorf("%s: inputSchema %s: %v", c.Name, d.InputSchema, err)
		}
		required := slices.Contains(in.Required, contract.ArgIdempotencyKey)
		for _, a := range in.AllOf {
			dry := a.If.Properties[contract.ArgDryRun].Const
			if c.DryRun != contract.ModeNone && slices.Equal(a.If.Required, []string{contract.ArgDryRun}) && dry != nil && *dry &&
				slices.Contains(a.Else.Required, contract.ArgIdempotencyKey) {
				required = true
			}
		}
		if in.Properties[contract.ArgIdempotencyKey].Type != "string" || !required {
			t.Errorf("%s: inputSchema %s does not require the string %s (unless dryRun is true, where a dry run is offered)", c.Name, d.InputSchema, contract.ArgIdempotencyKey)
		}
		if dry := in.Properties[contract.ArgDryRun].Type == "boolean"; dry != (c.DryRun != contract.ModeNone) {
			t.Errorf("%s: inputSchema %s declares %s: %v, its contract offers a dry run: %v", c.Name, d.InputSchema, contract.ArgDryRun, dry, c.DryRun != contract.ModeNone)
		}
		// A test row changes, the same again on a repeat of the key: not
		// read-only, not destructive, idempotent, closed world.
		wantHints := map[string]any{"title": c.Title, "readOnlyHint": false, "destructiveHint": false, "idempotentHint": true, "openWorldHint": false}
		if diff := cmp.Diff(wantHints, d.Annotations); diff != "" {
			t.Errorf("%s: annotations (-want +listed):\n%s", c.Name, diff)
		}
		var published struct{ RiskLevel contract.Risk }
		if err := json.Unmarshal(d.Meta[contract.MetaKey], &published); err != nil || published.RiskLevel != c.RiskLevel {
			t.Errorf("%s: _meta[%s] = %s (%v), want its contract (riskLevel %s)", c.Name, contract.MetaKey, d.Meta[contract.MetaKey], err, c.RiskLevel)
		}
	}
}

// checkMedium holds the medium-tier cases: the call with a key is accepted;
// its repeat returns the identical result; other arguments under the key are
// the tool error idempotency_conflict, which the client accepts; a dry run
// says what would happen. One effect in all.
func (s *compatServer) checkMedium(t *testing.T, rep report) {
	t.Helper()
	s.checkToolDefs(t, rep)
	wantComplete(t, "medium call", rep.Medium, `{"ok":true}`)
	if rep.Medium.Error == nil && rep.MediumRepeat.Error == nil {
		if diff := cmp.Diff(jsonValue(t, rep.Medium.Result), jsonValue(t, rep.MediumRepeat.Result)); diff != "" {
			t.Errorf("medium call repeated with its key: result (-first +repeat):\n%s", diff)
		}
	} else if rep.MediumRepeat.Error != nil {
		t.Errorf("medium call repeated with its key: the client threw %s: %s", rep.MediumRepeat.Error.Name, rep.MediumRepeat.Error.Message)
	}
	wantToolError(t, "medium call, other arguments under its key", rep.MediumConflict, failure.IdempotencyConflict, contract.ArgIdempotencyKey)
	wantComplete(t, "medium dry run", rep.MediumDryRun, `{"ok":true,"dryRun":true}`)
	if n := pipelinetest.Effects(t, s.db, mediumTool); n != 1 {
		t.Errorf("%s: %d effects, want 1 (the first call; not its repeat, the conflict or the dry run)", mediumTool, n)
	}
}

// checkHigh holds the high-tier cases, called by an agent. A 2026-07-28
// client is asked in-band: its elicitation handler is shown the preview,
// and the client retries with the requestState; accepted, the call runs
// once, declined it is the tool error confirmation_declined; without the
// elicitation capability the client throws the JSON-RPC error -32021. A
// 2025-11-25 client gets the tool error confirmation_required, holding the
// preview, every time. Nothing else runs.
func (s *compatServer) checkHigh(t *testing.T, rep report, revision string) {
	t.Helper()
	preview := pipelinetest.EffectPreview(s.high)
	effects := pipelinetest.Effects(t, s.db, highTool)
	// The requests each case sent, by the case's idempotency key: "call" or
	// "retry" (carrying a requestState), and the HTTP status answered.
	sent := map[string][]string{}
	for _, ex := range s.calls("token") {
		if ex.tool == highTool {
			kind := "call"
			if ex.retry {
				kind = "retry"
			}
			sent[ex.key] = append(sent[ex.key], fmt.Sprintf("%s %d", kind, ex.status))
		}
	}
	accepted, declined := keyOf(t, highAcceptArgs), keyOf(t, highDeclineArgs)
	bare, urlOnly := keyOf(t, highNoElicitationArgs), keyOf(t, highURLOnlyArgs)
	if revision == legacyRevision {
		for _, c := range []struct {
			what string
			st   step
		}{{"high call, accepted", rep.HighAccept}, {"high call, declined", rep.HighDecline},
			{"high call, no elicitation", rep.HighNoElicitation}, {"high call, URL-mode elicitation only", rep.HighURLOnly}} {
			if d := wantToolError(t, c.what, c.st, failure.ConfirmationRequired, ""); d.Code != "" && !strings.Contains(d.Message, preview) {
				t.Errorf("%s: message %q does not hold the preview %q", c.what, d.Message, preview)
			}
		}
		want := map[string][]string{accepted: {"call 200"}, declined: {"call 200"}, bare: {"call 200"}, urlOnly: {"call 200"}}
		if diff := cmp.Diff(want, sent); diff != "" {
			t.Errorf("high calls on %s: requests by key (-want +sent):\n%s", revision, diff)
		}
		if len(rep.Elicited) != 0 || effects != 0 {
			t.Errorf("high calls on %s: %d elicitations, %d effects; want none", revision, len(rep.Elicited), effects)
		}
		return
	}
	wantComplete(t, "high call, accepted", rep.HighAccept, `{"ok":true}`)
	wantToolError(t, "high call, declined", rep.HighDecline, failure.ConfirmationDeclined, "")
	// A client that cannot show the confirmation's form (no elicitation, or
	// URL mode only) is asked nothing: it throws the JSON-RPC error -32021,
	// which names the capability to declare (the TypeScript client 2.x
	// builds its MissingRequiredClientCapabilityError from it).
	for _, c := range []struct {
		what string
		st   step
	}{{"no elicitation capability", rep.HighNoElicitation}, {"URL-mode elicitation only", rep.HighURLOnly}} {
		var data struct {
			RequiredCapabilities struct{ Elicitation *struct{ Form *struct{} } }
		}
		if e := c.st.Error; e == nil || e.Code != mcp.CodeMissingRequiredClientCapabilities ||
			json.Unmarshal(e.Data, &data) != nil || data.RequiredCapabilities.Elicitation == nil || data.RequiredCapabilities.Elicitation.Form == nil {
			t.Errorf("high call, %s: %+v, %s; want the client to throw the JSON-RPC error %d requiring elicitation.form",
				c.what, e, c.st.Result, mcp.CodeMissingRequiredClientCapabilities)
		}
	}
	if len(rep.Elicited) != 2 {
		t.Errorf("the elicitation handler was called %d times, want 2 (accepted, declined)", len(rep.Elicited))
	}
	for i, raw := range rep.Elicited {
		var p struct {
			Mode            string
			Message         string
			RequestedSchema struct {
				Properties map[string]struct{ Type string }
			}
		}
		if err := json.Unmarshal(raw, &p); err != nil || (p.Mode != "" && p.Mode != "form") || !strings.Contains(p.Message, preview) ||
			p.RequestedSchema.Properties["confirm"].Type != "boolean" {
			t.Errorf("elicitation %d: %s (%v); want a form showing %q asking for the boolean confirm", i+1, raw, err, preview)
		}
	}
	// Each confirmed call is retried by the client itself with the round's
	// requestState; the missing capability is answered 400.
	want := map[string][]string{accepted: {"call 200", "retry 200"}, declined: {"call 200", "retry 200"}, bare: {"call 400"}, urlOnly: {"call 400"}}
	if diff := cmp.Diff(want, sent); diff != "" {
		t.Errorf("high calls: requests by key (-want +sent):\n%s", diff)
	}
	if effects != 1 {
		t.Errorf("high calls: %d effects, want 1 (the accepted one)", effects)
	}
}

// keyOf is the idempotencyKey of a case's arguments.
func keyOf(t *testing.T, args string) string {
	t.Helper()
	var a struct{ IdempotencyKey string }
	if err := json.Unmarshal([]byte(args), &a); err != nil || a.IdempotencyKey == "" {
		t.Fatalf("arguments %s carry no idempotencyKey (%v)", args, err)
	}
	return a.IdempotencyKey
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
		ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
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
			"COMPAT_MEDIUM_TOOL="+mediumTool,
			"COMPAT_MEDIUM_ARGS="+mediumArgs,
			"COMPAT_MEDIUM_CONFLICT_ARGS="+mediumConflictArgs,
			"COMPAT_MEDIUM_DRY_RUN_ARGS="+mediumDryRunArgs,
			"COMPAT_HIGH_TOOL="+highTool,
			"COMPAT_HIGH_ACCEPT_ARGS="+highAcceptArgs,
			"COMPAT_HIGH_DECLINE_ARGS="+highDeclineArgs,
			"COMPAT_HIGH_BARE_ARGS="+highNoElicitationArgs,
			"COMPAT_HIGH_URL_ONLY_ARGS="+highURLOnlyArgs,
			"COMPAT_JOURNEY="+s.journey,
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
		var rep report
		// The person's answer to the next confirmation, as the elicitation
		// handler gives it.
		var answer *mcp.ElicitResult
		elicit := func(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			raw, err := json.Marshal(req.Params)
			if err != nil {
				return nil, err
			}
			rep.Elicited = append(rep.Elicited, raw)
			// A URL-mode elicitation is an approval: the person opens it first.
			if req.Params.Mode == "url" {
				if err := openApproval(ctx, req.Params.URL); err != nil {
					return nil, err
				}
			}
			return answer, nil
		}
		// connect declares elicitation with the modes given (none: form), or
		// not at all.
		connect := func(token string, withElicitation bool, modes ...*mcp.ElicitationCapabilities) (*mcp.ClientSession, error) {
			opts := &mcp.ClientOptions{}
			if withElicitation {
				opts.ElicitationHandler = elicit
			}
			if len(modes) > 0 {
				opts.Capabilities = &mcp.ClientCapabilities{Elicitation: modes[0]}
			}
			c := mcp.NewClient(&mcp.Implementation{Name: "cobranca-compat-go", Version: "1.0.0"}, opts)
			hc := &http.Client{Transport: bearer{token: token}, Timeout: time.Minute}
			return c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: s.url, HTTPClient: hc}, &mcp.ClientSessionOptions{ProtocolVersion: revision})
		}
		callTool := func(sess *mcp.ClientSession, tool, args string) step {
			var v map[string]any
			if err := json.Unmarshal([]byte(args), &v); err != nil {
				t.Fatal(err)
			}
			return stepOf(sess.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: v}))
		}
		call := func(sess *mcp.ClientSession, args string) step { return callTool(sess, collections.AnalyzeName, args) }
		// Forms (confirmations) and URLs (approvals).
		sess, err := connect(s.token, true, &mcp.ElicitationCapabilities{Form: &mcp.FormElicitationCapabilities{}, URL: &mcp.URLElicitationCapabilities{}})
		rep.Connect = stepOf(struct{}{}, err)
		if err == nil {
			defer sess.Close()
			if got := sess.InitializeResult().ProtocolVersion; got != revision {
				t.Errorf("go-sdk negotiated %s, want %s", got, revision)
			}
			list, err := sess.ListTools(ctx, nil)
			var names []string
			var defs []*mcp.Tool
			if err == nil {
				for _, tool := range list.Tools {
					names = append(names, tool.Name)
					if tool.Name == mediumTool || tool.Name == highTool {
						defs = append(defs, tool)
					}
				}
			}
			rep.Tools = stepOf(names, err)
			rep.ToolDefs = stepOf(defs, err)
			rep.View = stepOf(goView(ctx, sess, list))
			rep.Valid = call(sess, validArgs)
			rep.Invalid = call(sess, invalidArgs)
			rep.Medium = callTool(sess, mediumTool, mediumArgs)
			rep.MediumRepeat = callTool(sess, mediumTool, mediumArgs)
			rep.MediumConflict = callTool(sess, mediumTool, mediumConflictArgs)
			rep.MediumDryRun = callTool(sess, mediumTool, mediumDryRunArgs)
			answer = &mcp.ElicitResult{Action: "accept", Content: map[string]any{"confirm": true}}
			rep.HighAccept = callTool(sess, highTool, highAcceptArgs)
			answer = &mcp.ElicitResult{Action: "decline"}
			rep.HighDecline = callTool(sess, highTool, highDeclineArgs)
			// The product's tools, in order, on the same client.
			var steps []journeyStep
			if err := json.Unmarshal([]byte(s.journey), &steps); err != nil {
				t.Fatal(err)
			}
			shown := len(rep.Elicited)
			rep.JourneyApprovals = map[int]*step{}
			for i, st := range steps {
				answer = nil
				if st.Answer != nil {
					answer = &mcp.ElicitResult{Action: st.Answer.Action, Content: st.Answer.Content}
				}
				args, ok := st.args(t, rep.Journey)
				if !ok {
					rep.Journey = append(rep.Journey, nil)
					continue
				}
				res := callTool(sess, st.Tool, args)
				if url := approvalURLOf(res); st.Critical && url != "" {
					// approval_required: the person opens the URL, the agent calls again.
					asked := res
					rep.JourneyApprovals[i] = &asked
					if err := openApproval(ctx, url); err != nil {
						t.Error(err)
					}
					res = callTool(sess, st.Tool, args)
				}
				rep.Journey = append(rep.Journey, &res)
			}
			rep.Elicited, rep.JourneyElicited = rep.Elicited[:shown], rep.Elicited[shown:]
		}
		if bare, err := connect(s.token, false); err != nil {
			rep.HighNoElicitation = stepOf[any](nil, err)
		} else {
			rep.HighNoElicitation = callTool(bare, highTool, highNoElicitationArgs)
			bare.Close()
		}
		answer = &mcp.ElicitResult{Action: "accept", Content: map[string]any{"confirm": true}}
		if urlOnly, err := connect(s.token, true, &mcp.ElicitationCapabilities{URL: &mcp.URLElicitationCapabilities{}}); err != nil {
			rep.HighURLOnly = stepOf[any](nil, err)
		} else {
			rep.HighURLOnly = callTool(urlOnly, highTool, highURLOnlyArgs)
			urlOnly.Close()
		}
		if anon, err := connect("", false); err != nil {
			rep.NoToken = stepOf[any](nil, err)
		} else {
			rep.NoToken = call(anon, validArgs)
			anon.Close()
		}
		if other, err := connect(s.noScope, false); err != nil {
			rep.NoScope = stepOf[any](nil, err)
		} else {
			rep.NoScope = call(other, validArgs)
			other.Close()
		}
		return rep
	}
}

// viewReport is what a client made of the MCP Apps result view (lib.mjs's
// viewReport).
type viewReport struct {
	ToolMeta   map[string]json.RawMessage `json:"toolMeta"`
	Extensions map[string]json.RawMessage `json:"extensions"`
	Resources  []struct {
		URI      string          `json:"uri"`
		Name     string          `json:"name"`
		MIMEType string          `json:"mimeType"`
		Meta     json.RawMessage `json:"_meta"`
	} `json:"resources"`
	Contents []struct {
		URI      string          `json:"uri"`
		MIMEType string          `json:"mimeType"`
		Text     string          `json:"text"`
		Meta     json.RawMessage `json:"_meta"`
	} `json:"contents"`
}

// goView is the go-sdk client's viewReport.
func goView(ctx context.Context, sess *mcp.ClientSession, list *mcp.ListToolsResult) (any, error) {
	if list == nil {
		return nil, errors.New("no tools listed")
	}
	var meta mcp.Meta
	for _, tool := range list.Tools {
		if tool.Name == collections.AnalyzeName {
			meta = tool.Meta
		}
	}
	ui, _ := meta["ui"].(map[string]any)
	uri, _ := ui["resourceUri"].(string)
	listed, err := sess.ListResources(ctx, nil)
	if err != nil {
		return nil, err
	}
	read, err := sess.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
	if err != nil {
		return nil, err
	}
	return map[string]any{"toolMeta": meta, "extensions": sess.InitializeResult().Capabilities.Extensions,
		"resources": listed.Resources, "contents": read.Contents}, nil
}

// checkView: every client finds analyze_portfolio's result view — its URI
// under _meta.ui and under the flat key older hosts read — lists it with the
// MCP Apps media type, and reads the HTML the server embeds; a client that
// keeps the server's capabilities sees the extension advertised.
func (s *compatServer) checkView(t *testing.T, rep report, client string) {
	t.Helper()
	var v viewReport
	if err := result(rep.View, &v); err != nil {
		t.Errorf("result view: %v", err)
		return
	}
	var ui struct {
		ResourceURI string   `json:"resourceUri"`
		Visibility  []string `json:"visibility"`
	}
	var legacy string
	_ = json.Unmarshal(v.ToolMeta["ui"], &ui)
	_ = json.Unmarshal(v.ToolMeta["ui/resourceUri"], &legacy)
	if ui.ResourceURI != collections.AnalyzeView || legacy != collections.AnalyzeView || !slices.Equal(ui.Visibility, []string{"model"}) {
		t.Errorf("%s _meta: ui %+v, ui/resourceUri %q; want %s under both, visibility [model]", collections.AnalyzeName, ui, legacy, collections.AnalyzeView)
	}
	if len(v.Resources) != 1 || v.Resources[0].URI != collections.AnalyzeView || v.Resources[0].MIMEType != mcpapi.AppsMIMEType {
		t.Errorf("resources/list = %+v, want only %s (%s)", v.Resources, collections.AnalyzeView, mcpapi.AppsMIMEType)
	}
	tools, err := collections.Tools(collections.Settings{})
	if err != nil {
		t.Fatal(err)
	}
	var html string
	for _, tool := range tools {
		if tool.Contract.Name == collections.AnalyzeName {
			html = string(tool.View)
		}
	}
	if len(v.Contents) != 1 || v.Contents[0].URI != collections.AnalyzeView || v.Contents[0].MIMEType != mcpapi.AppsMIMEType || v.Contents[0].Text != html || html == "" {
		t.Errorf("resources/read: %d contents, want the view's %d bytes of HTML", len(v.Contents), len(html))
	}
	if strings.HasPrefix(client, "inspector") {
		var info struct {
			HasApp           bool     `json:"hasApp"`
			ToolName         string   `json:"toolName"`
			ResourceURI      string   `json:"resourceUri"`
			Visibility       []string `json:"visibility"`
			PrefersBorder    *bool    `json:"prefersBorder"`
			ResourceMIMEType string   `json:"resourceMimeType"`
			ResourceError    string   `json:"resourceError"`
			CSP              any      `json:"csp"`
		}
		if err := result(rep.AppInfo, &info); err != nil {
			t.Errorf("the Inspector's appInfo: %v", err)
		} else if !info.HasApp || info.ToolName != collections.AnalyzeName || info.ResourceURI != collections.AnalyzeView ||
			!slices.Equal(info.Visibility, []string{"model"}) || info.PrefersBorder == nil || !*info.PrefersBorder ||
			info.ResourceMIMEType != mcpapi.AppsMIMEType || info.ResourceError != "" || info.CSP != nil {
			t.Errorf("the Inspector's appInfo = %s; want the app at %s, visibility [model], a border, %s, no CSP domains", rep.AppInfo.Result, collections.AnalyzeView, mcpapi.AppsMIMEType)
		}
	}
	if v.Extensions != nil {
		var apps struct {
			MIMETypes []string `json:"mimeTypes"`
		}
		if err := json.Unmarshal(v.Extensions[mcpapi.AppsExtension], &apps); err != nil || !slices.Equal(apps.MIMETypes, []string{mcpapi.AppsMIMEType}) {
			t.Errorf("capabilities.extensions[%s] = %s, want mimeTypes [%s]", mcpapi.AppsExtension, v.Extensions[mcpapi.AppsExtension], mcpapi.AppsMIMEType)
		}
	} else if strings.HasPrefix(client, "go-sdk") || strings.HasPrefix(client, "client-2.x") {
		t.Errorf("capabilities.extensions: the client kept none")
	}
}

// openApproval is the person opening an approval's URL (lib.mjs's
// openApproval): approveRoute approves the call.
func openApproval(ctx context.Context, url string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return fmt.Errorf("opening the approval %s: %d %s", url, res.StatusCode, body)
	}
	return nil
}

// approvalURLRE finds an approval's URL in approval_required's message.
var approvalURLRE = regexp.MustCompile(`https?://\S+/approvals/a_[a-z2-7]{26}`)

// approvalURLOf is the approval URL of a step answered approval_required
// (lib.mjs's approvalURL), or "".
func approvalURLOf(st step) string {
	var r callResult
	var d failure.Detail
	if result(st, &r) != nil || !r.IsError || json.Unmarshal(r.Meta[mcpapi.ErrorMetaKey], &d) != nil || d.Code != failure.ApprovalRequired {
		return ""
	}
	return approvalURLRE.FindString(d.Message)
}

// stepOf records a go-sdk outcome as a node script would.
func stepOf[T any](v T, err error) step {
	if err != nil {
		ce := &clientError{Name: fmt.Sprintf("%T", err), Message: err.Error()}
		if je, ok := errors.AsType[*jsonrpc.Error](err); ok {
			ce.Code, ce.Data = je.Code, je.Data
		}
		return step{Error: ce}
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
