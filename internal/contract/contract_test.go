package contract

import (
	"slices"
	"strings"
	"testing"

	"github.com/cobranca/cobranca/internal/failure"
	"github.com/google/jsonschema-go/jsonschema"
)

func base(risk Risk) Contract {
	c := Contract{
		Name: "collections.test_tool", Title: "T", Description: "D", Category: "collections",
		ContractVersion: "1.0.0",
		RiskLevel:       risk,
		InputSchema:     &jsonschema.Schema{Type: "object"},
		OutputSchema:    &jsonschema.Schema{Type: "object"},
		Permissions:     []string{"collections:write"},
		SideEffects:     SideEffects{Changes: []string{"writes a draft"}, Destructive: risk == High || risk == Critical, External: risk == Critical, OnRepeat: "same key returns the same draft"},
		AuditEvent:      "collections.test",
		FailureModes:    []FailureMode{{Code: "x_failed", Meaning: "m"}},
		Idempotency:     Idempotency{Kind: "key", Description: "idempotencyKey"},
		DryRun:          ModeOptional,
	}
	if risk == Critical {
		c.ApproverRoles = []string{"collections.approver"}
	}
	if risk == Forbidden {
		c.AdminRoles = []string{"collections.write_off"}
	}
	if risk == Low {
		c.SideEffects = SideEffects{Changes: []string{}, OnRepeat: "nothing"}
		c.Idempotency = Idempotency{Kind: "inherent"}
	}
	return c
}

// TestTierDerivation: the tier alone decides autonomy, confirmation and
// step-up (internal/mcpapi tests the MCP annotations derived from it).
func TestTierDerivation(t *testing.T) {
	tests := []struct {
		risk       Risk
		autonomous bool
		confirm    Confirmation
		stepUp     bool
	}{
		{Low, true, ConfirmNone, false},
		{Medium, true, ConfirmAdvised, false},
		{High, false, ConfirmInBand, false},
		{Critical, false, ConfirmOutOfBand, true},
		{Forbidden, false, ConfirmHumanOnly, true},
	}
	for _, tt := range tests {
		t.Run(string(tt.risk), func(t *testing.T) {
			c, err := Finish(base(tt.risk))
			if err != nil {
				t.Fatal(err)
			}
			if c.AutonomousExecution != tt.autonomous || c.Confirmation != tt.confirm || c.StepUpAuth.Required != tt.stepUp {
				t.Errorf("Finish(%s) = autonomous %v confirmation %s stepUp %v, want %v %s %v",
					tt.risk, c.AutonomousExecution, c.Confirmation, c.StepUpAuth.Required, tt.autonomous, tt.confirm, tt.stepUp)
			}
			for _, f := range PipelineFailureModes {
				if !c.Allows(f.Code) {
					t.Errorf("pipeline failure mode %s missing", f.Code)
				}
			}
			if c.VisibleToAgents() != (tt.risk != Forbidden) {
				t.Errorf("VisibleToAgents() = %v for %s", c.VisibleToAgents(), tt.risk)
			}
		})
	}
}

