package collections

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/cobranca/cobranca/internal/contract"
	"github.com/cobranca/cobranca/internal/customers"
	"github.com/cobranca/cobranca/internal/failure"
	"github.com/cobranca/cobranca/internal/ident"
	"github.com/cobranca/cobranca/internal/outbox"
	"github.com/cobranca/cobranca/internal/pipeline"
	"github.com/cobranca/cobranca/internal/reminders"
	"github.com/cobranca/cobranca/internal/store"
	"github.com/google/jsonschema-go/jsonschema"
)

// BulkSendName is the name of the tool that sends many reminder drafts in one approved call.
const BulkSendName = "collections.bulk_send_reminders"

// bulkAuditEvent is the one audit event of a bulk send.
const bulkAuditEvent = "email.external.bulk_sent"

// The arguments of bulk_send_reminders.
const (
	argDraftIDs = "draftIds"
	argFilter   = "filter"
	argPlanHash = contract.ArgPlanHash
)

// Bounds of a bulk send's arguments.
const (
	// maxBulkCustomers bounds filter.customerIds.
	maxBulkCustomers = 1000
	// maxDaysOverdue bounds filter.minDaysOverdue: ten years.
	maxDaysOverdue = 3650
	// maxSamples bounds a dry run's sampleMessages.
	maxSamples = 3
	// draftsPerUnit is how many drafts one unit of the write budget covers in a call's cost:
	// planning 50 drafts takes about as long as a plain write call (BenchmarkBulkDryRun;
	// docs/benchmarks.md, "Cost-weighted calls").
	draftsPerUnit = 50
)

// bulkArgs are bulk_send_reminders' arguments (idempotencyKey, dryRun and planHash are the
// pipeline's): draftIds, or a filter.
type bulkArgs struct {
	DraftIDs []string    `json:"draftIds,omitempty"`
	Filter   *bulkFilter `json:"filter,omitempty"`
}

// bulkFilter selects open drafts: every condition given holds.
type bulkFilter struct {
	CustomerIDs    []string `json:"customerIds,omitempty"`
	MinDaysOverdue *int     `json:"minDaysOverdue,omitempty"`
	Tone           *string  `json:"tone,omitempty"`
}

func bulkSendDecode(b []byte) (any, int, error) { return checked(b, (*bulkArgs).check) }

// check does what the input schema cannot: customer ids by the whole text rule. (The schema
// holds the rest: draftIds or filter, exactly one; no id twice.)
func (a *bulkArgs) check() error {
	if a.Filter == nil {
		return nil
	}
	for i, id := range a.Filter.CustomerIDs {
		if p := customers.IDProblem(id); p != "" {
			return &failure.Error{Code: failure.InvalidArguments, Field: argFilter + ".customerIds[" + strconv.Itoa(i) + "]", Message: p}
		}
	}
	return nil
}

// sampleMessage is one message of a dry run's samples.
type sampleMessage struct {
	To          string `json:"to"`
	Subject     string `json:"subject"`
	PreviewText string `json:"previewText"`
	// Pix is the message's PIX code; absent when it carries none.
	Pix *pixAnswer `json:"pix,omitempty"`
	// draft is the sample's draft: the preview in words says its PIX code.
	draft reminders.Record
}

// planAnswer is what both of bulk_send_reminders' answers say of the plan.
type planAnswer struct {
	DryRun         bool       `json:"dryRun"`
	RecipientCount int        `json:"recipientCount"`
	Warnings       []string   `json:"warnings"`
	PlanHash       string     `json:"planHash"`
	Skipped        skipCounts `json:"skipped"`
}

// dryRunPart is what a dry run adds: with planAnswer, seed 000's preview of emails.bulk_send,
// field for field.
type dryRunPart struct {
	SampleMessages      []sampleMessage `json:"sampleMessages"`
	MissingPermissions  []string        `json:"missingPermissions"`
	ExpectedSideEffects []string        `json:"expectedSideEffects"`
	EstimatedDurationMs int64           `json:"estimatedDurationMs"`
}

// sentPart is what the real call adds: the bulk send and how many it queued.
type sentPart struct {
	BulkID    string `json:"bulkId"`
	Queued    int    `json:"queued"`
	CreatedAt string `json:"createdAt"`
}

