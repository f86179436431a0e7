package collections

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/cobranca/cobranca/internal/contract"
	"github.com/cobranca/cobranca/internal/customers"
	"github.com/cobranca/cobranca/internal/failure"
	"github.com/cobranca/cobranca/internal/ledger"
	"github.com/cobranca/cobranca/internal/outbox"
	"github.com/cobranca/cobranca/internal/pipeline"
	"github.com/cobranca/cobranca/internal/reminders"
	"github.com/cobranca/cobranca/internal/store"
	"github.com/google/jsonschema-go/jsonschema"
)

// SendReminderName is the name of the tool that sends a reminder draft by e-mail.
const SendReminderName = "collections.send_reminder"

// ApproverRole is the role a person needs to approve or reject a critical collections call
// (send_reminder's approverRoles): the issuer's roles claim names it for the people of the
// finance team who may let a message leave, and no one else.
const ApproverRole = "collections.approver"

// sendStepUpMaxAge is how recently the person approving a send must have signed in.
const sendStepUpMaxAge = 300

// argDraftID names the draft in send_reminder's arguments.
const argDraftID = "draftId"

// SendTools returns the tools that send: collections.send_reminder and
// collections.bulk_send_reminders, enqueueing their messages in mail, under the settings s
// (s.LedgerRequired). Without an outbox (nil: `cobranca contracts`, which delivers nothing)
// the tool has no Execute, and a pipeline refuses to serve it.
func SendTools(s Settings, mail *outbox.Outbox) ([]pipeline.Tool, error) {
	c, err := finishedSendReminder()
	if err != nil {
		return nil, err
	}
	t := pipeline.Tool{Contract: c, Decode: pipeline.Strict[sendArgs](), Preview: sendReminderPreview(s.LedgerRequired)}
	if mail != nil {
		t.Execute, t.Outbox = sendReminderExecute(mail, s.LedgerRequired), mail
	}
	bt, err := bulkTools(mail, s.LedgerRequired)
	if err != nil {
		return nil, err
	}
	return []pipeline.Tool{t, bt}, nil
}

// finishedSendReminder is send_reminder's contract, finished once per process, as
// finishedContracts.
var finishedSendReminder = sync.OnceValues(func() (*contract.Contract, error) {
	return contract.Finish(sendReminderContract())
})

