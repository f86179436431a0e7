package collections

import (
	"strconv"

	"github.com/cobranca/cobranca/internal/failure"
	"github.com/cobranca/cobranca/internal/ledger"
	"github.com/cobranca/cobranca/internal/portfolio"
	"github.com/google/jsonschema-go/jsonschema"
)

// What the ledger write tools share: their scopes, the invoice ids, amounts in an invoice's
// currency, dates, and what the caller reads of a record's problem.

// The scopes of the ledger write tools, one per kind of record, so that each integration holds
// only its own: the ERP or billing sync writes invoices (and may change their amounts or void
// them), the bank reconciliation writes payments and their matches, and the collector who talks
// to customers writes what they promised or dispute — without the power to change or void an
// invoice, nor to say it was paid.
const (
	InvoicesWriteScope = "invoices:write"
	PaymentsWriteScope = "payments:write"
	PromisesWriteScope = "promises:write"
	DisputesWriteScope = "disputes:write"
)

// ledgerIDRule is said of every invoice, customer and payment id the ledger tools take.
const ledgerIDRule = "with no white space at either end;"

// invoiceIDSchema is an invoice id argument: the operator's id, under the text rule. The schema
// cannot say customers.IDProblem's "no white space at either end": the decoders check it.
func invoiceIDSchema(description string) *jsonschema.Schema {
	return textSchema(description + " " + ledgerIDRule)
}

// ledgerAmountSchema is an amount in minor units of its currency, held to the ledger's bounds.
func ledgerAmountSchema(description string) *jsonschema.Schema {
	return &jsonschema.Schema{Type: "integer", Minimum: ptr(1.0), Maximum: ptr(float64(portfolio.MaxAmountCents)),
		Description: description + " In minor units of the currency (cents for BRL: integer, 1 to " +
			strconv.FormatInt(portfolio.MaxAmountCents, 10) + ")."}
}

// currencySchema is an optional ISO 4217 code, BRL when absent.
func currencySchema(description string) *jsonschema.Schema {
	return &jsonschema.Schema{Type: "string", Pattern: currencyPattern, Default: []byte(`"BRL"`),
		Description: description + " An active ISO 4217 code in upper case; BRL when absent."}
}

// ledgerDateSchema is a calendar date.
func ledgerDateSchema(description string) *jsonschema.Schema {
	s := &jsonschema.Schema{Type: "string", Description: description + " ISO calendar date, YYYY-MM-DD, from " +
		portfolio.MinDate + " to " + portfolio.MaxDate + "."}
	dateRules(s)
	return s
}

// fieldError is a ledger record's problem as an invalid_arguments failure, its field under
// prefix (invoices[3].).
func fieldError(prefix string, fe *ledger.FieldError) *failure.Error {
	return &failure.Error{Code: failure.InvalidArguments, Field: prefix + fe.Field, Message: fe.Message}
}
