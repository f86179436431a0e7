// Package pipeline runs every tool call, whatever the transport, through one
// sequence of checks that enforces the tool's contract. MCP (the go-sdk
// handler and the fast path in internal/mcpapi), and later the CLI, the admin
// API and approvals, only adapt a Call to their wire and a Result back.
//
// Reading Do, top to bottom, is the whole security story of a call:
//
//  1. visibility — a forbidden tool does not exist for the MCP endpoint;
//  2. scopes — the token holds every permission the contract names;
//  3. tier rules — critical calls wait for a person's out-of-band approval
//     (step 7); step-up (RFC 9470) where the contract asks; an agent may not
//     run a high-tier tool alone;
//  4. tier budget — the caller's rate limit for the tool's tier, spent before
//     any work, so a refused call is never validated (a critical call spends
//     the write budget here, and the critical budget only when it asks a
//     person for an approval, step 7);
//  5. validation — the arguments against the input schema, strictly; a
//     call its contract weighs by its size (a cost rule) is sized then, and
//     spends the rest of its cost from the same budget before any work;
//  6. dry run — what the call would do, changing nothing;
//  7. confirmation — a critical call is recorded as a pending action and
//     answered with the URL where a person approves it (a URL-mode
//     elicitation, or approval_required for older clients) until a person
//     approved exactly that call; a high-tier call by an agent is answered
//     input_required (a sealed request state bound to caller, tool and
//     arguments) until the retry carries the person's accepted answer;
//  8. idempotency and execution — for a tool with side effects the pipeline
//     owns the transaction: key reserved, request state's nonce spent, effect,
//     audit event and stored response commit together, or none of them;
//  9. output check — the result against the output schema;
//  10. audit — one event per call, refused ones included.
//
// No tool repeats a step; compile refuses, at start, a tool whose contract
// asks for a check the pipeline does not implement.
package pipeline

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/cobranca/cobranca/internal/approval"
	"github.com/cobranca/cobranca/internal/auditlog"
	"github.com/cobranca/cobranca/internal/auth"
	"github.com/cobranca/cobranca/internal/canonical"
	"github.com/cobranca/cobranca/internal/contract"
	"github.com/cobranca/cobranca/internal/failure"
	"github.com/cobranca/cobranca/internal/idempotency"
	"github.com/cobranca/cobranca/internal/limits"
	"github.com/cobranca/cobranca/internal/reqstate"
	"github.com/cobranca/cobranca/internal/store"
)

// Client is what the caller's client can do, as it declared for this
// request.
type Client struct {
	// Protocol is the MCP revision of the request ("" when unknown).
	Protocol string
	// InputRequests: the client answers input-required results (MCP
	// 2026-07-28 and later).
	InputRequests bool
	// Elicitation, Sampling, Roots: the client capabilities declared.
	Elicitation, Sampling, Roots bool
	// ElicitationForm: the client shows form-mode elicitations (it declared
	// elicitation with form, or with no mode, which means form). A client
	// that declared URL mode only refuses a form (the TypeScript client 2.x
	// throws), so it is never sent one.
	ElicitationForm bool
	// ElicitationURL: the client opens URL-mode elicitations (it declared
	// elicitation with url), which a critical call's approval is.
	ElicitationURL bool
}

// Call is one tool call, as every transport hands it over.
type Call struct {
	Principal *auth.Principal // nil: no authenticated caller
	RequestID string
	Tool      string
	Args      json.RawMessage
	// Decoded, when not nil, is what the tool's Decoder already made of Args
	// (the MCP fast path decodes the bulk tool's arguments where they sit).
	Decoded *Decoded
	Client  Client
	// Responses are the client's answers to the input requests of the
	// previous round, raw, by request id; State is that round's sealed
	// request state, as sent back.
	Responses map[string]json.RawMessage
	State     string
	// Result, when not nil, is an empty buffer to encode the result into.
	Result []byte
	// Progress, when not nil, tells the client how far the call got (MCP
	// notifications/progress: the client sent a progress token, and its
	// transport can carry them); tools report through ReportProgress.
	Progress func(done, total int64, message string)
}