func TestValidateRejects(t *testing.T) {
	tests := []struct {
		name string
		edit func(c *Contract)
		want string
	}{
		{"bad name", func(c *Contract) { c.Name = "AnalyzePortfolio" }, "domain.verb"},
		{"no permissions", func(c *Contract) { c.Permissions = nil }, "permissions"},
		{"no audit event", func(c *Contract) { c.AuditEvent = "" }, "auditEvent"},
		{"no repeat", func(c *Contract) { c.SideEffects.OnRepeat = "" }, "onRepeat"},
		{"unknown tier", func(c *Contract) { c.RiskLevel = "extreme" }, "unknown riskLevel"},
		{"low with effects", func(c *Contract) { c.RiskLevel = Low; c.Idempotency.Kind = "key" }, "no side effects"},
		{"effects not idempotent", func(c *Contract) { c.Idempotency.Kind = "inherent" }, "needs key or natural"},
		{"dry run mode", func(c *Contract) { c.DryRun = "sometimes" }, "dryRun"},
		{"duplicate code", func(c *Contract) {
			c.FailureModes = append(c.FailureModes, FailureMode{Code: "x_failed", Meaning: "again"})
		}, "listed twice"},
		{"output schema", func(c *Contract) { c.OutputSchema = nil }, "outputSchema"},
		{"permission with a space", func(c *Contract) { c.Permissions = []string{"collections write"} }, "permissions[0] must be an OAuth scope-token"},
		{"permission twice", func(c *Contract) { c.Permissions = []string{"a:b", "a:b"} }, "permissions[1] is listed twice"},
		{"dry-run permissions without a dry run", func(c *Contract) { c.DryRun = ModeNone; c.DryRunPermissions = []string{"collections:read"} }, "dryRunPermissions applies only to a tool that offers a dry run"},
		{"dry-run permissions empty", func(c *Contract) { c.DryRunPermissions = []string{} }, "dryRunPermissions, when given, names at least one scope"},
		{"dry-run permission not a scope", func(c *Contract) { c.DryRunPermissions = []string{`say "read"`} }, "dryRunPermissions[0] must be an OAuth scope-token"},
		{"dry-run permission twice", func(c *Contract) { c.DryRunPermissions = []string{"a:b", "a:b"} }, "dryRunPermissions[1] is listed twice"},
		{"cost without per", func(c *Contract) { c.Cost = &Cost{Items: "drafts"} }, "cost needs per"},
		{"cost without items", func(c *Contract) { c.Cost = &Cost{Per: 10} }, "cost needs per"},
		{"cost of a read", func(c *Contract) {
			c.RiskLevel, c.SideEffects, c.Idempotency, c.Cost = Low, SideEffects{Changes: []string{}, OnRepeat: "nothing"}, Idempotency{Kind: "inherent"}, &Cost{Per: 10, Items: "invoices"}
		}, "a low-tier call spends none"},
		{"mandatory dry run of a read", func(c *Contract) {
			c.RiskLevel, c.SideEffects, c.Idempotency, c.DryRun = Low, SideEffects{Changes: []string{}, OnRepeat: "nothing"}, Idempotency{Kind: "inherent"}, ModeMandatory
		}, "a mandatory dry run guards side effects"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := base(High)
			tt.edit(&c)
			_, err := Finish(c)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Finish() error = %v, want one mentioning %q", err, tt.want)
			}
		})
	}
	// A contract constructed by hand (not through Finish) that contradicts
	// its tier is refused too.
	c := base(Critical)
	c.AutonomousExecution = true
	c.Confirmation = ConfirmNone
	c.FailureModes = append(c.FailureModes, FailureMode{Code: failure.Internal, Meaning: "m"})
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "autonomousExecution") || !strings.Contains(err.Error(), "confirmation") {
		t.Errorf("Validate() = %v, want autonomousExecution and confirmation errors", err)
	}
}

// TestCostUnits: one unit per Per items, rounded up, at least one; no cost
// rule, one unit.
func TestCostUnits(t *testing.T) {
	c := &Cost{Per: 30, Items: "drafts"}
	for _, tt := range []struct {
		cost *Cost
		n    int
		want int64
	}{{c, 0, 1}, {c, 1, 1}, {c, 30, 1}, {c, 31, 2}, {c, 10000, 334}, {nil, 10000, 1}, {&Cost{Per: 1, Items: "x"}, 7, 7}} {
		if got := tt.cost.Units(tt.n); got != tt.want {
			t.Errorf("%+v.Units(%d) = %d, want %d", tt.cost, tt.n, got, tt.want)
		}
	}
}