func sendReminderContract() contract.Contract {
	return contract.Contract{
		Name:            SendReminderName,
		ContractVersion: "2.1.0",
		Title:           "Send a reminder draft by e-mail",
		Description: "Use when a reminder draft (prepare_reminder's draftId, still a draft) should go to its customer by e-mail. " +
			"A person approves this exact call first, out of band: the call answers with the approval's URL (a URL-mode elicitation, " +
			"or the error approval_required on older clients); once the person approved it, retry exactly the same call (same draftId " +
			"and idempotencyKey) to send it. The draft goes once, as written, to the name and address it was written for. It is " +
			"refused, also at the moment it is sent, when the customer or any customer with the same e-mail address asked not to be " +
			"contacted or is paused, and when the receivables ledger says an invoice of the draft is no longer owed as the draft says: " +
			"paid, void or written off (invoice_settled); disputed, under a pending promise to pay, or with another open amount (draft_stale). " +
			"The message has a plain-text and an HTML part; a draft with a PIX code carries it as copia-e-cola text and as a QR code, " +
			"and the approval's preview shows its amount, txid and code (the approval page draws the QR). " +
			"The approval's preview shows each invoice's ledger state; an invoice the ledger does not know is marked so (its payment cannot " +
			"be checked), and refused where the server requires the ledger (COBRANCA_LEDGER_REQUIRED).",
		Category:      "communication",
		RiskLevel:     contract.Critical,
		StepUpAuth:    contract.StepUp{MaxAgeSeconds: sendStepUpMaxAge, When: "Always, for the person who approves the call: signed in within the last 5 minutes, with an acr the server accepts (COBRANCA_STEPUP_ACR)."},
		InputSchema:   sendInputSchema(),
		OutputSchema:  sendOutputSchema(),
		Permissions:   []string{"reminders:send"},
		ApproverRoles: []string{ApproverRole},
		SideEffects: contract.SideEffects{
			Changes: []string{
				"Sends one e-mail outside cobranca: the draft's subject and body, as the person approved them, to the draft's recipient. It is put in the outbox in the call's transaction and leaves once that commits; transient delivery failures are retried, every attempt with the same Message-ID.",
				"The draft becomes queued (with its outbox entry, Message-ID, who asked and the approval), then sent when the mail server accepts the message, or undeliverable, with the server's reason, when it refuses it for good.",
			},
			External: true,
			OnRepeat: "A repeat with the same idempotencyKey and arguments returns the first answer and sends nothing again. A draft is sent once: " +
				"a call for a draft already queued, sent or undeliverable, with any key, is refused with draft_not_open.",
		},
		AuditEvent: "email.external.sent",
		FailureModes: []contract.FailureMode{
			{Code: failure.InvalidArguments, Meaning: "An argument does not match the input schema (draftId is not a draft id); field names it."},
			{Code: reminders.CodeDraftNotFound, Meaning: "No draft has this draftId; nothing was done."},
			{Code: reminders.CodeDraftNotOpen, Meaning: "The draft is not open: it was discarded, or it is already queued, sent or undeliverable (a draft is sent once); the message says which. Nothing was done."},
			{Code: customers.CodeDoNotContact, Meaning: "The draft's customer, or another customer with the same e-mail address (compared case-insensitively), asked not to be contacted — checked when the call is made and again when it runs, after the approval. Nothing was sent; the approval stays approved until it expires."},
			{Code: customers.CodePaused, Meaning: "Contact with the draft's customer, or with another customer with the same e-mail address, is paused; the message gives the date it resumes (YYYY-MM-DD). Checked when the call is made and again when it runs. Nothing was sent; the approval stays approved until it expires."},
			{Code: ledger.CodeInvoiceSettled, Meaning: "The receivables ledger says an invoice of the draft is paid, void or written off — checked when the call is made and again when it runs, under locks that make a payment committed before the send win. The message names each such invoice and why. Nothing was sent; prepare a new draft for what is still owed."},
			{Code: ledger.CodeDraftStale, Meaning: "The receivables ledger says an invoice of the draft is disputed, under a pending promise to pay, or has another open amount than the draft states (a partial payment); the message names each such invoice and why. Checked when the call is made and again when it runs. Nothing was sent."},
			{Code: ledger.CodeInvoiceNotFound, Meaning: "The server requires the ledger (COBRANCA_LEDGER_REQUIRED) and an invoice of the draft is not in it, so its payment cannot be checked; the message names it. Nothing was sent."},
		},
		Idempotency: contract.Idempotency{Kind: "key", Description: "idempotencyKey is required: a retry with the same key and arguments " +
			"returns the first answer and sends nothing again; the approval is for the call with that key. Besides, a draft is sent once: " +
			"another key for a draft already sent is refused (draft_not_open)."},
		DryRun: contract.ModeNone,
	}
}

// sendArgs are send_reminder's arguments (idempotencyKey is the pipeline's).
type sendArgs struct {
	DraftID string `json:"draftId"`
}

// sendResult is send_reminder's answer.
type sendResult struct {
	DraftID   string `json:"draftId"`
	MessageID string `json:"messageId"`
	To        string `json:"to"`
	State     string `json:"state"`
	QueuedAt  string `json:"queuedAt"`
}

// messageIDPattern and messageIDText describe a sent draft's Message-ID (outbox.Entry.MessageID).
const (
	messageIDPattern = `^<[0-9]+(\.[a-z2-7]{26})?\.outbox@[^<>@\s]+>$` // without the token: queued before it existed
	messageIDText    = "The Message-ID header of the draft's message, angle brackets included: the same on every delivery attempt, so a receiver can drop a duplicate."
)