// Decoded is a Decoder's answer computed ahead of the pipeline.
type Decoded struct {
	Value any
	Err   error
}

// Kind is how a call ended, as the transport must answer it.
type Kind int

const (
	// Complete: the tool ran (or replayed); Structured and Summary.
	Complete Kind = iota
	// InputRequired: the client must answer Inputs and retry with State.
	InputRequired
	// ToolError: a failure the caller reads as a tool result (isError).
	ToolError
	// ProtocolError: a failure of the request itself (a JSON-RPC error in
	// MCP): an unknown tool, a request state that does not verify, a missing
	// client capability.
	ProtocolError
	// Denied: the token lacks scopes (Missing); MCP answers 403 at the HTTP
	// level when it can.
	Denied
)

// Input is one request for client input, as MCP 2026-07-28 spells it:
// {method, params}.
type Input struct {
	Method string          `json:"method"`
	Params json.RawMessage `json:"params,omitempty"`
}

// Result is the outcome of a call.
type Result struct {
	Kind       Kind
	Structured []byte  // Complete; nil for a text-only tool
	Summary    string  // Complete: the text content
	Media      []Media // Complete: content after the text (Effect.Media)
	Inputs     map[string]Input
	State      string
	Err        *failure.Error
	Missing    []string // Denied: the scopes missing
	// RequiredCapabilities, for a missing client capability, is the
	// capabilities object the client must declare.
	RequiredCapabilities map[string]any
}

// Codes of protocol errors the pipeline answers besides failure's.
const (
	CodeUnknownTool failure.Code = "unknown_tool"
)

// CallObserver counts calls for the metrics endpoint.
type CallObserver interface {
	ObserveCall(tool, tier, outcome string, d time.Duration)
}

// TierLimits enforces the per-principal budget of a tool's risk tier
// (internal/limits): a *failure.Error rate_limited when the budget is
// spent, or unavailable when it cannot be checked.
type TierLimits interface {
	Tier(ctx context.Context, principalKey string, risk contract.Risk) error
	// TierRest spends the rest of a call's cost, units in all, from the
	// budget Tier spent its first unit from, at once; its refusals are
	// Tier's, with the Retry-After of a retry of the whole call.
	TierRest(ctx context.Context, principalKey string, risk contract.Risk, units int64) error
	// Budgeted reports whether Tier spends a budget for the risk tier.
	Budgeted(risk contract.Risk) bool
	// Approval spends the budget of approvals asked for: once for each
	// pending approval a critical call creates.
	Approval(ctx context.Context, principalKey string) error
}

// Options configure a Pipeline.
type Options struct {
	Tools   []Tool
	Logger  *slog.Logger
	Auditor Auditor // nil: no audit (tests of the pipeline alone)
	Limits  TierLimits
	Metrics CallObserver
	Now     func() time.Time
	// DB runs the transactions of tools with side effects; Keys keeps their
	// idempotency keys and the spent request-state nonces, in DB.
	DB   store.DB
	Keys *idempotency.Store
	// States seals and opens request states (in-band confirmation, and
	// tools that ask the client for input).
	States *reqstate.Ring
	// StateTTL is how long a request state opens; default 10 minutes.
	StateTTL time.Duration
	// StepUp is the acr values a step-up demands (COBRANCA_STEPUP_ACR);
	// none means any, and only the contract's max age is checked.
	StepUp []string
	// Approvals keeps the pending actions of critical calls, in DB;
	// PublicURL (COBRANCA_PUBLIC_URL) is where a person opens one, at
	// PublicURL/approvals/{id}. A critical tool needs both.
	Approvals *approval.Store
	PublicURL string
}

// Pipeline runs calls. It is safe for concurrent use.
type Pipeline struct {
	log       *slog.Logger
	auditor   Auditor
	limits    TierLimits
	observe   CallObserver
	now       func() time.Time
	db        store.DB
	keys      *idempotency.Store
	states    *reqstate.Ring
	stateTTL  time.Duration
	stepUp    []string
	approvals *approval.Store
	publicURL string
	tools     map[string]*compiled
	order     []*compiled
	// hidden are the forbidden tools: never served, their calls audited.
	hidden map[string]*compiled
}

