package collections

import (
	"fmt"
	"math"
	"reflect"
	"slices"
	"strings"
	"sync"
	"unicode"
	"unicode/utf16"

	"github.com/cobranca/cobranca/internal/portfolio"
	"github.com/cobranca/cobranca/internal/value"
	"github.com/google/jsonschema-go/jsonschema"
)

// The published schemas are generated from portfolio's structs (the one
// source of the field names and types) and then given the limits portfolio
// enforces, so the schema a client reads and the validation the server runs
// say the same thing. portfolio.Parse is stricter than the input schema only
// where a JSON Schema cannot follow; analyze_schema_test.go lists where.

// datePattern is YYYY-MM-DD restricted to value.MinDate..MaxDate
// (2000-01-01..2099-12-31) and to months 01-12 and days 01-31; whether the
// day exists in that month (2025-02-30) is left to Parse. A test keeps it in
// step with the constants.
const datePattern = `^20[0-9]{2}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])$`

// textPattern is the rule for ids and names as far as a pattern can say it:
// no character of value.RefusedInText, and at least one that is in
// neither it nor value.InvisibleInText (white space, private use,
// blank-looking characters). It reads: invisible characters that are
// allowed, then a visible one, then any allowed characters. The first two
// classes are disjoint, so a backtracking engine takes linear time too. It
// is built from those tables, so the schema and Parse cannot drift apart.
//
// Parse also counts combining marks (M) and unassigned code points (Cn) as
// not visible (value.VisibleInText). A pattern that said so would list
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
//
// It is computed once: walking the tables is costly, and every Tools call (each
// server start, each test's tool set) asks for it once per text field.
var textPattern = sync.OnceValue(func() string {
	refused, invisible := value.RefusedInText(), value.InvisibleInText()
	cuts := bmpCuts(refused, invisible)
	allowedInvisible := bmpClass(cuts, func(r rune) bool { return unicode.Is(invisible, r) && !unicode.Is(refused, r) })
	notVisible := bmpClass(cuts, func(r rune) bool { return unicode.Is(invisible, r) || unicode.Is(refused, r) })
	notAllowed := bmpClass(cuts, func(r rune) bool { return unicode.Is(refused, r) })
	return "^[" + allowedInvisible + "]*[^" + notVisible + "][^" + notAllowed + "]*$"
})

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

// currencyPattern is an ISO 4217 alphabetic code as far as its form goes;
// whether the code is an active one is portfolio's table (invalid_value).
const currencyPattern = `^[A-Z]{3}$`

// minRate is the least rate: a rate is above 0 with at most
// portfolio.MaxRateScale fractional digits, so at least 10^-MaxRateScale.
// Said as a minimum, it is exact and a keyword internal/schema checks.
var minRate = math.Pow10(-portfolio.MaxRateScale)

// dateTimePattern is lastContactedAt: a date under datePattern, alone or
// followed by an RFC 3339 time with seconds (a fraction allowed) and an
// offset (Z or ±hh:mm up to ±23:59), as RFC 3339 has it and Validate reads
// it. The instant must also lie within MinDate..MaxDate, which Validate
// alone checks.
var dateTimePattern = strings.TrimSuffix(datePattern, "$") +
	`(T([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](\.[0-9]+)?(Z|[+-]([01][0-9]|2[0-3]):[0-5][0-9]))?$`

// utcTimePattern is nextContactAfter: an RFC 3339 time in UTC, in seconds.
const utcTimePattern = `^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z$`

// forOptions generates a Decimal as the JSON number it encodes as, and a
// FactorName and a Bucket (small numbers in Go) as the strings they encode
// as.
var forOptions = &jsonschema.ForOptions{TypeSchemas: map[reflect.Type]*jsonschema.Schema{
	reflect.TypeFor[portfolio.Decimal]():    {Type: "number"},
	reflect.TypeFor[portfolio.FactorName](): {Type: "string"},
	reflect.TypeFor[portfolio.Bucket]():     {Type: "string"},
}}

