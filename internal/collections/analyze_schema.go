package collections

import (
	"fmt"
	"slices"
	"strings"
	"unicode"
	"unicode/utf16"

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

// textPattern is the rule for ids and names as far as a pattern can say it:
// no character of portfolio.RefusedInText, and at least one that is in
// neither it nor portfolio.InvisibleInText (white space, private use,
// blank-looking characters). It reads: invisible characters that are
// allowed, then a visible one, then any allowed characters. The first two
// classes are disjoint, so a backtracking engine takes linear time too. It
// is built from those tables, so the schema and Parse cannot drift apart.
//
// Parse also counts combining marks (M) and unassigned code points (Cn) as
// not visible (portfolio.VisibleInText). A pattern that said so would list
// some 400 ranges of the Basic Multilingual Plane (Cn moves with every
// Unicode version besides): kilobytes in every tools/list for a model to
// read, and past the DFA internal/schema builds. So the pattern counts them
// as visible, and Parse alone refuses a text that has nothing else.
//
// Go's RE2 and ECMA-262 must read it alike, with or without the u flag, and
// they share no escape for a character beyond U+00FF: such characters are
// written as themselves (\xHH below that). A pattern cannot name a
// character beyond U+FFFF without the u flag, so the tag characters
// (U+E0000-U+E007F) and the invisible characters up there are left to
// Parse; every such character lies outside every class here, so it is
// "visible" and allowed in both readings: in UTF-16 its two surrogates each
// fall in the negated classes, as the one rune does in RE2.
func textPattern() string {
	refused, invisible := portfolio.RefusedInText(), portfolio.InvisibleInText()
	cuts := bmpCuts(refused, invisible)
	allowedInvisible := bmpClass(cuts, func(r rune) bool { return unicode.Is(invisible, r) && !unicode.Is(refused, r) })
	notVisible := bmpClass(cuts, func(r rune) bool { return unicode.Is(invisible, r) || unicode.Is(refused, r) })
	notAllowed := bmpClass(cuts, func(r rune) bool { return unicode.Is(refused, r) })
	return "^[" + allowedInvisible + "]*[^" + notVisible + "][^" + notAllowed + "]*$"
}

// bmpCuts returns, in order, the characters of U+0000-U+10000 at which
// membership of the tables' characters can change, the surrogates' ends
// included: a set made of the tables holds all or none of the characters
// from one cut to the next.
func bmpCuts(tables ...*unicode.RangeTable) []rune {
	cuts := []rune{0, 0xd800, 0xe000, 0x10000}
	for _, t := range tables {
		for _, rg := range t.R16 {
			for r := rune(rg.Lo); r <= rune(rg.Hi); r += rune(rg.Stride) {
				cuts = append(cuts, r, r+1)
			}
		}
	}
	slices.Sort(cuts)
	return slices.Compact(cuts)
}

// bmpClass writes the characters of U+0000-U+FFFF for which in is true as
// the ranges inside a character class; in must give one answer from each of
// cuts (see bmpCuts) to the next.
//
// A bidirectional control written as itself would reorder how the rest of
// the published schema displays (up to the end of its line), which is the
// very deception the pattern refuses. So a range or character that opens an
// embedding or override (LRE, RLE, LRO, RLO) is followed by a PDF, and one
// that opens an isolate (LRI, RLI, FSI) by a PDI, when the class holds
// them, as it does whenever it holds the others; a repeated member changes
// nothing.
func bmpClass(cuts []rune, in func(rune) bool) string {
	var b strings.Builder
	write := func(r rune) {
		if r <= 0xff {
			fmt.Fprintf(&b, `\x%02x`, r)
		} else {
			b.WriteRune(r)
		}
	}
	for i := 0; i+1 < len(cuts); i++ {
		if !in(cuts[i]) || utf16.IsSurrogate(cuts[i]) {
			continue
		}
		lo := cuts[i]
		for i+2 < len(cuts) && in(cuts[i+1]) && !utf16.IsSurrogate(cuts[i+1]) {
			i++
		}
		r := cuts[i+1] - 1
		write(lo)
		if r > lo+1 {
			b.WriteByte('-')
		}
		if r > lo {
			write(r)
		}
		ends := []rune{lo, r}
		if lo == r {
			ends = ends[:1]
		}
		for _, end := range ends {
			switch {
			case (end == lre || end == rle || end == lro || end == rlo) && in(pdf):
				write(pdf)
			case (end == lri || end == rli || end == fsi) && r != pdi && in(pdi):
				write(pdi)
			}
		}
	}
	return b.String()
}

// The explicit bidirectional formatting characters.
const (
	lre, rle, pdf, lro, rlo = '\u202a', '\u202b', '\u202c', '\u202d', '\u202e'
	lri, rli, fsi, pdi      = '\u2066', '\u2067', '\u2068', '\u2069'
)

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
	text := textPattern()
	for _, name := range []string{"id", "customerId", "customerName"} {
		p := inv.Properties[name]
		p.MinLength, p.MaxLength = ptr(1), ptr(portfolio.MaxTextLen)
		p.Pattern = text
	}
	inv.Properties["id"].Description = "Invoice id, unique within the call; " + textRule()
	inv.Properties["customerId"].Description = "Customer id; invoices are grouped by it; " + textRule()
	inv.Properties["customerName"].Description = "Customer name. Where a customer's invoices name it differently, " +
		"its account shows the name on its first open invoice and warnings reports the customer; " + textRule()
	dueDateRules(inv.Properties["dueDate"])
	amountRules(inv.Properties["amountCents"])
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
	acc.Properties["customerName"].Description = "Customer name, as given on the customer's first open invoice."
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

	warns := s.Properties["warnings"]
	warns.Types, warns.Type = nil, "array"
	warns.Description = "What the analysis went past and a person may want to fix at the source; empty when nothing. " +
		"Customers left out for doNotContact are never reported."
	w := warns.Items
	closeObject(w)
	code := w.Properties["code"]
	code.Enum = []any{string(portfolio.WarningNameVariants)}
	code.Description = "customer_name_variants: the customer's invoices carry nameCount different customerName values " +
		"(case, spacing, a new name); its account shows the name on its first open invoice."
	w.Properties["customerId"].Description = "Customer id, as given."
	count := w.Properties["nameCount"]
	count.Minimum = ptr(2.0)
	count.Description = "Number of distinct customerName values among the customer's invoices."
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

// dueDateRules describes an invoice's due date, held to portfolio's date rule.
func dueDateRules(s *jsonschema.Schema) {
	s.Description = fmt.Sprintf("Due date (ISO calendar date, YYYY-MM-DD) from %s to %s.", portfolio.MinDate, portfolio.MaxDate)
	dateRules(s)
}

// amountRules describes an invoice's amount, held to portfolio's bounds.
func amountRules(s *jsonschema.Schema) {
	s.Type = "integer"
	s.Minimum, s.Maximum = ptr(1.0), ptr(float64(portfolio.MaxAmountCents))
	s.Description = fmt.Sprintf("Amount in BRL cents (integer, 1 to %d, that is up to R$ 10 billion).", int64(portfolio.MaxAmountCents))
}

func dateRules(s *jsonschema.Schema) {
	s.Pattern = datePattern
	s.Format = "date"
}

func ptr[T any](v T) *T { return &v }
