package collections

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/cobranca/cobranca/internal/contract"
	"github.com/cobranca/cobranca/internal/failure"
	"github.com/cobranca/cobranca/internal/ledger"
	"github.com/cobranca/cobranca/internal/pipeline"
	"github.com/cobranca/cobranca/internal/store"
	"github.com/google/jsonschema-go/jsonschema"
)

// RecordInvoicesName is the name of the tool that upserts invoices into the ledger.
const RecordInvoicesName = "collections.record_invoices"

// MaxRecordInvoices bounds the invoices of one record_invoices call; a larger sync is split
// into calls (or goes through `cobranca invoices import`, up to 100 000 rows a file).
const MaxRecordInvoices = 10_000

// recordInvoicesArgs are record_invoices' arguments (idempotencyKey is the pipeline's). Each
// invoice is a ledger.InvoiceRecord, the CLI import's row: one struct, one set of JSON names.
type recordInvoicesArgs struct {
	Invoices []ledger.InvoiceRecord `json:"invoices"`
}

// recordInvoicesResult is record_invoices' answer: what the upsert did, as counts.
type recordInvoicesResult struct {
	Created   int `json:"created"`
	Updated   int `json:"updated"`
	Unchanged int `json:"unchanged"`
}

func recordInvoicesContract() contract.Contract {
	return contract.Contract{
		Name:            RecordInvoicesName,
		ContractVersion: "1.0.0",
		Title:           "Record invoices in the ledger",
		Description: "Use to sync invoices from the operator's ERP or billing system into cobranca's receivables ledger: 1 to " +
			strconv.Itoa(MaxRecordInvoices) + " invoices per call, each created or, when its invoiceId is known, overwritten with " +
			"what is given (the same upsert as `cobranca invoices import`). All or nothing: one invoice refused, none written. " +
			"An invoice's state and open amount are derived from its payments and write-off, never sent; void: true cancels it. " +
			"The amount or currency of an invoice that payments were allocated to cannot change. A call is bounded by the " +
			"server's request size (COBRANCA_MAX_BODY_BYTES, 1 MiB by default: some 5 000 invoices with references).",
		Category:     "collections",
		RiskLevel:    contract.Medium,
		InputSchema:  recordInvoicesInputSchema(),
		OutputSchema: recordInvoicesOutputSchema(),
		Permissions:  []string{InvoicesWriteScope},
		SideEffects: contract.SideEffects{
			Changes: []string{
				"Creates each invoice the ledger does not know, and overwrites every field of one it knows with the values given " +
					"(the previous values are not kept; a field left out is cleared); its derived state and open amount follow " +
					"(void: true makes it void, a new amount changes what is open).",
			},
			Destructive: true, // an invoice's fields are overwritten, and void cancels it
			OnRepeat: "A repeat with the same idempotencyKey and arguments returns the first answer and writes nothing. The same " +
				"invoices sent again under any key change nothing and are counted unchanged (the call is audited unchanged when " +
				"every invoice is).",
		},
		AuditEvent: "ledger.invoices.recorded",
		FailureModes: []contract.FailureMode{
			{Code: failure.InvalidArguments, Meaning: "An argument does not match the input schema, or an invoice breaks a rule " +
				"it cannot state: an id or text with a character the text rule refuses or white space at either end, a date " +
				"that is not on the calendar, an issueDate after the dueDate, an inactive currency, a boleto line whose check " +
				"digits fail, two invoices with one invoiceId. field names the invoice and its field (invoices[3].dueDate); " +
				"nothing was written."},
			{Code: ledger.CodeInvoiceHasPayments, Meaning: "The call changes the amountCents or currency of an invoice that " +
				"payments were allocated to; field names it (invoices[3].amountCents). Nothing was written: record the " +
				"invoice as it was, or void it and record a new one."},
		},
		Idempotency: contract.Idempotency{Kind: "key", Description: "idempotencyKey is required: a retry with the same key and " +
			"arguments returns the first answer. Besides, the upsert is naturally idempotent: an invoice sent as it is stored " +
			"is left as it is (unchanged)."},
		DryRun: contract.ModeNone,
	}
}

func recordInvoicesDecode(b []byte) (any, int, error) {
	return checked(b, (*recordInvoicesArgs).check)
}

