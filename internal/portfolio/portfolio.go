package portfolio

import (
	"fmt"
	"strconv"
	"time"

	"github.com/cobranca/cobranca/internal/value"
)

// Status is the state of an invoice.
type Status string

// The invoice statuses. Only open invoices count towards amounts.
const (
	StatusOpen Status = "open"
	StatusPaid Status = "paid"
	StatusVoid Status = "void"
)

// Invoice is one invoice of the portfolio. Amounts are integers in the
// minor unit of the invoice's currency (cents of BRL by default) and dates
// are calendar dates in YYYY-MM-DD form. The seven fields are the
// reference's, all required; the optional ones are in InvoiceDetails, nil
// when an invoice has none of them, as the reference's invoices have not:
// to JSON they are the invoice's own fields all the same.
type Invoice struct {
	ID           string `json:"id"`
	CustomerID   string `json:"customerId"`
	CustomerName string `json:"customerName"`
	DueDate      string `json:"dueDate"`
	AmountCents  int64  `json:"amountCents"`
	Status       Status `json:"status"`
	DoNotContact bool   `json:"doNotContact"`

	// A pointer keeps a reference-shaped invoice at 104 bytes (the
	// reference's was 96), not 152 with the fields inline: parsing and
	// analysing 500 of them is mostly memory traffic.
	*InvoiceDetails
}

// InvoiceDetails are an invoice's optional fields. Their zero value means
// what a reference-shaped invoice means. Reading them through a nil
// *InvoiceDetails panics: set them with [Invoice.Details]. A copy of an
// Invoice shares its details with the original (and == compares the
// pointers): give a copy its own before changing them.
type InvoiceDetails struct {
	// Currency is the ISO 4217 code of AmountCents; "" means BRL.
	Currency string `json:"currency,omitempty"`
	// Disputed takes an open invoice out of the queue (it stays in the
	// summary); DisputeReason, allowed only with Disputed, is the
	// customer's stated reason, free text under the id rules, never echoed.
	Disputed      bool   `json:"disputed,omitempty"`
	DisputeReason string `json:"disputeReason,omitempty"`
	// PromiseToPayDate is the date the customer promised to pay this
	// invoice by; "" means none.
	PromiseToPayDate string `json:"promiseToPayDate,omitempty"`
}

// Details returns the invoice's details, giving it empty ones first if it
// has none, so that they can be set: inv.Details().Currency = "USD".
func (inv *Invoice) Details() *InvoiceDetails {
	if inv.InvoiceDetails == nil {
		inv.InvoiceDetails = new(InvoiceDetails)
	}
	return inv.InvoiceDetails
}

// noDetails stands for the details of an invoice that has none; it is
// never written.
var noDetails InvoiceDetails

// details returns the invoice's details for reading: the zero ones if it
// has none.
func (inv *Invoice) details() *InvoiceDetails {
	if inv.InvoiceDetails != nil {
		return inv.InvoiceDetails
	}
	return &noDetails
}

// ExchangeRate converts one currency to the input's base currency: one
// unit of Currency is worth Rate units of the base currency, as of Date.
type ExchangeRate struct {
	Currency string  `json:"currency"`
	Rate     Decimal `json:"rate"`
	Date     string  `json:"date"`
}

// Contact is what the caller knows of one customer beyond its invoices.
type Contact struct {
	CustomerID string `json:"customerId"`
	// LastContactedAt is an RFC 3339 time (2026-11-28T14:30:00-03:00) or a
	// date (2026-11-28, read as its start in UTC).
	LastContactedAt string `json:"lastContactedAt"`
}

// Input is the argument document of the tool. AsOf and Invoices are the
// reference's; the rest is optional.
type Input struct {
	AsOf     string    `json:"asOf"`
	Invoices []Invoice `json:"invoices"`

	// BaseCurrency is the ISO 4217 code every amount of the result is in;
	// "" means BRL.
	BaseCurrency string `json:"baseCurrency,omitempty"`
	// Rates holds one rate to BaseCurrency for each other currency an
	// invoice is in.
	Rates []ExchangeRate `json:"rates,omitempty"`
	// Customers holds per-customer facts, at most one entry per customerId.
	Customers []Contact `json:"customers,omitempty"`
}

// Options are the server's settings for [AnalyzeWith], not the caller's.
type Options struct {
	// ContactPacing is the least time between two contacts of one
	// customer; 0 means no pacing.
	ContactPacing time.Duration
}

// Priority ranks an overdue account.
type Priority string

// The priorities.
const (
	PriorityHigh   Priority = "high"
	PriorityMedium Priority = "medium"
)

// Action is the next step recommended for an account. It is advice for a
// human; the package never performs it.
type Action string

// The recommended actions.
const (
	ActionHumanReview     Action = "human_review"
	ActionPrepareReminder Action = "prepare_reminder"
)