type (
	dryRunAnswer struct {
		planAnswer
		dryRunPart
	}
	sentAnswer struct {
		planAnswer
		sentPart
	}
	// bulkAnswer is the shape of both answers, which the one output schema describes.
	bulkAnswer struct {
		planAnswer
		dryRunPart
		sentPart
	}
)

// bulkTool is bulk_send_reminders served over mail (nil: the contract only).
type bulkTool struct {
	mail *outbox.Outbox
	// required is COBRANCA_LEDGER_REQUIRED: drafts naming invoices the ledger does not know
	// are skipped.
	required bool
}

// estimate is about how long delivering n messages takes, and how that is counted
// (outbox.Estimate).
func (bt bulkTool) estimate(n int) (time.Duration, string) {
	if bt.mail == nil {
		return 0, "no outbox"
	}
	return bt.mail.Estimate(n), bt.mail.EstimateRule()
}

// samples are the first messages of p, at most maxSamples.
func samples(p *bulkPlan) []sampleMessage {
	out := []sampleMessage{}
	for _, d := range p.send[:min(len(p.send), maxSamples)] {
		out = append(out, sampleMessage{To: d.To.Email, Subject: d.Subject, PreviewText: preview(d.Body), Pix: pixOf(d), draft: d})
	}
	return out
}

// bulkSize counts the drafts a call selects, for its cost (contract.Cost): draftIds as given, or
// the open drafts the filter selects, counted without reading them, up to one
// more than a bulk send takes (the plan refuses that many).
func bulkSize(ctx context.Context, q store.Querier, v any) (int, error) {
	a := v.(*bulkArgs)
	if a.Filter == nil {
		return len(a.DraftIDs), nil
	}
	sel, err := a.selection(customers.Today(pipeline.Now(ctx)))
	if err != nil {
		return 0, err
	}
	return reminders.Count(ctx, q, sel, reminders.MaxBulk+1)
}

// dryRun answers what the call would do, changing nothing.
func (bt bulkTool) dryRun(ctx context.Context, q store.Querier, v any) (pipeline.Effect, error) {
	a := v.(*bulkArgs)
	p, err := planBulk(ctx, q, a, customers.Today(pipeline.Now(ctx)), bt.required)
	if err != nil {
		return pipeline.Effect{}, err
	}
	d, _ := bt.estimate(len(p.send))
	missing := pipeline.MissingPermissions(ctx)
	if missing == nil {
		missing = []string{}
	}
	out := &dryRunAnswer{
		planAnswer: planAnswer{DryRun: true, RecipientCount: len(p.send), Warnings: p.warnings(), PlanHash: p.hash, Skipped: p.skipped},
		dryRunPart: dryRunPart{SampleMessages: samples(p), MissingPermissions: missing, ExpectedSideEffects: p.sideEffects(), EstimatedDurationMs: d.Milliseconds()},
	}
	return pipeline.Effect{
		Structured: out,
		Summary: fmt.Sprintf("Dry run: %s would be sent, %s skipped; nothing was sent. Cite planHash in the real call.",
			count(len(p.send), "message", "messages"), count(p.skipped.total(), "draft", "drafts")),
		Details:  map[string]int64{"recipientCount": int64(len(p.send)), "draftsSkipped": int64(p.skipped.total())},
		PlanHash: p.hash,
	}, nil
}

// preview is what the person approves: the dry run's preview in words — counts, samples,
// warnings, side effects, duration and plan hash — whatever the bulk's size.
func (bt bulkTool) preview(ctx context.Context, q store.Querier, v any) (string, error) {
	a := v.(*bulkArgs)
	p, err := planBulk(ctx, q, a, customers.Today(pipeline.Now(ctx)), bt.required)
	if err != nil {
		return "", err
	}
	if cited := citedPlan(ctx); cited != "" && cited != p.hash {
		// Refused before a person is asked to approve what the dry run did not show.
		return "", planChanged(staleWhy)
	}
	if len(p.send) == 0 {
		return "", emptyBulk(a)
	}
	d, rule := bt.estimate(len(p.send))
	return p.describe(samples(p), d, rule), nil
}

// staleWhy says why a plan changed since its dry run.
const staleWhy = "the plan is not the one planHash names: a draft, a customer's contact status, an address or an invoice in the ledger (a payment, a dispute, a promise) changed since the dry run"