func analyzeInputSchema() *jsonschema.Schema {
	s := mustForWith[portfolio.Input](forOptions)
	sealObject(s)
	s.Description = "An invoice portfolio supplied by the operator, analyzed as of one date. " +
		"asOf and invoices are required; the rest is optional, and without it the analysis is the reference one (all in BRL)."
	dated(s.Properties["asOf"], fmt.Sprintf("Reference date (ISO calendar date, YYYY-MM-DD) from %s to %s; invoices due before it are overdue.",
		value.MinDate, value.MaxDate))

	invs := s.Properties["invoices"]
	invs.Description = fmt.Sprintf("%d to %d invoices with unique ids.", portfolio.MinInvoices, portfolio.MaxInvoices)
	invs.MinItems, invs.MaxItems = ptr(portfolio.MinInvoices), ptr(portfolio.MaxInvoices)

	inv := objects(invs)
	inv.Description = "One invoice. The first seven fields are required; currency, disputed, disputeReason and promiseToPayDate are optional."
	text := textPattern()
	for _, name := range []string{"id", "customerId", "customerName"} {
		p := inv.Properties[name]
		p.MinLength, p.MaxLength = ptr(1), ptr(value.MaxTextLen)
		p.Pattern = text
	}
	inv.Properties["id"].Description = "Invoice id, unique within the call; " + textRule()
	inv.Properties["customerId"].Description = "Customer id; invoices are grouped by it; " + textRule()
	inv.Properties["customerName"].Description = "Customer name. Where a customer's invoices name it differently, " +
		"its account shows the name on its first open invoice and warnings reports the customer; " + textRule()
	dueDateRules(inv.Properties["dueDate"])
	amount := inv.Properties["amountCents"]
	amountRules(amount)
	amount.Description = fmt.Sprintf("Amount in the minor unit of the invoice's currency, BRL cents by default (integer, 1 to %d, that is up to R$ 10 billion); "+
		"converted to baseCurrency, it must round to 1 to %[1]d too.", int64(value.MaxAmountCents))
	st := inv.Properties["status"]
	st.Enum = []any{string(portfolio.StatusOpen), string(portfolio.StatusPaid), string(portfolio.StatusVoid)}
	st.Description = "Invoice status; only open invoices count."
	inv.Properties["doNotContact"].Description = "If any invoice of a customer has it, the customer is left out entirely (also from totals and summary.aging)."
	currencyIn(inv.Properties["currency"], true, `ISO 4217 code of amountCents; absent or "": BRL. A currency other than baseCurrency needs its entry in rates (else missing_rate).`)
	inv.Properties["disputed"].Description = "The customer disputes this invoice: it leaves the queue (the account's amount, count and days overdue) " +
		"but stays in totalOpenCents and summary.aging; summary.leftOut counts it."
	reason := inv.Properties["disputeReason"]
	reason.MaxLength, reason.Pattern = ptr(value.MaxTextLen), "^$|"+text // "": none
	reason.Description = `The customer's stated reason, only with disputed: true (else invalid_value; "" is none); never echoed; ` + textRule()
	promise := inv.Properties["promiseToPayDate"]
	promise.Pattern = orEmpty(datePattern) // a date, or "": none
	promise.Description = fmt.Sprintf(`Date (YYYY-MM-DD, %s to %s) the customer promised to pay this open invoice by; "" is none. `+
		"On or after asOf: the account is paused, left out of the queue until the day after it (summary.leftOut.promisePending counts it). "+
		"Before asOf, the invoice still open: a broken promise, which raises the account to high priority and is named in its reason.",
		value.MinDate, value.MaxDate)

	currencyIn(s.Properties["baseCurrency"], true, `ISO 4217 code every amount of the result is in (summary.baseCurrency); absent or "": BRL.`)
	rates := s.Properties["rates"]
	rates.MaxItems = ptr(portfolio.MaxRates)
	rates.Description = fmt.Sprintf("Up to %d exchange rates to baseCurrency, one per other currency an invoice is in, each currency once (else duplicate_entry). "+
		"Each invoice is converted exactly (rounded half up to the base currency's minor unit), then summed.", portfolio.MaxRates)
	rate := objects(rates)
	rate.Description = "What one unit of currency is worth in baseCurrency, as of date."
	currencyIn(rate.Properties["currency"], false, "ISO 4217 code, not baseCurrency.")
	rateRules(rate.Properties["rate"], fmt.Sprintf("Units of baseCurrency one unit of currency is worth: a JSON number above 0 and at most %d, "+
		"with at most %d fractional and %d significant digits (5.17, 0.0019); taken exactly, never rounded.",
		portfolio.MaxRate, portfolio.MaxRateScale, portfolio.MaxRateSignifics))
	dated(rate.Properties["date"], fmt.Sprintf("Date of the rate (YYYY-MM-DD, %s to %s), shown with it.", value.MinDate, value.MaxDate))

	custs := s.Properties["customers"]
	custs.MaxItems = ptr(portfolio.MaxInvoices)
	custs.Description = fmt.Sprintf("Up to %d facts about customers, each customerId once (else duplicate_entry); "+
		"an entry naming no customer of the invoices is ignored.", portfolio.MaxInvoices)
	cust := objects(custs)
	cust.Description = "What the operator knows of one customer beyond its invoices."
	cid := cust.Properties["customerId"]
	cid.MinLength, cid.MaxLength, cid.Pattern = ptr(1), ptr(value.MaxTextLen), text
	cid.Description = "Customer id, as in the invoices; " + textRule()
	last := cust.Properties["lastContactedAt"]
	last.Pattern = dateTimePattern
	last.Description = fmt.Sprintf("When the customer was last contacted: an RFC 3339 date-time with offset (2026-11-28T14:30:00-03:00), "+
		"or a date (2026-11-28, its start in UTC), from %s to %s. With the server's contact pacing (COBRANCA_CONTACT_PACING) "+
		"it sets the account's nextContactAfter.", value.MinDate, value.MaxDate)
	return s
}

