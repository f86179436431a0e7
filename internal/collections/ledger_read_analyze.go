package collections

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/cobranca/cobranca/internal/contract"
	"github.com/cobranca/cobranca/internal/customers"
	"github.com/cobranca/cobranca/internal/failure"
	"github.com/cobranca/cobranca/internal/ledger"
	"github.com/cobranca/cobranca/internal/pipeline"
	"github.com/cobranca/cobranca/internal/portfolio"
	"github.com/cobranca/cobranca/internal/store"
	"github.com/cobranca/cobranca/internal/value"
	"github.com/google/jsonschema-go/jsonschema"
)

// AnalyzeLedgerName is the name of the analysis of the stored ledger.
const AnalyzeLedgerName = "collections.analyze_ledger"

// The bounds of one analyze_ledger call.
const (
	// maxLedgerInvoices bounds the open invoices one call analyzes: the
	// work (read, map, analyze) and the memory it holds. Beyond it the
	// call is refused, naming customerIds to narrow it.
	maxLedgerInvoices = 100_000
	// maxCustomerInvoices bounds one customer's open invoices: portfolio
	// counts a customer's invoices in 16 bits (its valid input has at most
	// portfolio.MaxInvoices), so more would wrap its counts.
	maxCustomerInvoices = math.MaxInt16
	// maxLedgerCents bounds the sum of the open amounts analyzed: every sum
	// of the result stays an integer a JSON reader holds exactly (2^53 − 1),
	// as portfolio's bounds keep analyze_portfolio's.
	maxLedgerCents = 1<<53 - 1
	// maxLedgerCustomers bounds customerIds.
	maxLedgerCustomers = portfolio.MaxInvoices
	// maxLedgerAccounts bounds the accounts (and the warnings) a result lists,
	// the most as analyze_portfolio's can hold; defaultLedgerAccounts when the
	// caller says nothing. The queue comes first to last: a result of ten
	// thousand accounts is megabytes no agent reads, and its check against the
	// output schema alone costs more than the analysis.
	maxLedgerAccounts     = portfolio.MaxInvoices
	defaultLedgerAccounts = 100
)

// codeAnalysisTooLarge: the selection holds more open invoices than one
// call analyzes.
const codeAnalysisTooLarge failure.Code = "analysis_too_large"

// analyzeLedgerArgs are analyze_ledger's arguments; every one is optional.
type analyzeLedgerArgs struct {
	AsOf        *string  `json:"asOf,omitempty"`
	CustomerIDs []string `json:"customerIds,omitempty"`
	Currency    *string  `json:"currency,omitempty"`
	MaxAccounts *int     `json:"maxAccounts,omitempty"`

	currency    string // made by check: BRL when left out
	maxAccounts int    // made by check
}

// check does what the input schema cannot: a real date, the whole text
// rule, unique ids, a currency of portfolio's table.
func (a *analyzeLedgerArgs) check() error {
	if a.AsOf != nil {
		if code, msg := value.DateCheck(*a.AsOf); code != "" {
			return &failure.Error{Code: failure.InvalidArguments, Field: "asOf", Message: msg}
		}
	}
	if a.CustomerIDs != nil {
		switch n := len(a.CustomerIDs); {
		case n == 0:
			return &failure.Error{Code: failure.InvalidArguments, Field: "customerIds",
				Message: "must name 1 to " + strconv.Itoa(maxLedgerCustomers) + " customers; leave it out to analyze every customer"}
		case n > maxLedgerCustomers:
			return &failure.Error{Code: failure.InvalidArguments, Field: "customerIds",
				Message: "must name at most " + strconv.Itoa(maxLedgerCustomers) + " customers"}
		}
		seen := make(map[string]bool, len(a.CustomerIDs))
		for i, id := range a.CustomerIDs {
			field := "customerIds[" + strconv.Itoa(i) + "]"
			if p := customers.IDProblem(id); p != "" {
				return &failure.Error{Code: failure.InvalidArguments, Field: field, Message: p}
			}
			if seen[id] {
				return &failure.Error{Code: failure.InvalidArguments, Field: field, Message: "names a customer an earlier entry names"}
			}
			seen[id] = true
		}
	}
	a.currency = "BRL"
	if a.Currency != nil {
		if _, ok := value.MinorUnits(*a.Currency); !ok {
			return &failure.Error{Code: failure.InvalidArguments, Field: "currency", Message: "must be an active ISO 4217 currency code in upper case, such as BRL or USD"}
		}
		a.currency = *a.Currency
	}
	a.maxAccounts = defaultLedgerAccounts
	if a.MaxAccounts != nil {
		if n := *a.MaxAccounts; n < 1 || n > maxLedgerAccounts {
			return &failure.Error{Code: failure.InvalidArguments, Field: "maxAccounts", Message: "must be from 1 to " + strconv.Itoa(maxLedgerAccounts)}
		}
		a.maxAccounts = *a.MaxAccounts
	}
	return nil
}

