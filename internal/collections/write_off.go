package collections

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/cobranca/cobranca/internal/contract"
	"github.com/cobranca/cobranca/internal/failure"
	"github.com/cobranca/cobranca/internal/pipeline"
	"github.com/cobranca/cobranca/internal/store"
	"github.com/cobranca/cobranca/internal/writeoffs"
	"github.com/google/jsonschema-go/jsonschema"
)

// WriteOffName is the name of the tool that writes an invoice off: forbidden to agents, run by
// people through the admin API, its page and `cobranca write-off`.
const WriteOffName = "collections.write_off_invoice"

// WriteOffRole is the role a person needs to write an invoice off (write_off_invoice's
// adminRoles): the issuer's roles claim names it for the people of the finance team who may
// decide that a debt will not be collected.
const WriteOffRole = "collections.write_off"

// WriteOffScope is the scope a person's access token needs to write an invoice off.
const WriteOffScope = "invoices:write_off"

// writeOffStepUpMaxAge is how recently the person writing an invoice off must have signed in.
const writeOffStepUpMaxAge = 300

// writeOffArgs are write_off_invoice's arguments (idempotencyKey is the pipeline's).
type writeOffArgs struct {
	InvoiceID   string `json:"invoiceId"`
	CustomerID  string `json:"customerId"`
	AmountCents int64  `json:"amountCents"`
	Reason      string `json:"reason"`
}

func (a *writeOffArgs) request() writeoffs.Request {
	return writeoffs.Request{InvoiceID: a.InvoiceID, CustomerID: a.CustomerID, AmountCents: a.AmountCents, Reason: a.Reason}
}

// check does what the input schema cannot: the whole text rule, ids without white space at
// either end (writeoffs.Request.Validate).
func (a *writeOffArgs) check() error {
	if fe := a.request().Validate(); fe != nil {
		return fe
	}
	return nil
}

// WriteOffResult is write_off_invoice's answer (writeoffs.Result, which the admin page reads
// without importing the tools).
type WriteOffResult = writeoffs.Result

func writeOffContract() contract.Contract {
	return contract.Contract{
		Name:            WriteOffName,
		ContractVersion: "1.0.0",
		Title:           "Write off an invoice",
		Description: "Records that a person decided an invoice's debt will not be collected: the invoice, its customer (a stored " +
			"customer), the amount written off in BRL cents and why. Only a person runs it — through the admin API (POST " +
			"/admin/write-offs), its page or `cobranca write-off` — holding the role " + WriteOffRole + " and the scope " +
			WriteOffScope + ", signed in within the last 5 minutes; never an AI agent: over MCP this tool does not exist. " +
			"An invoice is written off once.",
		Category:     "collections",
		RiskLevel:    contract.Forbidden,
		StepUpAuth:   contract.StepUp{MaxAgeSeconds: writeOffStepUpMaxAge, When: "Always, for the person making the write-off: signed in within the last 5 minutes, with an acr the server accepts (COBRANCA_STEPUP_ACR)."},
		InputSchema:  writeOffInputSchema(),
		OutputSchema: writeOffOutputSchema(),
		Permissions:  []string{WriteOffScope},
		AdminRoles:   []string{WriteOffRole},
		SideEffects: contract.SideEffects{
			Changes: []string{
				"Records a permanent write-off of the invoice: invoice id, customer id, amount in cents, reason, who wrote it off, " +
					"through which client, with which acr and sign-in time, and when. A write-off is never changed or removed.",
			},
			OnRepeat: "A repeat with the same idempotencyKey and arguments returns the first answer and records nothing again. " +
				"An invoice is written off once: another call for it, with any key, customer or amount, is refused with " +
				string(writeoffs.CodeAlreadyWrittenOff) + ".",
		},
		AuditEvent: "invoice.written_off",
		FailureModes: []contract.FailureMode{
			{Code: failure.InvalidArguments, Meaning: "An argument does not match the input schema, or breaks a rule it cannot state: an id or reason with a character the text rule refuses, an id with white space at either end, an amount outside 1 to " + fmt.Sprint(writeoffs.MaxAmountCents) + " cents; field names it."},
			{Code: notFoundMode.Code, Meaning: "No customer has this customerId (customers are created by `cobranca customers import` and by prepare_reminder); nothing was written off."},
			{Code: writeoffs.CodeAlreadyWrittenOff, Meaning: "The invoice already has a write-off (the message names it and its date): an invoice is written off once. Nothing was done."},
		},
		Idempotency: contract.Idempotency{Kind: "key", Description: "idempotencyKey is required: a retry with the same key and arguments " +
			"returns the first answer and records nothing again. Besides, an invoice is written off once: another key for an " +
			"invoice already written off is refused (" + string(writeoffs.CodeAlreadyWrittenOff) + ")."},
		DryRun: contract.ModeNone,
	}
}