// Account is one customer with at least one overdue open invoice that is
// neither disputed nor under a pending promise to pay. The first eight
// fields are the reference's.
type Account struct {
	CustomerID        string   `json:"customerId"`
	CustomerName      string   `json:"customerName"`
	AmountCents       int64    `json:"amountCents"`
	OldestDueDate     string   `json:"oldestDueDate"`
	DaysOverdue       int      `json:"daysOverdue"`
	Priority          Priority `json:"priority"`
	RecommendedAction Action   `json:"recommendedAction"`
	Reason            string   `json:"reason"`

	// AgingBucket is the bucket of DaysOverdue.
	AgingBucket Bucket `json:"agingBucket"`
	// InvoiceCount is how many open invoices AmountCents sums, at most
	// MaxInvoices; with AgingBucket it fits in one word.
	InvoiceCount int32 `json:"invoiceCount"`
	// PriorityFactors are the factors that set Priority to high, each with
	// its value, in a fixed order: days_overdue, open_amount, broken_promise;
	// empty (never nil) for a medium account, which none sets. The
	// thresholds are the summary's (Summary.PriorityThresholds).
	PriorityFactors []Factor `json:"priorityFactors"`

	// AccountDetails is nil when the account has none: always, on a
	// portfolio all in the base currency analysed without pacing. A
	// pointer keeps such accounts 32 bytes smaller. To JSON they are the
	// account's own fields all the same.
	*AccountDetails
}

// AccountDetails are what only some accounts have. Reading them through a
// nil *AccountDetails panics: check Account.AccountDetails first.
type AccountDetails struct {
	// Conversions lists, per currency other than the base one, what of
	// AmountCents came from it and at which rate; nil (omitted) when all
	// is in the base currency.
	Conversions []Conversion `json:"conversions,omitempty"`
	// NextContactAfter, an RFC 3339 time in UTC, is when pacing allows the
	// next contact: the customer's lastContactedAt plus
	// Options.ContactPacing, when that is later than the start of asOf.
	// "" (omitted) when pacing does not apply.
	NextContactAfter string `json:"nextContactAfter,omitempty"`
}

// Bucket is an aging bucket: how long past due. Like FactorName it is a
// small number that reads and writes as its name ("current", "1-30",
// "31-60", "61-90", "90+"), in JSON too; it keeps an Account 16 bytes
// smaller than a string would.
type Bucket uint8

// The aging buckets, in order. Current is not yet due (due on or after
// asOf); the others count days past due. The zero Bucket is none of them.
const (
	BucketCurrent Bucket = iota + 1
	Bucket1To30
	Bucket31To60
	Bucket61To90
	BucketOver90
)

// bucketNames are value.AgingBucketNames, from BucketCurrent on.
var bucketNames = append([]string{""}, value.AgingBucketNames[:]...)

// Known reports whether b is one of the constants.
func (b Bucket) Known() bool { return enumKnown(bucketNames, uint8(b)) }

// String returns the bucket's name, or "Bucket(N)" when b is none of the
// constants.
func (b Bucket) String() string { return enumString(bucketNames, uint8(b), "Bucket") }

// MarshalText returns String's bytes; it never fails.
func (b Bucket) MarshalText() ([]byte, error) { return []byte(b.String()), nil }

// UnmarshalText sets b to the bucket named text; any other text is an
// error.
func (b *Bucket) UnmarshalText(text []byte) error {
	v, err := enumParse(bucketNames, text, "aging bucket")
	*b = Bucket(v)
	return err
}

// FactorName names a priority factor. It is a small number, not a string,
// so that a Factor holds no pointer and is 16 bytes: the factors of all
// accounts are one array that the garbage collector need not scan. It
// reads and writes as its name (String, MarshalText, UnmarshalText), in
// JSON too.
type FactorName uint8

// The priority factors. The zero FactorName is none of them.
const (
	// FactorDaysOverdue, "days_overdue": Value is DaysOverdue, at least
	// HighPriorityDays.
	FactorDaysOverdue FactorName = iota + 1
	// FactorOpenAmount, "open_amount": Value is AmountCents, at least
	// HighPriorityCents (in the base currency's minor unit).
	FactorOpenAmount
	// FactorBrokenPromise, "broken_promise": Value is the days since the
	// latest broken promise to pay (a promised date before asOf on an
	// invoice still open); it raises the priority one step.
	FactorBrokenPromise
)

var factorNames = []string{FactorDaysOverdue: "days_overdue", FactorOpenAmount: "open_amount", FactorBrokenPromise: "broken_promise"}

// Known reports whether f is one of the constants.
func (f FactorName) Known() bool { return enumKnown(factorNames, uint8(f)) }

// String returns the factor's name, or "FactorName(N)" when f is none of
// the constants.
func (f FactorName) String() string { return enumString(factorNames, uint8(f), "FactorName") }

// MarshalText returns String's bytes; it never fails.
func (f FactorName) MarshalText() ([]byte, error) { return []byte(f.String()), nil }