func analyzeLedgerDecode(b []byte) (any, int, error) { return checked(b, (*analyzeLedgerArgs).check) }

// analyzeLedgerResult is analyze_ledger's answer: the analysis
// analyze_portfolio would give of the same invoices, and what it was made of.
type analyzeLedgerResult struct {
	AsOf                  string             `json:"asOf"`
	Currency              string             `json:"currency"`
	InvoiceCount          int                `json:"invoiceCount"`
	OtherCurrencyInvoices int                `json:"otherCurrencyInvoices"`
	AccountsOmitted       int                `json:"accountsOmitted"`
	WarningsOmitted       int                `json:"warningsOmitted"`
	Analysis              portfolio.Analysis `json:"analysis"`
}

func analyzeLedgerContract() contract.Contract {
	return contract.Contract{
		Name:            AnalyzeLedgerName,
		ContractVersion: "1.0.0",
		Title:           "Analyze the receivables ledger",
		Description: "Use to get the collection priority queue of the invoices the server's ledger holds (imported or recorded), " +
			"rather than of invoices supplied with the call (analyze_portfolio). It runs analyze_portfolio's analysis, unchanged, " +
			"over the ledger's unsettled invoices (open or partially paid) of one currency as of a date, optionally of some customers: " +
			"each with its open amount, due date, open dispute and latest promise to pay, customers whose contact status is " +
			"do_not_contact left out. Paid, void and written-off invoices are not analyzed. The result lists the top of the queue " +
			"(maxAccounts) and counts the rest. Read-only: it never sends, changes " +
			"records or decides payments.",
		Category:     "collections",
		RiskLevel:    contract.Low,
		InputSchema:  analyzeLedgerInputSchema(),
		OutputSchema: analyzeLedgerOutputSchema(),
		Permissions:  []string{"collections:read"},
		SideEffects: contract.SideEffects{
			Changes:  []string{},
			OnRepeat: "Read-only: a repeat changes nothing and analyzes the ledger as it is then.",
		},
		AuditEvent: "collections.ledger.analyzed",
		FailureModes: []contract.FailureMode{
			{Code: failure.InvalidArguments, Meaning: "An argument does not match the input schema: asOf not a real date from " + value.MinDate +
				" to " + value.MaxDate + ", customerIds empty, longer than " + strconv.Itoa(maxLedgerCustomers) + ", naming a customer twice or " +
				"breaking the id rule, currency not an active ISO 4217 code, maxAccounts outside 1 to " + strconv.Itoa(maxLedgerAccounts) + "; field names it."},
			{Code: codeAnalysisTooLarge, Meaning: "The selection holds more than " + strconv.Itoa(maxLedgerInvoices) + " unsettled invoices in currency, " +
				"one customer more than " + strconv.Itoa(maxCustomerInvoices) + ", or their open amounts sum past 2^53 − 1 minor units: " +
				"nothing was analyzed; name fewer customers in customerIds."},
		},
		Idempotency: contract.Idempotency{Kind: "inherent", Description: "Read-only: repeating a call has no effect."},
		DryRun:      contract.ModeNone,
	}
}

func analyzeLedgerInputSchema() *jsonschema.Schema {
	s := mustFor[analyzeLedgerArgs]()
	closeObject(s)
	s.Required = nil
	s.Description = "What to analyze; every argument is optional: without any, every customer's BRL invoices as of today (UTC)."
	noNull(s, "asOf", "currency", "maxAccounts")
	ma := s.Properties["maxAccounts"]
	ma.Type = "integer"
	ma.Minimum, ma.Maximum = ptr(1.0), ptr(float64(maxLedgerAccounts))
	ma.Default = json.RawMessage(strconv.Itoa(defaultLedgerAccounts))
	ma.Description = fmt.Sprintf("The most accounts, from the top of the queue, and warnings the result lists, 1 to %d; %d when left out. "+
		"summary counts every account.", maxLedgerAccounts, defaultLedgerAccounts)
	dated(s.Properties["asOf"], fmt.Sprintf("The analysis date (YYYY-MM-DD, %s to %s), analyze_portfolio's asOf: invoices due before it are overdue, "+
		"a promise to pay dated on or after it is pending. Today (UTC) when left out.", value.MinDate, value.MaxDate))
	ids := s.Properties["customerIds"]
	ids.Types, ids.Type = nil, "array"
	ids.MinItems, ids.MaxItems, ids.UniqueItems = ptr(1), ptr(maxLedgerCustomers), true
	ids.Items = customerIDSchema()
	ids.Description = fmt.Sprintf("Only the invoices of these customers (1 to %d, each once); every customer when left out.", maxLedgerCustomers)
	cur := s.Properties["currency"]
	for _, c := range value.Currencies() {
		cur.Enum = append(cur.Enum, c)
	}
	cur.Description = "ISO 4217 code of the invoices analyzed, and of every amount of the result; BRL when left out. " +
		"The ledger's invoices in other currencies are counted in otherCurrencyInvoices, not analyzed."
	return s
}

