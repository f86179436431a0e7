package collections

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/cobranca/cobranca/internal/contract"
	"github.com/cobranca/cobranca/internal/customers"
	"github.com/cobranca/cobranca/internal/failure"
	"github.com/cobranca/cobranca/internal/ledger"
	"github.com/cobranca/cobranca/internal/pipeline"
	"github.com/cobranca/cobranca/internal/reminders"
	"github.com/cobranca/cobranca/internal/store"
	"github.com/cobranca/cobranca/internal/value"
	"github.com/google/jsonschema-go/jsonschema"
)

// PrepareReminderName is the name of the tool that writes a reminder draft.
const PrepareReminderName = "collections.prepare_reminder"

// previewRunes is how much of a draft's body its answer shows.
const previewRunes = 200

// prepareReminderExecute is prepare_reminder's Execute, writing with tpl under the settings s:
// with s.LedgerRequired (COBRANCA_LEDGER_REQUIRED), only about invoices the ledger knows; with
// s.Pix, a PIX code in every draft in reais.
func prepareReminderExecute(tpl *reminders.Templates, s Settings) pipeline.Execute {
	return func(ctx context.Context, tx store.Tx, v any) (pipeline.Effect, error) {
		return prepareReminder(ctx, tx, tpl, v.(*prepareArgs), s)
	}
}

// prepareReminderDecode reads prepare_reminder's arguments.
func prepareReminderDecode(b []byte) (any, int, error) { return checked(b, (*prepareArgs).check) }

func prepareReminderContract() contract.Contract {
	return contract.Contract{
		Name:            PrepareReminderName,
		ContractVersion: "2.1.0",
		Title:           "Prepare a payment reminder draft",
		Description: "Use to write a payment reminder for one customer about some of their open invoices (1 to " +
			strconv.Itoa(reminders.MaxInvoices) + "), in a friendly or firm tone, in Brazilian Portuguese (default) or English. " +
			"Name the invoices by their ids in the receivables ledger (invoiceIds: due dates and open amounts come from the ledger), " +
			"or supply them (invoices). An invoice the ledger says is paid, void or written off is refused; one it does not know is " +
			"answered in notInLedger (its payment cannot be checked when the reminder is sent), or refused where the server requires " +
			"the ledger. When the server has a PIX key, a draft in reais carries a PIX code (copia-e-cola and QR code) for its total, " +
			"whose txid names the draft and becomes a payment reference of its invoices in the ledger, so the payment matches itself; " +
			"an invoice's boleto line, when the ledger has one, is printed too. " +
			"It stores the customer's name and e-mail address (overwriting the stored ones) and a draft addressed to them " +
			"(subject and body from the server's templates) for a person to review; it never sends anything. It refuses a " +
			"customer who asked not to be contacted or whose contact is paused, and any e-mail address that such a customer " +
			"has. While the draft is still a draft, the same customer, name, e-mail address, invoices and tone give back that draft.",
		Category:     "collections",
		RiskLevel:    contract.Medium,
		InputSchema:  prepareInputSchema(),
		OutputSchema: prepareOutputSchema(),
		Permissions:  []string{"reminders:write"},
		SideEffects: contract.SideEffects{
			Changes: []string{
				"Creates the customer (contactable), or overwrites its stored name and e-mail address with the ones given (the old ones are not kept); never its contact status.",
				"When the name or e-mail address changes, discards the customer's open reminder drafts written to the old ones (draftsDiscarded).",
				"Stores a reminder draft (state draft) for the customer and invoices, addressed to the name and e-mail address given; nothing is sent.",
				"With a PIX code, records its txid as a payment reference of the draft's invoices the ledger knows (a payment carrying it is matched to them).",
			},
			Destructive: true, // the customer's stored name and e-mail address are overwritten
			OnRepeat: "The same idempotencyKey with the same arguments returns the first answer and changes nothing again. " +
				"Another call for the same customer, name, e-mail address, invoice set (ids, due dates and amounts, in any order) " +
				"and tone, while that draft is still a draft, returns it (created false) and writes nothing, whatever the language " +
				"asked. With another name or e-mail address, the customer is updated, its open drafts to the old ones are " +
				"discarded and a new draft is written.",
		},
		AuditEvent: "collections.reminder.prepared",
		FailureModes: []contract.FailureMode{
			{Code: failure.InvalidArguments, Meaning: "An argument does not match the input schema, or breaks a rule it cannot state: a due date that is not a real calendar date, two invoices with one id, a name or id with a character the text rule refuses, an id with white space at either end, an e-mail address that is not a bare address; field names it (invoices[3].dueDate)."},
			{Code: customers.CodeDoNotContact, Meaning: "The customer (field customer.id), or another customer with the same e-mail address, compared case-insensitively (field customer.email), asked not to be contacted (contact status do_not_contact); nothing was done."},
			{Code: customers.CodePaused, Meaning: "Contact with the customer (customer.id), or with another customer with the same e-mail address (customer.email), is paused; the message gives the date it resumes (YYYY-MM-DD). Nothing was done."},
			{Code: ledger.CodeInvoiceNotFound, Meaning: "An invoice of invoiceIds is not in the receivables ledger (field invoiceIds[i]), or the server requires the ledger (COBRANCA_LEDGER_REQUIRED) and a supplied invoice is not in it (field invoices[i].id); nothing was done."},
			{Code: ledger.CodeInvoiceSettled, Meaning: "The receivables ledger says an invoice named (field invoiceIds[i] or invoices[i].id) is paid, void or written off: it is not chased. Nothing was done."},
		},
		Idempotency: contract.Idempotency{Kind: "key", Description: "idempotencyKey is required: a retry with the same key and arguments " +
			"returns the first answer. Besides, the draft is naturally idempotent: while it is still a draft, the same customer, " +
			"invoice set and tone return it (created false) instead of writing another."},
		DryRun: contract.ModeNone,
	}
}