// emptyBulk refuses a call whose plan sends nothing.
func emptyBulk(a *bulkArgs) *failure.Error {
	f := argDraftIDs
	if a.Filter != nil {
		f = argFilter
	}
	return &failure.Error{Code: reminders.CodeBulkEmpty, Field: f, Message: "selects no draft that may be sent now (see the dry run's warnings); nothing was done"}
}

// progressStep is how many messages a bulk send enqueues between two progress reports: 1% of
// them, at least 100.
func progressStep(n int) int { return max(100, n/100) }

// execute is the real call, in the pipeline's transaction: it computes the plan again, locking
// the customers and the drafts as send_reminder does, refuses when it is not the plan the call
// cites, then enqueues every message (reporting progress), records the bulk send and moves its
// drafts to queued. The pipeline writes the one audit event in the same commit; a refusal rolls
// all of it back.
func (bt bulkTool) execute(ctx context.Context, tx store.Tx, v any) (pipeline.Effect, error) {
	a := v.(*bulkArgs)
	now := pipeline.Now(ctx)
	pr := pipeline.PrincipalFrom(ctx)
	if pr == nil { // the pipeline refuses a call without a caller before this
		return pipeline.Effect{}, errors.New("bulk_send_reminders: no caller")
	}
	p, err := planBulk(ctx, tx, a, customers.Today(now), bt.required)
	if err != nil {
		return pipeline.Effect{}, err
	}
	if cited := citedPlan(ctx); p.hash != cited {
		return pipeline.Effect{}, planChanged(staleWhy)
	}
	if len(p.send) == 0 {
		return pipeline.Effect{}, emptyBulk(a)
	}
	b, err := sendPlan(ctx, tx, bt.mail, p, pr.Subject, pr.Actor, pipeline.ApprovalFrom(ctx), now, func(done, n int) {
		pipeline.ReportProgress(ctx, int64(done), int64(n), fmt.Sprintf("%d of %d messages queued", done, n))
	})
	if err != nil {
		return pipeline.Effect{}, err
	}
	n := b.Total
	return pipeline.Effect{
		Structured: &sentAnswer{
			planAnswer: planAnswer{RecipientCount: n, Warnings: p.warnings(), PlanHash: p.hash, Skipped: p.skipped},
			sentPart:   sentPart{BulkID: b.ID, Queued: n, CreatedAt: b.CreatedAt.Format(time.RFC3339Nano)},
		},
		Summary: fmt.Sprintf("Bulk send %s: %s queued for sending, %s skipped; collections.get_bulk_send reports delivery.",
			b.ID, count(n, "message", "messages"), count(p.skipped.total(), "draft", "drafts")),
		Details: map[string]int64{"messagesQueued": int64(n), "draftsSkipped": int64(p.skipped.total())},
	}, nil
}

// sendPlan enqueues every message of p (reporting progress after each chunk), records the bulk
// send, by and actor having asked it and approvalID approved it, and moves its drafts to queued,
// in tx: bulk_send_reminders' real call, and an approved schedule batch (Batcher.Send). The
// messages are not delivered before at (zero: at once).
func sendPlan(ctx context.Context, tx store.Tx, mail *outbox.Outbox, p *bulkPlan, by, actor, approvalID string, now time.Time, progress func(done, n int)) (reminders.Bulk, error) {
	n := len(p.send)
	entries := make([]reminders.BulkEntry, 0, n)
	step := progressStep(n)
	for start := 0; start < n; start += step {
		chunk := p.send[start:min(start+step, n)]
		ms := make([]outbox.Message, len(chunk))
		for i, d := range chunk {
			ms[i] = reminderMessage(d)
		}
		es, err := mail.EnqueueMany(ctx, tx, ms)
		if err != nil {
			// A stored draft the outbox refuses is the server's fault, not the caller's
			// argument: never answered as invalid_arguments (not wrapped).
			return reminders.Bulk{}, fmt.Errorf("bulk_send_reminders: enqueue: %v", err)
		}
		for i, e := range es {
			entries = append(entries, reminders.BulkEntry{ID: chunk[i].ID, OutboxID: int64(e.ID), MessageID: e.MessageID})
		}
		progress(len(entries), n)
	}
	b := reminders.Bulk{ID: ident.New(reminders.BulkIDPrefix), By: by, Actor: actor, ApprovalID: approvalID,
		PlanHash: p.hash, Total: n, Skipped: p.skipped.total(), CreatedAt: time.UnixMicro(now.UnixMicro()).UTC()}
	if err := reminders.CreateBulk(ctx, tx, b, entries); err != nil {
		return reminders.Bulk{}, err
	}
	return b, nil
}