func analyzeLedgerOutputSchema() *jsonschema.Schema {
	s := mustFor[analyzeLedgerResult]()
	closeObject(s)
	s.Description = "The priority queue of the ledger's unsettled invoices: analyze_portfolio's analysis of them, advice only, nothing was done."
	dated(s.Properties["asOf"], "The analysis date.")
	currencyRules(s.Properties["currency"], "ISO 4217 code of the invoices analyzed (analysis.summary.baseCurrency).")
	n := s.Properties["invoiceCount"]
	n.Minimum, n.Maximum = ptr(0.0), ptr(float64(maxLedgerInvoices))
	n.Description = "How many unsettled invoices (open or partially paid) in currency were analyzed, do_not_contact customers' included."
	o := s.Properties["otherCurrencyInvoices"]
	o.Minimum = ptr(0.0)
	o.Description = "How many unsettled invoices of the selection are in another currency: not analyzed."
	atLeast(s.Properties["accountsOmitted"], 0.0, "How many accounts of the queue follow the last one listed (maxAccounts): summary.accountsByPriority counts them.")
	atLeast(s.Properties["warningsOmitted"], 0.0, "How many warnings follow the last one listed (maxAccounts).")
	a := analyzeOutputSchema()
	a.Description = "What analyze_portfolio answers for the invoices analyzed, each given as its open amount (status open), due date, currency, " +
		"disputed while a dispute is open, promiseToPayDate its latest promise's date, doNotContact when its customer's contact status is do_not_contact, " +
		"and customerName as stored (the customer id when none), in the order customer id, then invoice id. " +
		"analysis.summary.leftOut.paid and .void are 0: settled invoices are not analyzed. " +
		"accounts and warnings list at most maxAccounts, from the first."
	a.Properties["accounts"].MaxItems = ptr(maxLedgerAccounts)
	a.Properties["warnings"].MaxItems = ptr(maxLedgerAccounts)
	s.Properties["analysis"] = a
	return s
}

// ledgerSelection is what analyze_ledger read of the ledger: the invoices,
// mapped, and the count of those in other currencies.
type ledgerSelection struct {
	invoices []portfolio.Invoice
	other    int
}

// errTooLarge stops ForAnalysis's stream when the selection outgrows a call.
var errTooLarge = errors.New("collections: the ledger selection is larger than one analysis")

// add maps inv, one of ForAnalysis's stream (customer id order), onto the
// selection, or refuses it past the bounds.
func (sel *ledgerSelection) add(inv ledger.Unsettled, currency string, dnc map[string]bool, cents *int64) error {
	if inv.Currency != currency {
		sel.other++
		return nil
	}
	if len(sel.invoices) == maxLedgerInvoices {
		return errTooLarge
	}
	if n := len(sel.invoices); n >= maxCustomerInvoices && sel.invoices[n-maxCustomerInvoices].CustomerID == inv.CustomerID {
		return errTooLarge // the customer's invoices come together: this one is beyond its bound
	}
	if *cents += inv.OpenCents; *cents > maxLedgerCents {
		return errTooLarge
	}
	sel.invoices = append(sel.invoices, portfolioInvoice(inv, currency, dnc[inv.CustomerID]))
	return nil
}

