package limits_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cobranca/cobranca/internal/auth"
	"github.com/cobranca/cobranca/internal/collections"
	"github.com/cobranca/cobranca/internal/limits"
	limitspg "github.com/cobranca/cobranca/internal/limits/postgres"
	"github.com/cobranca/cobranca/internal/mcpapi"
	"github.com/cobranca/cobranca/internal/pipeline"
	"github.com/cobranca/cobranca/internal/pipeline/pipelinetest"
	"github.com/cobranca/cobranca/internal/server"
	"github.com/cobranca/cobranca/internal/store/storetest"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// statements counts the statements a pool sends that touch the rate_limit
// table: each is one round trip, and outside a transaction one commit.
type statements struct{ n atomic.Int64 }

func (s *statements) TraceQueryStart(ctx context.Context, _ *pgx.Conn, data pgx.TraceQueryStartData) context.Context {
	if strings.Contains(data.SQL, "rate_limit") || strings.HasPrefix(strings.TrimSpace(strings.ToLower(data.SQL)), "begin") {
		s.n.Add(1)
	}
	return ctx
}

func (*statements) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// tracedReplica is newReplica with its limiter on a pool of its own whose
// statements are counted.
func tracedReplica(t *testing.T, a *auth.Authenticator, url string, opts limits.Options) (*httptest.Server, *statements, *limits.Limiter) {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		t.Fatal(err)
	}
	st := &statements{}
	cfg.ConnConfig.Tracer = st
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	lim := limits.New(limitspg.New(pool), opts)
	h, err := mcpapi.New(mcpapi.Options{Logger: slog.New(slog.DiscardHandler), Pipeline: pipelinetest.Product(t, pipeline.Options{Limits: lim})})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(server.Routes(server.Deps{
		Logger: slog.New(slog.DiscardHandler), MCP: h, Auth: a, Limits: lim, MaxBodyBytes: 1 << 20,
	}))
	t.Cleanup(srv.Close)
	return srv, st, lim
}

// TestOneStatementPerAuthenticatedRequest: on PostgreSQL, an authenticated
// request's origin and principal decisions are one statement, and the
// answers carry both policies' fields; over the principal's budget the
// statement still charges the origin.
func TestOneStatementPerAuthenticatedRequest(t *testing.T) {
	url := storetest.MigratedPostgres(t, pg)
	a, tok := devAuth(t)
	srv, st, _ := tracedReplica(t, a, url, limits.Options{Policies: limits.Policies{
		Origin:    limits.Limit{Rate: 100, Period: time.Hour, Burst: 100},
		Principal: limits.Limit{Rate: 5, Period: time.Hour, Burst: 5},
	}, StoreTimeout: 10 * time.Second}) // every decision must reach the store: a loaded machine's slow one is not an outage here
	// t= is the store clock's time until the budget is whole again: each
	// call adds a period's share (origin 36 s, principal 720 s), less the
	// seconds that passed since the first call — on a loaded machine,
	// seconds may.
	begin := time.Now()
	field := func(call int, got, policy string, r, t0 int) string {
		slack := int(time.Since(begin)/time.Second) + 1
		rest, ok := strings.CutPrefix(got, `"`+policy+`";r=`+strconv.Itoa(r)+`;t=`)
		if n, err := strconv.Atoi(rest); !ok || err != nil || n > t0 || n < t0-slack {
			return fmt.Sprintf("call %d: RateLimit %s, want %q;r=%d;t=%d (less ≤ %d s)", call, got, policy, r, t0, slack)
		}
		return ""
	}
	for i := range 5 {
		ans := callTool(t, srv.URL, tok, collections.AnalyzeName, analyzeArgs)
		if ans.status != http.StatusOK || ans.isError {
			t.Fatalf("call %d: %+v", i+1, ans)
		}
		got := ans.header.Values("RateLimit")
		if len(got) != 2 {
			t.Errorf("call %d: RateLimit %q, want the origin's and the principal's", i+1, got)
			continue
		}
		for _, bad := range []string{field(i+1, got[0], "origin", 99-i, 36*(i+1)), field(i+1, got[1], "principal", 4-i, 720*(i+1))} {
			if bad != "" {
				t.Error(bad)
			}
		}
	}
	if got := st.n.Load(); got != 5 {
		t.Errorf("5 authenticated calls took %d statements, want 5", got)
	}
	ans := callTool(t, srv.URL, tok, collections.AnalyzeName, analyzeArgs)
	if ans.status != http.StatusTooManyRequests || ans.header.Get("Retry-After") == "" {
		t.Fatalf("over the principal's budget: %+v, want 429 with Retry-After", ans)
	}
	if got := ans.header.Values("RateLimit"); len(got) == 0 {
		t.Errorf("over the principal's budget: no RateLimit, want the origin's charged (r=94)")
	} else if bad := field(6, got[0], "origin", 94, 216); bad != "" {
		t.Errorf("over the principal's budget, the origin must be charged: %s", bad)
	}
}

// TestOneLimitAcrossReplicasWithOrigin is TestOneLimitAcrossReplicas with
// the origin limit on too, so that every decision goes through the chain:
// admitted ≤ burst + rate × elapsed + 1 for the principal, one statement a
// request, and every refusal carries Retry-After.
func TestOneLimitAcrossReplicasWithOrigin(t *testing.T) {
	url := storetest.MigratedPostgres(t, pg)
	a, tok := devAuth(t)
	lim := floodLimit
	opts := limits.Options{Policies: limits.Policies{Principal: lim, Origin: limits.Limit{Rate: 100_000, Period: time.Second, Burst: 100_000}}, Replicas: 3,
		StoreTimeout: 10 * time.Second} // every decision must reach the store, as in TestOneLimitAcrossReplicas
	type rep struct {
		url string
		st  *statements
		lim *limits.Limiter
	}
	var replicas []rep
	for range 3 {
		srv, st, l := tracedReplica(t, a, url, opts)
		replicas = append(replicas, rep{srv.URL, st, l})
	}
	urls := make([]string, len(replicas))
	for i, r := range replicas {
		urls[i] = r.url
	}
	floodWithinBound(t, urls, tok, lim)
	var stmts int64
	for _, r := range replicas {
		stmts += r.st.n.Load()
		if s := r.lim.Stats(); s.StoreFailures != 0 || s.LocalDecisions != 0 {
			t.Errorf("a replica decided without the store: %+v", s)
		}
	}
	if stmts > 240 {
		t.Errorf("%d statements for 240 requests, want at most one each", stmts)
	}
}
