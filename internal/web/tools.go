package web

import (
	"cmp"
	"context"
	"net/http"
	"slices"

	"github.com/cobranca/cobranca/internal/contract"
	"github.com/cobranca/cobranca/internal/limits"
)

// toolTier is one risk tier on the tools page, with its tools.
type toolTier struct {
	Risk  contract.Risk
	Tools []toolRow
}

// toolRow is a tool as the tools page shows it to people.
type toolRow struct {
	*contract.Contract
	// Deciders are the roles of who approves each call (critical) or runs the tool
	// (forbidden); none: no person is asked.
	Deciders []string
}

// budgetRow is one of the budgets a call spends, and the tiers that spend it.
type budgetRow struct {
	Name  func(*texts) string
	Limit limits.Limit
	Tiers []contract.Risk
}

type toolsView struct {
	Tiers   []toolTier
	Budgets []budgetRow
}

// tiers are the risk tiers, the least risky first.
var tiers = []contract.Risk{contract.Low, contract.Medium, contract.High, contract.Critical, contract.Forbidden}

// readTools reads the tools page: every tool's contract by risk tier, for people — what it
// may do, who approves it, and what each call spends of the budgets.
func (p *Pages) readTools(_ context.Context, _ *http.Request, d *pageData) error {
	var cs []*contract.Contract
	if p.tools != nil {
		cs = append(cs, p.tools()...)
	}
	if p.admin != nil {
		cs = append(cs, p.admin.AdminContracts()...)
	}
	v := &toolsView{}
	for _, risk := range tiers {
		tt := toolTier{Risk: risk}
		for _, c := range cs {
			if c.RiskLevel == risk {
				tt.Tools = append(tt.Tools, toolRow{Contract: c, Deciders: slices.Concat(c.ApproverRoles, c.AdminRoles)})
			}
		}
		slices.SortFunc(tt.Tools, func(a, b toolRow) int { return cmp.Compare(a.Name, b.Name) })
		if len(tt.Tools) > 0 {
			v.Tiers = append(v.Tiers, tt)
		}
	}
	if b := p.budgets; b != nil {
		v.Budgets = []budgetRow{
			{Name: func(t *texts) string { return t.BudgetPrincipal }, Limit: b.Principal, Tiers: tiers[:4]},
			{Name: func(t *texts) string { return t.BudgetOrigin }, Limit: b.Origin, Tiers: tiers[:4]},
			{Name: func(t *texts) string { return t.BudgetWrite }, Limit: b.Write, Tiers: tiers[1:4]},
			{Name: func(t *texts) string { return t.BudgetCritical }, Limit: b.Critical, Tiers: tiers[3:4]},
		}
	}
	d.View = v
	return nil
}