// portfolioInvoice is a stored unsettled invoice as an operator supplies it
// to analyze_portfolio: what is left to collect of it as its amount, open;
// its currency, named only when not BRL (the reference's shape); disputed
// while a dispute is open, with its reason; its latest promise's date; and
// doNotContact when its customer asked not to be contacted. The ledger's
// customer name may be empty (invoices may come before the customer's
// record): the customer id stands in, as portfolio needs one.
func portfolioInvoice(inv ledger.Unsettled, currency string, doNotContact bool) portfolio.Invoice {
	p := portfolio.Invoice{
		ID: inv.InvoiceID, CustomerID: inv.CustomerID, CustomerName: cmp.Or(inv.CustomerName, inv.CustomerID),
		DueDate: inv.DueDate, AmountCents: inv.OpenCents, Status: portfolio.StatusOpen, DoNotContact: doNotContact,
	}
	if currency != "BRL" {
		p.Details().Currency = currency
	}
	if inv.DisputeReason != "" {
		p.Details().Disputed = true
		p.Details().DisputeReason = string(inv.DisputeReason)
	}
	if inv.PromisedFor != "" {
		p.Details().PromiseToPayDate = inv.PromisedFor
	}
	return p
}

// byCustomerThenID orders invoices by customer id, then invoice id, in byte order.
func byCustomerThenID(a, b portfolio.Invoice) int {
	return cmp.Or(strings.Compare(a.CustomerID, b.CustomerID), strings.Compare(a.ID, b.ID))
}

// analyze runs analyze_portfolio's core on the selection, as of asOf, all in
// currency: its invoices in byte order of customer id, then id, whatever the
// database's collation streamed them in, for the order decides an account's
// name and the warnings' order.
func (sel *ledgerSelection) analyze(asOf, currency string, o portfolio.Options) portfolio.Analysis {
	if !slices.IsSortedFunc(sel.invoices, byCustomerThenID) {
		slices.SortFunc(sel.invoices, byCustomerThenID)
	}
	in := &portfolio.Input{AsOf: asOf, Invoices: sel.invoices}
	if currency != "BRL" {
		in.BaseCurrency = currency
	}
	return portfolio.AnalyzeWith(in, o)
}

// analyzeLedgerRead reads the selection, in one pass over the ledger, and
// runs analyze_portfolio's core on it under the server's options.
func analyzeLedgerRead(o portfolio.Options) pipeline.Read {
	return func(ctx context.Context, q store.Querier, v any) (pipeline.Effect, error) {
		a := v.(*analyzeLedgerArgs)
		asOf := customers.Today(pipeline.Now(ctx))
		if a.AsOf != nil {
			asOf = *a.AsOf
		}
		blocked, err := customers.DoNotContactIDs(ctx, q)
		if err != nil {
			return pipeline.Effect{}, err
		}
		dnc := make(map[string]bool, len(blocked))
		for _, id := range blocked {
			dnc[id] = true
		}
		var sel ledgerSelection
		var cents int64
		err = ledger.ForAnalysis(ctx, q, a.CustomerIDs, func(inv ledger.Unsettled) error {
			return sel.add(inv, a.currency, dnc, &cents)
		})
		if errors.Is(err, errTooLarge) {
			return pipeline.Effect{}, &failure.Error{Code: codeAnalysisTooLarge, Field: "customerIds",
				Message: fmt.Sprintf("the selection holds more than %d unsettled invoices in %s, a customer more than %d, or more than 2^53 − 1 minor units: "+
					"nothing was analyzed; name fewer customers", maxLedgerInvoices, a.currency, maxCustomerInvoices)}
		}
		if err != nil {
			return pipeline.Effect{}, err
		}
		out := analyzeLedgerResult{AsOf: asOf, Currency: a.currency, InvoiceCount: len(sel.invoices), OtherCurrencyInvoices: sel.other,
			Analysis: sel.analyze(asOf, a.currency, o)}
		an := &out.Analysis
		if n := len(an.Accounts); n > a.maxAccounts {
			an.Accounts, out.AccountsOmitted = an.Accounts[:a.maxAccounts], n-a.maxAccounts
		}
		if n := len(an.Warnings); n > a.maxAccounts {
			an.Warnings, out.WarningsOmitted = an.Warnings[:a.maxAccounts], n-a.maxAccounts
		}
		return pipeline.Effect{
			Structured: &out,
			Summary: fmt.Sprintf("Ledger analyzed: %d priority account(s) from %d unsettled invoice(s), %d listed; no external action taken.",
				len(out.Analysis.Accounts)+out.AccountsOmitted, len(sel.invoices), len(out.Analysis.Accounts)),
			Details: map[string]int64{"invoiceCount": int64(len(sel.invoices)), "accountCount": int64(len(out.Analysis.Accounts) + out.AccountsOmitted),
				"otherCurrencyInvoices": int64(sel.other)},
		}, nil
	}
}
