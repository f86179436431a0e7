package collections

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/cobranca/cobranca/internal/contract"
	"github.com/cobranca/cobranca/internal/customers"
	"github.com/cobranca/cobranca/internal/failure"
	"github.com/cobranca/cobranca/internal/ident"
	"github.com/cobranca/cobranca/internal/ledger"
	"github.com/cobranca/cobranca/internal/pipeline"
	"github.com/cobranca/cobranca/internal/store"
	"github.com/cobranca/cobranca/internal/value"
	"github.com/google/jsonschema-go/jsonschema"
)

// RecordPaymentName is the name of the tool that records a payment an agent read elsewhere
// (a bank statement, a PIX receipt) and matches it to the invoices it pays.
const RecordPaymentName = "collections.record_payment"

// MatchPaymentName is the name of the tool that allocates a recorded payment to invoices.
const MatchPaymentName = "collections.match_payment"

// PaymentSourceAgent is the source of the payments record_payment records: a payment's
// identity in the ledger is (source, sourceRef), and record_payment's sourceRef is the
// transactionId the agent read on the statement. So one bank transaction is one payment however
// many times, by however many agents and keys, it is recorded; and it is never confused with a
// payment a bank file brought in (whose source names the file's kind and bank).
const PaymentSourceAgent = "agent"

// MaxMatchAllocations bounds the invoices one match_payment call allocates a payment to.
const MaxMatchAllocations = 100

// recordPaymentArgs are record_payment's arguments (idempotencyKey is the pipeline's).
type recordPaymentArgs struct {
	TransactionID string `json:"transactionId"`
	AmountCents   int64  `json:"amountCents"`
	Currency      string `json:"currency,omitempty"`
	PaidOn        string `json:"paidOn"`
	Method        string `json:"method"`
	Reference     string `json:"reference,omitempty"`
	CustomerID    string `json:"customerId,omitempty"`
	Payer         string `json:"payer,omitempty"`
}

// record is the payment a asks to record.
func (a *recordPaymentArgs) record() ledger.PaymentRecord {
	return ledger.PaymentRecord{Source: PaymentSourceAgent, SourceRef: a.TransactionID, AmountCents: a.AmountCents,
		Currency: a.Currency, PaidOn: a.PaidOn, Method: ledger.Method(a.Method), Reference: a.Reference,
		CustomerID: a.CustomerID, Payer: a.Payer}
}

// check holds the arguments to the ledger's payment rule (PaymentRecord.Validate), and the
// transactionId, the payment's identity, to the id rule besides the text rule; the date's not
// being after today needs the call's clock (checkDay).
func (a *recordPaymentArgs) check() error {
	if fe := idProblem("transactionId", a.TransactionID); fe != nil {
		return fe
	}
	r := a.record()
	if fe := r.Validate(); fe != nil { // not sourceRef: idProblem held it to more
		return fieldError("", fe)
	}
	a.Currency = r.Currency // normalized: BRL when absent
	return nil
}

// checkDay refuses a payment dated after today (UTC): it has not been made.
func (a *recordPaymentArgs) checkDay(ctx context.Context) error {
	if a.PaidOn > customers.Today(pipeline.Now(ctx)) {
		return &failure.Error{Code: failure.InvalidArguments, Field: "paidOn", Message: "must not be after today (UTC): a payment is recorded once made"}
	}
	return nil
}

// matchPaymentArgs are match_payment's arguments (idempotencyKey is the pipeline's).
type matchPaymentArgs struct {
	PaymentID   string            `json:"paymentId"`
	Allocations []matchAllocation `json:"allocations"`
}

// matchAllocation is one part of a payment given to an invoice.
type matchAllocation struct {
	InvoiceID   string `json:"invoiceId"`
	AmountCents int64  `json:"amountCents"`
}