// prepareArgs are prepare_reminder's arguments (idempotencyKey is the pipeline's): invoices,
// or invoiceIds naming them in the ledger.
type prepareArgs struct {
	Customer   prepareCustomer   `json:"customer"`
	Invoices   []suppliedInvoice `json:"invoices,omitempty"`
	InvoiceIDs []string          `json:"invoiceIds,omitempty"`
	Tone       string            `json:"tone"`
	Language   *string           `json:"language,omitempty"`
}

// argInvoiceIDs names the ledger's invoices in prepare_reminder's arguments.
const argInvoiceIDs = "invoiceIds"

// suppliedInvoice is an invoice the caller supplies, instead of naming one in the ledger.
type suppliedInvoice struct {
	ID          string `json:"id"`
	DueDate     string `json:"dueDate"` // YYYY-MM-DD
	AmountCents int64  `json:"amountCents"`
}

// prepareCustomer is whom the reminder is for.
type prepareCustomer struct {
	ID    string `json:"id"`
	Name  string `json:"name"`
	Email string `json:"email"`
}

// check does what the input schema cannot: the whole text rule, the e-mail address, real
// dates and unique invoice ids. The schema held the rest (counts, amounts, enums).
func (a *prepareArgs) check() error {
	if fe := a.record().Validate("customer."); fe != nil {
		return fe
	}
	ids := make(map[string]int, len(a.InvoiceIDs))
	for i, id := range a.InvoiceIDs {
		f := argInvoiceIDs + "[" + strconv.Itoa(i) + "]"
		if p := customers.IDProblem(id); p != "" {
			return &failure.Error{Code: failure.InvalidArguments, Field: f, Message: p}
		}
		if j, dup := ids[id]; dup {
			return &failure.Error{Code: failure.InvalidArguments, Field: f, Message: "repeats " + argInvoiceIDs + "[" + strconv.Itoa(j) + "]"}
		}
		ids[id] = i
	}
	seen := make(map[string]int, len(a.Invoices))
	for i, inv := range a.Invoices {
		field := func(name string) string { return "invoices[" + strconv.Itoa(i) + "]." + name }
		if p := value.TextProblem(inv.ID); p != "" {
			return &failure.Error{Code: failure.InvalidArguments, Field: field("id"), Message: p}
		}
		if j, dup := seen[inv.ID]; dup {
			return &failure.Error{Code: failure.InvalidArguments, Field: field("id"), Message: "repeats the id of invoices[" + strconv.Itoa(j) + "]"}
		}
		seen[inv.ID] = i
		if p := value.DateProblem(inv.DueDate); p != "" {
			return &failure.Error{Code: failure.InvalidArguments, Field: field("dueDate"), Message: p}
		}
	}
	return nil
}

