package mcpapi

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/cobranca/cobranca/internal/auditlog"
	"github.com/cobranca/cobranca/internal/auth"
	"github.com/cobranca/cobranca/internal/limits"
	"github.com/cobranca/cobranca/internal/pipeline"
	"github.com/cobranca/cobranca/internal/request"
	"golang.org/x/time/rate"
)

// auditWriteTimeout bounds writing one edge refusal's audit event. The write does not follow
// the request's cancellation.
const auditWriteTimeout = 5 * time.Second

// RefusalCounter counts requests refused at the HTTP level, by policy.
type RefusalCounter interface {
	Refused(policy string)
}

// edgeAuditRate bounds the audit events written for requests refused at the
// HTTP level, per replica: a flood is what those limits stop, and it must
// not become a flood of database writes. Every refusal is counted all the
// same (RefusalCounter), and the first ones of any burst are audited.
const (
	edgeAuditPerSecond = 10
	edgeAuditBurst     = 50
)

// NewEdgeRefusalAuditor returns the limits.Options.OnRefused hook: it counts
// every request answered 429 before any MCP work and audits them, up to
// edgeAuditPerSecond (burst edgeAuditBurst), as mcp.request.rate_limited.<policy>
// events with the caller when known and the advised wait — never a payload.
func NewEdgeRefusalAuditor(alog *auditlog.Log, logger *slog.Logger, count RefusalCounter) func(*http.Request, string, limits.Decision) {
	sample := rate.NewLimiter(edgeAuditPerSecond, edgeAuditBurst)
	return func(r *http.Request, policy string, d limits.Decision) {
		if count != nil {
			count.Refused(policy)
		}
		if !sample.Allow() {
			return
		}
		ev := auditlog.Event{
			Name:        "mcp.request.rate_limited." + policy,
			RequestID:   request.From(r.Context()).ID,
			Outcome:     auditlog.RateLimited,
			FailureCode: "rate_limited",
			Details:     map[string]int64{"retryAfterMs": d.RetryAfterMillis()},
		}
		pr, _ := auth.PrincipalFrom(r.Context())
		pipeline.Caller(pr, &ev)
		ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), auditWriteTimeout)
		defer cancel()
		if err := alog.Keep(ctx, ev); err != nil {
			logger.ErrorContext(ctx, "audit write failed", "request_id", ev.RequestID, "event", ev.Name, "err", err)
		}
	}
}
