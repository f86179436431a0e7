// Package contract declares cobranca's Tool Contracts: for every tool, once,
// its risk tier, who may call it, whether a human must confirm, what it
// changes, what it audits and every way it can fail.
//
// The contract is the single source of truth. The scopes the policy checks,
// confirmation and step-up demands, the audit event name and the error codes
// a tool may return are all derived from it, never written a second time; so
// are the MCP tool declaration and its annotations, which internal/mcpapi
// builds at the edge (this package knows no transport).
package contract

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"regexp"
	"slices"

	"github.com/cobranca/cobranca/internal/failure"
	"github.com/google/jsonschema-go/jsonschema"
)

// MetaKey is the reverse-DNS _meta key under which each tools/list entry
// carries its contract.
const MetaKey = "io.cobranca/contract"

// Risk is a tool's tier in the risk model (seed 000).
type Risk string

const (
	Low       Risk = "low"       // reads, no permanent effect; agents run it alone
	Medium    Risk = "medium"    // narrow, internal state changes; confirmation advised
	High      Risk = "high"      // relevant state changes; in-band confirmation required
	Critical  Risk = "critical"  // external effects, money, deletion; out-of-band approval and step-up
	Forbidden Risk = "forbidden" // never visible to, nor callable by, an AI agent
)

// Confirmation says how a human confirms a call before it takes effect.
type Confirmation string

const (
	ConfirmNone      Confirmation = "none"
	ConfirmAdvised   Confirmation = "advised"     // the contract says so; clients may ask
	ConfirmInBand    Confirmation = "in_band"     // input-required elicitation the client shows
	ConfirmOutOfBand Confirmation = "out_of_band" // a human approves the exact call at a URL
	ConfirmHumanOnly Confirmation = "human_only"  // admin API / CLI only, never over MCP
)

// Mode is a none/optional/mandatory switch (dry run support).
type Mode string

const (
	ModeNone      Mode = "none"
	ModeOptional  Mode = "optional"
	ModeMandatory Mode = "mandatory"
)

// StepUp is the RFC 9470 step-up authentication a tool demands of the human
// who approves or runs it.
type StepUp struct {
	Required bool `json:"required"`
	// MaxAgeSeconds bounds how long ago the human authenticated.
	MaxAgeSeconds int    `json:"maxAgeSeconds,omitempty"`
	When          string `json:"when,omitempty"`
}

// SideEffects describes every state change outside the return value.
type SideEffects struct {
	// Changes lists the state changes; empty means the tool changes nothing.
	Changes []string `json:"changes"`
	// Destructive: the changes may overwrite or remove, not only add.
	Destructive bool `json:"destructive"`
	// External: the tool reaches entities outside cobranca (mail, payment).
	External bool `json:"external"`
	// OnRepeat says what calling again with the same arguments does.
	OnRepeat string `json:"onRepeat"`
}

// Idempotency says how repeating a call is made safe.
type Idempotency struct {
	// Kind: "inherent" (no effect to repeat), "key" (idempotencyKey argument),
	// or "natural" (same arguments give the same effect, e.g. same link). A
	// natural tool's answer is never stored under an idempotencyKey (it may
	// hold a credential): a repeat of the key runs the tool again, which
	// answers as its natural idempotency does.
	Kind        string `json:"kind"`
	Description string `json:"description"`
}

// FailureMode is one error code the tool can return.
type FailureMode struct {
	Code      failure.Code `json:"code"`
	Meaning   string       `json:"meaning"`
	Retryable bool         `json:"retryable"`
}

// Cost weighs what a call spends of its tier's budget by the work it asks
// for: one unit per Per of Items, rounded up, at least one. Without a Cost a
// call spends one unit whatever its size. The unit is a plain call's share
// of the budget (docs/benchmarks.md, "Cost-weighted calls"): Per is about how many
// items take as long to work through as one plain call takes whole.
type Cost struct {
	// Per is how many items one unit covers.
	Per int `json:"per"`
	// Items says what is counted, in words.
	Items string `json:"items"`
}

// Units is what a call of n items costs: ⌈n/Per⌉, at least one.
func (c *Cost) Units(n int) int64 {
	if c == nil || n <= 0 {
		return 1
	}
	return max((int64(n)+int64(c.Per)-1)/int64(c.Per), 1)
}

