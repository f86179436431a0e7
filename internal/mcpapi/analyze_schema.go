package mcpapi

import (
	"fmt"
	"slices"

	"github.com/cobranca/cobranca/internal/portfolio"
	"github.com/google/jsonschema-go/jsonschema"
)

// The published schemas are generated from portfolio's structs (the one
// source of the field names and types) and then given the limits portfolio
// enforces, so the schema a client reads and the validation the server runs
// say the same thing. portfolio.Parse is stricter than the input schema only
// where a JSON Schema cannot follow; analyze_schema_test.go lists where.

// datePattern is YYYY-MM-DD restricted to portfolio.MinDate..MaxDate
// (2000-01-01..2099-12-31) and to months 01-12 and days 01-31; whether the
// day exists in that month (2025-02-30) is left to Parse. A test keeps it in
// step with the constants.
const datePattern = `^20[0-9]{2}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])$`

// textPattern bans the control characters (Unicode Cc: U+0000-U+001F,
// U+007F-U+009F) that Parse rejects in ids and names. Go's RE2 and ECMA-262
// read it alike, with or without the u flag: \xHH is the code point U+00HH
// in both, and no character outside the class is split differently into
// UTF-16 code units than into runes.
const textPattern = `^[^\x00-\x1f\x7f-\x9f]*$`

func analyzeInputSchema() *jsonschema.Schema {
	s := mustFor[portfolio.Input]()
	closeObject(s)
	s.Description = "An invoice portfolio supplied by the operator, analyzed as of one date."
	asOf := s.Properties["asOf"]
	asOf.Description = fmt.Sprintf("Reference date (ISO calendar date, YYYY-MM-DD) from %s to %s; invoices due before it are overdue.",
		portfolio.MinDate, portfolio.MaxDate)
	dateRules(asOf)

	invs := s.Properties["invoices"]
	invs.Description = fmt.Sprintf("%d to %d invoices with unique ids.", portfolio.MinInvoices, portfolio.MaxInvoices)
	invs.Types, invs.Type = nil, "array" // never null
	invs.MinItems, invs.MaxItems = ptr(portfolio.MinInvoices), ptr(portfolio.MaxInvoices)

	inv := invs.Items
	closeObject(inv)
	inv.Description = "One invoice. Every field is required."
	for _, name := range []string{"id", "customerId", "customerName"} {
		p := inv.Properties[name]
		p.MinLength, p.MaxLength = ptr(1), ptr(portfolio.MaxTextLen)
		p.Pattern = textPattern
	}
	limit := fmt.Sprintf(" 1 to %d characters, no control characters.", portfolio.MaxTextLen)
	inv.Properties["id"].Description = "Invoice id, unique within the call;" + limit
	inv.Properties["customerId"].Description = "Customer id; invoices are grouped by it;" + limit
	inv.Properties["customerName"].Description = "Customer name, the same on every invoice of a customer;" + limit
	due := inv.Properties["dueDate"]
	due.Description = fmt.Sprintf("Due date (ISO calendar date, YYYY-MM-DD) from %s to %s.", portfolio.MinDate, portfolio.MaxDate)
	dateRules(due)
	amt := inv.Properties["amountCents"]
	amt.Type = "integer"
	amt.Minimum, amt.Maximum = ptr(1.0), ptr(float64(portfolio.MaxAmountCents))
	amt.Description = fmt.Sprintf("Amount in BRL cents (integer, 1 to %d, that is up to R$ 10 billion).", int64(portfolio.MaxAmountCents))
	st := inv.Properties["status"]
	st.Enum = []any{string(portfolio.StatusOpen), string(portfolio.StatusPaid), string(portfolio.StatusVoid)}
	st.Description = "Invoice status; only open invoices count."
	inv.Properties["doNotContact"].Description = "If any invoice of a customer has it, the customer is left out entirely."
	return s
}

func analyzeOutputSchema() *jsonschema.Schema {
	s := mustFor[portfolio.Analysis]()
	closeObject(s)
	s.Description = "Priority queue of overdue customers; advice only, nothing was done."
	total := s.Properties["totalOpenCents"]
	total.Minimum = ptr(0.0)
	total.Description = "Sum of all open invoices (overdue or not) of customers that may be contacted, in BRL cents."
	accs := s.Properties["accounts"]
	accs.Types, accs.Type = nil, "array"
	accs.Description = "Customers with an overdue open invoice: days overdue descending, then amount descending, then customer id ascending."
	acc := accs.Items
	closeObject(acc)
	acc.Properties["customerId"].Description = "Customer id, as given."
	acc.Properties["customerName"].Description = "Customer name, as given."
	amt := acc.Properties["amountCents"]
	amt.Minimum = ptr(1.0)
	amt.Description = "Sum of the customer's open invoices, overdue or not, in BRL cents."
	oldest := acc.Properties["oldestDueDate"]
	oldest.Description = "Earliest due date (ISO calendar date, YYYY-MM-DD) among the customer's overdue open invoices."
	dateRules(oldest)
	days := acc.Properties["daysOverdue"]
	days.Minimum = ptr(1.0)
	days.Description = "Calendar days from oldestDueDate to asOf."
	prio := acc.Properties["priority"]
	prio.Enum = []any{string(portfolio.PriorityHigh), string(portfolio.PriorityMedium)}
	prio.Description = fmt.Sprintf("high from %d days overdue or %d cents open, else medium.",
		portfolio.HighPriorityDays, portfolio.HighPriorityCents)
	act := acc.Properties["recommendedAction"]
	act.Enum = []any{string(portfolio.ActionHumanReview), string(portfolio.ActionPrepareReminder)}
	act.Description = "human_review for high priority, prepare_reminder for medium; a suggestion for a person, never performed."
	acc.Properties["reason"].Description = `"<days> days overdue with <amount in BRL, pt-BR format> open".`
	return s
}

func mustFor[T any]() *jsonschema.Schema {
	s, err := jsonschema.For[T](nil)
	if err != nil {
		panic(fmt.Sprintf("schema of %T: %v", *new(T), err)) // static types: a bug, caught by every test
	}
	return s
}

// closeObject forbids unknown properties and requires every property.
func closeObject(s *jsonschema.Schema) {
	s.AdditionalProperties = &jsonschema.Schema{Not: &jsonschema.Schema{}}
	s.Required = s.Required[:0]
	for name := range s.Properties {
		s.Required = append(s.Required, name)
	}
	slices.Sort(s.Required)
}

func dateRules(s *jsonschema.Schema) {
	s.Pattern = datePattern
	s.Format = "date"
}

func ptr[T any](v T) *T { return &v }