// bulkPermissions are bulk_send_reminders' permissions.
var bulkPermissions = []string{"reminders:send"}

func bulkSendContract() contract.Contract {
	return contract.Contract{
		Name:            BulkSendName,
		ContractVersion: "1.3.0",
		Title:           "Send many reminder drafts by e-mail",
		Description: "Use when many reminder drafts should go to their customers at once: named by draftIds, or chosen by a filter " +
			"(customerIds, minDaysOverdue, tone) among the open drafts; at most " + strconv.Itoa(reminders.MaxBulk) + ". A dry run is mandatory: " +
			"call first with dryRun true — it answers recipientCount, sampleMessages, warnings, missingPermissions, expectedSideEffects, " +
			"estimatedDurationMs and planHash, changing nothing — then make the real call with the same arguments, planHash and an " +
			"idempotencyKey. A person approves that call out of band (it answers with the approval's URL, or approval_required on older " +
			"clients), seeing the dry run's preview; retry exactly the same call once approved. Every call — the dry run, the call asking for " +
			"approval and the approved retry — spends one unit of the caller's write budget per " + strconv.Itoa(draftsPerUnit) + " drafts it selects (cost): " +
			"a call over the budget is refused rate_limited, its retryAfterMs saying when the whole call fits. Drafts whose customer or address may not " +
			"be contacted (do_not_contact, paused), or whose address had a message refused for good, are skipped; so are draftIds no " +
			"longer open, and drafts naming an invoice the receivables ledger says is paid, void or written off (settled), or disputed, " +
			"under a pending promise to pay or owing another amount than the draft says (stale) — and, where the server requires the ledger " +
			"(COBRANCA_LEDGER_REQUIRED), one it does not know (notInLedger); each with a warning. If any of that changed since the dry run, the call is refused with plan_changed: dry-run again. With a progress " +
			"token the call reports progress while it enqueues; collections.get_bulk_send then reports delivery.",
		Category:      "communication",
		RiskLevel:     contract.Critical,
		StepUpAuth:    contract.StepUp{MaxAgeSeconds: sendStepUpMaxAge, When: "Always, for the person who approves the call: signed in within the last 5 minutes, with an acr the server accepts (COBRANCA_STEPUP_ACR)."},
		InputSchema:   bulkInputSchema(),
		OutputSchema:  bulkOutputSchema(),
		Permissions:   bulkPermissions,
		ApproverRoles: []string{ApproverRole},
		SideEffects: contract.SideEffects{
			Changes: []string{
				"Sends one e-mail outside cobranca per draft the plan sends (recipientCount): each draft's subject and body, as written, to its recipient. All are put in the outbox in the call's transaction and leave once it commits; transient delivery failures are retried, every attempt with the message's own Message-ID.",
				"Each of those drafts becomes queued, recorded with the bulk send's id, who asked and the approval, then sent or undeliverable as delivery ends; a bulk send is recorded (its id, who asked, the approval, the plan hash, the counts) for collections.get_bulk_send.",
			},
			External: true,
			OnRepeat: "A repeat with the same idempotencyKey and arguments returns the first answer and sends nothing again. A draft is sent once: " +
				"a later bulk send skips it (not open), and its plan, hence its planHash, differs.",
		},
		AuditEvent: bulkAuditEvent,
		FailureModes: []contract.FailureMode{
			{Code: failure.InvalidArguments, Meaning: "An argument does not match the input schema (draftIds and filter both or neither given, an id named twice, a bound), or a customer id has white space at an end; field names it."},
			{Code: reminders.CodeDraftNotFound, Meaning: "An id of draftIds names no draft (field draftIds[i]); nothing was done."},
			{Code: reminders.CodeBulkTooLarge, Meaning: "The filter selects more than " + strconv.Itoa(reminders.MaxBulk) + " open drafts (field filter); narrow it and send the rest in another call. Nothing was done."},
			{Code: reminders.CodeBulkEmpty, Meaning: "The real call's selection holds no draft that may be sent now (all skipped, or none selected; field draftIds or filter); nothing was done, and no person is asked."},
		},
		Idempotency: contract.Idempotency{Kind: "key", Description: "idempotencyKey is required for the real call: a retry with the same key and arguments " +
			"returns the first answer and sends nothing again; the approval is for the call with that key. Besides, a draft is sent once."},
		DryRun:            contract.ModeMandatory,
		DryRunPermissions: []string{"collections:read"},
		Cost:              &contract.Cost{Per: draftsPerUnit, Items: "drafts the call selects: draftIds, or the open drafts filter selects"},
	}
}