// TestApproverRoles: a critical contract names the roles that may decide its calls (fail
// closed: none is refused at start, with a message saying so); no other tier names any; each
// role is lower-case dotted words, listed once.
func TestApproverRoles(t *testing.T) {
	for _, tt := range []struct {
		name  string
		risk  Risk
		roles []string
		want  string // empty: accepted
	}{
		{"critical with a role", Critical, []string{"collections.approver"}, ""},
		{"critical with two", Critical, []string{"collections.approver", "finance.head"}, ""},
		{"critical with none", Critical, nil, "approverRoles must name at least one role"},
		{"critical with an empty list", Critical, []string{}, "approverRoles must name at least one role"},
		{"high with a role", High, []string{"collections.approver"}, "approverRoles applies only to a tool a person approves out of band"},
		{"low with a role", Low, []string{"collections.approver"}, "approverRoles applies only"},
		{"upper case", Critical, []string{"Collections.Approver"}, "approverRoles[0] must be lower-case dotted words"},
		{"empty role", Critical, []string{""}, "approverRoles[0] must be"},
		{"a space", Critical, []string{"collections approver"}, "approverRoles[0] must be"},
		{"too long", Critical, []string{"a" + strings.Repeat(".b", MaxRoleLen/2)}, "approverRoles[0] must be"},
		{"twice", Critical, []string{"a.b", "a.b"}, "approverRoles[1] is listed twice"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := base(tt.risk)
			c.ApproverRoles = tt.roles
			_, err := Finish(c)
			if tt.want == "" {
				if err != nil {
					t.Fatalf("Finish() = %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), c.Name) {
				t.Errorf("Finish() error = %v, want one naming the tool and saying %q", err, tt.want)
			}
		})
	}
	a, b := base(Critical), base(Critical)
	b.ApproverRoles = []string{"finance.head", "collections.approver"}
	got := Roles([]*Contract{&a, &b})
	if want := []string{"collections.approver", "finance.head"}; !slices.Equal(got, want) {
		t.Errorf("Roles = %v, want %v", got, want)
	}
}

// TestAdminRoles: a forbidden contract names the roles a person needs to run it (fail closed:
// none is refused at start); no other tier names any; the roles follow the approver roles'
// spelling; Roles lists both kinds; Finish gives a forbidden contract the admin surfaces'
// refusals.
func TestAdminRoles(t *testing.T) {
	for _, tt := range []struct {
		name  string
		risk  Risk
		roles []string
		want  string // empty: accepted
	}{
		{"forbidden with a role", Forbidden, []string{"collections.write_off"}, ""},
		{"forbidden with none", Forbidden, nil, "adminRoles must name at least one role"},
		{"critical with one", Critical, []string{"collections.write_off"}, "adminRoles applies only to a forbidden tool"},
		{"upper case", Forbidden, []string{"Write.Off"}, "adminRoles[0] must be lower-case dotted words"},
		{"twice", Forbidden, []string{"a.b", "a.b"}, "adminRoles[1] is listed twice"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := base(tt.risk)
			c.AdminRoles = tt.roles
			_, err := Finish(c)
			if tt.want == "" {
				if err != nil {
					t.Fatalf("Finish() = %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Finish() error = %v, want one saying %q", err, tt.want)
			}
		})
	}
	a, f := base(Critical), base(Forbidden)
	f.AdminRoles = []string{"finance.head", "collections.approver"}
	if got, want := Roles([]*Contract{&a, &f}), []string{"collections.approver", "finance.head"}; !slices.Equal(got, want) {
		t.Errorf("Roles = %v, want %v", got, want)
	}
	fc, err := Finish(base(Forbidden))
	if err != nil {
		t.Fatal(err)
	}
	for _, code := range []failure.Code{failure.PersonRequired, failure.PersonLacksRole, failure.InsufficientScope, failure.InsufficientUserAuthentication} {
		if !fc.Allows(code) {
			t.Errorf("a forbidden contract lacks the failure mode %s", code)
		}
	}
	if cc, _ := Finish(base(Critical)); cc.Allows(failure.PersonRequired) {
		t.Errorf("a critical contract lists %s", failure.PersonRequired)
	}
}

func TestSummaryOmitsSchemas(t *testing.T) {
	c, err := Finish(base(Low))
	if err != nil {
		t.Fatal(err)
	}
	s := c.Summary()
	if _, ok := s["inputSchema"]; ok {
		t.Errorf("Summary() carries inputSchema; the tools/list entry already does")
	}
	if s["riskLevel"] != "low" || s["name"] != c.Name {
		t.Errorf("Summary() = %v", s)
	}
	if c.InputSchema == nil {
		t.Errorf("Summary() cleared the contract's own schema")
	}
}

// TestDiagnosticNames: a contract of CategoryDiagnostic carries the
// conformance suite's own name (test_…) instead of domain.verb, and only
// as a low-tier read; a product contract never takes such a name.
func TestDiagnosticNames(t *testing.T) {
	diag := func(edit func(c *Contract)) Contract {
		c := base(Low)
		c.Name, c.Category = "test_input_required_result_elicitation", CategoryDiagnostic
		if edit != nil {
			edit(&c)
		}
		return c
	}
	if _, err := Finish(diag(nil)); err != nil {
		t.Errorf("Finish(low diagnostic test_…) = %v, want accepted", err)
	}
	if _, err := Finish(diag(func(c *Contract) { c.Name = "json_schema_2020_12_tool" })); err != nil {
		t.Errorf("Finish(low diagnostic json_schema_2020_12_tool) = %v, want accepted", err)
	}
	tests := []struct {
		name string
		c    Contract
		want string
	}{
		{"diagnostic named domain.verb", diag(func(c *Contract) { c.Name = "collections.analyze" }), "diagnostic tool is named in lower snake case"},
		{"diagnostic in upper case", diag(func(c *Contract) { c.Name = "test_Input" }), "diagnostic tool is named in lower snake case"},
		{"diagnostic with no underscore", diag(func(c *Contract) { c.Name = "test" }), "diagnostic tool is named in lower snake case"},
		{"diagnostic of a higher tier", func() Contract { c := base(High); c.Name, c.Category = "test_x", CategoryDiagnostic; return c }(), "low tier"},
		{"product tool named test_", func() Contract { c := base(Low); c.Name = "test_x"; return c }(), "domain.verb"},
	}
	for _, tt := range tests {
		if _, err := Finish(tt.c); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: Finish() error = %v, want one mentioning %q", tt.name, err, tt.want)
		}
	}
}

