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
// say the same thing.

const datePattern = `^\d{4}-\d{2}-\d{2}$`

func analyzeInputSchema() *jsonschema.Schema {
	s := mustFor[portfolio.Input]()
	closeObject(s)
	s.Description = "An invoice portfolio supplied by the operator, analyzed as of one date."
	asOf := s.Properties["asOf"]
	asOf.Description = fmt.Sprintf("Reference date, YYYY-MM-DD, from %s to %s.", portfolio.MinDate, portfolio.MaxDate)
	dateRules(asOf)

	invs := s.Properties["invoices"]
	invs.Description = fmt.Sprintf("%d to %d invoices with unique ids.", portfolio.MinInvoices, portfolio.MaxInvoices)
	invs.Types, invs.Type = nil, "array" // never null
	invs.MinItems, invs.MaxItems = ptr(portfolio.MinInvoices), ptr(portfolio.MaxInvoices)

	inv := invs.Items
	closeObject(inv)
	for _, name := range []string{"id", "customerId", "customerName"} {
		p := inv.Properties[name]
		p.MinLength, p.MaxLength = ptr(1), ptr(portfolio.MaxTextLen)
		p.Pattern = `^[^\x00-\x1f\x7f-\x9f]*$`
	}
	inv.Properties["id"].Description = "Invoice id, unique within the call."
	inv.Properties["customerId"].Description = "Customer id; invoices are grouped by it."
	inv.Properties["customerName"].Description = "Customer name; the same on every invoice of a customer."
	due := inv.Properties["dueDate"]
	due.Description = fmt.Sprintf("Due date, YYYY-MM-DD, from %s to %s.", portfolio.MinDate, portfolio.MaxDate)
	dateRules(due)
	amt := inv.Properties["amountCents"]
	amt.Type = "integer"
	amt.Minimum, amt.Maximum = ptr(1.0), ptr(float64(portfolio.MaxAmountCents))
	amt.Description = "Open amount in BRL cents, a positive integer."
	st := inv.Properties["status"]
	st.Enum = []any{string(portfolio.StatusOpen), string(portfolio.StatusPaid), string(portfolio.StatusVoid)}
	st.Description = "Only open invoices count."
	inv.Properties["doNotContact"].Description = "If any invoice of a customer has it, the customer is left out entirely."
	return s
}

func analyzeOutputSchema() *jsonschema.Schema {
	s := mustFor[portfolio.Analysis]()
	closeObject(s)
	s.Properties["totalOpenCents"].Minimum = ptr(0.0)
	s.Properties["totalOpenCents"].Description = "Sum of the open invoices of customers that may be contacted, in cents."
	accs := s.Properties["accounts"]
	accs.Types, accs.Type = nil, "array"
	accs.Description = "Priority queue: days overdue descending, then amount descending, then customer id."
	acc := accs.Items
	closeObject(acc)
	acc.Properties["amountCents"].Minimum = ptr(1.0)
	acc.Properties["daysOverdue"].Minimum = ptr(1.0)
	acc.Properties["oldestDueDate"].Pattern = datePattern
	acc.Properties["priority"].Enum = []any{string(portfolio.PriorityHigh), string(portfolio.PriorityMedium)}
	acc.Properties["recommendedAction"].Enum = []any{string(portfolio.ActionHumanReview), string(portfolio.ActionPrepareReminder)}
	acc.Properties["reason"].Description = `"<days> days overdue with <BRL amount> open".`
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