func (a *matchPaymentArgs) check() error {
	if !ident.Valid(ledger.PaymentPrefix, a.PaymentID) {
		return &failure.Error{Code: failure.InvalidArguments, Field: "paymentId", Message: "must be a payment id: " + ident.Describe(ledger.PaymentPrefix)}
	}
	seen := make(map[string]int, len(a.Allocations))
	for i, al := range a.Allocations {
		at := "allocations[" + strconv.Itoa(i) + "]."
		if fe := idProblem(at+"invoiceId", al.InvoiceID); fe != nil {
			return fe
		}
		if j, dup := seen[al.InvoiceID]; dup {
			return &failure.Error{Code: failure.InvalidArguments, Field: at + "invoiceId", Message: "repeats the invoiceId of allocations[" + strconv.Itoa(j) + "]: give each invoice one amount"}
		}
		seen[al.InvoiceID] = i
	}
	return nil
}

func (a *matchPaymentArgs) plan() []ledger.Planned {
	out := make([]ledger.Planned, len(a.Allocations))
	for i, al := range a.Allocations {
		out[i] = ledger.Planned{InvoiceID: al.InvoiceID, AmountCents: al.AmountCents}
	}
	return out
}

// paymentResult is record_payment's and match_payment's answer: the payment, the allocations
// the call is about, and what the payment has left.
type paymentResult struct {
	PaymentID   string `json:"paymentId"`
	Created     *bool  `json:"created,omitempty"`
	MatchedBy   string `json:"matchedBy,omitempty"`
	AmountCents int64  `json:"amountCents"`
	Currency    string `json:"currency"`
	PaidOn      string `json:"paidOn"`
	// Allocations: record_payment's are all of the payment's; match_payment's the call's.
	Allocations []allocationResult `json:"allocations"`
	LeftCents   int64              `json:"leftCents"`
}

// allocationResult is one allocation, and the invoice's standing after it.
type allocationResult struct {
	InvoiceID    string `json:"invoiceId"`
	AmountCents  int64  `json:"amountCents"`
	Rule         string `json:"rule"`
	InvoiceState string `json:"invoiceState"`
	OpenCents    int64  `json:"invoiceOpenCents"`
}

// paymentOutcome is what record_payment or match_payment did (or, rehearsed, would do): what
// the preview describes and the answer reports.
type paymentOutcome struct {
	pay         ledger.StoredPayment // as recorded; LeftCents before this call's allocations
	created     bool                 // record_payment: the payment is new
	rule        ledger.Rule          // record_payment of a new payment: what matched it
	allocations []ledger.Allocation  // this call's; a known payment's own for record_payment
	invoices    map[string]ledger.StoredInvoice
	left        int64
}

// recordPayment records and auto-matches a's payment in tx, or finds it recorded.
func recordPayment(ctx context.Context, tx store.Tx, a *recordPaymentArgs) (paymentOutcome, error) {
	if err := a.checkDay(ctx); err != nil {
		return paymentOutcome{}, err
	}
	by, err := actorOf(ctx)
	if err != nil {
		return paymentOutcome{}, err
	}
	now := pipeline.Now(ctx)
	pay, created, err := ledger.RecordPayment(ctx, tx, a.record(), by, now)
	if err != nil {
		if fe, ok := failure.As(err); ok {
			cp := *fe
			cp.Field = paymentArg(cp.Field)
			return paymentOutcome{}, &cp
		}
		return paymentOutcome{}, err
	}
	out := paymentOutcome{pay: pay, created: created}
	if !created {
		// Known: recorded (and matched, or not) before; nothing is done again. Its allocations
		// are what was made of it since.
		if out.pay, err = ledger.GetPayment(ctx, tx, pay.ID); err != nil {
			return paymentOutcome{}, err
		}
		out.allocations, out.left = out.pay.Allocations, out.pay.LeftCents
		return out, out.readInvoices(ctx, tx)
	}
	if out.rule, out.allocations, err = ledger.AutoMatch(ctx, tx, pay.ID, by, now); err != nil {
		return paymentOutcome{}, err
	}
	out.left = pay.LeftCents
	for _, al := range out.allocations {
		out.left -= al.AmountCents
	}
	return out, out.readInvoices(ctx, tx)
}

// paymentArg is the argument of record_payment a field of ledger.PaymentRecord is given as:
// its sourceRef is the transactionId.
func paymentArg(field string) string {
	if field == "sourceRef" {
		return "transactionId"
	}
	return field
}