// Contract is one tool's complete, machine-readable contract.
type Contract struct {
	Name string `json:"name"`
	// ContractVersion is the contract's version, semver (MAJOR.MINOR.PATCH):
	// the major grows with a change a client must adapt to (a field removed
	// or retyped, an input newly required), the minor with a compatible
	// addition (an optional input, an output field), the patch with a change
	// of wording only. docs/contracts/CHANGELOG.md says what each version
	// changed.
	ContractVersion     string             `json:"contractVersion"`
	Title               string             `json:"title"`
	Description         string             `json:"description"`
	Category            string             `json:"category"`
	RiskLevel           Risk               `json:"riskLevel"`
	AutonomousExecution bool               `json:"autonomousExecution"`
	Confirmation        Confirmation       `json:"confirmation"`
	StepUpAuth          StepUp             `json:"stepUpAuth"`
	InputSchema         *jsonschema.Schema `json:"inputSchema,omitempty"`
	OutputSchema        *jsonschema.Schema `json:"outputSchema,omitempty"`
	Permissions         []string           `json:"permissions"`
	SideEffects         SideEffects        `json:"sideEffects"`
	AuditEvent          string             `json:"auditEvent"`
	FailureModes        []FailureMode      `json:"failureModes"`
	Idempotency         Idempotency        `json:"idempotency"`
	DryRun              Mode               `json:"dryRun"`
	// DryRunPermissions are the scopes a dry run needs, when fewer than
	// Permissions (only with a dry run): a caller holding these but not every
	// scope of Permissions may dry-run the tool, and learns what the real call
	// would lack (the tool reports it, pipeline.MissingPermissions).
	DryRunPermissions []string `json:"dryRunPermissions,omitempty"`
	// RequesterMayApprove lets the person an agent acts for approve that
	// agent's critical call themselves; by default another person must.
	RequesterMayApprove bool `json:"requesterMayApprove,omitempty"`
	// ApproverRoles are the roles a person must hold (any one) to approve or
	// reject a call of the tool: the issuer's roles claim (COBRANCA_ROLES_CLAIM)
	// names them. Required of a tool a person approves out of band (critical),
	// refused on any other.
	ApproverRoles []string `json:"approverRoles,omitempty"`
	// AdminRoles are the roles a person must hold (any one) to run a forbidden tool through the
	// admin surfaces (API, page, CLI), besides its permissions and step-up: the issuer's roles
	// claim names them. Required of a forbidden tool, refused on any other.
	AdminRoles []string `json:"adminRoles,omitempty"`
	// Cost, when set, weighs the call's spend of its tier budget by its
	// size (the pipeline counts the items before the call's work); absent,
	// a call spends one unit.
	Cost *Cost `json:"cost,omitempty"`
	// View is the ui:// URI of the tool's result view: an HTML page a host
	// that renders MCP Apps shows the tool's structuredContent in (SEP-1865).
	// Only a read has one (ValidView). Empty: the tool's results are
	// structured content and text only.
	View string `json:"view,omitempty"`
}

// PipelineFailureModes are the codes the call pipeline can return for any
// tool (whatever the tool's own logic). New adds them to every contract.
var PipelineFailureModes = []FailureMode{
	{Code: failure.RateLimited, Meaning: "Too many calls for this identity and tier; retry after retryAfterMs.", Retryable: true},
	{Code: failure.Unavailable, Meaning: "A dependency cobranca needs for this tier (the store) is unavailable; nothing was done.", Retryable: true},
	{Code: failure.Internal, Meaning: "An unexpected server fault; nothing was changed. The message carries a reference for the operator.", Retryable: true},
}

var nameRE = regexp.MustCompile(`^[a-z][a-z0-9_]*\.[a-z][a-z0-9_]*$`)

// versionRE is a semver version without pre-release or build: three
// numbers, none with a leading zero.
var versionRE = regexp.MustCompile(`^(0|[1-9][0-9]{0,8})\.(0|[1-9][0-9]{0,8})\.(0|[1-9][0-9]{0,8})$`)

