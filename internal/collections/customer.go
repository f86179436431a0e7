package collections

import (
	"errors"
	"fmt"

	"github.com/cobranca/cobranca/internal/contract"
	"github.com/cobranca/cobranca/internal/customers"
	"github.com/cobranca/cobranca/internal/failure"
	"github.com/cobranca/cobranca/internal/value"
	"github.com/google/jsonschema-go/jsonschema"
)

// What the customer tools (get_customer, set_contact_status) share: the
// customerId argument, the contact status's schema, and the answer for an
// unknown customer.

// argCustomerID names the customer in the customer tools' arguments.
const argCustomerID = "customerId"

// textRule says what value.TextProblem accepts, for a schema
// description.
func textRule() string {
	return fmt.Sprintf("1 to %d characters, with a visible letter, number, punctuation or symbol; no control characters, "+
		"nor invisible or formatting characters that can hide or reorder text (zero-width, default-ignorable, format and "+
		"bidirectional controls, variation selectors, tag characters, line and paragraph separators).", value.MaxTextLen)
}

// textSchema is a string held to value.TextProblem, as far as a schema
// can say it (see textPattern).
func textSchema(description string) *jsonschema.Schema {
	return &jsonschema.Schema{Type: "string", MinLength: ptr(1), MaxLength: ptr(value.MaxTextLen), Pattern: textPattern(),
		Description: description + " " + textRule()}
}

// customerIDSchema is a customer id argument. The schema cannot say customers.IDProblem's
// "no white space at either end" beside the text pattern: the decoders check it, naming the
// field.
func customerIDSchema() *jsonschema.Schema {
	return textSchema("The operator's id of the customer (as in analyze_portfolio's customerId), with no white space at either end;")
}

// statusSchema is a contact status.
func statusSchema(description string) *jsonschema.Schema {
	var enum []any
	for _, s := range customers.Statuses() {
		enum = append(enum, string(s))
	}
	return &jsonschema.Schema{Type: "string", Enum: enum, Description: description +
		" contactable: reminders may be prepared; paused: no contact before pausedUntil; do_not_contact: never contacted until a person sets another status."}
}

// pausedUntilSchema is the date a pause ends.
func pausedUntilSchema(description string) *jsonschema.Schema {
	s := &jsonschema.Schema{Type: "string", Description: description}
	dateRules(s)
	return s
}

// notFoundMode is the failure mode of an unknown customerId.
var notFoundMode = contract.FailureMode{Code: customers.CodeNotFound,
	Meaning: "No customer has this customerId (customers are created by `cobranca customers import` and by prepare_reminder); nothing was done."}

// customerError is what the caller reads of err, an error of package
// customers about the customer its customerId names.
func customerError(err error) error {
	if errors.Is(err, customers.ErrNotFound) {
		return &failure.Error{Code: customers.CodeNotFound, Field: argCustomerID, Message: "no customer has this id", Err: err}
	}
	return err
}
