package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/cobranca/cobranca/internal/auth"
	"github.com/cobranca/cobranca/internal/collections"
	"github.com/cobranca/cobranca/internal/customers"
	"github.com/cobranca/cobranca/internal/failure"
	"github.com/cobranca/cobranca/internal/idempotency"
	"github.com/cobranca/cobranca/internal/limits"
	limitssqlite "github.com/cobranca/cobranca/internal/limits/sqlite"
	"github.com/cobranca/cobranca/internal/mcpapi"
	"github.com/cobranca/cobranca/internal/pipeline"
	"github.com/cobranca/cobranca/internal/pipeline/pipelinetest"
	"github.com/cobranca/cobranca/internal/server"
	"github.com/cobranca/cobranca/internal/store"
	"github.com/cobranca/cobranca/internal/store/storetest"
	"github.com/cobranca/cobranca/internal/writeoffs"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

const (
	writeOffTool = collections.WriteOffName
	adminMFA     = "urn:cobranca:mfa"
)

// adminEnv is the real route table with the product's tools on db (write_off_invoice among
// them, hidden from /mcp and run by the admin API), step-up demanding adminMFA.
type adminEnv struct {
	url  string
	auth *auth.Authenticator
	db   store.DB
}

func newAdminEnv(t *testing.T, db store.DB, slow bool) *adminEnv {
	t.Helper()
	d := adminDeps(t, db, "http://127.0.0.1:8080", slow)
	d.AllowedOrigins = []string{"https://ops.example.com"}
	ts := httptest.NewServer(server.Routes(d))
	t.Cleanup(ts.Close)
	err := db.InTx(context.Background(), func(ctx context.Context, tx store.Tx) error {
		_, err := customers.Upsert(ctx, tx, customers.Record{ID: "C-1", Name: "Padaria São João", Email: "financeiro@padaria.example"}, time.Now())
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return &adminEnv{url: ts.URL, auth: d.Auth, db: db}
}

// adminDeps are the route table's dependencies for the product's tools on db, the server at
// baseURL, step-up demanding adminMFA.
func adminDeps(t *testing.T, db store.DB, baseURL string, slow bool) server.Deps {
	t.Helper()
	log := slog.New(slog.DiscardHandler)
	a, err := auth.New(context.Background(), auth.Config{DataDir: t.TempDir(), BaseURL: baseURL, StepUpACR: []string{adminMFA}})
	if err != nil {
		t.Fatal(err)
	}
	keys, err := idempotency.New(db.Dialect(), time.Hour, nil)
	if err != nil {
		t.Fatal(err)
	}
	pipe := pipelinetest.Product(t, pipeline.Options{Logger: log, Auditor: pipelinetest.Auditor(t, db), StepUp: []string{adminMFA}, DB: db, Keys: keys})
	h, err := mcpapi.New(mcpapi.Options{Logger: log, MaxBodyBytes: maxBody, DisableFastPath: slow, Scopes: a, Pipeline: pipe})
	if err != nil {
		t.Fatal(err)
	}
	return server.Deps{Logger: log, MCP: h, MaxBodyBytes: maxBody, Auth: a, Admin: pipe, WriteOffTool: collections.WriteOffName}
}

// controller mints a person's token holding everything a write-off needs, signed in now with
// adminMFA; edit changes the options first.
func (e *adminEnv) controller(t *testing.T, edit ...func(*auth.MintOptions)) string {
	t.Helper()
	o := auth.MintOptions{Subject: "carla", Scopes: []string{collections.WriteOffScope, "collections:read"}, ACR: adminMFA, Roles: []string{collections.WriteOffRole}}
	for _, f := range edit {
		f(&o)
	}
	tok, err := e.auth.Mint(o)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

func asAgent(o *auth.MintOptions) { o.Agent = "ledger-bot" }

// send sends one request and returns the response with its body read.
func (e *adminEnv) send(t *testing.T, method, path string, header map[string]string, body string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, e.url+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		if k == "Host" {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, out
}

func bearerJSON(tok string) map[string]string {
	return map[string]string{"Authorization": "Bearer " + tok, "Content-Type": "application/json"}
}

const writeOffBody = `{"invoiceId":"NF-1001","customerId":"C-1","amountCents":123456,"reason":"cliente em recuperação judicial","idempotencyKey":"wo-1"}`

// TestAdminWriteOffAPI: POST /admin/write-offs with a stepped-up person's token writes the
// invoice off (audited invoice.written_off) and answers the write-off; the same key answers it
// again byte for byte; another key is refused 422 invoice_already_written_off. An agent's
// token is 403 person_required; a token without step-up (acr, or a sign-in too old) 401 with
// the RFC 9470 challenge; without the scope 403 insufficient_scope; without the role 403
// person_lacks_role; no token 401; a foreign Host or Origin 403; bad JSON 400, another content
// type 415. Nothing refused is stored; every refusal that reached the pipeline is audited.
func TestAdminWriteOffAPI(t *testing.T) {
	t.Parallel() // waits on SMTP and PostgreSQL; seals no audit chain
	storetest.Each(t, pg, func(t *testing.T, db store.DB) {
		e := newAdminEnv(t, db, false)
		resp, body := e.send(t, http.MethodPost, server.AdminWriteOffsPath, bearerJSON(e.controller(t)), writeOffBody)
		if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/json" {
			t.Fatalf("write-off = %d %s", resp.StatusCode, body)
		}
		var got map[string]any
		if err := json.Unmarshal(body, &got); err != nil {
			t.Fatal(err)
		}
		w, err := writeoffs.ForInvoice(context.Background(), db, "NF-1001")
		if err != nil || got["writeOffId"] != w.ID || got["writtenOffBy"] != "carla" || w.By.ACR != adminMFA || w.By.ClientID != auth.DevClientID || w.AmountCents != 123456 {
			t.Errorf("answered %s; stored %+v, %v", body, w, err)
		}
		resp2, again := e.send(t, http.MethodPost, server.AdminWriteOffsPath, bearerJSON(e.controller(t)), writeOffBody)
		if resp2.StatusCode != http.StatusOK || !bytes.Equal(again, body) {
			t.Errorf("the same key again = %d %s, want the first answer %s", resp2.StatusCode, again, body)
		}

		old := func(o *auth.MintOptions) { o.AuthTime = time.Now().Add(-6 * time.Minute) }
		for _, tt := range []struct {
			name      string
			header    map[string]string
			body      string
			status    int
			code      string // the error body's code, or the challenge's error
			challenge string // in WWW-Authenticate
		}{
			{"another key for the invoice", bearerJSON(e.controller(t)), strings.Replace(writeOffBody, "wo-1", "wo-2", 1), 422, string(writeoffs.CodeAlreadyWrittenOff), ""},
			{"an agent's token", bearerJSON(e.controller(t, asAgent)), writeOffBody, 403, string(failure.PersonRequired), ""},
			{"a password sign-in", bearerJSON(e.controller(t, func(o *auth.MintOptions) { o.ACR = "urn:cobranca:pwd" })), writeOffBody, 401, "insufficient_user_authentication",
				`error="insufficient_user_authentication", error_description="this action needs authentication with urn:cobranca:mfa within the last 5m0s", acr_values="urn:cobranca:mfa", max_age="300"`},
			{"a sign-in 6 minutes old", bearerJSON(e.controller(t, old)), writeOffBody, 401, "insufficient_user_authentication", `max_age="300"`},
			{"a sign-in an hour ahead", bearerJSON(e.controller(t, func(o *auth.MintOptions) { o.AuthTime = time.Now().Add(time.Hour) })), writeOffBody, 401, "insufficient_user_authentication", `max_age="300"`},
			{"no scope", bearerJSON(e.controller(t, func(o *auth.MintOptions) { o.Scopes = []string{"collections:read"} })), writeOffBody, 403, "insufficient_scope",
				`error="insufficient_scope", error_description="the token lacks scopes this call needs", scope="invoices:write_off"`},
			{"no role", bearerJSON(e.controller(t, func(o *auth.MintOptions) { o.Roles = []string{collections.ApproverRole} })), writeOffBody, 403, string(failure.PersonLacksRole), ""},
			{"no token", map[string]string{"Content-Type": "application/json"}, writeOffBody, 401, "unauthorized", "resource_metadata="},
			{"a forged token", bearerJSON(e.controller(t) + "x"), writeOffBody, 401, "invalid_token", `error="invalid_token"`},
			{"a foreign Host", with(bearerJSON(e.controller(t)), "Host", "evil.example"), writeOffBody, 403, "", ""},
			{"a foreign Origin", with(bearerJSON(e.controller(t)), "Origin", "https://evil.example"), writeOffBody, 403, "", ""},
			{"not JSON", bearerJSON(e.controller(t)), `{"invoiceId":`, 400, string(failure.InvalidArguments), ""},
			{"an amount as text", bearerJSON(e.controller(t)), strings.Replace(strings.Replace(writeOffBody, "123456", `"1.234,56"`, 1), "NF-1001", "NF-2", 1), 400, string(failure.InvalidArguments), ""},
			{"a form without a session", map[string]string{"Content-Type": "application/json; charset=utf-8", "Authorization": "Basic YTpi"}, writeOffBody, 401, "unauthorized", "resource_metadata="},
			{"text/plain", with(bearerJSON(e.controller(t)), "Content-Type", "text/plain"), writeOffBody, 415, string(failure.InvalidArguments), ""},
		} {
			resp, out := e.send(t, http.MethodPost, server.AdminWriteOffsPath, tt.header, tt.body)
			var doc struct {
				Error json.RawMessage `json:"error"`
			}
			_ = json.Unmarshal(out, &doc)
			code := string(doc.Error)
			var detail failure.Detail
			if json.Unmarshal(doc.Error, &detail) == nil {
				code = string(detail.Code)
			} else {
				_ = json.Unmarshal(doc.Error, &code)
			}
			if resp.StatusCode != tt.status || tt.code != "" && code != tt.code || !strings.Contains(resp.Header.Get("WWW-Authenticate"), tt.challenge) {
				t.Errorf("%s: %d %s (WWW-Authenticate %q); want %d %s %q", tt.name, resp.StatusCode, out, resp.Header.Get("WWW-Authenticate"), tt.status, tt.code, tt.challenge)
			}
			if bytes.Contains(out, []byte("recuperação")) || bytes.Contains(out, []byte("1.234,56")) {
				t.Errorf("%s: the answer repeats the payload: %s", tt.name, out)
			}
		}
		if n := storetest.Count(t, db, "write_off"); n != 1 {
			t.Errorf("%d write-offs stored, want 1", n)
		}
		audited := pipelinetest.Audited(t, db, writeOffTool)
		if audited["allowed"] != 1 || audited["replayed"] != 1 || audited["denied"] != 6 || audited["rejected"] != 4 {
			t.Errorf("audited %v; want 1 allowed, 1 replayed, 6 denied (agent, 3 step-ups, scope, role), 4 rejected (the invoice again, not JSON, the amount, text/plain)", audited)
		}
	})
}

func with(h map[string]string, k, v string) map[string]string {
	h[k] = v
	return h
}

// TestAdminContracts: GET /admin/contracts lists the forbidden contracts to a person's token;
// an agent's token is 403 person_required, no token 401.
func TestAdminContracts(t *testing.T) {
	e := newAdminEnv(t, storetest.SQLite(t), false)
	resp, body := e.send(t, http.MethodGet, server.AdminContractsPath, map[string]string{"Authorization": "Bearer " + e.controller(t)}, "")
	var doc struct {
		Contracts []struct {
			Name       string   `json:"name"`
			RiskLevel  string   `json:"riskLevel"`
			AuditEvent string   `json:"auditEvent"`
			AdminRoles []string `json:"adminRoles"`
		} `json:"contracts"`
	}
	if err := json.Unmarshal(body, &doc); resp.StatusCode != http.StatusOK || err != nil || len(doc.Contracts) != 1 ||
		doc.Contracts[0].Name != writeOffTool || doc.Contracts[0].RiskLevel != "forbidden" || doc.Contracts[0].AuditEvent != "invoice.written_off" {
		t.Errorf("GET /admin/contracts as a person = %d %s", resp.StatusCode, body)
	}
	if resp, body := e.send(t, http.MethodGet, server.AdminContractsPath, map[string]string{"Authorization": "Bearer " + e.controller(t, asAgent)}, ""); resp.StatusCode != http.StatusForbidden || !bytes.Contains(body, []byte(failure.PersonRequired)) {
		t.Errorf("GET /admin/contracts as an agent = %d %s", resp.StatusCode, body)
	}
	noRole := func(o *auth.MintOptions) { o.Roles = nil }
	if resp, body := e.send(t, http.MethodGet, server.AdminContractsPath, map[string]string{"Authorization": "Bearer " + e.controller(t, noRole)}, ""); resp.StatusCode != http.StatusForbidden || !bytes.Contains(body, []byte(failure.PersonLacksRole)) || bytes.Contains(body, []byte(writeOffTool)) {
		t.Errorf("GET /admin/contracts as a person without an admin role = %d %s", resp.StatusCode, body)
	}
	if resp, _ := e.send(t, http.MethodGet, server.AdminContractsPath, nil, ""); resp.StatusCode != http.StatusUnauthorized || !strings.Contains(resp.Header.Get("WWW-Authenticate"), "resource_metadata=") {
		t.Errorf("GET /admin/contracts without a token = %d %q", resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
	}
}

// TestWriteOffUnknownOverMCP: over /mcp, write_off_invoice does not exist for anyone. For an
// agent's token and for a person's holding its scope, role and a fresh mfa sign-in, on both
// protocol revisions, the fast path and go-sdk alone, and for a plain call and one whose
// params carry more (read the slow way), the whole HTTP response to a call of it — status line,
// every header but Date and X-Request-Id, body — is byte for byte the response to a call of a
// made-up name; a go-sdk client gets the same error for both; it is in neither tools/list nor
// /contracts (its /contracts/{name} is the made-up name's 404, byte for byte); nothing is
// written off; and each MCP call of it is audited, rejected unknown_tool. It cannot be served as
// a prompt either.
func TestWriteOffUnknownOverMCP(t *testing.T) {
	t.Parallel() // waits on SMTP and PostgreSQL; seals no audit chain
	storetest.Each(t, pg, func(t *testing.T, db store.DB) {
		calls := 0
		for _, p := range paths {
			e := newAdminEnv(t, db, p.slow)
			tokens := map[string]string{"agent": e.controller(t, asAgent), "person": e.controller(t)}
			for who, tok := range tokens {
				for _, version := range protocolVersions {
					for _, shape := range []struct {
						name  string
						extra map[string]any
					}{{"plain", nil}, {"with task metadata", map[string]any{"task": map[string]any{"ttl": 1000}}}} {
						what := p.name + "/" + who + "/" + version + "/" + shape.name
						answer := func(name string) string {
							return dump(callRaw(t, e.url, tok, version, name, shape.extra))
						}
						forbidden, unknown := answer(writeOffTool), answer("collections.write_off_invoices")
						calls++
						if forbidden != unknown {
							t.Errorf("%s: write_off_invoice answered\n%s\na made-up name answered\n%s", what, forbidden, unknown)
						}
						if !strings.Contains(unknown, `"message":"unknown tool"`) {
							t.Errorf("%s: the made-up name's answer is not the unknown-tool error; the comparison proves little:\n%s", what, unknown)
						}
					}
					sess := connectAs(t, e.url, tok, version, nil)
					_, errForbidden := sess.CallTool(context.Background(), &mcp.CallToolParams{Name: writeOffTool, Arguments: json.RawMessage(writeOffBody)})
					_, errUnknown := sess.CallTool(context.Background(), &mcp.CallToolParams{Name: "collections.write_off_invoices", Arguments: json.RawMessage(writeOffBody)})
					calls++
					if f, u := rpcErr(errForbidden), rpcErr(errUnknown); f == nil || u == nil || f.Code != u.Code || f.Message != u.Message || !bytes.Equal(f.Data, u.Data) {
						t.Errorf("go-sdk client: write_off_invoice %v, a made-up name %v", errForbidden, errUnknown)
					}
					list, err := sess.ListTools(context.Background(), nil)
					if err != nil {
						t.Fatal(err)
					}
					for _, tool := range list.Tools {
						if tool.Name == writeOffTool {
							t.Errorf("%s in tools/list (%s %s)", writeOffTool, who, version)
						}
					}
				}
				_, list := e.send(t, http.MethodGet, "/contracts", map[string]string{"Authorization": "Bearer " + tok}, "")
				if bytes.Contains(list, []byte("write_off")) || !bytes.Contains(list, []byte(collections.AnalyzeName)) {
					t.Errorf("/contracts as %s lists the write-off tool, or is not the listing:\n%.300s", who, list)
				}
				one := func(name string) string {
					return dump(e.send(t, http.MethodGet, "/contracts/"+name, map[string]string{"Authorization": "Bearer " + tok}, ""))
				}
				if f, u := one(writeOffTool), one("collections.write_off_invoices"); f != u || !strings.Contains(f, "404 Not Found") {
					t.Errorf("/contracts/%s as %s:\n%s\nmade-up name:\n%s", writeOffTool, who, f, u)
				}
			}
		}
		if n := storetest.Count(t, db, "write_off"); n != 0 {
			t.Errorf("%d write-offs over MCP", n)
		}
		var rejected int64
		if err := db.QueryRow(context.Background(), `SELECT COUNT(*) FROM audit_event WHERE event = 'invoice.written_off' AND tool = $1 AND outcome = 'rejected' AND failure_code = 'unknown_tool'`,
			writeOffTool).Scan(&rejected); err != nil || int(rejected) != calls {
			t.Errorf("%d MCP calls of %s audited rejected unknown_tool, want %d (%v)", rejected, writeOffTool, calls, err)
		}
	})
	sqlite := storetest.SQLite(t)
	keys, err := idempotency.New(sqlite.Dialect(), time.Hour, nil)
	if err != nil {
		t.Fatal(err)
	}
	pipe := pipelinetest.Product(t, pipeline.Options{DB: sqlite, Keys: keys})
	if _, err := mcpapi.New(mcpapi.Options{Pipeline: pipe, Prompts: []string{writeOffTool}}); err == nil || !strings.Contains(err.Error(), "no such tool is served") {
		t.Errorf("mcpapi.New with %s as a prompt = %v, want refused", writeOffTool, err)
	}
}

// dump is the whole response as it came over the wire — status line, headers (in order) and
// body — but for the headers that differ between any two responses: the time and the request
// id.
func dump(resp *http.Response, body []byte) string {
	var b strings.Builder
	b.WriteString(resp.Proto + " " + resp.Status + "\r\n")
	h := resp.Header.Clone()
	h.Del("Date")
	h.Del("X-Request-Id")
	if err := h.Write(&b); err != nil {
		panic(err)
	}
	b.WriteString("\r\n")
	b.Write(body)
	return b.String()
}

// callRaw posts one tools/call of name (with write-off arguments and the id 7) to /mcp as the
// holder of tok, on version, params carrying extra besides.
func callRaw(t *testing.T, url, tok, version, name string, extra map[string]any) (*http.Response, []byte) {
	t.Helper()
	var args map[string]any
	if err := json.Unmarshal([]byte(writeOffBody), &args); err != nil {
		t.Fatal(err)
	}
	return rawCall(t, url, tok, version, 7, name, args, nil, extra)
}

// TestAdminBudgets: a write-off spends the forbidden tier's budget (the critical one): past it
// the API answers 429 rate_limited with Retry-After, audited, and nothing is written off; the
// session routes (the page) spend the per-origin budget before the page runs.
func TestAdminBudgets(t *testing.T) {
	db := storetest.SQLite(t)
	e := newAdminEnv(t, db, false)
	two, err := limits.ParseSpec("2/1h")
	if err != nil {
		t.Fatal(err)
	}
	five, err := limits.ParseSpec("5/1h")
	if err != nil {
		t.Fatal(err)
	}
	// Two write-offs an hour per person; five requests an hour from the address, which the
	// three API calls spend first.
	lim := limits.New(limitssqlite.New(storetest.SQLite(t), time.Now), limits.Options{Policies: limits.Policies{Critical: two, Origin: five}, StoreTimeout: 10 * time.Second})
	keys, err := idempotency.New(db.Dialect(), time.Hour, nil)
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.DiscardHandler)
	pipe := pipelinetest.Product(t, pipeline.Options{Logger: log, Auditor: pipelinetest.Auditor(t, db), StepUp: []string{adminMFA}, DB: db, Keys: keys, Limits: lim})
	h, err := mcpapi.New(mcpapi.Options{Logger: log, MaxBodyBytes: maxBody, Scopes: e.auth, Pipeline: pipe})
	if err != nil {
		t.Fatal(err)
	}
	pageViews := 0
	pages := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { pageViews++ })
	ts := httptest.NewServer(server.Routes(server.Deps{Logger: log, MCP: h, MaxBodyBytes: maxBody, Auth: e.auth, Admin: pipe, WriteOffTool: collections.WriteOffName, Web: pages, Limits: lim}))
	defer ts.Close()
	e.url = ts.URL
	var codes []int
	for i := range 3 {
		body := strings.NewReplacer("NF-1001", fmt.Sprintf("NF-%d", i), "wo-1", fmt.Sprintf("k-%d", i)).Replace(writeOffBody)
		resp, out := e.send(t, http.MethodPost, server.AdminWriteOffsPath, bearerJSON(e.controller(t)), body)
		codes = append(codes, resp.StatusCode)
		if resp.StatusCode == http.StatusTooManyRequests && (resp.Header.Get("Retry-After") == "" || !bytes.Contains(out, []byte(`"code":"rate_limited"`))) {
			t.Errorf("over the budget: Retry-After %q, %s", resp.Header.Get("Retry-After"), out)
		}
	}
	if fmt.Sprint(codes) != "[200 200 429]" || storetest.Count(t, db, "write_off") != 2 || pipelinetest.Audited(t, db, writeOffTool)["rate_limited"] != 1 {
		t.Errorf("three write-offs = %v, %d stored, audited %v; want [200 200 429], 2, one rate_limited", codes, storetest.Count(t, db, "write_off"), pipelinetest.Audited(t, db, writeOffTool))
	}
	codes = nil
	for range 3 {
		resp, _ := e.send(t, http.MethodGet, server.AdminWriteOffsPath, nil, "")
		codes = append(codes, resp.StatusCode)
	}
	if fmt.Sprint(codes) != "[200 200 429]" || pageViews != 2 {
		t.Errorf("three page views = %v, %d served; want [200 200 429], 2", codes, pageViews)
	}
}

// TestAdminTransportRefusalsAudited: a write-off the admin API refuses before the pipeline
// reads it — another content type, a body over the bound — is audited under the tool like
// every other refusal (as /mcp audits its transport's refusals of a call), with the token's
// subject; an agent's attempt too.
func TestAdminTransportRefusalsAudited(t *testing.T) {
	db := storetest.SQLite(t)
	e := newAdminEnv(t, db, false)
	for _, tt := range []struct {
		name   string
		header map[string]string
		body   string
		status int
	}{
		{"an agent's text/plain", with(bearerJSON(e.controller(t, asAgent)), "Content-Type", "text/plain"), writeOffBody, http.StatusUnsupportedMediaType},
		{"a person's form with a token", with(bearerJSON(e.controller(t)), "Content-Type", "application/x-www-form-urlencoded"), "invoiceId=NF-1", http.StatusUnsupportedMediaType},
		{"a body over the bound", bearerJSON(e.controller(t)), strings.Repeat(" ", 70<<10) + writeOffBody, http.StatusRequestEntityTooLarge},
	} {
		if resp, out := e.send(t, http.MethodPost, server.AdminWriteOffsPath, tt.header, tt.body); resp.StatusCode != tt.status {
			t.Errorf("%s = %d %s, want %d", tt.name, resp.StatusCode, out, tt.status)
		}
	}
	if got := pipelinetest.Audited(t, db, writeOffTool); got["rejected"] != 3 || len(got) != 1 {
		t.Errorf("audited %v; want 3 rejected", got)
	}
	var subjects []string
	rows, err := db.Query(context.Background(), `SELECT subject FROM audit_event WHERE tool = $1 ORDER BY id`, writeOffTool)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			t.Fatal(err)
		}
		subjects = append(subjects, s)
	}
	if fmt.Sprint(subjects) != "[carla carla carla]" {
		t.Errorf("audited subjects %v, want the token's, carla, three times", subjects)
	}
}