// matchPayment allocates a's plan of a payment in tx.
func matchPayment(ctx context.Context, tx store.Tx, a *matchPaymentArgs) (paymentOutcome, error) {
	by, err := actorOf(ctx)
	if err != nil {
		return paymentOutcome{}, err
	}
	allocs, err := ledger.Allocate(ctx, tx, a.PaymentID, a.plan(), by, pipeline.Now(ctx))
	if err != nil {
		return paymentOutcome{}, a.allocateFailure(ctx, tx, err)
	}
	// Read after Allocate, which locked it: as this call leaves it.
	pay, err := ledger.GetPayment(ctx, tx, a.PaymentID)
	if err != nil {
		return paymentOutcome{}, err
	}
	out := paymentOutcome{pay: pay, allocations: allocs, left: pay.LeftCents}
	for _, al := range allocs {
		out.pay.LeftCents += al.AmountCents // what it had left before
	}
	return out, out.readInvoices(ctx, tx)
}

// allocateFailure is what the caller reads of Allocate's failure. An unknown invoice is named
// as the allocation that gives it (allocations[1].invoiceId): the first of the plan, in its
// order, that the ledger does not know — the one Allocate stopped at. A refusal names the
// invoice in its message; its field is allocations.
func (a *matchPaymentArgs) allocateFailure(ctx context.Context, q store.Querier, err error) error {
	err = ledgerFailure(err, "paymentId")
	fe, ok := failure.As(err)
	if !ok {
		return err
	}
	cp := *fe
	switch fe.Code {
	case ledger.CodeInvoiceNotFound:
		ids := make([]string, len(a.Allocations))
		for i, al := range a.Allocations {
			ids[i] = al.InvoiceID
		}
		known, rerr := ledger.GetInvoices(ctx, q, ids)
		if rerr != nil {
			return rerr
		}
		if i := slices.IndexFunc(a.Allocations, func(al matchAllocation) bool { _, ok := known[al.InvoiceID]; return !ok }); i >= 0 {
			cp.Field = "allocations[" + strconv.Itoa(i) + "].invoiceId"
		}
	case ledger.CodeAllocationRefused:
		cp.Field = "allocations"
	}
	return &cp
}

// readInvoices reads the invoices of the outcome's allocations, as they stand after them.
func (o *paymentOutcome) readInvoices(ctx context.Context, q store.Querier) error {
	if len(o.allocations) == 0 {
		return nil
	}
	ids := make([]string, len(o.allocations))
	for i, al := range o.allocations {
		ids[i] = al.InvoiceID
	}
	invs, err := ledger.GetInvoices(ctx, q, ids)
	o.invoices = invs
	return err
}

// result is the outcome as the tool answers it.
func (o *paymentOutcome) result(record bool) *paymentResult {
	out := &paymentResult{PaymentID: o.pay.ID, AmountCents: o.pay.AmountCents, Currency: o.pay.Currency, PaidOn: o.pay.PaidOn,
		Allocations: make([]allocationResult, 0, len(o.allocations)), LeftCents: o.left}
	if record {
		out.Created = &o.created
		if o.created {
			out.MatchedBy = string(o.rule)
		}
	}
	for _, al := range o.allocations {
		inv := o.invoices[al.InvoiceID]
		out.Allocations = append(out.Allocations, allocationResult{InvoiceID: al.InvoiceID, AmountCents: al.AmountCents,
			Rule: string(al.Rule), InvoiceState: string(inv.State), OpenCents: inv.OpenCents})
	}
	return out
}

