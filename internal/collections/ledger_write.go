package collections

import (
	"context"
	"errors"
	"strconv"

	"github.com/cobranca/cobranca/internal/contract"
	"github.com/cobranca/cobranca/internal/customers"
	"github.com/cobranca/cobranca/internal/failure"
	"github.com/cobranca/cobranca/internal/ledger"
	"github.com/cobranca/cobranca/internal/pipeline"
	"github.com/cobranca/cobranca/internal/value"
	"github.com/google/jsonschema-go/jsonschema"
)

// What the ledger write tools (record_invoices, record_payment, match_payment, record_promise,
// open_dispute, resolve_dispute) share: their scopes, the invoice and payment ids, amounts in
// an invoice's currency, who acts, and what the caller reads of the ledger's refusals.

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

// argInvoiceID names the invoice in the arguments of the promise and dispute tools.
const argInvoiceID = "invoiceId"

// ledgerIDRule is said of every invoice, customer and payment id the ledger tools take.
const ledgerIDRule = "with no white space at either end;"

// invoiceIDSchema is an invoice id argument: the operator's id, under the text rule. The schema
// cannot say customers.IDProblem's "no white space at either end": the decoders check it.
func invoiceIDSchema(description string) *jsonschema.Schema {
	return textSchema(description + " " + ledgerIDRule)
}

// idProblem is what is wrong with an id the ledger tools take (an invoice's, a customer's, a
// payment's transaction id): the text rule, and no white space at either end.
func idProblem(field, s string) *failure.Error {
	if p := customers.IDProblem(s); p != "" {
		return &failure.Error{Code: failure.InvalidArguments, Field: field, Message: p}
	}
	return nil
}

// textProblem is what is wrong with a free text (a note, a reason) under the text rule.
func textProblem(field, s string) *failure.Error {
	if p := value.TextProblem(s); p != "" {
		return &failure.Error{Code: failure.InvalidArguments, Field: field, Message: p}
	}
	return nil
}

// ledgerAmountSchema is an amount in minor units of its currency, held to the ledger's bounds.
func ledgerAmountSchema(description string) *jsonschema.Schema {
	return &jsonschema.Schema{Type: "integer", Minimum: ptr(1.0), Maximum: ptr(float64(value.MaxAmountCents)),
		Description: description + " In minor units of the currency (cents for BRL: integer, 1 to " +
			strconv.FormatInt(value.MaxAmountCents, 10) + ")."}
}

// currencySchema is an optional ISO 4217 code, BRL when absent.
func currencySchema(description string) *jsonschema.Schema {
	return &jsonschema.Schema{Type: "string", Pattern: currencyPattern, Default: []byte(`"BRL"`),
		Description: description + " An active ISO 4217 code in upper case; BRL when absent."}
}

// ledgerDateSchema is a calendar date.
func ledgerDateSchema(description string) *jsonschema.Schema {
	s := &jsonschema.Schema{Type: "string", Description: description + " ISO calendar date, YYYY-MM-DD, from " +
		value.MinDate + " to " + value.MaxDate + "."}
	dateRules(s)
	return s
}

// fieldError is a ledger record's problem as an invalid_arguments failure, its field under
// prefix (invoices[3].).
func fieldError(prefix string, fe *ledger.FieldError) *failure.Error {
	return &failure.Error{Code: failure.InvalidArguments, Field: prefix + fe.Field, Message: fe.Message}
}

// actorOf is who makes the call, as the ledger records it: the person, and the agent acting
// for them ("" for a person's own call).
func actorOf(ctx context.Context) (ledger.Actor, error) {
	pr := pipeline.PrincipalFrom(ctx)
	if pr == nil { // the pipeline refuses a call without a caller before any tool runs
		return ledger.Actor{}, errors.New("ledger tool: no caller")
	}
	return ledger.Actor{Subject: pr.Subject, Actor: pr.Actor}, nil
}

// ledgerFailure is what the caller reads of err, an error of package ledger about the record
// field names: an unknown invoice or payment, or one of the ledger's refusals (which keep the
// field they name, else take field).
func ledgerFailure(err error, field string) error {
	if fe, ok := failure.As(err); ok {
		if fe.Field == "" {
			cp := *fe
			cp.Field = field
			return &cp
		}
		return fe
	}
	switch {
	case errors.Is(err, ledger.ErrInvoiceNotFound):
		return &failure.Error{Code: ledger.CodeInvoiceNotFound, Field: field, Message: "no invoice in the ledger has this id", Err: err}
	case errors.Is(err, ledger.ErrPaymentNotFound):
		return &failure.Error{Code: ledger.CodePaymentNotFound, Field: field, Message: "no payment in the ledger has this id", Err: err}
	}
	return err
}

// The failure modes the ledger write tools share.
var (
	invoiceNotFoundMode = contract.FailureMode{Code: ledger.CodeInvoiceNotFound,
		Meaning: "No invoice in the ledger has this id (invoices enter it through record_invoices and `cobranca invoices import`); field names it. Nothing was done."}
	paymentNotFoundMode = contract.FailureMode{Code: ledger.CodePaymentNotFound,
		Meaning: "No payment in the ledger has this id; field names it. Nothing was done."}
)
