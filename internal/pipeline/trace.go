package pipeline

import (
	"context"

	"go.opentelemetry.io/otel/trace"

	"github.com/cobranca/cobranca/internal/telemetry"
)

// The spans of Do's steps (internal/telemetry), one for each step a call
// reaches, children of the request's span; the store's spans go under them.
const (
	stepAuthorize    = "pipeline.authorize"     // 1–3: visibility, scopes, tier rules and step-up
	stepBudget       = "pipeline.budget"        // 4: the tier budget
	stepValidate     = "pipeline.validate"      // 5: the arguments, decoded against the schema
	stepCost         = "pipeline.cost"          // 5: a call weighted by its size, sized and the rest of its cost spent
	stepRequestState = "pipeline.request_state" // the previous round's request state, opened and spent
	stepIdempotency  = "pipeline.idempotency"   // a key already used, looked up before anyone is asked
	stepDryRun       = "pipeline.dry_run"       // 6
	stepApproval     = "pipeline.approval"      // 7: a critical call's pending action
	stepConfirmation = "pipeline.confirmation"  // 7: a high-tier call's in-band confirmation
	stepRun          = "pipeline.run"           // 8–9: a read, and its output check
	stepExecute      = "pipeline.execute"       // 8–10: the transaction of a tool with side effects
	stepAudit        = "pipeline.audit"         // 10: the call's event, outside a transaction
)

// recordingSpan reports whether ctx's span records: the request is traced,
// and so are the steps of its call.
func recordingSpan(ctx context.Context) bool { return trace.SpanFromContext(ctx).IsRecording() }

// step ends the span of the step before, if still open, and starts name's,
// returning ctx with it for what the step calls (the store's spans). For a
// call that is not traced it does nothing and allocates nothing.
func (cl *callState) step(ctx context.Context, name string) context.Context {
	if !cl.traced {
		return ctx
	}
	cl.endStep("")
	ctx, cl.span = telemetry.Start(ctx, name)
	cl.span.SetAttributes(telemetry.Step.String(name), telemetry.RequestID.String(cl.call.RequestID))
	cl.spanTool()
	return ctx
}

// spanTool names the call's tool and tier on the open step's span, once the
// tool is known (the first step starts before): never a name the caller
// made up.
func (cl *callState) spanTool() {
	if cl.span != nil && cl.tool != nil {
		cl.span.SetAttributes(telemetry.Tool.String(cl.tool.Contract.Name), telemetry.Tier.String(string(cl.tool.Contract.RiskLevel)))
	}
}

// endStep ends the open step's span, if any: failed with code unless that
// is "".
func (cl *callState) endStep(code string) {
	if cl.span == nil {
		return
	}
	if code != "" {
		telemetry.Fail(cl.span, code)
	}
	cl.span.End()
	cl.span = nil
}
