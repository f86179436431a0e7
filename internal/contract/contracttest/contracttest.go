// Package contracttest builds finished Tool Contracts for tools that exist
// only in tests (the product has no tool of most tiers yet).
package contracttest

import (
	"github.com/cobranca/cobranca/internal/contract"
	"github.com/google/jsonschema-go/jsonschema"
)

// ApproverRole is the role a person needs to decide a critical test tool's calls (its
// contract's approverRoles).
const ApproverRole = "test.approver"

// AdminRole is the role a person needs to run a forbidden test tool through the admin surfaces
// (its contract's adminRoles).
const AdminRole = "test.admin"

// New returns the finished contract of a test tool named name, of the
// given risk tier, requiring permissions. It takes any object and returns
// {"ok": boolean}; its one domain failure mode is test_refused; above the
// low tier it changes a test row and is idempotent by key; a critical one's calls are decided
// by a person holding ApproverRole, a forbidden one's run by a person holding AdminRole. It panics if
// contract.Finish refuses it, which would be a bug in this package.
func New(name string, risk contract.Risk, permissions ...string) *contract.Contract {
	c := contract.Contract{
		Name: name, Title: "Test " + name, Description: "test tool", Category: "test",
		ContractVersion: "1.0.0",
		RiskLevel:       risk,
		InputSchema:     declaredInput(),
		OutputSchema:    &jsonschema.Schema{Type: "object", Required: []string{"ok"}, Properties: map[string]*jsonschema.Schema{"ok": {Type: "boolean"}}},
		Permissions:     permissions,
		SideEffects:     contract.SideEffects{Changes: []string{}, OnRepeat: "nothing"},
		AuditEvent:      "test.ran",
		FailureModes:    []contract.FailureMode{{Code: "test_refused", Meaning: "refused"}},
		Idempotency:     contract.Idempotency{Kind: "inherent"},
		DryRun:          contract.ModeNone,
	}
	if risk != contract.Low {
		c.SideEffects = contract.SideEffects{Changes: []string{"changes a test row"}, OnRepeat: "same key, same row"}
		c.Idempotency = contract.Idempotency{Kind: "key"}
	}
	if risk == contract.Critical {
		c.ApproverRoles = []string{ApproverRole}
	}
	if risk == contract.Forbidden {
		c.AdminRoles = []string{AdminRole}
	}
	fc, err := contract.Finish(c)
	if err != nil {
		panic(err)
	}
	return fc
}

// declaredInput is the input schema of New's contracts as declared: any object.
func declaredInput() *jsonschema.Schema { return &jsonschema.Schema{Type: "object"} }

// WithDryRun returns a copy of c, a contract of New, that offers an
// optional dry run (its input schema then declares dryRun, and needs no
// idempotencyKey with it).
func WithDryRun(c *contract.Contract) *contract.Contract {
	cp := *c
	cp.InputSchema = declaredInput() // finished again from the declaration
	cp.DryRun = contract.ModeOptional
	fc, err := contract.Finish(cp)
	if err != nil {
		panic(err)
	}
	return fc
}

// WithMandatoryDryRun returns a copy of c, a contract of New above the low tier, whose dry
// run is mandatory (its input schema then declares dryRun and planHash, and its failure modes
// dry_run_required and plan_changed); dryRunPermissions, when given, are the lesser scopes a
// dry run needs.
func WithMandatoryDryRun(c *contract.Contract, dryRunPermissions ...string) *contract.Contract {
	cp := *c
	cp.InputSchema = declaredInput() // finished again from the declaration
	cp.DryRun = contract.ModeMandatory
	cp.DryRunPermissions = dryRunPermissions
	fc, err := contract.Finish(cp)
	if err != nil {
		panic(err)
	}
	return fc
}

// WithCost returns a copy of c, a contract of New above the low tier or of its With… variants,
// that weighs a call's spend of its tier budget by its size: one unit per per members of its
// items argument (the tool's Size counts them).
func WithCost(c *contract.Contract, per int) *contract.Contract {
	cp := *c
	cp.InputSchema = declaredInput() // finished again from the declaration
	cp.Cost = &contract.Cost{Per: per, Items: "members of the items argument"}
	fc, err := contract.Finish(cp)
	if err != nil {
		panic(err)
	}
	return fc
}