// UnmarshalText sets f to the factor named text; any other text is an
// error.
func (f *FactorName) UnmarshalText(text []byte) error {
	v, err := enumParse(factorNames, text, "priority factor")
	*f = FactorName(v)
	return err
}

// The text forms of the package's small-number enums: names[v] is the name
// of v, "" where v is none of the constants.

func enumKnown(names []string, v uint8) bool { return int(v) < len(names) && names[v] != "" }

func enumString(names []string, v uint8, typ string) string {
	if enumKnown(names, v) {
		return names[v]
	}
	return typ + "(" + strconv.Itoa(int(v)) + ")"
}

// enumParse returns the value named text, or 0 and an error naming what.
func enumParse(names []string, text []byte, what string) (uint8, error) {
	for v, name := range names {
		if name != "" && string(text) == name {
			return uint8(v), nil
		}
	}
	return 0, fmt.Errorf("portfolio: unknown %s %q", what, text)
}

// Factor is one factor that set an account's priority to high, with its
// value.
type Factor struct {
	Factor FactorName `json:"factor"`
	Value  int64      `json:"value"`
}

// Conversion is what an account owes in one foreign currency.
type Conversion struct {
	Currency       string  `json:"currency"`
	AmountCents    int64   `json:"amountCents"`    // in Currency's minor unit
	Rate           Decimal `json:"rate"`           // as given in Input.Rates
	RateDate       string  `json:"rateDate"`       // as given in Input.Rates
	ConvertedCents int64   `json:"convertedCents"` // in the base currency's minor unit
}

// Analysis is the result of [Analyze]. Every amount is in the minor unit of
// Summary.BaseCurrency.
type Analysis struct {
	TotalOpenCents int64     `json:"totalOpenCents"`
	Accounts       []Account `json:"accounts"` // never nil, so it encodes as []
	Warnings       []Warning `json:"warnings"` // never nil, so it encodes as []
	Summary        Summary   `json:"summary"`
}

// Summary is the portfolio at a glance: counts and sums, never names.
type Summary struct {
	BaseCurrency string `json:"baseCurrency"`
	// AccountsByPriority counts Accounts by priority.
	AccountsByPriority ByPriority `json:"accountsByPriority"`
	// PriorityThresholds are where days_overdue and open_amount set an
	// account's priority to high: the same for every account, said once.
	PriorityThresholds Thresholds `json:"priorityThresholds"`
	// Aging has the five buckets, in order, each with the open invoices of
	// every customer not left out for doNotContact (disputed and promised
	// ones included): their amounts sum to TotalOpenCents.
	Aging []AgingBucket `json:"aging"`
	// LeftOut counts what the queue does not show, by reason.
	LeftOut LeftOut `json:"leftOut"`
	// Rates are the rates used, one per foreign currency some invoice is
	// in, in order of currency code; never nil.
	Rates []ExchangeRate `json:"rates"`
}

// ByPriority counts accounts by priority.
type ByPriority struct {
	High   int `json:"high"`
	Medium int `json:"medium"`
}

// Thresholds are the values from which a factor sets an account's priority
// to high (HighPriorityDays, HighPriorityCents); a broken promise always does.
type Thresholds struct {
	DaysOverdue     int   `json:"daysOverdue"`
	OpenAmountCents int64 `json:"openAmountCents"` // in the base currency's minor unit
}

// AgingBucket is one bucket of the summary's aging.
type AgingBucket struct {
	Bucket       Bucket `json:"bucket"`
	AmountCents  int64  `json:"amountCents"`
	InvoiceCount int    `json:"invoiceCount"`
}

// LeftOut counts invoices and customers the queue does not show, by
// reason. Each invoice counts under at most one reason, the first that
// applies in this order; each customer too (see [Analyze]).
type LeftOut struct {
	DoNotContact   Count `json:"doNotContact"`
	Paid           Count `json:"paid"`
	Void           Count `json:"void"`
	Disputed       Count `json:"disputed"`
	PromisePending Count `json:"promisePending"`
}

// Count is a number of invoices and of customers.
type Count struct {
	Invoices  int `json:"invoices"`
	Customers int `json:"customers"`
}

// WarningCode classifies a [Warning]. The values are stable: clients may
// match on them.
type WarningCode string

// The warning codes.
const (
	// WarningNameVariants: one customerId comes with more than one
	// customerName (they differ in case, spacing, or the company was
	// renamed), as ERP exports often have it. The account shows the name
	// of the customer's first open invoice, as the reference does.
	WarningNameVariants WarningCode = "customer_name_variants"
)

// Warning is something about the portfolio that the analysis went past but
// a person may want to fix at the source. It never carries names or other
// free text from the input beyond the customer id.
type Warning struct {
	Code       WarningCode `json:"code"`
	CustomerID string      `json:"customerId"`
	NameCount  int         `json:"nameCount"` // distinct customerName values, at least 2
}

// The thresholds at which an account becomes high priority.
const (
	HighPriorityDays  = 14
	HighPriorityCents = 200_000
)