func writeOffDecode(b []byte) (any, int, error) { return checked(b, (*writeOffArgs).check) }

// writeOffExecute records the write-off in the pipeline's transaction, by the person making
// the call; the pipeline writes the audit event invoice.written_off in the same commit.
func writeOffExecute(ctx context.Context, tx store.Tx, v any) (pipeline.Effect, error) {
	a := v.(*writeOffArgs)
	pr := pipeline.PrincipalFrom(ctx)
	if pr == nil || pr.IsAgent() { // the pipeline's admin entry point refuses both before this
		return pipeline.Effect{}, errors.New("write_off_invoice: not a person's call")
	}
	w, err := writeoffs.Record(ctx, tx, a.request(),
		writeoffs.Author{Subject: pr.Subject, ClientID: pr.ClientID, ACR: pr.ACR, AuthTime: pr.AuthTime}, pipeline.Now(ctx))
	if err != nil {
		return pipeline.Effect{}, err
	}
	return pipeline.Effect{
		Structured: &WriteOffResult{WriteOffID: w.ID, InvoiceID: w.InvoiceID, CustomerID: w.CustomerID, AmountCents: w.AmountCents,
			WrittenOffBy: w.By.Subject, WrittenOffAt: w.CreatedAt.Format(time.RFC3339Nano)},
		Summary: "The invoice was written off.",
		Details: map[string]int64{"writeOffs": 1},
	}, nil
}

func writeOffInputSchema() *jsonschema.Schema {
	s := mustFor[writeOffArgs]()
	closeObject(s)
	s.Description = "The invoice to write off, its customer, the amount and why."
	s.Properties["invoiceId"] = textSchema("The operator's id of the invoice (as in analyze_portfolio's invoices[].id), with no white space at either end;")
	s.Properties[argCustomerID] = customerIDSchema()
	amount := s.Properties["amountCents"]
	amountRules(amount)
	amount.Description = "The amount written off, in BRL cents (integer, 1 to " + fmt.Sprint(writeoffs.MaxAmountCents) + ", that is up to R$ 10 billion)."
	s.Properties["reason"] = textSchema("Why the debt will not be collected, as the person said it; kept with the write-off.")
	return s
}

func writeOffOutputSchema() *jsonschema.Schema {
	s := mustFor[WriteOffResult]()
	closeObject(s)
	s.Description = "The write-off, as recorded."
	s.Properties["writeOffId"].Description = "The write-off's id (wo_…)."
	s.Properties["invoiceId"].Description = "The invoice written off, as given."
	s.Properties[argCustomerID].Description = "The invoice's customer, as given."
	amount := s.Properties["amountCents"]
	amountRules(amount)
	amount.Description = "The amount written off, in BRL cents."
	s.Properties["writtenOffBy"].Description = "The subject of the person who wrote the invoice off."
	at := s.Properties["writtenOffAt"]
	at.Format = "date-time"
	at.Description = "When the write-off was recorded (RFC 3339, UTC)."
	return s
}
