package server_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/cobranca/cobranca/internal/auditlog"
	"github.com/cobranca/cobranca/internal/auth"
	"github.com/cobranca/cobranca/internal/limits"
	"github.com/cobranca/cobranca/internal/mcpapi"
	"github.com/cobranca/cobranca/internal/pipeline"
	"github.com/cobranca/cobranca/internal/request"
	"github.com/cobranca/cobranca/internal/server"
	"github.com/cobranca/cobranca/internal/store"
	"github.com/cobranca/cobranca/internal/store/storetest"
)

// newAuditLog is an audit log over db and the digester of its key.
func newAuditLog(t *testing.T, db store.DB, opts auditlog.Options) (*auditlog.Log, *auditlog.Digester) {
	t.Helper()
	key := []byte(strings.Repeat("k", 32))
	digest, err := auditlog.NewDigester(key)
	if err != nil {
		t.Fatal(err)
	}
	alog, err := auditlog.New(db, key, opts)
	if err != nil {
		t.Fatal(err)
	}
	return alog, digest
}

// TestAnalyzeAudited: one analyze_portfolio call over MCP writes exactly one audit event, with
// who called, the outcome, digests and counts, and nothing of the portfolio.
func TestAnalyzeAudited(t *testing.T) {
	for _, p := range paths {
		t.Run(p.name, func(t *testing.T) {
			ctx := context.Background()
			db := storetest.SQLite(t)
			alog, digest := newAuditLog(t, db, auditlog.Options{})

			log := slog.New(slog.DiscardHandler)
			a := newTestAuth(t)
			h := newMCP(t, mcpapi.Options{Logger: log, MaxBodyBytes: maxBody, DisableFastPath: p.slow, Scopes: a},
				pipeline.Options{Auditor: pipeline.NewAuditor(alog, digest)})
			tok := mint(t, a, auth.MintOptions{Subject: "alice", Agent: "ledger-copilot", ACR: "urn:example:mfa"})
			ts := httptest.NewServer(withToken(tok, server.Routes(server.Deps{Logger: log, MCP: h, MaxBodyBytes: maxBody, Auth: a, Ready: db.Ready})))
			t.Cleanup(ts.Close)

			sess := (&testServer{ts}).connect(t, "2025-11-25")
			res, err := sess.CallTool(ctx, &mcp.CallToolParams{Name: "collections.analyze_portfolio", Arguments: samplePortfolio()})
			if err != nil || res.IsError {
				t.Fatalf("CallTool = %v, %v", res, err)
			}

			rep, err := alog.Verify(ctx)
			if err != nil || rep.Problem != nil || rep.Count != 1 {
				t.Fatalf("Verify() = %v, %v; want OK with 1 event", rep, err)
			}
			evs, err := alog.Events(ctx, 0, 10)
			if err != nil {
				t.Fatal(err)
			}
			got := evs[0]
			if got.RequestID == "" || !regexp.MustCompile(`^[0-9a-f]{64}$`).MatchString(got.ArgsDigest) || !regexp.MustCompile(`^[0-9a-f]{64}$`).MatchString(got.ResultDigest) {
				t.Errorf("event request id %q, args digest %q, result digest %q: want an id and two HMAC-SHA256 digests", got.RequestID, got.ArgsDigest, got.ResultDigest)
			}
			want := auditlog.Event{
				Seq: 1, Name: "collections.portfolio.analyzed", Tool: "collections.analyze_portfolio", Risk: "low",
				Subject: "alice", Actor: "ledger-copilot", ClientID: "ledger-copilot", ACR: "urn:example:mfa",
				RequestID: got.RequestID, Outcome: auditlog.Allowed,
				ArgsDigest: got.ArgsDigest, ResultDigest: got.ResultDigest, Time: got.Time, ServerTime: got.ServerTime, Duration: got.Duration,
				Details: map[string]int64{"invoiceCount": 6, "accountCount": 2},
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("audit event (-want +got):\n%s", diff)
			}

			// The row itself: every column, as stored.
			var row string
			err = db.QueryRow(ctx, `SELECT event || tool || risk || subject || actor || client_id || acr || request_id ||
outcome || failure_code || args_digest || result_digest || details FROM audit_event`).Scan(&row)
			if err != nil {
				t.Fatal(err)
			}
			for _, secret := range []string{"inv-", "c-1", "c-2", "Ana Ltda", "Bruno SA", "Carla", "150000", "2026-11-01"} {
				if strings.Contains(row, secret) {
					t.Errorf("the audit row contains %q from the portfolio: %s", secret, row)
				}
			}

			// A refused call is audited too, with its failure code.
			bad := samplePortfolio()
			bad["asOf"] = "2026-02-30"
			res, err = sess.CallTool(ctx, &mcp.CallToolParams{Name: "collections.analyze_portfolio", Arguments: bad})
			if err != nil || !res.IsError {
				t.Fatalf("CallTool(invalid) = %v, %v; want a tool error", res, err)
			}
			if _, err := alog.SealCommitted(ctx); err != nil {
				t.Fatal(err)
			}
			evs, err = alog.Events(ctx, 1, 10)
			if err != nil || len(evs) != 1 {
				t.Fatalf("Events after the refused call = %v, %v; want one", evs, err)
			}
			if evs[0].Outcome != auditlog.Rejected || evs[0].FailureCode == "" || evs[0].ArgsDigest == "" {
				t.Errorf("refused call's event = %+v, want outcome rejected with a failure code and an args digest", evs[0])
			}
		})
	}
}