func (a *prepareArgs) record() customers.Record {
	return customers.Record{ID: a.Customer.ID, Name: a.Customer.Name, Email: a.Customer.Email}
}

func (a *prepareArgs) language() reminders.Language {
	if a.Language == nil {
		return reminders.Languages()[0]
	}
	return reminders.Language(*a.Language)
}

// prepareResult is prepare_reminder's answer.
type prepareResult struct {
	DraftID  string `json:"draftId"`
	State    string `json:"state"`
	Language string `json:"language"`
	Subject  string `json:"subject"`
	Preview  string `json:"preview"`
	Created  bool   `json:"created"`
	// NotInLedger are the draft's invoices the ledger does not know: their payment cannot be
	// checked when it is sent.
	NotInLedger []string `json:"notInLedger"`
	// DraftsDiscarded counts the customer's open drafts to its old name or e-mail address,
	// discarded because this call changed them.
	DraftsDiscarded int64 `json:"draftsDiscarded"`
	// Pix is the draft's PIX code; absent when it carries none.
	Pix *pixAnswer `json:"pix,omitempty"`
	// Warnings say what the person should know before sending it (a draft without a PIX code
	// because of its currency).
	Warnings []string `json:"warnings"`
}

// prepareReminder runs in the pipeline's transaction. The customer and every customer with
// the same e-mail address are read locked first (customers.LockForContact), so that a contact
// status being set on any of them at the same time is waited for and then refuses this draft;
// one set after this commits finds the draft and discards it (set_contact_status discards the
// customer's open drafts in its own transaction).
//
// What holds: no draft is written for an id while that customer, or any stored customer with
// the same address (case-insensitively), is do_not_contact or paused, as committed when the
// draft is. Not covered: a draft written for c-2 before c-1, with the same address, is set to
// do_not_contact stays open — set_contact_status discards the drafts of the customer it is set
// on; a sender must check the recipient's address again when it sends.
func prepareReminder(ctx context.Context, tx store.Tx, tpl *reminders.Templates, a *prepareArgs, s Settings) (pipeline.Effect, error) {
	now := pipeline.Now(ctx)
	r := a.record()
	cust, changed, err := writeCustomer(ctx, tx, r, now)
	if err != nil {
		return pipeline.Effect{}, err
	}
	invoices, currency, unknown, err := a.ledgerInvoices(ctx, tx, s.LedgerRequired)
	if err != nil {
		return pipeline.Effect{}, err
	}
	to := reminders.Recipient{Name: cust.Name, Email: cust.Email}
	var discarded int64
	if changed {
		// Open drafts greeting the old name or going to the old address are not left to send.
		if discarded, err = reminders.DiscardNotTo(ctx, tx, cust.ID, to, now); err != nil {
			return pipeline.Effect{}, err
		}
	}
	req := reminders.Request{CustomerID: cust.ID, To: to, Tone: reminders.Tone(a.Tone), Language: a.language(), Invoices: invoices,
		Currency: currency, PixCode: pixCharge(s.Pix, currency)}
	if pr := pipeline.PrincipalFrom(ctx); pr != nil {
		req.CreatedBy, req.CreatedByActor = pr.Subject, pr.Actor
	}
	d, created, err := reminders.Prepare(ctx, tx, tpl, req, now)
	if err != nil {
		return pipeline.Effect{}, err
	}
	if created && d.Pix != nil {
		// The code's txid becomes a payment reference of the draft's invoices the ledger
		// knows: a payment carrying it matches them (payments import, record_payment).
		ids := make([]string, len(d.Invoices))
		for i, inv := range d.Invoices {
			ids[i] = inv.ID
		}
		if err := ledger.AddReference(ctx, tx, ids, d.Pix.TxID, ledger.SourceReminder, d.ID, now); err != nil {
			return pipeline.Effect{}, err
		}
	}
	warnings := []string{}
	if w := pixWarning(d); w != "" {
		warnings = append(warnings, w)
	}
	summary := fmt.Sprintf("Reminder draft prepared for 1 customer and %d invoice(s); nothing was sent.", d.InvoiceCount)
	if !created {
		summary = fmt.Sprintf("The open reminder draft for this customer, its %d invoice(s) and tone was returned; no new draft, nothing was sent.", d.InvoiceCount)
	}
	if discarded > 0 {
		summary += fmt.Sprintf(" The customer's name or e-mail address changed: %d open draft(s) written for the old one(s) discarded.", discarded)
	}
	if len(unknown) > 0 {
		summary += fmt.Sprintf(" %d invoice(s) not in the ledger — payment cannot be checked when it is sent (notInLedger).", len(unknown))
	}
	return pipeline.Effect{
		Structured: &prepareResult{DraftID: d.ID, State: string(d.State), Language: string(d.Language), Subject: d.Subject,
			Preview: preview(d.Body), Created: created, NotInLedger: unknown, DraftsDiscarded: discarded, Pix: pixOf(d), Warnings: warnings},
		Summary: summary,
		Details: map[string]int64{"invoiceCount": int64(len(invoices)), "draftsCreated": b2i(created),
			"customersWritten": b2i(changed), "draftsDiscarded": discarded},
		Unchanged: !created && !changed,
	}, nil
}