// ValidVersion reports whether v is a contract version: MAJOR.MINOR.PATCH,
// each a number of at most nine digits with no leading zero.
func ValidVersion(v string) bool { return versionRE.MatchString(v) }

// scopeRE is an OAuth scope-token (RFC 6749 §3.3: 1*NQCHAR).
var scopeRE = regexp.MustCompile(`^[\x21\x23-\x5b\x5d-\x7e]+$`)

// roleRE is what an approver role is: lower-case dotted words, like collections.approver; a
// role the issuer writes as it is into its roles claim.
var roleRE = regexp.MustCompile(`^[a-z][a-z0-9_-]*(\.[a-z][a-z0-9_-]*)*$`)

// MaxRoleLen bounds an approver role's length, in bytes.
const MaxRoleLen = 64

// CategoryDiagnostic is the category of the tools the official MCP
// conformance suite calls by its own names (test_…), which are not
// domain.verb: internal/diagnostics, built only with -tags conformance,
// declares them, low tier and read-only.
const CategoryDiagnostic = "diagnostic"

// ViewScheme is the URI scheme of a result view (MCP Apps reserves it).
const ViewScheme = "ui://"

// viewRE is what a view URI may be: ui://host/path, with lower-case DNS
// labels for the host and a path of plain segments ending in .html — no
// query, fragment, user, port, dot segment or escape a host could read two
// ways.
var viewRE = regexp.MustCompile(`^ui://[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*(/[a-z0-9][a-z0-9_-]*)*/[a-z0-9][a-z0-9_-]*\.html$`)

// MaxViewLen bounds a view URI, in bytes.
const MaxViewLen = 200

// ValidView checks a result view's URI: ui://host/…/name.html.
func ValidView(uri string) error {
	if len(uri) > MaxViewLen || !viewRE.MatchString(uri) {
		return fmt.Errorf("must be a %shost/path/name.html URI of at most %d bytes, lower-case letters, digits, - and _ only", ViewScheme, MaxViewLen)
	}
	return nil
}

// diagnosticNameRE: the conformance suite's names (test_…,
// json_schema_2020_12_tool) are lower snake case with no dot, so none can
// be a product tool's domain.verb.
var diagnosticNameRE = regexp.MustCompile(`^[a-z][a-z0-9]*(_[a-z0-9]+)+$`)