// citedPlan is the plan hash the call cites.
func citedPlan(ctx context.Context) string { return pipeline.PlanHashFrom(ctx) }

func bulkInputSchema() *jsonschema.Schema {
	s := mustFor[bulkArgs]()
	closeObject(s)
	s.Required = nil
	s.Description = "Which drafts to send: draftIds, or a filter among the open drafts — exactly one of the two."
	s.If = &jsonschema.Schema{Required: []string{argDraftIDs}}
	s.Then = &jsonschema.Schema{Not: &jsonschema.Schema{Required: []string{argFilter}}}
	s.Else = &jsonschema.Schema{Required: []string{argFilter}}
	noNull(s, argDraftIDs, argFilter)
	ids := s.Properties[argDraftIDs]
	ids.MinItems, ids.MaxItems, ids.UniqueItems = ptr(1), ptr(reminders.MaxBulk), true
	draftIDRules(ids.Items)
	ids.Description = fmt.Sprintf("The drafts to send, 1 to %d, each once (prepare_reminder's draftId). A draft no longer open is skipped, "+
		"with a warning; an id that names no draft refuses the call.", reminders.MaxBulk)
	f := s.Properties[argFilter]
	closeObject(f)
	f.Required = nil
	f.Description = fmt.Sprintf("Selects the open drafts (state draft) for which every condition given holds; {} selects every open draft. "+
		"At most %d may be selected.", reminders.MaxBulk)
	noNull(f, "customerIds", "minDaysOverdue", "tone")
	cids := f.Properties["customerIds"]
	cids.MinItems, cids.MaxItems, cids.UniqueItems = ptr(1), ptr(maxBulkCustomers), true
	cids.Items = customerIDSchema()
	cids.Description = fmt.Sprintf("Only the drafts of these customers, 1 to %d, each once.", maxBulkCustomers)
	md := f.Properties["minDaysOverdue"]
	md.Type = "integer"
	md.Minimum, md.Maximum = ptr(0.0), ptr(float64(maxDaysOverdue))
	md.Description = fmt.Sprintf("Only the drafts with an invoice at least this many days overdue today (UTC): due on or before today minus "+
		"this many days; 0 is due today or earlier. 0 to %d.", maxDaysOverdue)
	tone := f.Properties["tone"]
	tone.Enum = enum(reminders.Tones())
	tone.Description = "Only the drafts written in this tone."
	return s
}