// ledgerInvoices are the draft's invoices, as the ledger has them now (one read of it): for
// invoiceIds, each one's due date, open amount and currency; the invoices supplied, as given
// (in reais). Each one the ledger knows brings its boleto's linha digitável, when it has one.
// It refuses an invoice the ledger says is settled (paid, void, written off) or holds for
// another customer, invoiceIds in more than one currency, and an invoice the ledger does not
// know when invoiceIds names it or with required; else it answers it in unknown (sorted as
// given).
func (a *prepareArgs) ledgerInvoices(ctx context.Context, q store.Querier, required bool) (invs []reminders.Invoice, currency string, unknown []string, err error) {
	byID := len(a.InvoiceIDs) > 0
	ids, field := a.InvoiceIDs, func(i int) string { return argInvoiceIDs + "[" + strconv.Itoa(i) + "]" }
	if !byID {
		ids, field = make([]string, len(a.Invoices)), func(i int) string { return "invoices[" + strconv.Itoa(i) + "].id" }
		for i, inv := range a.Invoices {
			ids[i] = inv.ID
		}
	}
	stored, err := ledger.GetInvoices(ctx, q, ids)
	if err != nil {
		return nil, "", nil, err
	}
	currency, unknown = value.BaseCurrency, []string{}
	for i, id := range ids {
		inv, known := stored[id]
		switch {
		case !known && (byID || required):
			msg := "names an invoice the receivables ledger does not know; nothing was done"
			if !byID {
				msg = "names an invoice the receivables ledger does not know, and the server requires the ledger (COBRANCA_LEDGER_REQUIRED) so that its payment can be checked; nothing was done"
			}
			return nil, "", nil, &failure.Error{Code: ledger.CodeInvoiceNotFound, Field: field(i), Message: msg}
		case !known:
			unknown = append(unknown, id)
			invs = append(invs, reminders.Invoice{ID: id, DueDate: a.Invoices[i].DueDate, AmountCents: a.Invoices[i].AmountCents})
			continue
		case inv.CustomerID != a.Customer.ID:
			return nil, "", nil, &failure.Error{Code: failure.InvalidArguments, Field: field(i), Message: "names an invoice the receivables ledger holds for another customer than customer.id"}
		case inv.State.Settled():
			return nil, "", nil, &failure.Error{Code: ledger.CodeInvoiceSettled, Field: field(i), Message: "names an invoice the receivables ledger says is " +
				strings.ReplaceAll(string(inv.State), "_", " ") + ": it is not chased; nothing was done"}
		case byID && i == 0:
			currency = inv.Currency
		case byID && inv.Currency != currency:
			return nil, "", nil, &failure.Error{Code: failure.InvalidArguments, Field: field(i), Message: "names an invoice in " + inv.Currency +
				", and " + field(0) + " one in " + currency + ": a reminder states its amounts in one currency"}
		}
		r := reminders.Invoice{ID: id, DueDate: inv.DueDate, AmountCents: inv.OpenCents, BoletoLine: inv.BoletoLine}
		if !byID {
			r.DueDate, r.AmountCents = a.Invoices[i].DueDate, a.Invoices[i].AmountCents
		}
		invs = append(invs, r)
	}
	return invs, currency, unknown, nil
}