// Validate checks that the contract is complete and that its fields agree
// with its tier (the tier table: README.md, docs/security-model.md). A contract that fails is a
// programming error: the server refuses to start with it.
func (c *Contract) Validate() error {
	var errs []error
	bad := func(format string, a ...any) {
		errs = append(errs, fmt.Errorf("contract %q: "+format, append([]any{c.Name}, a...)...))
	}
	switch {
	case c.Category == CategoryDiagnostic:
		if !diagnosticNameRE.MatchString(c.Name) || c.RiskLevel != Low || len(c.SideEffects.Changes) > 0 {
			bad("a diagnostic tool is named in lower snake case with no dot (test_…), low tier, with no side effects")
		}
	case !nameRE.MatchString(c.Name):
		bad("name must be domain.verb in lower snake case")
	}
	if !ValidVersion(c.ContractVersion) {
		bad("contractVersion must be a semver version MAJOR.MINOR.PATCH with no leading zeros, like 1.0.0 (got %q)", c.ContractVersion)
	}
	if c.Title == "" || c.Description == "" || c.Category == "" {
		bad("title, description and category are required")
	}
	if c.InputSchema == nil || c.InputSchema.Type != "object" {
		bad("inputSchema must be an object schema")
	}
	if c.OutputSchema == nil {
		bad("outputSchema is required")
	}
	if len(c.Permissions) == 0 {
		bad("permissions must name at least one scope")
	}
	scopes := func(field string, list []string) {
		for i, s := range list {
			if !scopeRE.MatchString(s) {
				bad("%s[%d] must be an OAuth scope-token (printable ASCII, no space, quote or backslash)", field, i)
			}
			if slices.Contains(list[:i], s) {
				bad("%s[%d] is listed twice", field, i)
			}
		}
	}
	scopes("permissions", c.Permissions)
	scopes("dryRunPermissions", c.DryRunPermissions)
	switch {
	case c.DryRunPermissions == nil:
	case c.DryRun == ModeNone:
		bad("dryRunPermissions applies only to a tool that offers a dry run")
	case len(c.DryRunPermissions) == 0:
		bad("dryRunPermissions, when given, names at least one scope (omit it for a dry run that needs the permissions)")
	}
	if c.DryRun == ModeMandatory && !c.HasSideEffects() {
		bad("a mandatory dry run guards side effects: a tool with none has nothing to dry-run")
	}
	if c.AuditEvent == "" {
		bad("auditEvent is required")
	}
	if c.SideEffects.OnRepeat == "" {
		bad("sideEffects.onRepeat must say what a repeat does")
	}
	switch c.DryRun {
	case ModeNone, ModeOptional, ModeMandatory:
	default:
		bad("dryRun must be none, optional or mandatory")
	}
	switch c.Idempotency.Kind {
	case "inherent", "key", "natural":
	default:
		bad("idempotency.kind must be inherent, key or natural")
	}
	seen := map[failure.Code]bool{}
	for _, f := range c.FailureModes {
		if f.Code == "" || f.Meaning == "" {
			bad("every failure mode needs a code and a meaning")
		}
		if seen[f.Code] {
			bad("failure mode %q listed twice", f.Code)
		}
		seen[f.Code] = true
	}
	want, ok := tierRules[c.RiskLevel]
	if !ok {
		bad("unknown riskLevel %q", c.RiskLevel)
		return errors.Join(errs...)
	}
	if c.AutonomousExecution != want.autonomous {
		bad("autonomousExecution must be %v for tier %s", want.autonomous, c.RiskLevel)
	}
	if c.Confirmation != want.confirmation {
		bad("confirmation must be %q for tier %s", want.confirmation, c.RiskLevel)
	}
	if c.StepUpAuth.Required != want.stepUp {
		bad("stepUpAuth.required must be %v for tier %s", want.stepUp, c.RiskLevel)
	}
	switch {
	case c.Confirmation == ConfirmOutOfBand && len(c.ApproverRoles) == 0:
		bad("approverRoles must name at least one role a person needs to approve its calls (tier %s): without one, anyone the issuer knows could", c.RiskLevel)
	case c.Confirmation != ConfirmOutOfBand && len(c.ApproverRoles) > 0:
		bad("approverRoles applies only to a tool a person approves out of band (tier critical), not to tier %s", c.RiskLevel)
	}
	switch {
	case c.RiskLevel == Forbidden && len(c.AdminRoles) == 0:
		bad("adminRoles must name at least one role a person needs to run it (tier forbidden): without one, anyone the issuer knows could")
	case c.RiskLevel != Forbidden && len(c.AdminRoles) > 0:
		bad("adminRoles applies only to a forbidden tool, not to tier %s", c.RiskLevel)
	}
	for _, field := range []struct {
		name  string
		roles []string
	}{{"approverRoles", c.ApproverRoles}, {"adminRoles", c.AdminRoles}} {
		for i, r := range field.roles {
			if len(r) > MaxRoleLen || !roleRE.MatchString(r) {
				bad("%s[%d] must be lower-case dotted words of at most %d bytes, like collections.approver", field.name, i, MaxRoleLen)
			}
			if slices.Contains(field.roles[:i], r) {
				bad("%s[%d] is listed twice", field.name, i)
			}
		}
	}
	if c.View != "" {
		if err := ValidView(c.View); err != nil {
			bad("view: %v", err)
		}
		if c.RiskLevel != Low || c.HasSideEffects() {
			// A host may let the page call its tool again (MCP Apps tools
			// are callable from their view unless hidden): an effect must
			// never be one click inside an iframe away from the person who
			// was asked to confirm it.
			bad("view: only a read (tier low, no side effects) has a result view, not tier %s", c.RiskLevel)
		}
		if c.TextOnly() {
			bad("view: a view renders structuredContent, and a text-only tool has none")
		}
	}
	if c.Cost != nil {
		switch {
		case c.Cost.Per < 1 || c.Cost.Items == "":
			bad("cost needs per (items a unit covers, at least 1) and items (what is counted)")
		case c.RiskLevel == Low:
			// Low-tier calls spend only the request budgets of the HTTP
			// edge, decided before any argument is read.
			bad("cost weighs a tier budget's spend, and a low-tier call spends none")
		}
	}
	if c.RiskLevel == Low && len(c.SideEffects.Changes) > 0 {
		bad("a low-tier tool has no side effects")
	}
	if c.RiskLevel != Low && len(c.SideEffects.Changes) == 0 {
		bad("a %s-tier tool must list its side effects", c.RiskLevel)
	}
	if len(c.SideEffects.Changes) > 0 && c.Idempotency.Kind == "inherent" {
		bad("a tool with side effects needs key or natural idempotency")
	}
	return errors.Join(errs...)
}