func analyzeOutputSchema() *jsonschema.Schema {
	s := mustForWith[portfolio.Analysis](forOptions)
	sealObject(s)
	s.Description = "Priority queue of overdue customers, with a summary of the portfolio; advice only, nothing was done. " +
		"Every amount is in the minor unit of summary.baseCurrency."
	atLeast(s.Properties["totalOpenCents"], 0.0, "Sum of all open invoices (overdue or not, disputed and promised ones included) of every customer not left out for doNotContact, "+
		"converted to summary.baseCurrency (BRL cents by default).")
	accs := s.Properties["accounts"]
	accs.Description = "Customers with an overdue open invoice that is not disputed, unless doNotContact or a pending promise to pay leaves them out: " +
		"days overdue descending, then amount descending, then customer id ascending."
	acc := objects(accs)
	acc.Properties["customerId"].Description = "Customer id, as given."
	acc.Properties["customerName"].Description = "Customer name, as given on the customer's first open invoice."
	atLeast(acc.Properties["amountCents"], 1.0, "Sum of the customer's open, undisputed invoices, overdue or not, in the base currency's minor unit.")
	dated(acc.Properties["oldestDueDate"], "Earliest due date (ISO calendar date, YYYY-MM-DD) among the customer's overdue open, undisputed invoices.")
	days := acc.Properties["daysOverdue"]
	days.Minimum = ptr(1.0)
	days.Description = "Calendar days from oldestDueDate to asOf."
	prio := acc.Properties["priority"]
	prio.Enum = []any{string(portfolio.PriorityHigh), string(portfolio.PriorityMedium)}
	prio.Description = fmt.Sprintf("high from %d days overdue or %d minor units open, or with a broken promise to pay; else medium.",
		portfolio.HighPriorityDays, portfolio.HighPriorityCents)
	act := acc.Properties["recommendedAction"]
	act.Enum = []any{string(portfolio.ActionHumanReview), string(portfolio.ActionPrepareReminder)}
	act.Description = "human_review for high priority, prepare_reminder for medium; a suggestion for a person, never performed."
	acc.Properties["reason"].Description = `"<days> days overdue with <amount> open", pt-BR: the amount as R$ 1.234,56 in BRL, ` +
		`else with the base currency's symbol (US$ 1.234,56); then, per foreign currency, "; US$ 1.000,00 at 5,17 (2026-11-28)"; ` +
		`then, after a broken promise, "; broken promise to pay of YYYY-MM-DD".`
	bucket := acc.Properties["agingBucket"]
	bucket.Enum = []any{portfolio.Bucket1To30.String(), portfolio.Bucket31To60.String(), portfolio.Bucket61To90.String(), portfolio.BucketOver90.String()}
	bucket.Description = "The aging bucket of daysOverdue."
	count := acc.Properties["invoiceCount"]
	count.Minimum, count.Maximum = ptr(1.0), nil // an int32 in Go, for size
	count.Description = "How many open, undisputed invoices amountCents sums."
	factors := acc.Properties["priorityFactors"]
	factors.MaxItems = ptr(3)
	factors.Description = "The factors that set priority to high, each with its value, in order: days_overdue, open_amount, broken_promise; " +
		"empty for a medium account, which none sets. Where the first two set it: summary.priorityThresholds."
	factor := objects(factors)
	name := factor.Properties["factor"]
	name.Enum = []any{portfolio.FactorDaysOverdue.String(), portfolio.FactorOpenAmount.String(), portfolio.FactorBrokenPromise.String()}
	name.Description = "days_overdue (value: daysOverdue), open_amount (value: amountCents), broken_promise (value: days since the latest promised date still unpaid)."
	value := factor.Properties["value"]
	value.Minimum = ptr(1.0)
	value.Description = "The factor's value."
	convs := acc.Properties["conversions"]
	convs.MinItems = ptr(1)
	convs.Description = "Present when some of amountCents came from another currency: per currency, by code, what was converted and at which rate."
	conv := objects(convs)
	currencyRules(conv.Properties["currency"], "ISO 4217 code of the invoices converted.")
	convAmount := conv.Properties["amountCents"]
	convAmount.Minimum = ptr(1.0)
	convAmount.Description = "Their sum in that currency's minor unit."
	rateRules(conv.Properties["rate"], "The rate used, as given in rates.")
	dated(conv.Properties["rateDate"], "The rate's date, as given in rates.")
	converted := conv.Properties["convertedCents"]
	converted.Minimum = ptr(1.0)
	converted.Description = "What they count for in amountCents, in the base currency's minor unit (each invoice converted, then summed)."
	next := acc.Properties["nextContactAfter"]
	next.Pattern, next.Format = utcTimePattern, "date-time"
	next.Description = "Present when the server paces contacts (COBRANCA_CONTACT_PACING) and the customer's lastContactedAt plus the pacing " +
		"is later than the start of asOf: the earliest time (RFC 3339, UTC) for the next contact. The account keeps its place in the queue."

	warns := s.Properties["warnings"]
	warns.Description = "What the analysis went past and a person may want to fix at the source; empty when nothing. " +
		"Customers left out for doNotContact are never reported."
	w := objects(warns)
	code := w.Properties["code"]
	code.Enum = []any{string(portfolio.WarningNameVariants)}
	code.Description = "customer_name_variants: the customer's invoices carry nameCount different customerName values " +
		"(case, spacing, a new name); its account shows the name on its first open invoice."
	w.Properties["customerId"].Description = "Customer id, as given."
	nameCount := w.Properties["nameCount"]
	nameCount.Minimum = ptr(2.0)
	nameCount.Description = "Number of distinct customerName values among the customer's invoices."

	summaryRules(s.Properties["summary"])
	return s
}