// writeCustomer locks the customer r names and those with its e-mail address until tx ends,
// refuses when one of them may not be contacted today, then creates the customer or updates
// its name and e-mail address when they differ; changed says whether it wrote. A refused call
// writes nothing.
func writeCustomer(ctx context.Context, tx store.Tx, r customers.Record, now time.Time) (c customers.Customer, changed bool, err error) {
	today := customers.Today(now)
	locked, err := customers.LockForContact(ctx, tx, r.ID, r.Email)
	if err != nil {
		return customers.Customer{}, false, err
	}
	i := slices.IndexFunc(locked, func(c customers.Customer) bool { return c.ID == r.ID })
	if i >= 0 {
		if fe := locked[i].Contactable(today); fe != nil {
			fe.Field = "customer.id"
			return customers.Customer{}, false, fe
		}
	}
	if fe := customers.AddressContactable(locked, r.Email, today); fe != nil {
		fe.Field = "customer.email"
		return customers.Customer{}, false, fe
	}
	if i >= 0 && locked[i].Name == r.Name && locked[i].Email == r.Email {
		return locked[i], false, nil
	}
	c, outcome, err := customers.UpsertOutcome(ctx, tx, r, now) // c is locked, whatever it did
	if err != nil {
		return customers.Customer{}, false, err
	}
	if i < 0 {
		// Not found when locked: another call may have created it since, and a status set on it
		// after that; Upsert read it locked, as committed.
		if fe := c.Contactable(today); fe != nil {
			fe.Field = "customer.id"
			return customers.Customer{}, false, fe
		}
	}
	return c, outcome != customers.Unchanged, nil
}

// preview is the start of a body: its first previewRunes characters, and "…" when more follow.
func preview(body string) string {
	if utf8.RuneCountInString(body) <= previewRunes {
		return body
	}
	n := 0
	for i := range body {
		if n == previewRunes {
			return body[:i] + "…"
		}
		n++
	}
	return body
}