type tierRule struct {
	autonomous   bool
	confirmation Confirmation
	stepUp       bool
}

// tierRules is the README's tier table as data.
var tierRules = map[Risk]tierRule{
	Low:       {autonomous: true, confirmation: ConfirmNone},
	Medium:    {autonomous: true, confirmation: ConfirmAdvised},
	High:      {autonomous: false, confirmation: ConfirmInBand},
	Critical:  {autonomous: false, confirmation: ConfirmOutOfBand, stepUp: true},
	Forbidden: {autonomous: false, confirmation: ConfirmHumanOnly, stepUp: true},
}

// TextOnly reports whether the tool answers with text alone, no structured
// result: its output schema is the empty schema {} (the conformance
// diagnostics). MCP then lists it with no outputSchema.
func (c *Contract) TextOnly() bool {
	return c.OutputSchema != nil && reflect.ValueOf(*c.OutputSchema).IsZero()
}

// VisibleToAgents reports whether the tool may appear in tools/list and
// /contracts. Every caller of the MCP endpoint counts as an agent here.
func (c *Contract) VisibleToAgents() bool { return c.RiskLevel != Forbidden }

// Allows reports whether code is one of the contract's failure modes.
func (c *Contract) Allows(code failure.Code) bool {
	return slices.ContainsFunc(c.FailureModes, func(f FailureMode) bool { return f.Code == code })
}

// Summary is the contract as published in a tools/list entry's _meta: every
// field but the two schemas, which the entry itself carries.
func (c *Contract) Summary() map[string]any {
	cp := *c
	cp.InputSchema, cp.OutputSchema = nil, nil
	b, err := json.Marshal(&cp)
	if err != nil {
		panic(fmt.Sprintf("contract %q does not marshal: %v", c.Name, err)) // static data
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		panic(err)
	}
	return m
}

// The arguments the pipeline reads itself, never the tool: Finish declares
// them in the input schema of every contract they apply to.
const (
	// ArgIdempotencyKey names the call for idempotent retries (docs/security-model.md, "Idempotency"):
	// every tool with side effects takes it; required when the contract's
	// idempotency kind is "key".
	ArgIdempotencyKey = "idempotencyKey"
	// ArgDryRun asks for what the call would do, changing nothing: every tool
	// whose dryRun mode is not none takes it.
	ArgDryRun = "dryRun"
	// ArgPlanHash cites the dry run a call of a tool whose dry run is
	// mandatory acts on: the planHash that dry run answered (PlanHashRule).
	ArgPlanHash = "planHash"
	// PlanHashLen is a plan hash's length: a SHA-256 in lower-case hex.
	PlanHashLen = 64
	// PlanHashRule says what a plan hash is, for schemas and messages.
	PlanHashRule = "64 lower-case hexadecimal characters"
	// MaxIdempotencyKeyLen bounds a key, in characters (internal/idempotency
	// holds its check to it).
	MaxIdempotencyKeyLen = 255
	// IdempotencyKeyRule says what a key may be, for schemas and messages.
	IdempotencyKeyRule = "1 to 255 printable characters"
)

// HasSideEffects reports whether the tool changes anything outside its
// return value: the pipeline then owns the call's transaction.
func (c *Contract) HasSideEffects() bool { return len(c.SideEffects.Changes) > 0 }

// KeyRequired reports whether a call must carry an idempotency key.
func (c *Contract) KeyRequired() bool { return c.Idempotency.Kind == "key" }