// sendable reads the draft id, the customers whose contact status decides whether it may be
// sent and the ledger's verdicts on its invoices, and refuses when it may not be, today: the
// draft is not open, its customer or a customer with its recipient's address may not be
// contacted, or an invoice of it is no longer owed as it says (ledgerRefusal; with required,
// unknown to the ledger). In a transaction (q is a store.Tx) it locks what it reads until the
// transaction ends — the customers first, then the draft, the order in which
// set_contact_status locks a customer and then discards its drafts, then the invoices — so
// that what it found still holds when the caller acts on it; otherwise it only reads.
func sendable(ctx context.Context, q store.Querier, id, today string, required bool) (reminders.Record, customers.Customer, []ledger.Verdict, error) {
	d, c, err := contactable(ctx, q, id, today)
	if err != nil {
		return reminders.Record{}, customers.Customer{}, nil, err
	}
	vs, err := checkLedger(ctx, q, today, expected(d))
	if err != nil {
		return reminders.Record{}, customers.Customer{}, nil, err
	}
	if fe := ledgerRefusal(vs, required, argDraftID); fe != nil {
		return reminders.Record{}, customers.Customer{}, nil, fe
	}
	return d, c, vs, nil
}

// contactable is sendable's first half: the draft and its customers, locked in a transaction.
func contactable(ctx context.Context, q store.Querier, id, today string) (reminders.Record, customers.Customer, error) {
	d, err := reminders.Get(ctx, q, id)
	if err != nil {
		return reminders.Record{}, customers.Customer{}, draftError(err)
	}
	tx, locking := q.(store.Tx)
	var cs []customers.Customer
	if locking {
		cs, err = customers.LockForContact(ctx, tx, d.CustomerID, d.To.Email)
	} else {
		cs, err = customers.ForContact(ctx, q, d.CustomerID, d.To.Email)
	}
	if err != nil {
		return reminders.Record{}, customers.Customer{}, err
	}
	if locking {
		if d, err = reminders.GetForUpdate(ctx, tx, id); err != nil {
			return reminders.Record{}, customers.Customer{}, draftError(err)
		}
	}
	if d.State != reminders.Draft {
		return reminders.Record{}, customers.Customer{}, &failure.Error{Code: reminders.CodeDraftNotOpen, Field: argDraftID,
			Message: "names a draft that is " + string(d.State) + ", not open: a draft is sent once; nothing was done"}
	}
	i := slices.IndexFunc(cs, func(c customers.Customer) bool { return c.ID == d.CustomerID })
	if i < 0 { // the draft's foreign key holds its customer
		return reminders.Record{}, customers.Customer{}, fmt.Errorf("send_reminder: draft %s: its customer is not stored", d.ID)
	}
	if fe := cs[i].Contactable(today); fe != nil {
		fe.Field = argDraftID
		return reminders.Record{}, customers.Customer{}, fe
	}
	if fe := customers.AddressContactable(cs, d.To.Email, today); fe != nil {
		fe.Field = argDraftID
		return reminders.Record{}, customers.Customer{}, fe
	}
	return d, cs[i], nil
}

// draftError is what the caller reads of err, an error of package reminders about the draft
// its draftId names.
func draftError(err error) error {
	if errors.Is(err, reminders.ErrNotFound) {
		return &failure.Error{Code: reminders.CodeDraftNotFound, Field: argDraftID, Message: "names no draft", Err: err}
	}
	return err
}

// sendReminderPreview is what the person approves: the recipient (name and address), the
// customer and its contact status in effect, each invoice with the ledger's state of it now,
// the subject and the whole body, exactly as they will be sent. Customer text is quoted, and
// the body's lines are set off with "| ", as data. A call that could not be sent now is
// refused here, before anyone is asked.
func sendReminderPreview(required bool) pipeline.Preview {
	return func(ctx context.Context, q store.Querier, v any) (string, error) {
		return previewSend(ctx, q, v.(*sendArgs), required)
	}
}

func previewSend(ctx context.Context, q store.Querier, a *sendArgs, required bool) (string, error) {
	today := customers.Today(pipeline.Now(ctx))
	d, c, vs, err := sendable(ctx, q, a.DraftID, today, required)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	fmt.Fprintf(&b, sendPreviewStart+"%s by e-mail, once, to %s at %s — customer %s, contact status in effect: %s "+
		"(no customer with this address is do_not_contact or paused; both are checked again when it is sent).\n",
		d.ID, quote(d.To.Name), quote(d.To.Email), quote(c.ID), inEffectText(c, today))
	writeLedger(&b, d, vs)
	writePix(&b, "", d)
	fmt.Fprintf(&b, "Subject: %s\n", quote(d.Subject))
	b.WriteString("Body:\n")
	for line := range strings.Lines(d.Body) {
		b.WriteString("| " + strings.TrimRight(line, "\r\n") + "\n")
	}
	if d.HTML != "" {
		b.WriteString("The message also has an HTML part: the same text, laid out" + map[bool]string{true: ", with the QR code drawn from the copia-e-cola string", false: ""}[d.Pix != nil] + ".\n")
	}
	return b.String(), nil
}