func b2i(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

func prepareInputSchema() *jsonschema.Schema {
	s := mustFor[prepareArgs]()
	closeObject(s)
	s.Required = []string{"customer", "tone"}
	s.Description = "One customer, the invoices the reminder is about — invoices, or invoiceIds in the ledger: exactly one of the two —, and how to word it."
	s.If = &jsonschema.Schema{Required: []string{"invoices"}}
	s.Then = &jsonschema.Schema{Not: &jsonschema.Schema{Required: []string{argInvoiceIDs}}}
	s.Else = &jsonschema.Schema{Required: []string{argInvoiceIDs}}
	noNull(s, "invoices", argInvoiceIDs)

	cust := s.Properties["customer"]
	closeObject(cust)
	cust.Description = "The customer, as the operator knows it: stored (created, or its name and e-mail address overwritten) with the draft, which is addressed to them."
	cust.Properties["id"] = customerIDSchema()
	cust.Properties["name"] = textSchema("The customer's name, printed in the reminder as given;")
	email := cust.Properties["email"]
	email.MinLength, email.MaxLength = ptr(3), ptr(customers.MaxEmailLen)
	email.Format = "email"
	email.Pattern = textPattern()
	email.Description = fmt.Sprintf("The customer's e-mail address: a bare address (local@domain, no display name, angle brackets or comment), at most %d bytes.", customers.MaxEmailLen)

	invs := s.Properties["invoices"]
	invs.Types, invs.Type = nil, "array"
	invs.MinItems, invs.MaxItems = ptr(1), ptr(reminders.MaxInvoices)
	invs.Description = fmt.Sprintf("1 to %d invoices with unique ids, listed in the reminder by due date with their total. "+
		"An id the receivables ledger knows must be the customer's and still owed there; the draft is checked against the ledger when it is sent.", reminders.MaxInvoices)
	inv := invs.Items
	closeObject(inv)
	inv.Description = "One open invoice. Every field is required."
	inv.Properties["id"] = textSchema("Invoice id, unique within the call;")
	dueDateRules(inv.Properties["dueDate"])
	amountRules(inv.Properties["amountCents"])

	ids := s.Properties[argInvoiceIDs]
	ids.MinItems, ids.MaxItems, ids.UniqueItems = ptr(1), ptr(reminders.MaxInvoices), true
	ids.Items = customerIDSchema()
	ids.Items.Description = "The id of an invoice in the receivables ledger (as collections.list_invoices answers it), with no white space at either end; " + textRule()
	ids.Description = fmt.Sprintf("1 to %d ids of the customer's invoices in the receivables ledger, each once: the reminder states each one's due date "+
		"and open amount as the ledger has them now (a partly paid invoice, what is left). An id the ledger does not know, or whose "+
		"invoice is paid, void or written off there, refuses the call.", reminders.MaxInvoices)

	tone := s.Properties["tone"]
	tone.Enum = enum(reminders.Tones())
	tone.Description = "friendly: a courteous reminder; firm: a formal request to pay."
	noNull(s, "language")
	lang := s.Properties["language"]
	lang.Enum = enum(reminders.Languages())
	lang.Default = json.RawMessage(strconv.Quote(string(reminders.Languages()[0])))
	lang.Description = "pt-BR (the default: dates dd/mm/yyyy) or en; amounts are written as pt-BR writes them (R$ 1.234,56) in both."
	return s
}

func prepareOutputSchema() *jsonschema.Schema {
	s := mustFor[prepareResult]()
	closeObject(s)
	s.Description = "The reminder draft: new, or the open one for the same customer, invoice set and tone. Nothing was sent."
	draftIDRules(s.Properties["draftId"])
	st := s.Properties["state"]
	st.Enum = enum([]reminders.State{reminders.Draft})
	st.Description = "draft: open, for a person to review."
	lang := s.Properties["language"]
	lang.Enum = enum(reminders.Languages())
	lang.Description = "The draft's language: the one asked for, or the open draft's own when created is false."
	s.Properties["subject"].Description = "The reminder's subject line."
	s.Properties["preview"].Description = fmt.Sprintf("The body's first %d characters, then … when it goes on.", previewRunes)
	s.Properties["created"].Description = "true: this call wrote the draft; false: the open draft for the same customer, invoices and tone."
	nl := s.Properties["notInLedger"]
	nl.Types, nl.Type = nil, "array"
	nl.Description = "The draft's invoices the receivables ledger does not know, by id: their payment cannot be checked when the draft is sent (the approval shows them so). Empty when the ledger knows every one."
	dd := s.Properties["draftsDiscarded"]
	dd.Minimum = ptr(0.0)
	dd.Description = "How many of the customer's open drafts, written to its old name or e-mail address, this call discarded because it changed them; 0 when it changed neither."
	pixAnswerRules(s.Properties["pix"])
	s.Required = slices.DeleteFunc(s.Required, func(n string) bool { return n == "pix" })
	w := s.Properties["warnings"]
	w.Types, w.Type = nil, "array"
	w.Description = "What to know before sending the draft, in words: a draft in another currency than BRL carries no PIX code. Empty when nothing."
	return s
}