// tierFailureModes are the codes the pipeline's tier rules can answer, by
// the condition that makes the rule apply to a contract.
var (
	effectFailureModes = []FailureMode{
		{Code: failure.InvalidArguments, Meaning: "An argument does not match the input schema (idempotencyKey and dryRun included); field names it."},
		{Code: failure.IdempotencyConflict, Meaning: "The idempotencyKey was already used by this caller for this tool with other arguments; nothing was done."},
		{Code: failure.RequestInProgress, Meaning: "The first call with this idempotencyKey is still running; retry after retryAfterMs to get its answer.", Retryable: true},
	}
	inBandFailureModes = []FailureMode{
		{Code: failure.ConfirmationRequired, Meaning: "A person must confirm this call and the client cannot be asked in-band (an MCP revision older than 2026-07-28); the message shows what would change. Nothing was done.", Retryable: true},
		{Code: failure.ConfirmationDeclined, Meaning: "The person declined the confirmation; nothing was done."},
		{Code: failure.RequestStateInvalid, Meaning: "The retry's requestState is forged, expired, already used, or belongs to another caller, tool or arguments (a JSON-RPC error -32602); nothing was done."},
		{Code: failure.MissingClientCapability, Meaning: "The client did not declare the elicitation capability the confirmation needs (a JSON-RPC error -32021); nothing was done."},
	}
	outOfBandFailureModes = []FailureMode{
		{Code: failure.ApprovalRequired, Meaning: "A person must approve this exact call out of band, at the URL the message gives (with the approval id); retry the same call once it is approved. Nothing was done.", Retryable: true},
		{Code: failure.ApprovalMismatch, Meaning: "The retry names an approval given for other arguments (the idempotencyKey included); nothing was done."},
		{Code: failure.ApprovalRejected, Meaning: "A person rejected the call; nothing was done."},
		{Code: failure.ApprovalExpired, Meaning: "The approval expired before the call ran; nothing was done. Call again to ask for a new one."},
	}
	mandatoryDryRunFailureModes = []FailureMode{
		{Code: failure.DryRunRequired, Meaning: "The call cites no planHash, or one that names no recent dry run (dryRun: true) of these arguments by this caller: dry-run again and call with the planHash it answers. Nothing was done."},
		{Code: failure.PlanChanged, Meaning: "The plan recomputed when the call ran differs from the one the planHash names (what the dry run showed changed since): dry-run again, review, and call with the new planHash. Nothing was done."},
	}
	forbiddenFailureModes = []FailureMode{
		{Code: failure.PersonRequired, Meaning: "The caller is an AI agent: only a person runs this tool, through the admin API, its page or the CLI (over MCP it does not exist). Nothing was done."},
		{Code: failure.PersonLacksRole, Meaning: "The person holds none of adminRoles; nothing was done."},
		{Code: failure.InsufficientScope, Meaning: "The person's access token lacks a scope in permissions (HTTP 403 with WWW-Authenticate error=\"insufficient_scope\"); nothing was done."},
	}
	stepUpFailureModes = []FailureMode{
		{Code: failure.InsufficientUserAuthentication, Meaning: "The person's authentication is too weak or too old for this tool (RFC 9470); the message gives acr_values and max_age. Nothing was done."},
	}
)

// Scopes lists every scope the contracts in cs require, sorted, each once:
// what the server's discovery metadata offers (scopes_supported).
func Scopes(cs []*Contract) []string {
	return union(cs, func(c *Contract) []string { return c.Permissions })
}

// Roles lists every role the contracts in cs name (approverRoles and adminRoles), sorted, each
// once: what the development sign-in page offers a person by default.
func Roles(cs []*Contract) []string {
	return union(cs, func(c *Contract) []string { return append(slices.Clone(c.ApproverRoles), c.AdminRoles...) })
}