// describe says the outcome in words, for the person who confirms it (the preview): amount,
// date, method, the references, and what it pays and how each invoice would stand.
// Text people or banks wrote is quoted, as data; no generated id of a payment not yet recorded
// appears (a rehearsal's would differ from the call's).
func (o *paymentOutcome) describe(record bool) string {
	p := o.pay
	what := fmt.Sprintf("a payment of %s received on %s by %s, transaction %s", value.FormatMoney(p.AmountCents, p.Currency), p.PaidOn, p.Method, quote(p.SourceRef))
	if p.Reference != "" {
		what += ", reference " + quote(p.Reference)
	}
	if p.CustomerID != "" {
		what += ", from customer " + quote(p.CustomerID)
	}
	if p.Payer != "" {
		what += ", payer " + quote(p.Payer)
	}
	var b strings.Builder
	switch {
	case record && !o.created:
		return fmt.Sprintf("record nothing: %s is already recorded as payment %s; nothing would change.", what, p.ID)
	case record:
		b.WriteString("record " + what)
	default:
		fmt.Fprintf(&b, "allocate payment %s (%s, %s unallocated)", p.ID, what, value.FormatMoney(p.LeftCents, p.Currency))
	}
	if len(o.allocations) == 0 {
		b.WriteString(", and leave it unmatched: no open invoice carries its reference, and its customer has no single open invoice of exactly this amount due near its date; a person matches it later (match_payment)")
		return b.String() + "."
	}
	switch {
	case record && o.rule == ledger.RuleReference:
		b.WriteString(", and match it by its reference to")
	case record:
		b.WriteString(", and match it by its amount, customer and date to")
	default:
		b.WriteString(" to")
	}
	for i, al := range o.allocations {
		if i > 0 {
			b.WriteString(";")
		}
		inv := o.invoices[al.InvoiceID]
		fmt.Fprintf(&b, " invoice %s of customer %s: %s, leaving it %s", quote(al.InvoiceID), quote(inv.CustomerID),
			value.FormatMoney(al.AmountCents, p.Currency), standingText(inv))
	}
	if o.left > 0 {
		fmt.Fprintf(&b, "; %s left unallocated, as the customer's credit", value.FormatMoney(o.left, p.Currency))
	}
	return b.String() + "."
}

// standingText is an invoice's state and open amount, as a preview says it.
func standingText(inv ledger.StoredInvoice) string {
	if inv.State == ledger.StatePartiallyPaid || inv.State == ledger.StateOpen {
		return strings.ReplaceAll(string(inv.State), "_", " ") + " with " + value.FormatMoney(inv.OpenCents, inv.Currency) + " open"
	}
	return strings.ReplaceAll(string(inv.State), "_", " ")
}

// rehearse runs fn in a transaction that never commits — a savepoint rolled back inside the
// call's transaction, or a transaction of its own on the DB — so that a preview says what the
// call would do as the ledger's own code would do it, and keeps nothing of it. A statement fn
// defers to the commit (Tx.Defer) is one no savepoint takes back: fn is refused it.
func rehearse(ctx context.Context, q store.Querier, fn func(ctx context.Context, tx store.Tx) error) error {
	run := func(ctx context.Context, tx store.Tx) error {
		rt := &rehearsalTx{Tx: tx}
		err := fn(ctx, rt)
		if rt.deferred && err == nil {
			err = errors.New("rehearse: a statement was deferred to the commit, which a rehearsal cannot take back")
		}
		return err
	}
	if tx, ok := q.(store.Tx); ok {
		if _, err := tx.Exec(ctx, `SAVEPOINT rehearsal`); err != nil {
			return err
		}
		ferr := run(ctx, tx)
		if _, err := tx.Exec(ctx, `ROLLBACK TO SAVEPOINT rehearsal`); err != nil {
			return errors.Join(ferr, err)
		}
		if _, err := tx.Exec(ctx, `RELEASE SAVEPOINT rehearsal`); err != nil {
			return errors.Join(ferr, err)
		}
		return ferr
	}
	db, ok := q.(store.DB)
	if !ok {
		return errors.New("rehearse: neither a transaction nor a database")
	}
	err := db.InTx(ctx, func(ctx context.Context, tx store.Tx) error {
		if err := run(ctx, tx); err != nil {
			return err
		}
		return errRehearsed
	})
	if errors.Is(err, errRehearsed) {
		return nil
	}
	return err
}

// rehearsalTx is a rehearsal's transaction: what it would defer to the commit is noted, never run.
type rehearsalTx struct {
	store.Tx
	deferred bool
}

func (t *rehearsalTx) Defer(...store.Stmt) { t.deferred = true }

// errRehearsed rolls a rehearsal's own transaction back.
var errRehearsed = errors.New("rehearsed: rolled back")