// summaryRules describes the analysis's summary: counts and sums, never names.
func summaryRules(sum *jsonschema.Schema) {
	sealObject(sum)
	sum.Description = "The portfolio at a glance: counts and sums, never names."
	currencyRules(sum.Properties["baseCurrency"], "ISO 4217 code of every amount of the result (BRL unless the input's baseCurrency says otherwise).")
	byPrio := sum.Properties["accountsByPriority"]
	sealObject(byPrio)
	byPrio.Description = "How many accounts have each priority."
	for _, p := range byPrio.Properties {
		p.Minimum = ptr(0.0)
	}
	th := sum.Properties["priorityThresholds"]
	sealObject(th)
	th.Description = "Where an account's factors set its priority to high (the same for every account): days_overdue from daysOverdue days overdue, " +
		"open_amount from openAmountCents; a broken promise to pay always does."
	th.Properties["daysOverdue"].Minimum = ptr(1.0)
	th.Properties["daysOverdue"].Description = "The days overdue from which days_overdue sets high priority."
	th.Properties["openAmountCents"].Minimum = ptr(1.0)
	th.Properties["openAmountCents"].Description = "The amount open, in the base currency's minor unit, from which open_amount sets high priority."
	aging := sum.Properties["aging"]
	buckets := []any{portfolio.BucketCurrent.String(), portfolio.Bucket1To30.String(), portfolio.Bucket31To60.String(), portfolio.Bucket61To90.String(), portfolio.BucketOver90.String()}
	aging.MinItems, aging.MaxItems = ptr(len(buckets)), ptr(len(buckets))
	aging.Description = "The open invoices of every customer not left out for doNotContact (disputed and promised ones included), " +
		"by days past due on asOf, in the order current (not yet due), 1-30, 31-60, 61-90, 90+; their amounts sum to totalOpenCents."
	ab := objects(aging)
	ab.Properties["bucket"].Enum = buckets
	ab.Properties["amountCents"].Minimum = ptr(0.0)
	ab.Properties["amountCents"].Description = "Sum of the bucket's invoices, in the base currency's minor unit."
	ab.Properties["invoiceCount"].Minimum = ptr(0.0)
	left := sum.Properties["leftOut"]
	sealObject(left)
	left.Description = "What the queue does not show, counted by the first reason that applies, in this order. " +
		"Invoices: doNotContact (any status, of a customer with a doNotContact invoice), paid, void, disputed (open), promisePending (open, promised on or after asOf). " +
		"Customers: doNotContact, promisePending (paused, else listed), disputed (listed but for its disputed invoices), paid (no open invoice, one paid), void (no open or paid one)."
	for _, c := range left.Properties {
		sealObject(c)
		for _, n := range c.Properties {
			n.Minimum = ptr(0.0)
		}
	}
	rates := sum.Properties["rates"]
	rates.Description = "The rates used (one per foreign currency an invoice of a customer not left out for doNotContact is in), by currency code; empty when all is in the base currency."
	r := objects(rates)
	currencyRules(r.Properties["currency"], "ISO 4217 code.")
	rateRules(r.Properties["rate"], "Units of baseCurrency one unit of currency is worth, as given.")
	r.Properties["date"].Description = "The rate's date, as given."
	dateRules(r.Properties["date"])
}