// TestTextOnly: the empty output schema {} declares a text-only tool; any
// other schema, even one that allows every object, does not.
func TestTextOnly(t *testing.T) {
	for _, tt := range []struct {
		schema *jsonschema.Schema
		want   bool
	}{
		{&jsonschema.Schema{}, true},
		{&jsonschema.Schema{Type: "object"}, false},
		{&jsonschema.Schema{Description: "anything"}, false},
		{nil, false},
	} {
		c := base(Low)
		c.OutputSchema = tt.schema
		if got := c.TextOnly(); got != tt.want {
			t.Errorf("TextOnly() with output schema %+v = %v, want %v", tt.schema, got, tt.want)
		}
	}
}

// TestMandatoryDryRunContract: Finish declares planHash in the input schema of a contract whose
// dry run is mandatory and adds dry_run_required and plan_changed to its failure modes; the
// schema asks a real call for idempotencyKey and planHash, and a dry run for neither. A
// contract with an optional dry run asks its dry run for no key either; without a dry run, the
// key is plainly required.
func TestMandatoryDryRunContract(t *testing.T) {
	validate := func(c *Contract, doc map[string]any) error {
		t.Helper()
		r, err := c.InputSchema.Resolve(nil)
		if err != nil {
			t.Fatal(err)
		}
		return r.Validate(doc)
	}
	plan := strings.Repeat("0a", 32)
	m := base(Critical)
	m.DryRun, m.DryRunPermissions = ModeMandatory, []string{"collections:read"}
	c, err := Finish(m)
	if err != nil {
		t.Fatal(err)
	}
	for _, code := range []failure.Code{failure.DryRunRequired, failure.PlanChanged} {
		if !c.Allows(code) {
			t.Errorf("a mandatory dry run's contract does not list %s", code)
		}
	}
	if p := c.InputSchema.Properties[ArgPlanHash]; p == nil || p.Type != "string" || *p.MinLength != PlanHashLen || *p.MaxLength != PlanHashLen {
		t.Errorf("planHash declared as %+v, want a string of %d characters", p, PlanHashLen)
	}
	if slices.Contains(c.InputSchema.Required, ArgIdempotencyKey) || slices.Contains(c.InputSchema.Required, ArgPlanHash) {
		t.Errorf("required = %v: a dry run needs neither idempotencyKey nor planHash", c.InputSchema.Required)
	}
	for _, tt := range []struct {
		doc map[string]any
		ok  bool
	}{
		{map[string]any{"dryRun": true}, true},
		{map[string]any{"idempotencyKey": "k", "planHash": plan}, true},
		{map[string]any{"dryRun": false, "idempotencyKey": "k", "planHash": plan}, true},
		{map[string]any{"idempotencyKey": "k"}, false},
		{map[string]any{"planHash": plan}, false},
		{map[string]any{"dryRun": false, "idempotencyKey": "k"}, false},
		{map[string]any{"idempotencyKey": "k", "planHash": strings.ToUpper(plan)}, false},
	} {
		if err := validate(c, tt.doc); (err == nil) != tt.ok {
			t.Errorf("input schema on %v: %v, want valid %v", tt.doc, err, tt.ok)
		}
	}
	if got := c.Summary()["dryRunPermissions"]; !slices.Equal(got.([]any), []any{"collections:read"}) {
		t.Errorf("summary's dryRunPermissions = %v", got)
	}
	opt, err := Finish(base(High))
	if err != nil {
		t.Fatal(err)
	}
	if opt.Allows(failure.DryRunRequired) || opt.InputSchema.Properties[ArgPlanHash] != nil {
		t.Error("an optional dry run's contract lists dry_run_required or declares planHash")
	}
	if err := validate(opt, map[string]any{"dryRun": true}); err != nil {
		t.Errorf("an optional dry run without a key: %v, want valid", err)
	}
	if err := validate(opt, map[string]any{}); err == nil {
		t.Error("a call of an optional dry run's tool without a key: valid, want idempotencyKey required")
	}
	none := base(High)
	none.DryRun = ModeNone
	nc, err := Finish(none)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(nc.InputSchema.Required, ArgIdempotencyKey) || nc.InputSchema.AllOf != nil {
		t.Errorf("without a dry run: required %v, allOf %v; want idempotencyKey required plainly", nc.InputSchema.Required, nc.InputSchema.AllOf)
	}
}