func bulkOutputSchema() *jsonschema.Schema {
	s := mustFor[bulkAnswer]()
	closeObject(s)
	s.Required = []string{"dryRun", "recipientCount", "warnings", "planHash", "skipped"}
	s.Description = "A dry run's preview (dryRun true: sampleMessages, missingPermissions, expectedSideEffects, estimatedDurationMs), " +
		"or the real call's bulk send (dryRun false: bulkId, queued, createdAt); both say recipientCount, warnings, planHash and skipped."
	p := s.Properties
	p["dryRun"].Description = "true: nothing was done, this is what the call would do; false: the messages are queued."
	p["recipientCount"].Minimum = ptr(0.0)
	p["recipientCount"].Description = "How many messages the plan sends: one per draft sent (two drafts to one address are two messages)."
	sm := p["sampleMessages"]
	sm.Types, sm.Type = nil, "array"
	sm.MaxItems = ptr(maxSamples)
	sm.Description = fmt.Sprintf("Dry run: the first messages of the plan (by draft id), at most %d.", maxSamples)
	closeObject(sm.Items)
	sm.Items.Properties["to"].Format = "email"
	sm.Items.Properties["to"].Description = "The draft's recipient."
	sm.Items.Properties["subject"].Description = "The draft's subject."
	sm.Items.Properties["previewText"].Description = fmt.Sprintf("The start of the draft's body: its first %d characters, and \"…\" when more follow.", previewRunes)
	pixAnswerRules(sm.Items.Properties["pix"])
	sm.Items.Required = slices.DeleteFunc(sm.Items.Required, func(n string) bool { return n == "pix" })
	w := p["warnings"]
	w.Types, w.Type = nil, "array"
	w.Description = "What a person should know before sending, in counts, never names or addresses: recipients greeted with the fallback " +
		"greeting (no first name), drafts skipped for a suppressed (undeliverable) address, a do_not_contact or paused customer or address, " +
		"and draftIds not open."
	mp := p["missingPermissions"]
	mp.Types, mp.Type = nil, "array"
	mp.Description = "Dry run: the permissions (OAuth scopes) the real call needs that the caller's token lacks; empty when none."
	se := p["expectedSideEffects"]
	se.Types, se.Type = nil, "array"
	se.Description = "Dry run: what the real call would change, in counts: e-mails sent, drafts queued, the bulk send recorded, the one audit event."
	ed := p["estimatedDurationMs"]
	ed.Minimum = ptr(0.0)
	ed.Description = "Dry run: about how long the outbox of one server process takes to deliver the messages once queued, in " +
		"milliseconds, from its configuration and this project's benchmark: what the queue's own work took a message, or, if longer, " +
		"each round of as many messages as it has delivery workers taking the longer of its queue's fetch cooldown and what one message " +
		"took to a local mail server. A remote mail server is slower; more replicas deliver faster."
	ph := p["planHash"]
	ph.Pattern = "^[0-9a-f]{64}$"
	ph.Description = "SHA-256 (hex) of exactly what the call sends and skips: each draft's id, recipient, subject and body digests, and " +
		"each skip's reason. The real call cites it as planHash; it runs only while the plan is still the same."
	sk := p["skipped"]
	closeObject(sk)
	sk.Description = "Drafts of the selection the plan skips, by reason."
	for name, what := range map[string]string{
		"notOpen":      "draftIds naming a draft already queued, sent, undeliverable or discarded",
		"doNotContact": "drafts whose customer, or a customer with the same address, asked not to be contacted",
		"paused":       "drafts whose customer, or a customer with the same address, is paused",
		"suppressed":   "drafts to an address an earlier message to which was refused for good (undeliverable)",
		"settled":      "drafts naming an invoice the receivables ledger says is paid, void or written off",
		"stale":        "drafts naming an invoice the receivables ledger says is disputed, under a pending promise to pay, or owing another amount than the draft says",
		"notInLedger":  "drafts naming an invoice the receivables ledger does not know, skipped because the server requires the ledger (COBRANCA_LEDGER_REQUIRED)",
	} {
		sk.Properties[name].Minimum = ptr(0.0)
		sk.Properties[name].Description = "How many " + what + "."
	}
	bid := p["bulkId"]
	bid.Pattern = ident.Pattern(reminders.BulkIDPrefix)
	bid.Description = "Real call: the bulk send's id, for collections.get_bulk_send: " + ident.Describe(reminders.BulkIDPrefix) + "."
	q := p["queued"]
	q.Minimum = ptr(1.0)
	q.Description = "Real call: how many messages were queued (= recipientCount)."
	ca := p["createdAt"]
	ca.Format = "date-time"
	ca.Description = "Real call: when the bulk send was queued (RFC 3339, UTC)."
	return s
}

// finishedBulkSend is bulk_send_reminders' contract, finished once per process, as
// finishedContracts.
var finishedBulkSend = sync.OnceValues(func() (*contract.Contract, error) {
	return contract.Finish(bulkSendContract())
})

// bulkTools are bulk_send_reminders over mail: without an outbox (nil: `cobranca contracts`)
// it has no Execute, and a pipeline refuses to serve it.
func bulkTools(mail *outbox.Outbox, required bool) (pipeline.Tool, error) {
	c, err := finishedBulkSend()
	if err != nil {
		return pipeline.Tool{}, err
	}
	bt := bulkTool{mail: mail, required: required}
	t := pipeline.Tool{Contract: c, Decode: bulkSendDecode, Preview: bt.preview, DryRun: bt.dryRun, Size: bulkSize}
	if mail != nil {
		t.Execute, t.Outbox = bt.execute, mail
	}
	return t, nil
}