// currencyIn describes a currency code an input names: one of the codes
// portfolio converts, or, where emptyAllowed, "" for the default (BRL).
func currencyIn(s *jsonschema.Schema, emptyAllowed bool, description string) {
	if emptyAllowed {
		s.Enum = append(s.Enum, "")
	}
	for _, c := range value.Currencies() {
		s.Enum = append(s.Enum, c)
	}
	s.Description = description
}

// orEmpty is pattern p, a whole-string ^…$ pattern, or the empty string.
func orEmpty(p string) string {
	return "^(" + strings.TrimSuffix(strings.TrimPrefix(p, "^"), "$") + ")?$"
}

// currencyRules describes an ISO 4217 currency code the result names.
func currencyRules(s *jsonschema.Schema, description string) {
	s.Pattern = currencyPattern
	s.Description = description
}

// rateRules describes an exchange rate, held to portfolio's bounds.
func rateRules(s *jsonschema.Schema, description string) {
	s.Minimum, s.Maximum = ptr(minRate), ptr(float64(portfolio.MaxRate))
	s.Description = description
}

func mustFor[T any]() *jsonschema.Schema { return mustForWith[T](nil) }

// mustForWith is mustFor under opts.
func mustForWith[T any](opts *jsonschema.ForOptions) *jsonschema.Schema {
	s, err := jsonschema.For[T](opts)
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

// objects makes s, what jsonschema.For gives for a Go slice of structs, an
// array (never null, unlike a nil slice) of sealed objects, and returns the
// items' schema.
func objects(s *jsonschema.Schema) *jsonschema.Schema {
	s.Types, s.Type = nil, "array"
	sealObject(s.Items)
	return s.Items
}

// sealObject forbids unknown properties and keeps jsonschema.For's
// required list: every property but those whose Go field is omitempty, so
// the struct tags decide, once, which fields are optional.
func sealObject(s *jsonschema.Schema) {
	s.AdditionalProperties = &jsonschema.Schema{Not: &jsonschema.Schema{}}
	slices.Sort(s.Required)
}

// atLeast describes a number of at least least.
func atLeast(s *jsonschema.Schema, least float64, description string) {
	s.Minimum = ptr(least)
	s.Description = description
}

// dated describes a date.
func dated(s *jsonschema.Schema, description string) {
	s.Description = description
	dateRules(s)
}

// dueDateRules describes an invoice's due date, held to the shared date rule.
func dueDateRules(s *jsonschema.Schema) {
	s.Description = fmt.Sprintf("Due date (ISO calendar date, YYYY-MM-DD) from %s to %s.", value.MinDate, value.MaxDate)
	dateRules(s)
}

// amountRules describes an invoice's amount, held to portfolio's bounds.
func amountRules(s *jsonschema.Schema) {
	s.Type = "integer"
	s.Minimum, s.Maximum = ptr(1.0), ptr(float64(value.MaxAmountCents))
	s.Description = fmt.Sprintf("Amount in BRL cents (integer, 1 to %d, that is up to R$ 10 billion).", int64(value.MaxAmountCents))
}

func dateRules(s *jsonschema.Schema) {
	s.Pattern = datePattern
	s.Format = "date"
}

func ptr[T any](v T) *T { return &v }
