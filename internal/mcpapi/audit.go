package mcpapi

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/cobranca/cobranca/internal/auditlog"
	"github.com/cobranca/cobranca/internal/auth"
	"github.com/cobranca/cobranca/internal/limits"
	"github.com/cobranca/cobranca/internal/request"
	"golang.org/x/time/rate"
)

// auditWriteTimeout bounds writing one audit event. The write does not follow the request's
// cancellation: a call whose client went away still gets its event.
const auditWriteTimeout = 5 * time.Second

// NewAuditor returns the Auditor that writes one auditlog event per tool call: who called
// (from the verified token), which tool and tier, how it ended, HMAC digests of the arguments
// and of the result, and the tool's integer counts. Never the arguments themselves.
func NewAuditor(log *auditlog.Log, digest *auditlog.Digester) Auditor {
	return &auditor{log: log, digest: digest}
}

type auditor struct {
	log    *auditlog.Log
	digest *auditlog.Digester
}

func (a *auditor) RecordCall(ctx context.Context, rec CallRecord) error {
	ev := auditlog.Event{
		Name:        rec.Contract.AuditEvent,
		Tool:        rec.Contract.Name,
		Risk:        string(rec.Contract.RiskLevel),
		RequestID:   rec.RequestID,
		Outcome:     rec.Outcome,
		FailureCode: string(rec.Code),
		Duration:    max(rec.Duration, 0),
		Details:     rec.Details,
	}
	withCaller(ctx, &ev)
	if rec.AppendCanonicalArgs != nil {
		p := getBuffer(len(rec.Args) + 64) // canonical is about as long as compact input
		b := rec.AppendCanonicalArgs(*p)
		ev.ArgsDigest = a.digest.Bytes(b)
		putBuffer(p, b)
	} else if len(rec.Args) > 0 {
		d, err := a.digest.JSON(rec.Args)
		if err != nil { // arguments that are not JSON were refused; digest them as sent
			d = a.digest.Bytes(rec.Args)
		}
		ev.ArgsDigest = d
	}
	if len(rec.Result) > 0 {
		ev.ResultDigest = a.digest.Bytes(rec.Result)
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), auditWriteTimeout)
	defer cancel()
	if len(rec.Contract.SideEffects.Changes) > 0 {
		// The pipeline fails such a call closed when its event cannot be written now.
		return a.log.Record(ctx, ev)
	}
	// A call that changes nothing is answered whatever happens to its event: while the
	// store is down the event waits in the spool.
	return a.log.Keep(ctx, ev)
}

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
		withCaller(r.Context(), &ev)
		ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), auditWriteTimeout)
		defer cancel()
		if err := alog.Keep(ctx, ev); err != nil {
			logger.ErrorContext(ctx, "audit write failed", "request_id", ev.RequestID, "event", ev.Name, "err", err)
		}
	}
}

// withCaller fills ev's caller fields from the principal the token check
// put in ctx, if any: the one place an audit event learns who called.
func withCaller(ctx context.Context, ev *auditlog.Event) {
	if p, ok := auth.PrincipalFrom(ctx); ok {
		ev.Subject, ev.Actor, ev.ClientID, ev.ACR = p.Subject, p.Actor, p.ClientID, p.ACR
	}
}