// TestContractVersion: Finish refuses a contract without a semver
// contractVersion (MAJOR.MINOR.PATCH, no leading zeros), and publishes the
// version in the summary tools/list carries.
func TestContractVersion(t *testing.T) {
	for _, v := range []string{"1.0.0", "0.1.0", "1.1.0", "10.20.30", "0.0.0", "999999999.0.1"} {
		c := base(Low)
		c.ContractVersion = v
		fc, err := Finish(c)
		if err != nil {
			t.Errorf("Finish(contractVersion %q) = %v, want accepted", v, err)
			continue
		}
		if got := fc.Summary()["contractVersion"]; got != v {
			t.Errorf("Summary()[contractVersion] = %v, want %q", got, v)
		}
	}
	for _, v := range []string{"", "1", "1.0", "1.0.0.0", "01.0.0", "1.00.0", "1.0.01", "v1.0.0", "1.0.0-rc.1", "1.0.0+b", " 1.0.0", "1.0.0\n", "1..0", "a.b.c", "1.0.-1", "1000000000.0.0", "١.0.0"} {
		c := base(Low)
		c.ContractVersion = v
		if _, err := Finish(c); err == nil || !strings.Contains(err.Error(), "contractVersion") || !strings.Contains(err.Error(), c.Name) {
			t.Errorf("Finish(contractVersion %q) error = %v, want one naming the tool and contractVersion", v, err)
		}
	}
}

// TestView: a result view is a ui://host/…/name.html URI, and only a read
// that returns structured content has one.
func TestView(t *testing.T) {
	read := func(edit func(*Contract)) Contract {
		c := base(Low)
		edit(&c)
		return c
	}
	for _, tt := range []struct {
		name string
		c    Contract
		want string // "" accepted
	}{
		{"a read with a view", read(func(c *Contract) { c.View = "ui://cobranca/portfolio-analysis.html" }), ""},
		{"nested path", read(func(c *Contract) { c.View = "ui://cobranca.example/views/a_b-c.html" }), ""},
		{"no view", read(func(*Contract) {}), ""},
		{"http scheme", read(func(c *Contract) { c.View = "https://cobranca/portfolio.html" }), "view: must be a ui://host/path/name.html URI"},
		{"no path", read(func(c *Contract) { c.View = "ui://cobranca" }), "view: must be"},
		{"not html", read(func(c *Contract) { c.View = "ui://cobranca/view.js" }), "view: must be"},
		{"query", read(func(c *Contract) { c.View = "ui://cobranca/view.html?x=1" }), "view: must be"},
		{"fragment", read(func(c *Contract) { c.View = "ui://cobranca/view.html#top" }), "view: must be"},
		{"dot segment", read(func(c *Contract) { c.View = "ui://cobranca/../view.html" }), "view: must be"},
		{"escape", read(func(c *Contract) { c.View = "ui://cobranca/v%69ew.html" }), "view: must be"},
		{"upper case", read(func(c *Contract) { c.View = "ui://Cobranca/view.html" }), "view: must be"},
		{"port", read(func(c *Contract) { c.View = "ui://cobranca:80/view.html" }), "view: must be"},
		{"too long", read(func(c *Contract) { c.View = "ui://cobranca/" + strings.Repeat("a", MaxViewLen) + ".html" }), "view: must be"},
		{"text-only read", read(func(c *Contract) { c.View, c.OutputSchema = "ui://cobranca/view.html", &jsonschema.Schema{} }), "a text-only tool has none"},
		{"medium tier", func() Contract { c := base(Medium); c.View = "ui://cobranca/view.html"; return c }(), "only a read (tier low, no side effects) has a result view, not tier medium"},
		{"critical tier", func() Contract { c := base(Critical); c.View = "ui://cobranca/view.html"; return c }(), "not tier critical"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Finish(tt.c)
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("Finish() = %v, want it accepted", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Errorf("Finish() error = %v, want one mentioning %q", err, tt.want)
			}
		})
	}
}