func recordPaymentDecode(b []byte) (any, int, error) { return checked(b, (*recordPaymentArgs).check) }

func recordPaymentPreview(ctx context.Context, q store.Querier, v any) (string, error) {
	var o paymentOutcome
	err := rehearse(ctx, q, func(ctx context.Context, tx store.Tx) (err error) {
		o, err = recordPayment(ctx, tx, v.(*recordPaymentArgs))
		return err
	})
	if err != nil {
		return "", err
	}
	return o.describe(true), nil
}

func recordPaymentExecute(ctx context.Context, tx store.Tx, v any) (pipeline.Effect, error) {
	o, err := recordPayment(ctx, tx, v.(*recordPaymentArgs))
	if err != nil {
		return pipeline.Effect{}, err
	}
	summary := fmt.Sprintf("Payment recorded; %d allocation(s) made (%s); nothing sent.", len(o.allocations), o.rule)
	if !o.created {
		summary = fmt.Sprintf("The payment was already recorded; nothing changed (%d allocation(s)).", len(o.allocations))
	}
	return pipeline.Effect{
		Structured: o.result(true),
		Summary:    summary,
		Details:    map[string]int64{"created": b2i(o.created), "allocations": int64(len(o.allocations)) * b2i(o.created)},
		Unchanged:  !o.created,
	}, nil
}

func matchPaymentDecode(b []byte) (any, int, error) { return checked(b, (*matchPaymentArgs).check) }

func matchPaymentPreview(ctx context.Context, q store.Querier, v any) (string, error) {
	var o paymentOutcome
	err := rehearse(ctx, q, func(ctx context.Context, tx store.Tx) (err error) {
		o, err = matchPayment(ctx, tx, v.(*matchPaymentArgs))
		return err
	})
	if err != nil {
		return "", err
	}
	return o.describe(false), nil
}

func matchPaymentExecute(ctx context.Context, tx store.Tx, v any) (pipeline.Effect, error) {
	o, err := matchPayment(ctx, tx, v.(*matchPaymentArgs))
	if err != nil {
		return pipeline.Effect{}, err
	}
	return pipeline.Effect{
		Structured: o.result(false),
		Summary:    fmt.Sprintf("Payment allocated to %d invoice(s); nothing sent.", len(o.allocations)),
		Details:    map[string]int64{"allocations": int64(len(o.allocations))},
	}, nil
}

// paymentConfirmation is what the high-tier tools tell of the person's confirmation.
const paymentConfirmation = "An agent's call is confirmed by its person first, shown the payment and exactly what it pays; " +
	"a person's own call runs at once."

func recordPaymentContract() contract.Contract {
	return contract.Contract{
		Name:            RecordPaymentName,
		ContractVersion: "1.0.0",
		Title:           "Record a payment",
		Description: "Use when a customer's payment is seen somewhere cobranca does not read (a bank statement, a PIX receipt): " +
			"records it in the ledger and matches it to the invoices it pays, as bank files are matched — first the open " +
			"invoices that carry its reference (PIX txid, nosso número, the invoice's reference), else the one open invoice of " +
			"its customer with exactly its amount due near its date; what is not allocated stays as the customer's credit, or " +
			"unmatched for match_payment. A paid invoice is never chased again. " + paymentConfirmation + " The payment's " +
			"identity is its transactionId: one bank transaction is recorded once, however often it is sent.",
		Category:     "collections",
		RiskLevel:    contract.High,
		InputSchema:  recordPaymentInputSchema(),
		OutputSchema: paymentOutputSchema(true),
		Permissions:  []string{PaymentsWriteScope},
		SideEffects: contract.SideEffects{
			Changes: []string{
				"Records the payment (amount, currency, date, method, transactionId, reference, customer, payer), who recorded it " +
					"and through which agent, and when; a payment is never changed or removed.",
				"Allocates it to the invoices it matches: their paid and open amounts and state change (paid: never chased again); " +
					"what is left is the customer's credit.",
			},
			OnRepeat: "A repeat with the same idempotencyKey and arguments returns the first answer and changes nothing. The same " +
				"transactionId with the same amount, currency and date, under any key, records nothing again and answers the " +
				"payment as recorded (created: false, audited unchanged); with another amount, currency or date it is refused " +
				string(ledger.CodePaymentConflict) + ".",
		},
		AuditEvent: "ledger.payment.recorded",
		FailureModes: []contract.FailureMode{
			{Code: failure.InvalidArguments, Meaning: "An argument does not match the input schema, or breaks a rule it cannot " +
				"state: an id or text with a character the text rule refuses or white space at either end, a date not on the " +
				"calendar or after today (UTC), an inactive currency; field names it. Nothing was done."},
			{Code: ledger.CodePaymentConflict, Meaning: "A payment with this transactionId is recorded with another amount, " +
				"currency or date: one transaction is one payment. field is transactionId; nothing was done."},
		},
		Idempotency: contract.Idempotency{Kind: "key", Description: "idempotencyKey is required: a retry with the same key and " +
			"arguments returns the first answer. Besides, a payment is recorded once per transactionId: the same payment " +
			"under another key answers it as recorded (created: false) and changes nothing."},
		DryRun: contract.ModeNone,
	}
}