func TestReadyz(t *testing.T) {
	errDown := errors.New("connection refused")
	for _, tt := range []struct {
		name     string
		ready    func(context.Context) error
		wantCode int
		wantBody string
	}{
		{"no store", nil, http.StatusOK, "ready"},
		{"ready", func(context.Context) error { return nil }, http.StatusOK, "ready"},
		{"pending migrations", func(context.Context) error { return store.ErrPendingMigrations }, http.StatusServiceUnavailable, "migrations pending"},
		{"store down", func(context.Context) error { return errDown }, http.StatusServiceUnavailable, "store unavailable"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			a := newTestAuth(t)
			h := newMCP(t, mcpapi.Options{Logger: slog.New(slog.DiscardHandler), MaxBodyBytes: maxBody, Scopes: a}, pipeline.Options{})
			ts := httptest.NewServer(server.Routes(server.Deps{Logger: slog.New(slog.DiscardHandler), MCP: h, MaxBodyBytes: maxBody, Auth: a, Ready: tt.ready}))
			defer ts.Close()
			resp, err := http.Get(ts.URL + "/readyz")
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tt.wantCode || !strings.Contains(string(body), tt.wantBody) {
				t.Errorf("GET /readyz = %d %q, want %d containing %q", resp.StatusCode, body, tt.wantCode, tt.wantBody)
			}
			if strings.Contains(string(body), "refused") {
				t.Errorf("GET /readyz leaks the cause: %q", body)
			}
		})
	}
}

type refusalCount map[string]int

func (c refusalCount) Refused(policy string) { c[policy]++ }

// TestEdgeRefusalsAudited: requests answered 429 at the HTTP level are all
// counted, and audited — without payload, with the caller — up to a bounded
// rate, so that a flood cannot become a flood of audit writes.
func TestEdgeRefusalsAudited(t *testing.T) {
	ctx := context.Background()
	db := storetest.SQLite(t)
	alog, err := auditlog.New(db, []byte(strings.Repeat("k", 32)), auditlog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	count := refusalCount{}
	hook := mcpapi.NewEdgeRefusalAuditor(alog, slog.New(slog.DiscardHandler), count)
	const n = 200
	for i := range n {
		r := httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader(`{"secret":"Ana Ltda"}`))
		info := &request.Info{ID: fmt.Sprintf("req-%03d", i)}
		rctx := request.With(auth.WithPrincipal(r.Context(), &auth.Principal{Subject: "alice", ClientID: "bot"}), info)
		hook(r.WithContext(rctx), "principal", limits.Decision{RetryAfter: 1500 * time.Millisecond})
	}
	if count["principal"] != n {
		t.Errorf("counted %d refusals, want %d", count["principal"], n)
	}
	if _, err := alog.SealCommitted(ctx); err != nil {
		t.Fatal(err)
	}
	evs, err := alog.Events(ctx, 0, 1000)
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) == 0 || len(evs) > 60 {
		t.Fatalf("%d refusals audited out of %d in a burst; want some, and at most the burst (50) plus a few", len(evs), n)
	}
	ev := evs[0]
	if ev.Name != "mcp.request.rate_limited.principal" || ev.Outcome != auditlog.RateLimited || ev.Subject != "alice" ||
		ev.ClientID != "bot" || ev.RequestID != "req-000" || ev.Details["retryAfterMs"] != 1500 {
		t.Errorf("audit event = %+v", ev)
	}
	if strings.Contains(fmt.Sprintf("%+v", ev), "Ana") {
		t.Errorf("audit event carries payload: %+v", ev)
	}
}