// sendReminderExecute is send_reminder's Execute, enqueueing in mail: in the pipeline's
// transaction, it locks the customers, the draft and its invoices' ledger rows, checks again
// that the draft is open, its recipient may be contacted and its invoices are owed as it says
// (the ledger's verdicts: a payment committed before this transaction wins), enqueues the
// message (the draft's id as its Ref), and moves the draft to queued; the pipeline writes the
// audit event email.external.sent in the same commit. A refusal rolls all of it back: nothing
// is enqueued, the approval is not used, and the pipeline audits the refusal.
func sendReminderExecute(mail *outbox.Outbox, required bool) pipeline.Execute {
	return func(ctx context.Context, tx store.Tx, v any) (pipeline.Effect, error) {
		a := v.(*sendArgs)
		now := pipeline.Now(ctx)
		pr := pipeline.PrincipalFrom(ctx)
		if pr == nil { // the pipeline refuses a call without a caller before this
			return pipeline.Effect{}, errors.New("send_reminder: no caller")
		}
		d, _, _, err := sendable(ctx, tx, a.DraftID, customers.Today(now), required)
		if err != nil {
			return pipeline.Effect{}, err
		}
		e, err := mail.Enqueue(ctx, tx, reminderMessage(d))
		if err != nil {
			// A stored draft the outbox refuses is the server's fault, not the caller's
			// argument: never answered as invalid_arguments (not wrapped).
			return pipeline.Effect{}, fmt.Errorf("send_reminder: draft %s: enqueue: %v", d.ID, err)
		}
		q := reminders.Queue{OutboxID: int64(e.ID), MessageID: e.MessageID, By: pr.Subject, Actor: pr.Actor, ApprovalID: pipeline.ApprovalFrom(ctx)}
		if err := reminders.MarkQueued(ctx, tx, d.ID, q, now); err != nil {
			return pipeline.Effect{}, err
		}
		return pipeline.Effect{
			Structured: &sendResult{DraftID: d.ID, MessageID: q.MessageID, To: d.To.Email, State: string(reminders.Queued),
				QueuedAt: time.UnixMicro(now.UnixMicro()).UTC().Format(time.RFC3339Nano)},
			Summary: "The reminder was queued for sending to its 1 recipient; the draft is queued until the mail server accepts it.",
			Details: map[string]int64{"messagesQueued": 1},
		}, nil
	}
}

func sendInputSchema() *jsonschema.Schema {
	s := mustFor[sendArgs]()
	closeObject(s)
	s.Description = "The reminder draft to send."
	draftIDRules(s.Properties[argDraftID])
	s.Properties[argDraftID].Description = "The draft to send, as prepare_reminder returned it (state draft). " + s.Properties[argDraftID].Description
	return s
}

func sendOutputSchema() *jsonschema.Schema {
	s := mustFor[sendResult]()
	closeObject(s)
	s.Description = "The draft, queued: its message is in the outbox and leaves once the mail server takes it."
	draftIDRules(s.Properties["draftId"])
	mid := s.Properties["messageId"]
	mid.Pattern = messageIDPattern
	mid.Description = messageIDText
	to := s.Properties["to"]
	to.Format = "email"
	to.Description = "The address the message goes to: the draft's recipient."
	st := s.Properties["state"]
	st.Enum = enum([]reminders.State{reminders.Queued})
	st.Description = "queued: the draft waits in the outbox; list_drafts shows it sent or undeliverable once delivery ends."
	qa := s.Properties["queuedAt"]
	qa.Format = "date-time"
	qa.Description = "When the message was queued (RFC 3339, UTC)."
	return s
}