// New compiles every tool, refusing to start with one whose contract asks
// for a check this pipeline cannot make.
func New(opts Options) (*Pipeline, error) {
	p := &Pipeline{
		log: opts.Logger, auditor: opts.Auditor, limits: opts.Limits, observe: opts.Metrics,
		now: opts.Now, db: opts.DB, keys: opts.Keys, states: opts.States, stateTTL: opts.StateTTL,
		stepUp: opts.StepUp, approvals: opts.Approvals, publicURL: strings.TrimRight(opts.PublicURL, "/"),
		tools: map[string]*compiled{}, hidden: map[string]*compiled{},
	}
	if p.log == nil {
		p.log = slog.New(slog.DiscardHandler)
	}
	if p.now == nil {
		p.now = time.Now
	}
	if p.stateTTL <= 0 {
		p.stateTTL = 10 * time.Minute
	}
	if (p.db == nil) != (p.keys == nil) {
		return nil, errors.New("pipeline: DB and Keys go together")
	}
	var errs []error
	for _, t := range opts.Tools {
		ct, err := compile(t, p)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if p.tools[t.Contract.Name] != nil || p.hidden[t.Contract.Name] != nil {
			errs = append(errs, fmt.Errorf("tool %s registered twice", t.Contract.Name))
			continue
		}
		if !t.Contract.VisibleToAgents() {
			// The MCP endpoint treats every caller as an agent: a forbidden
			// tool is never served, and calling it is answered exactly like
			// calling a tool that does not exist (and audited).
			p.hidden[t.Contract.Name] = ct
			continue
		}
		if v := t.Contract.View; v != "" && slices.ContainsFunc(p.order, func(o *compiled) bool { return o.Contract.View == v }) {
			// A view is read with its tool's permissions: one tool each.
			errs = append(errs, fmt.Errorf("tool %s: its view %s is another tool's", t.Contract.Name, v))
			continue
		}
		p.tools[t.Contract.Name] = ct
		p.order = append(p.order, ct)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return p, nil
}

// Contracts returns the contracts of the tools served, in order.
func (p *Pipeline) Contracts() []*contract.Contract {
	out := make([]*contract.Contract, len(p.order))
	for i, t := range p.order {
		out[i] = t.Contract
	}
	return out
}

// View is a served tool's result view: the contract naming it
// (Contract.View, its URI; Permissions, what reading it needs) and its HTML.
type View struct {
	Contract *contract.Contract
	HTML     []byte
}

// Views returns the result views of the tools served, in their order.
func (p *Pipeline) Views() []View {
	var out []View
	for _, t := range p.order {
		if t.Contract.View != "" {
			out = append(out, View{Contract: t.Contract, HTML: t.View})
		}
	}
	return out
}

// Serves reports whether name is a tool the pipeline serves.
func (p *Pipeline) Serves(name string) bool { return p.tools[name] != nil }

// Known reports whether name is a tool the pipeline audits calls of: one it
// serves, or a forbidden one (answered as unknown).
func (p *Pipeline) Known(name string) bool { return p.tools[name] != nil || p.hidden[name] != nil }

// Decoder returns the Decoder of the served tool name when the transport may
// run it before the pipeline — a tool whose calls run nothing before
// decoding for this caller: it holds the scopes (otherwise the call is
// denied with nothing decoded), the tool is a read whose tier spends no
// budget (a budget is spent before any work) and needs no confirmation.
func (p *Pipeline) Decoder(pr *auth.Principal, name string) Decoder {
	t := p.tools[name]
	if t == nil || t.Decode == nil || t.Run == nil || !t.FastOutput || len(pr.MissingScopes(t.Contract.Permissions)) > 0 ||
		(p.limits != nil && p.limits.Budgeted(t.Contract.RiskLevel)) {
		return nil
	}
	return t.safeDecode
}

// FastEligible reports whether the call of name always ends Complete or
// ToolError with no client input (a low-tier read with a hand-written
// decoder): the only calls the MCP fast path may answer.
func (p *Pipeline) FastEligible(name string) bool {
	t := p.tools[name]
	return t != nil && t.Contract.RiskLevel == contract.Low && t.Run != nil && t.FastOutput
}

// Authorize returns the scopes the principal lacks for a call of the served
// tool name with args (none for a tool not served: that is answered as
// unknown; none for a dry run its dryRunPermissions allow, which the tool
// answers with what the real call would lack).
func (p *Pipeline) Authorize(pr *auth.Principal, name string, args json.RawMessage) []string {
	t := p.tools[name]
	if t == nil {
		return nil
	}
	missing := pr.MissingScopes(t.Contract.Permissions)
	if len(missing) > 0 && dryRunAllowed(t, pr, args) {
		return nil
	}
	return missing
}

// AuthorizeView returns the scopes the principal lacks to read the result
// view at uri (none when uri is no served tool's view): a view is its
// tool's, read by whoever may call the tool. The page holds no data, but a
// caller who may not call the tool has no use for it, and is answered as a
// call of the tool would be.
func (p *Pipeline) AuthorizeView(pr *auth.Principal, uri string) []string {
	for _, t := range p.order {
		if t.Contract.View != "" && t.Contract.View == uri {
			return pr.MissingScopes(t.Contract.Permissions)
		}
	}
	return nil
}

// Do runs one call: the numbered steps of the package doc, in order.
func (p *Pipeline) Do(ctx context.Context, c Call) Result {
	cl := p.begin(ctx, c)
	defer cl.endStep("")                        // the last step's span, if the call ended without a verdict (complete, input required)
	ctx = context.WithValue(ctx, callKey{}, cl) // Now and PrincipalFrom read it
	// 1. Visibility. A forbidden tool is answered exactly like an unknown
	// one, and its call audited all the same.
	cl.step(ctx, stepAuthorize)
	t := p.tools[c.Tool]
	if t == nil {
		res := Result{Kind: ProtocolError, Err: &failure.Error{Code: CodeUnknownTool, Field: "name", Message: "unknown tool"}}
		cl.endStep(string(CodeUnknownTool))
		if cl.tool = p.hidden[c.Tool]; cl.tool != nil {
			cl.finish(cl.record(auditlog.Rejected, CodeUnknownTool), res) // the answer stays the unknown tool's, whatever the audit does
		}
		return res
	}
	cl.tool, cl.info.Tool = t, t.Contract.Name
	cl.spanTool()
	// 2. Scopes; a dry run needs only the contract's dryRunPermissions, and
	// the tool says what the real call would lack (MissingPermissions).
	if missing := c.Principal.MissingScopes(t.Contract.Permissions); len(missing) > 0 {
		if !dryRunAllowed(t, c.Principal, c.Args) {
			return cl.denied(missing)
		}
		cl.missing = missing
	}
	// 3. Tier rules. A critical call, whoever makes it, runs once a person
	// approved it out of band (step 7); the approver passes the step-up
	// then, as a person making the call does here.
	approve := t.Contract.Confirmation == contract.ConfirmOutOfBand
	if t.Contract.StepUpAuth.Required && !c.Principal.IsAgent() {
		if fe := p.checkStepUp(t, c.Principal); fe != nil {
			return cl.fail(fe)
		}
	}
	confirm := t.Contract.Confirmation == contract.ConfirmInBand && c.Principal.IsAgent()
	// 4. Tier budget (a critical call's is the write budget: its own is
	// spent when it asks a person, step 7).
	if p.limits != nil {
		bctx := ctx
		if cl.traced && p.limits.Budgeted(t.Contract.RiskLevel) { // a span for a budget spent
			bctx = cl.step(ctx, stepBudget)
		}
		if err := p.limits.Tier(bctx, budgetKey(c.Principal), t.Contract.RiskLevel); err != nil {
			return cl.fail(err)
		}
	}
	// 5. Validation.
	cl.step(ctx, stepValidate)
	a, err := p.arguments(t, c)
	if err != nil {
		return cl.fail(err)
	}
	cl.args = a
	if cl.missing != nil && !a.dryRun { // dryRunAllowed read it so; the one reading holds
		return cl.denied(cl.missing)
	}
	if err := p.spendCost(ctx, cl); err != nil {
		return cl.fail(err)
	}
	// The request state of the previous round, when there is one. A state
	// opens once: its nonce is spent as soon as it verifies, in a
	// transaction of its own, whatever happens to the call afterwards (a
	// decline, a failure, a conflict): one answer of a person is worth one
	// attempt, never a second.
	var opened *reqstate.Opened
	if c.State == "" && c.Client.InputRequests {
		// Answers without the state of their round answer no round this
		// server asked: never read, they leave the call a first one, asked
		// afresh (SEP-2322: re-request what is missing).
		c.Responses = nil
	}
	if c.State != "" || len(c.Responses) > 0 {
		ctx := cl.step(ctx, stepRequestState)
		if !c.Client.InputRequests { // an older revision has no input rounds
			return cl.protocolError(&failure.Error{Code: failure.RequestStateInvalid, Field: "requestState", Message: "input responses and request states are MCP 2026-07-28 features; this request's revision has neither"})
		}
		if opened, err = p.openState(c, a); err != nil {
			return cl.protocolError(stateError(err))
		}
		// A client resending a retry whose answer it lost — the state
		// already spent by the call it carried — gets that call's stored
		// answer under its key, not a refusal that hides what was done.
		if t.Contract.HasSideEffects() && a.key != "" {
			if res, ended := p.peek(ctx, cl); ended {
				return res
			}
		}
		// An approval's state is not spent: the approval, executed once,
		// is what runs the call once; until then the state is retried.
		if !approve {
			if res, ended := p.spendOnce(ctx, cl, opened); ended {
				return res
			}
		}
	}
	// A key already used answers before anyone is asked anything, and
	// before a dry run says what would happen: its stored response (a
	// repeat), or the conflict — a person is never asked to confirm a
	// change that was made, or that the key forbids. A call that goes
	// straight to execution learns the same in its own transaction. (Not
	// the dry run of a tool whose dry run is mandatory: its key binds the
	// call with its plan, which the dry run is there to make.)
	planning := a.dryRun && t.Contract.DryRun == contract.ModeMandatory
	if t.Contract.HasSideEffects() && a.key != "" && opened == nil && !planning && (a.dryRun || confirm || approve) {
		if res, ended := p.peek(cl.step(ctx, stepIdempotency), cl); ended {
			return res
		}
	}
	// 6. Dry run.
	if a.dryRun {
		ctx := cl.step(ctx, stepDryRun)
		eff, err := safely(t, func() (Effect, error) { return t.DryRun(ctx, p.db, a.value) })
		if err == nil && t.Contract.DryRun == contract.ModeMandatory {
			err = p.recordDryRun(ctx, cl, eff.PlanHash)
		}
		return cl.complete(eff, err, c.Result)
	}
	// 7. Confirmation: a person approves a critical call out of band, or
	// confirms a high-tier call by an agent in-band.
	if approve {
		id, res, ended := p.approval(cl.step(ctx, stepApproval), cl, opened)
		if ended {
			return res
		}
		cl.approval = id
	}
	if confirm {
		ctx := cl.step(ctx, stepConfirmation)
		if opened == nil { // a person is asked to confirm only a call that cites its dry run
			if err := p.citedDryRun(ctx, p.db, cl); err != nil {
				return cl.fail(err)
			}
		}
		answered, seen, res := p.confirmation(ctx, cl, c, opened)
		if !answered {
			return res
		}
		cl.confirmed = &seen
	}
	// 8. Execution (with idempotency for a tool with side effects), 9. the
	// output check and 10. the audit.
	if t.Contract.HasSideEffects() {
		return p.execute(cl.step(ctx, stepExecute), cl)
	}
	if opened != nil {
		if len(opened.Payload) == 0 || opened.Payload[0] != markTool { // a confirmation's state opens no tool's round
			return cl.protocolError(&failure.Error{Code: failure.RequestStateInvalid, Field: "requestState", Message: "is not the state of this tool's input round"})
		}
		ctx = withInputs(ctx, c.Responses, opened.Payload)
	}
	ctx = context.WithValue(cl.step(ctx, stepRun), clientKey{}, c.Client)
	eff, err := safely(t, func() (Effect, error) {
		switch {
		case t.Logic != nil:
			return t.Logic(ctx, c.Args)
		case t.Read != nil:
			return t.Read(ctx, p.db, a.value)
		}
		return t.Run(ctx, a.value)
	})
	if need, ok := errors.AsType[*NeedInput](err); ok {
		return p.askInput(cl, need)
	}
	return cl.complete(eff, err, c.Result)
}

// callKey carries the call in progress in its context.
type callKey struct{}

// Now is the time by the clock of the pipeline running the call in ctx
// (Options.Now): tools read the time only through it, so that one call sees
// one clock, and tests can move it.
func Now(ctx context.Context) time.Time {
	if cl, ok := ctx.Value(callKey{}).(*callState); ok {
		return cl.p.now()
	}
	return time.Now()
}

// PrincipalFrom returns who makes the call in ctx (nil: no authenticated
// caller), for a tool that records who made a change: the subject, and the
// actor when an agent acts on the subject's behalf.
func PrincipalFrom(ctx context.Context) *auth.Principal {
	if cl, ok := ctx.Value(callKey{}).(*callState); ok {
		return cl.call.Principal
	}
	return nil
}

// ApprovalFrom returns the id of the person's approval the call in ctx
// executes under ("" for a call that needed none), for a tool that records
// it with its effect.
func ApprovalFrom(ctx context.Context) string {
	if cl, ok := ctx.Value(callKey{}).(*callState); ok {
		return cl.approval
	}
	return ""
}

// absent reports whether a call's arguments are missing: nothing, or null.
func absent(raw []byte) bool {
	b := bytes.TrimSpace(raw)
	return len(b) == 0 || bytes.Equal(b, []byte("null"))
}

// args are a call's arguments after validation.
type args struct {
	raw    []byte // as the tool reads them: without idempotencyKey, dryRun and planHash
	value  any
	key    string
	dryRun bool
	plan   string // the planHash cited ("" for a dry run, or a tool whose dry run is not mandatory)
	// plain is the SHA-256 of the arguments' canonical form (RFC 8785), what a
	// dry run is recorded under; digest is it with the plan hash, when one is
	// cited: the idempotency fingerprint. bound, with the key too, is what
	// request states are bound to (in hex, binding), and an approval names:
	// the exact call.
	plain   [sha256.Size]byte
	digest  [sha256.Size]byte
	bound   [sha256.Size]byte
	binding string
	hashed  bool
	// checked: control read the arguments whole (numbers exact, members
	// named once, valid Unicode), so fingerprint need not again.
	checked bool
	// canon: raw is already in canonical form (a Strict tool's), so
	// fingerprint digests it as it is.
	canon bool
}

// arguments validates c's arguments for t: the pipeline's own (key, dry
// run), then the tool's, by its Decoder.
func (p *Pipeline) arguments(t *compiled, c Call) (*args, error) {
	if absent(c.Args) && len(t.Contract.InputSchema.Required) == 0 && !t.FastOutput {
		// MCP makes arguments optional: a tool that requires no property
		// reads an absent (or null) arguments as {}, the call it is.
		c.Args = json.RawMessage("{}")
	}
	a := &args{raw: c.Args}
	if t.Logic != nil {
		return a, nil
	}
	if t.Contract.HasSideEffects() || t.Contract.DryRun != contract.ModeNone {
		if err := a.control(t.Contract, c.Args); err != nil {
			return nil, err
		}
	}
	if c.Decoded != nil {
		if c.Decoded.Err != nil {
			return nil, c.Decoded.Err
		}
		a.value = c.Decoded.Value
		return a, nil
	}
	if absent(a.raw) {
		if t.FastOutput { // the bulk tool's decoder names what is missing
			_, err := t.decode([]byte("null"))
			return nil, err
		}
		return nil, &failure.Error{Code: failure.InvalidArguments, Field: "arguments", Message: "is required: an object"}
	}
	if t.input != nil { // the schema describes the whole call, key and dry run included
		if err := t.validateInput(c.Args); err != nil {
			return nil, err
		}
		// The tool reads its arguments in canonical form (RFC 8785): a
		// whole number the schema takes as an integer (100.0, 1e2) is
		// written 100, as encoding/json reads an int.
		cj, err := canonical.Transform(a.raw)
		if err != nil {
			return nil, &failure.Error{Code: failure.InvalidArguments, Field: "arguments", Message: canonicalRule, Err: err}
		}
		a.raw, a.canon = cj, true
	}
	v, err := t.decode(a.raw)
	if err != nil {
		return nil, err
	}
	a.value = v
	return a, nil
}

// fingerprint computes the arguments' digests, once, when a step needs them.
func (a *args) fingerprint() error {
	if a.hashed {
		return nil
	}
	doc := a.raw
	if len(bytes.TrimSpace(doc)) == 0 {
		doc = []byte("{}")
	}
	if !a.checked {
		if err := exactNumbers(doc); err != nil {
			return err
		}
	}
	cj := doc
	if !a.canon {
		var err error
		if cj, err = canonical.Transform(doc); err != nil {
			return &failure.Error{Code: failure.InvalidArguments, Field: "arguments", Message: canonicalRule, Err: err}
		}
	}
	// No canonical form holds a NUL byte, nor does a key (ValidKey): the
	// NULs keep the parts apart.
	a.plain, a.hashed = sha256.Sum256(cj), true
	a.digest = a.plain
	var plan []byte
	if a.plan != "" {
		plan = append([]byte{0}, a.plan...)
		a.digest = sha256.Sum256(append(slices.Clip(cj), plan...))
	}
	a.bound = sha256.Sum256(append(append(append([]byte(a.key), 0), cj...), plan...))
	a.binding = hex.EncodeToString(a.bound[:])
	return nil
}

// budgetKey is whose budgets a call spends: its subject's through its client
// (an agent's budget is its client's on the user's behalf, whichever actor
// it names); "" for no caller.
func budgetKey(pr *auth.Principal) string {
	if pr == nil {
		return ""
	}
	return limits.PrincipalKey(pr.Subject, pr.ClientID)
}

// spendCost sizes a call its contract weighs by its size (Contract.Cost)
// and spends the rest of its cost — step 4 spent its first unit, before
// the size was known — from the same budget, before any of the call's work:
// a refused call does nothing more. A call of one unit spends nothing here.
func (p *Pipeline) spendCost(ctx context.Context, cl *callState) error {
	t := cl.tool
	if t.Contract.Cost == nil || p.limits == nil || !p.limits.Budgeted(t.Contract.RiskLevel) {
		return nil
	}
	ctx = cl.step(ctx, stepCost)
	n, err := safely(t, func() (int, error) { return t.Size(ctx, p.db, cl.args.value) })
	if err != nil {
		return err
	}
	cl.units = t.Contract.Cost.Units(n)
	return p.limits.TierRest(ctx, budgetKey(cl.call.Principal), t.Contract.RiskLevel, cl.units)
}

// checkStepUp is RFC 9470 for the human calling t.
func (p *Pipeline) checkStepUp(t *compiled, pr *auth.Principal) *failure.Error {
	req := p.stepUpOf(t.Contract)
	if err := auth.CheckStepUp(req, pr, p.now()); err != nil {
		return &failure.Error{Code: failure.InsufficientUserAuthentication, Message: req.Message() + "; sign in again and retry. Nothing was done", Err: err}
	}
	return nil
}

// internalError is what the caller sees of a server fault: a reference to
// the log line.
func internalError(requestID string) *failure.Error {
	return &failure.Error{Code: failure.Internal, Message: "internal error (ref " + requestID + ")"}
}
