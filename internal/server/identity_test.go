package server_test

import (
	"context"
	"log/slog"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/cobranca/cobranca/internal/auditlog"
	"github.com/cobranca/cobranca/internal/auth"
	"github.com/cobranca/cobranca/internal/failure"
	"github.com/cobranca/cobranca/internal/mcpapi"
	"github.com/cobranca/cobranca/internal/pipeline"
	"github.com/cobranca/cobranca/internal/server"
	"github.com/cobranca/cobranca/internal/store"
	"github.com/cobranca/cobranca/internal/store/storetest"
)

// TestIdentityLimitsFitAuditLog: every identity claim auth accepts fits an audit event field,
// so no verified caller can make an event the store refuses by its length.
func TestIdentityLimitsFitAuditLog(t *testing.T) {
	for name, n := range map[string]int{"auth.MaxIdentityBytes": auth.MaxIdentityBytes, "auth.MaxClientIDBytes": auth.MaxClientIDBytes} {
		if n > auditlog.MaxFieldBytes {
			t.Errorf("%s = %d, above auditlog.MaxFieldBytes = %d", name, n, auditlog.MaxFieldBytes)
		}
	}
}

// principalAuditor gives the real auditor a principal the edge would have refused: the
// auditor called directly with an event the store cannot keep.
type principalAuditor struct {
	pipeline.Auditor
	p *auth.Principal
}

func (a principalAuditor) RecordCall(ctx context.Context, rec pipeline.CallRecord) error {
	rec.Principal = a.p
	return a.Auditor.RecordCall(ctx, rec)
}

func (a principalAuditor) AppendCall(ctx context.Context, tx store.Tx, rec pipeline.CallRecord) error {
	rec.Principal = a.p
	return a.Auditor.AppendCall(ctx, tx, rec)
}

// TestUnstorableEventFailsClosed: a low-tier call whose audit event the store could never
// keep is not answered as a success, and the event reaches neither the store nor the spool;
// the next call with a sound identity is audited as usual.
func TestUnstorableEventFailsClosed(t *testing.T) {
	for _, p := range paths {
		t.Run(p.name, func(t *testing.T) {
			ctx := context.Background()
			db := storetest.SQLite(t)
			spool, err := auditlog.OpenSpool(filepath.Join(t.TempDir(), auditlog.SpoolFileName), auditlog.SpoolOptions{})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { spool.Close() })
			alog, digest := newAuditLog(t, db, auditlog.Options{Spool: spool})
			hostile := &auth.Principal{Subject: "alice\x00mallory", Kind: auth.KindHuman}
			aud := principalAuditor{pipeline.NewAuditor(alog, digest), hostile}
			log := slog.New(slog.DiscardHandler)
			a := newTestAuth(t)
			h := newMCP(t, mcpapi.Options{Logger: log, MaxBodyBytes: maxBody, DisableFastPath: p.slow, Scopes: a}, pipeline.Options{Auditor: aud})
			tok := mint(t, a, auth.MintOptions{})
			ts := httptest.NewServer(withToken(tok, server.Routes(server.Deps{Logger: log, MCP: h, MaxBodyBytes: maxBody, Auth: a, Ready: db.Ready})))
			t.Cleanup(ts.Close)
			sess := (&testServer{ts}).connect(t, "2025-11-25")

			res, err := sess.CallTool(ctx, &mcp.CallToolParams{Name: "collections.analyze_portfolio", Arguments: samplePortfolio()})
			if err != nil || !res.IsError {
				t.Fatalf("CallTool with an unstorable audit event = %v, %v; want a tool error", res, err)
			}
			if d := errorOf(t, res); d.Code != failure.Internal {
				t.Errorf("error code = %q, want %q", d.Code, failure.Internal)
			}
			if strings.Contains(textOf(res), "mallory") {
				t.Errorf("the answer repeats the identity: %s", textOf(res))
			}
			if spool.Len() != 0 {
				t.Errorf("the spool holds %d records, want 0", spool.Len())
			}
			var n int
			if err := db.QueryRow(ctx, `SELECT count(*) FROM audit_event`).Scan(&n); err != nil || n != 0 {
				t.Errorf("audit events = %d, %v; want 0", n, err)
			}

			hostile.Subject = "alice"
			res, err = sess.CallTool(ctx, &mcp.CallToolParams{Name: "collections.analyze_portfolio", Arguments: samplePortfolio()})
			if err != nil || res.IsError {
				t.Fatalf("CallTool with a sound identity = %v, %v", res, err)
			}
			if err := db.QueryRow(ctx, `SELECT count(*) FROM audit_event`).Scan(&n); err != nil || n != 1 {
				t.Errorf("audit events = %d, %v; want 1", n, err)
			}
		})
	}
}
