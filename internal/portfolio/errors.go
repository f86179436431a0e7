package portfolio

import (
	"strings"

	"github.com/cobranca/cobranca/internal/value"
)

// Code classifies why [Parse] or [Validate] rejected a document. The values
// are stable: clients may match on them.
type Code string

// The rejection codes.
const (
	// CodeInvalidJSON: the document is not well-formed JSON, is not an
	// object, or an object repeats a key.
	CodeInvalidJSON Code = "invalid_json"
	// CodeUnknownField: an object has a key the schema does not define.
	CodeUnknownField Code = "unknown_field"
	// CodeMissingField: a required key is absent. Every field is required.
	CodeMissingField Code = "missing_field"
	// CodeInvalidType: a value has the wrong JSON type (null included), or
	// amountCents is a number that is not an exact integer.
	CodeInvalidType Code = "invalid_type"
	// CodeInvalidFormat: a date does not match ^\d{4}-\d{2}-\d{2}$, or a
	// lastContactedAt is neither an RFC 3339 date-time with an offset nor
	// such a date.
	CodeInvalidFormat Code = value.CodeInvalidFormat
	// CodeInvalidDate: a date has the right form but is not a calendar
	// date, such as 2025-02-30.
	CodeInvalidDate Code = value.CodeInvalidDate
	// CodeOutOfRange: a date is outside [value.MinDate, value.MaxDate], an
	// amount outside [1, value.MaxAmountCents] (also once converted to the base
	// currency), a rate not greater than 0 or above MaxRate, or the invoice
	// count outside [MinInvoices, MaxInvoices], the rates' above MaxRates,
	// the customers' above MaxInvoices.
	CodeOutOfRange Code = value.CodeOutOfRange
	// CodeInvalidValue: status is not one of open, paid, void; a currency
	// is not an active ISO 4217 code; a rate's currency is the base one; a
	// rate has more than MaxRateScale decimal places or MaxRateSignifics
	// significant digits; disputeReason comes without disputed: true.
	CodeInvalidValue Code = "invalid_value"
	// CodeInvalidText: an id, name, disputeReason or customers entry's
	// customerId fails value.TextProblem: it is empty, blank (no visible
	// character: value.VisibleInText), longer than value.MaxTextLen
	// characters, not valid UTF-8, or contains a character of
	// value.RefusedInText: a control
	// character (Unicode Cc), or one that is invisible or changes how its
	// neighbours display.
	CodeInvalidText Code = "invalid_text"
	// CodeDuplicateInvoiceID: two invoices share an id. Field names the
	// second one.
	CodeDuplicateInvoiceID Code = "duplicate_invoice_id"
	// CodeMissingRate: an invoice is in a currency other than the base one
	// and rates has no rate for it. Field names the invoice's currency.
	CodeMissingRate Code = "missing_rate"
	// CodeDuplicateEntry: two rates share a currency, or two customers
	// entries a customerId. Field names the second one.
	CodeDuplicateEntry Code = "duplicate_entry"
)

// Error is a rejected document. Message is safe to show to the caller: it
// never echoes free text from the input.
type Error struct {
	Code Code
	// Field is the path of the offending value, such as
	// "invoices[17].dueDate", "asOf" or "invoices"; "" is the whole
	// document.
	Field   string
	Message string
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("portfolio: ")
	if e.Field != "" {
		b.WriteString(e.Field)
		b.WriteString(": ")
	}
	b.WriteString(e.Message)
	b.WriteString(" (")
	b.WriteString(string(e.Code))
	b.WriteString(")")
	return b.String()
}

// Codes lists every code Parse and Validate can return; the tool's contract
// must list each (a test in mcpapi holds it to that, and one here holds this
// list to the constants above).
func Codes() []Code {
	return []Code{
		CodeInvalidJSON, CodeUnknownField, CodeMissingField, CodeInvalidType, CodeInvalidFormat,
		CodeInvalidDate, CodeOutOfRange, CodeInvalidValue, CodeInvalidText,
		CodeDuplicateInvoiceID, CodeMissingRate, CodeDuplicateEntry,
	}
}
