package pipeline

import (
	"cmp"
	"context"
	"slices"
	"strings"
	"time"

	"github.com/cobranca/cobranca/internal/auth"
	"github.com/cobranca/cobranca/internal/contract"
	"github.com/cobranca/cobranca/internal/failure"
	"github.com/cobranca/cobranca/internal/limits"
)

// Admin runs one call of a forbidden tool — one the MCP endpoint never serves — for a person,
// as the admin API, its page and the CLI hand it over. Read top to bottom, it is the security
// story of such a call; every step is Do's own, only the tier rules differ:
//
//  1. the tool is a forbidden one (any other name is unknown here, as a forbidden name is
//     unknown to Do);
//  2. a person: an agent's call (or no one's) is refused with person_required;
//  3. a role: the person holds one of the contract's adminRoles, else person_lacks_role;
//  4. scopes: the credential holds every permission the contract names (Denied);
//  5. step-up (RFC 9470): the person signed in recently and strongly enough, else
//     insufficient_user_authentication wrapping the *auth.StepUpError to answer;
//  6. tier budget: the caller's budget of the forbidden tier, spent before any work;
//  7. validation: the arguments against the input schema, strictly; the idempotency key
//     the contract requires;
//  8. execution in the pipeline's transaction: key reserved, effect, audit event and stored
//     response commit together (a repeat of the key answers the first response).
//
// Every ending is audited under the contract's event, refusals included.
func (p *Pipeline) Admin(ctx context.Context, c Call) Result {
	cl := p.begin(ctx, c)
	defer cl.endStep("")
	ctx = context.WithValue(ctx, callKey{}, cl) // Now and PrincipalFrom read it
	// 1. A forbidden tool.
	t := p.hidden[c.Tool]
	if t == nil {
		return Result{Kind: ProtocolError, Err: &failure.Error{Code: CodeUnknownTool, Field: "name", Message: "is not a tool of the admin surface"}}
	}
	cl.tool, cl.info.Tool = t, t.Contract.Name
	cl.step(ctx, stepAuthorize)
	// 2. A person, and 3. a role.
	if fe := AdminAdmits(c.Principal, t.Contract); fe != nil {
		return cl.fail(fe)
	}
	// 4. Scopes.
	if missing := c.Principal.MissingScopes(t.Contract.Permissions); len(missing) > 0 {
		return cl.denied(missing)
	}
	// 5. Step-up.
	if fe := p.checkStepUp(t, c.Principal); fe != nil {
		return cl.fail(fe)
	}
	// 6. Tier budget.
	if p.limits != nil {
		if err := p.limits.Tier(cl.step(ctx, stepBudget), limits.PrincipalKey(c.Principal.Subject, c.Principal.ClientID), t.Contract.RiskLevel); err != nil {
			return cl.fail(err)
		}
	}
	// 7. Validation.
	cl.step(ctx, stepValidate)
	a, err := p.arguments(t, c)
	if err != nil {
		return cl.fail(err)
	}
	cl.args = a
	if err := p.spendCost(ctx, cl); err != nil {
		return cl.fail(err)
	}
	// 8. Execution, the output check and the audit, in one transaction.
	return p.execute(cl.step(ctx, stepExecute), cl)
}

// AdminAdmits is the one rule of who may run the forbidden tool of c, or see its contract: a
// person (never an agent, nor no one), holding one of its adminRoles. It returns nil, or the
// refusal: person_required or person_lacks_role, on field token. Admin applies it; the admin
// page and the admin listing ask it before they show a form or a contract.
func AdminAdmits(pr *auth.Principal, c *contract.Contract) *failure.Error {
	if pr == nil || pr.IsAgent() {
		return &failure.Error{Code: failure.PersonRequired, Field: "token",
			Message: "is an agent's: only a person runs this tool, through the admin API, its page or the CLI. Nothing was done"}
	}
	if !pr.HasAnyRole(c.AdminRoles) {
		return &failure.Error{Code: failure.PersonLacksRole, Field: "token",
			Message: "is a person's without the role this tool needs (" + strings.Join(c.AdminRoles, " or ") + "): ask someone who holds it. Nothing was done"}
	}
	return nil
}

// AdminStepUp returns the step-up a person running the forbidden tool name must pass (the
// acr values of Options.StepUp within its contract's max age), and whether name is one: what
// the admin page asks the issuer for before it shows the tool's form.
func (p *Pipeline) AdminStepUp(name string) (auth.StepUp, bool) {
	t := p.hidden[name]
	if t == nil {
		return auth.StepUp{}, false
	}
	return p.stepUpOf(t.Contract), true
}

// stepUpOf is the step-up c demands of a person (RFC 9470).
func (p *Pipeline) stepUpOf(c *contract.Contract) auth.StepUp {
	return auth.StepUp{ACRValues: slices.Clone(p.stepUp), MaxAge: time.Duration(c.StepUpAuth.MaxAgeSeconds) * time.Second}
}

// AdminContracts returns the contracts of the forbidden tools, which only Admin runs, by name:
// the admin listing people read (GET /admin/contracts), never an agent.
func (p *Pipeline) AdminContracts() []*contract.Contract {
	out := make([]*contract.Contract, 0, len(p.hidden))
	for _, t := range p.hidden {
		out = append(out, t.Contract)
	}
	slices.SortFunc(out, func(a, b *contract.Contract) int { return cmp.Compare(a.Name, b.Name) })
	return out
}