func matchPaymentContract() contract.Contract {
	return contract.Contract{
		Name:            MatchPaymentName,
		ContractVersion: "1.0.0",
		Title:           "Match a payment to invoices",
		Description: "Use when a recorded payment was left unmatched, or matched only in part, and it is known which invoices it " +
			"pays (a person said so, the customer's remittance advice names them): allocates the amounts given of the payment " +
			"to those invoices, all or none. Each amount must fit what the payment has left and what the invoice has open, in " +
			"the same currency; what stays unallocated is the customer's credit. " + paymentConfirmation,
		Category:     "collections",
		RiskLevel:    contract.High,
		InputSchema:  matchPaymentInputSchema(),
		OutputSchema: paymentOutputSchema(false),
		Permissions:  []string{PaymentsWriteScope},
		SideEffects: contract.SideEffects{
			Changes: []string{
				"Allocates the amounts to the invoices (rule manual, by whom and when): their paid and open amounts and state " +
					"change (paid: never chased again), and what the payment has left shrinks. An allocation is never changed or removed.",
			},
			OnRepeat: "A repeat with the same idempotencyKey and arguments returns the first answer and allocates nothing again. " +
				"The same allocations under another key are allocated again where the payment and the invoices still allow it, " +
				"else refused " + string(ledger.CodeAllocationRefused) + ".",
		},
		AuditEvent: "ledger.payment.matched",
		FailureModes: []contract.FailureMode{
			{Code: failure.InvalidArguments, Meaning: "An argument does not match the input schema, or breaks a rule it cannot " +
				"state: a paymentId that is not a payment id, an invoiceId with a character the text rule refuses or white " +
				"space at either end, one invoice given twice; field names it. Nothing was done."},
			paymentNotFoundMode,
			{Code: ledger.CodeInvoiceNotFound, Meaning: "An allocation names an invoice the ledger does not know; field names it " +
				"(allocations[1].invoiceId). Nothing was allocated."},
			{Code: ledger.CodeAllocationRefused, Meaning: "An allocation is not allowed — the invoice is settled (paid, void, " +
				"written off) or in another currency, or the amount is more than the invoice has open or than the payment has " +
				"left; the message says which and field names the allocation. Nothing was allocated."},
		},
		Idempotency: contract.Idempotency{Kind: "key", Description: "idempotencyKey is required: a retry with the same key and " +
			"arguments returns the first answer and allocates nothing again."},
		DryRun: contract.ModeNone,
	}
}