// union is every value field gives for the contracts in cs, sorted, each once.
func union(cs []*Contract, field func(*Contract) []string) []string {
	var out []string
	for _, c := range cs {
		out = append(out, field(c)...)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// Finish completes a declared contract and validates it, returning the
// contract the server uses. The tier decides autonomousExecution,
// confirmation and whether step-up is required (declarations leave them
// unset); the arguments the pipeline reads (idempotencyKey, dryRun,
// planHash) are declared in the input schema; and the failure modes of the pipeline and of
// every tier rule that applies are added.
func Finish(c Contract) (*Contract, error) {
	if rule, ok := tierRules[c.RiskLevel]; ok {
		c.AutonomousExecution = rule.autonomous
		c.Confirmation = rule.confirmation
		c.StepUpAuth.Required = rule.stepUp
	}
	c.FailureModes = slices.Clone(c.FailureModes)
	add := func(modes []FailureMode) {
		for _, f := range modes {
			if !c.Allows(f.Code) {
				c.FailureModes = append(c.FailureModes, f)
			}
		}
	}
	if c.HasSideEffects() {
		add(effectFailureModes)
	}
	switch c.Confirmation {
	case ConfirmInBand:
		add(inBandFailureModes)
	case ConfirmOutOfBand:
		add(outOfBandFailureModes)
	case ConfirmHumanOnly:
		add(forbiddenFailureModes)
	}
	if c.StepUpAuth.Required {
		add(stepUpFailureModes)
	}
	if c.DryRun == ModeMandatory {
		add(mandatoryDryRunFailureModes)
	}
	add(PipelineFailureModes)
	if c.InputSchema != nil && c.InputSchema.Type == "object" {
		c.InputSchema = withControlArgs(&c)
	}
	if err := c.Validate(); err != nil {
		return nil, err
	}
	return &c, nil
}

// withControlArgs returns c's input schema with the arguments the pipeline
// reads declared: a copy, the declaration is left as it was.
func withControlArgs(c *Contract) *jsonschema.Schema {
	if !c.HasSideEffects() && c.DryRun == ModeNone {
		return c.InputSchema
	}
	s := *c.InputSchema
	s.Properties = maps.Clone(s.Properties)
	if s.Properties == nil {
		s.Properties = map[string]*jsonschema.Schema{}
	}
	s.Required = slices.Clone(s.Required)
	if c.HasSideEffects() {
		minLen, maxLen := 1, MaxIdempotencyKeyLen
		desc := "Names this call for safe retries: a repeat with the same key and arguments returns the first answer and changes nothing again. "
		if c.Idempotency.Kind == "natural" {
			desc = "Names this call for safe retries: a repeat with the same key and arguments changes nothing again and answers as a repeat without a key does (the answer is not stored); other arguments under the key are refused. "
		}
		s.Properties[ArgIdempotencyKey] = &jsonschema.Schema{
			Type:        "string",
			MinLength:   &minLen,
			MaxLength:   &maxLen,
			Description: desc + IdempotencyKeyRule + ".",
		}
	}
	// The arguments a real call needs and a dry run does not: required, or,
	// with a dry run offered, required when dryRun is not true.
	var need []string
	if c.HasSideEffects() && c.KeyRequired() {
		need = append(need, ArgIdempotencyKey)
	}
	if c.DryRun == ModeMandatory {
		need = append(need, ArgPlanHash)
	}
	switch {
	case len(need) == 0:
	case c.DryRun == ModeNone:
		for _, n := range need {
			if !slices.Contains(s.Required, n) {
				s.Required = append(s.Required, n)
			}
		}
	default:
		dry := any(true)
		s.AllOf = append(slices.Clone(s.AllOf), &jsonschema.Schema{
			If:   &jsonschema.Schema{Required: []string{ArgDryRun}, Properties: map[string]*jsonschema.Schema{ArgDryRun: {Const: &dry}}},
			Else: &jsonschema.Schema{Required: need},
		})
	}
	if c.DryRun != ModeNone {
		s.Properties[ArgDryRun] = &jsonschema.Schema{
			Type:        "boolean",
			Description: "When true, runs every check and says what the call would do, changing nothing.",
		}
	}
	if c.DryRun == ModeMandatory {
		n := PlanHashLen
		s.Properties[ArgPlanHash] = &jsonschema.Schema{
			Type:        "string",
			MinLength:   &n,
			MaxLength:   &n,
			Pattern:     "^[0-9a-f]{64}$",
			Description: "Required unless dryRun is true: the planHash a dry run of these same arguments answered (" + PlanHashRule + "). The call acts only on that plan: if what it would do changed since, it is refused plan_changed; dry-run again.",
		}
	}
	return &s
}
