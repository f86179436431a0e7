package pipeline

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/cobranca/cobranca/internal/auth"
	"github.com/cobranca/cobranca/internal/contract"
	"github.com/cobranca/cobranca/internal/failure"
	"github.com/cobranca/cobranca/internal/idempotency"
	"github.com/cobranca/cobranca/internal/store"
)

// A tool whose contract makes its dry run mandatory (docs/security-model.md, "Dry run") acts only
// on a plan its caller saw: its DryRun returns the plan's hash
// (Effect.PlanHash), which the pipeline records (recordDryRun) for the
// caller, tool and arguments; the real call cites it (planHash), and runs —
// or, for a critical tool, asks a person to approve it — only if that record
// exists and has not expired (citedDryRun). The plan hash is part of what
// the call's idempotency key and approval bind, so a call approved for one
// plan never runs another; Execute recomputes the plan in its transaction
// and answers plan_changed when it moved since (PlanHashFrom).

// recordDryRun keeps the plan a mandatory dry run answered, for the real
// call to cite.
func (p *Pipeline) recordDryRun(ctx context.Context, cl *callState, plan string) error {
	if !idempotency.ValidPlanHash(plan) {
		return fmt.Errorf("tool %s: its mandatory dry run returned a PlanHash that is not %s", cl.tool.Contract.Name, contract.PlanHashRule)
	}
	d, err := cl.dryRun(plan)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), txTimeout)
	defer cancel()
	if err := p.db.InTx(ctx, func(ctx context.Context, tx store.Tx) error { return p.keys.RecordDryRun(ctx, tx, d) }); err != nil {
		return &failure.Error{Code: failure.Unavailable, Message: "the store could not record the dry run, so no call could cite it; retry later", RetryAfter: time.Second, Err: err}
	}
	return nil
}

// citedDryRun checks, for a call of a tool whose dry run is mandatory, that
// its planHash names its caller's latest dry run of the same arguments,
// unexpired: dry_run_required otherwise. Any other call passes.
func (p *Pipeline) citedDryRun(ctx context.Context, q store.Querier, cl *callState) error {
	if cl.tool.Contract.DryRun != contract.ModeMandatory || cl.args.dryRun {
		return nil
	}
	d, err := cl.dryRun(cl.args.plan)
	if err != nil {
		return err
	}
	ok, err := p.keys.DryRunRecorded(ctx, q, d)
	switch {
	case err != nil:
		return &failure.Error{Code: failure.Unavailable, Message: "the store could not check the dry run the call cites; nothing was done, retry later", RetryAfter: time.Second, Err: err}
	case !ok:
		return &failure.Error{Code: failure.DryRunRequired, Field: contract.ArgPlanHash, Message: fmt.Sprintf(
			"names no dry run of these arguments by this caller in the last %v (or a newer dry run of them answered another planHash): dry-run again (dryRun: true) and call with the planHash it answers. Nothing was done", idempotency.DryRunTTL)}
	}
	return nil
}

// dryRun is the record of the call's dry run answering plan.
func (cl *callState) dryRun(plan string) (idempotency.DryRun, error) {
	if err := cl.args.fingerprint(); err != nil {
		return idempotency.DryRun{}, err
	}
	return idempotency.DryRun{Principal: callerKey(cl.call.Principal), Tool: cl.tool.Contract.Name, Args: cl.args.plain[:], Plan: plan}, nil
}

// dryRunAllowed reports whether the principal, lacking some of t's
// permissions, may make this call all the same: a dry run (args say so, in
// the one reading control gives them) of a tool whose contract lets one run
// with its dryRunPermissions, which the principal holds.
func dryRunAllowed(t *compiled, pr *auth.Principal, raw json.RawMessage) bool {
	c := t.Contract
	if len(c.DryRunPermissions) == 0 || len(pr.MissingScopes(c.DryRunPermissions)) > 0 {
		return false
	}
	var a args
	return a.control(c, raw) == nil && a.dryRun
}

// PlanHashFrom returns the planHash the call in ctx cites: the plan a tool
// whose dry run is mandatory must find unchanged, recomputed in its
// transaction, before it does anything (failure.PlanChanged otherwise). ""
// for a dry run, or a tool whose dry run is not mandatory.
func PlanHashFrom(ctx context.Context) string {
	if cl, ok := ctx.Value(callKey{}).(*callState); ok && cl.args != nil {
		return cl.args.plan
	}
	return ""
}

// MissingPermissions returns the scopes of the tool's permissions the caller
// of the dry run in ctx lacks (it holds the contract's dryRunPermissions):
// what the real call would be refused for. Empty for a caller holding them
// all.
func MissingPermissions(ctx context.Context) []string {
	if cl, ok := ctx.Value(callKey{}).(*callState); ok {
		return slices.Clone(cl.missing)
	}
	return nil
}