// check validates and normalizes each invoice (InvoiceRecord.Validate: the ids under
// customers.IDProblem, the currency BRL when absent, a boleto line kept as its digits).
// UpsertInvoices refuses an invoiceId given twice (invoices[i].invoiceId).
func (a *recordInvoicesArgs) check() error {
	for i := range a.Invoices {
		if fe := a.Invoices[i].Validate(); fe != nil {
			return fieldError("invoices["+strconv.Itoa(i)+"].", fe)
		}
	}
	return nil
}

// recordInvoicesExecute upserts the invoices in the pipeline's transaction: all of them or,
// when one is refused, none (the transaction rolls back with the failure).
func recordInvoicesExecute(ctx context.Context, tx store.Tx, v any) (pipeline.Effect, error) {
	a := v.(*recordInvoicesArgs)
	n, err := ledger.UpsertInvoices(ctx, tx, a.Invoices, pipeline.Now(ctx))
	if err != nil {
		var ie *ledger.IndexError
		if errors.As(err, &ie) && ie.Err != nil {
			fe := *ie.Err
			fe.Field = "invoices[" + strconv.Itoa(ie.Index) + "]." + fe.Field
			return pipeline.Effect{}, &fe
		}
		return pipeline.Effect{}, err
	}
	out := recordInvoicesResult{Created: n.Created, Updated: n.Updated, Unchanged: n.Unchanged}
	return pipeline.Effect{
		Structured: &out,
		Summary:    fmt.Sprintf("Ledger invoices recorded: %d created, %d updated, %d unchanged.", n.Created, n.Updated, n.Unchanged),
		Details:    map[string]int64{"created": int64(n.Created), "updated": int64(n.Updated), "unchanged": int64(n.Unchanged)},
		Unchanged:  n.Created+n.Updated == 0,
	}, nil
}

func recordInvoicesInputSchema() *jsonschema.Schema {
	s := mustFor[recordInvoicesArgs]()
	closeObject(s)
	s.Description = "The invoices to create or overwrite, as the operator's system has them."
	items := objects(s.Properties["invoices"])
	invs := s.Properties["invoices"]
	invs.MinItems, invs.MaxItems = ptr(1), ptr(MaxRecordInvoices)
	invs.Description = fmt.Sprintf("1 to %d invoices, each invoiceId once.", MaxRecordInvoices)
	items.Description = "One invoice. invoiceId, customerId, amountCents and dueDate are required; a field left out is empty " +
		"(and clears what was stored)."
	p := items.Properties
	p["invoiceId"] = invoiceIDSchema("The operator's id of the invoice: the ledger's key (as in analyze_portfolio's invoices[].id),")
	p["customerId"] = textSchema("The operator's id of the invoice's customer (as in customerId elsewhere), " + ledgerIDRule)
	p["customerName"] = textSchema("The customer's name, as the operator's system has it.")
	p["amountCents"] = ledgerAmountSchema("What the invoice charges.")
	p["currency"] = currencySchema("The invoice's currency.")
	p["issueDate"] = ledgerDateSchema("When the invoice was issued, not after dueDate.")
	p["dueDate"] = ledgerDateSchema("When the invoice is due.")
	p["void"].Description = "true: the operator cancelled the invoice; it is void and never chased. Absent: false."
	p["pixTxid"].Pattern = "^[A-Za-z0-9]{1," + strconv.Itoa(ledger.MaxTxIDLen) + "}$"
	p["pixTxid"].Description = "The txid of the PIX code the customer was given (1 to " + strconv.Itoa(ledger.MaxTxIDLen) +
		" letters and digits): a payment carrying it is matched to this invoice."
	p["ourNumber"].Pattern = "^[A-Za-z0-9]+$"
	p["ourNumber"].Description = "The boleto's nosso número (letters and digits, as long as CNAB 240's field allows): a bank " +
		"return carrying it is matched to this invoice."
	p["boletoLine"].Pattern = "^[0-9. ]+$"
	p["boletoLine"].Description = "The boleto's linha digitável: 47 digits, with or without its dots and spaces; its check " +
		"digits are verified, and it is kept as its digits."
	p["reference"] = textSchema("Any other reference the customer may quote when paying: a payment carrying it is matched to this invoice.")
	return s
}

func recordInvoicesOutputSchema() *jsonschema.Schema {
	s := mustFor[recordInvoicesResult]()
	closeObject(s)
	s.Description = "What the upsert did: every invoice of the call is counted once."
	atLeast(s.Properties["created"], 0, "Invoices the ledger did not know, created.")
	atLeast(s.Properties["updated"], 0, "Known invoices whose fields changed.")
	atLeast(s.Properties["unchanged"], 0, "Known invoices sent as they were stored: nothing written.")
	return s
}