// TestAdminPagesOwnOrigin: deployed at a public host (named in AllowedHosts, as behind a
// proxy), the write-off page's form — which a browser posts with the page's own Origin, one
// COBRANCA_ALLOWED_ORIGINS (the browser origins allowed to call /mcp) need not name — reaches
// the page, as does a session's GET /admin/contracts sent with it; another site's Origin is
// refused before the page runs.
func TestAdminPagesOwnOrigin(t *testing.T) {
	served := 0
	d := adminDeps(t, storetest.SQLite(t), "https://cobranca.example.com", false)
	d.Web = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { served++ })
	d.AllowedHosts = []string{"cobranca.example.com"}
	ts := httptest.NewServer(server.Routes(d))
	defer ts.Close()
	e := &adminEnv{url: ts.URL}
	form := map[string]string{"Host": "cobranca.example.com", "Origin": "https://cobranca.example.com", "Content-Type": "application/x-www-form-urlencoded"}
	if resp, out := e.send(t, http.MethodPost, server.AdminWriteOffsPath, form, "csrf=x"); resp.StatusCode != http.StatusOK || served != 1 {
		t.Errorf("the page's form from its own origin = %d %s, page served %d times; want it served", resp.StatusCode, out, served)
	}
	if resp, out := e.send(t, http.MethodPost, server.AdminWriteOffsPath, with(form, "Origin", "https://evil.example"), "csrf=x"); resp.StatusCode != http.StatusForbidden || served != 1 {
		t.Errorf("the form from another site = %d %s, page served %d times; want 403 before the page", resp.StatusCode, out, served)
	}
}