func recordPaymentInputSchema() *jsonschema.Schema {
	s := mustFor[recordPaymentArgs]()
	sealObject(s)
	s.Description = "The payment, as the statement or receipt shows it."
	p := s.Properties
	p["transactionId"] = textSchema("The bank's id of this credit as the statement shows it — a PIX end-to-end id (E…), an " +
		"OFX FITID, the bank's document number —: the payment's identity, so that it is recorded once, " + ledgerIDRule)
	p["amountCents"] = ledgerAmountSchema("What was paid.")
	p["currency"] = currencySchema("The payment's currency.")
	p["paidOn"] = ledgerDateSchema("When it was paid (credited), not after today (UTC).")
	method := p["method"]
	method.Enum = enum(ledger.Methods)
	method.Description = "How it was paid: pix, boleto, transfer (TED, DOC), card or other."
	p["reference"] = textSchema("The reference the payment carries, as the bank reports it — a PIX txid, a boleto's nosso " +
		"número, the invoice number the customer wrote —: matched against the invoices' references.")
	p["customerId"] = textSchema("The customer who paid, when known (as in customerId elsewhere; matching by amount needs it), " + ledgerIDRule)
	p["payer"] = textSchema("The payer's name, as the statement gives it.")
	return s
}

func matchPaymentInputSchema() *jsonschema.Schema {
	s := mustFor[matchPaymentArgs]()
	closeObject(s)
	s.Description = "The payment, and how much of it goes to which invoice."
	paymentIDRules(s.Properties["paymentId"], "The payment to allocate (as record_payment and list_unmatched_payments give it).")
	items := objects(s.Properties["allocations"])
	al := s.Properties["allocations"]
	al.MinItems, al.MaxItems = ptr(1), ptr(MaxMatchAllocations)
	al.Description = fmt.Sprintf("1 to %d allocations, each invoice once; all are made, or none.", MaxMatchAllocations)
	items.Description = "An amount of the payment for one invoice."
	items.Properties["invoiceId"] = invoiceIDSchema("The invoice the amount pays,")
	items.Properties["amountCents"] = ledgerAmountSchema("How much of the payment goes to the invoice: at most what the invoice has open and what the payment has left.")
	return s
}

// paymentIDRules describes a payment id.
func paymentIDRules(s *jsonschema.Schema, description string) {
	s.Pattern = ident.Pattern(ledger.PaymentPrefix)
	s.Description = description + " Payment id: " + ident.Describe(ledger.PaymentPrefix) + "."
}

func paymentOutputSchema(record bool) *jsonschema.Schema {
	s := mustFor[paymentResult]()
	sealObject(s)
	p := s.Properties
	if record {
		s.Description = "The payment as recorded, every allocation of it, and what it has left."
		noNull(s, "created")
		s.Required = append(s.Required, "created")
		slices.Sort(s.Required)
		p["created"].Description = "true: this call recorded the payment; false: its transactionId was recorded before, and nothing changed."
		p["matchedBy"].Enum = enum([]ledger.Rule{ledger.RuleReference, ledger.RuleAmount, ledger.RuleNone})
		p["matchedBy"].Description = "With created true: what matched it — reference (an invoice's payment reference), amount " +
			"(exact open amount, its customer, due near its date) or unmatched (nothing, or more than one invoice could be meant)."
	} else {
		s.Description = "The payment, the allocations this call made, and what it has left."
		delete(p, "created")
		delete(p, "matchedBy")
	}
	paymentIDRules(p["paymentId"], "The payment.")
	p["amountCents"] = ledgerAmountSchema("What was paid.")
	currencyRules(p["currency"], "The payment's currency (ISO 4217).")
	dated(p["paidOn"], "When it was paid.")
	allocs := p["allocations"]
	items := objects(allocs)
	if record {
		allocs.Description = "Every allocation of the payment: this call's, or, for a payment recorded before, those made since it was."
	} else {
		allocs.Description = "The allocations this call made."
	}
	ip := items.Properties
	ip["invoiceId"].Description = "The invoice."
	ip["amountCents"] = ledgerAmountSchema("The part of the payment allocated to it.")
	ip["rule"].Enum = enum([]ledger.Rule{ledger.RuleReference, ledger.RuleAmount, ledger.RuleManual})
	ip["rule"].Description = "How it was allocated: reference, amount (matched on recording) or manual (match_payment)."
	ip["invoiceState"].Enum = enum(ledger.States)
	ip["invoiceState"].Description = "The invoice's state now."
	atLeast(ip["invoiceOpenCents"], 0, "What the invoice has open now, in its currency's minor units.")
	atLeast(p["leftCents"], 0, "What the payment has not allocated: the customer's credit (unmatched when nothing is allocated).")
	return s
}
