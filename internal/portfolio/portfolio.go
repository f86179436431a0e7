package portfolio

// Status is the state of an invoice.
type Status string

// The invoice statuses. Only open invoices count towards amounts.
const (
	StatusOpen Status = "open"
	StatusPaid Status = "paid"
	StatusVoid Status = "void"
)

// Invoice is one invoice of the portfolio. Amounts are integer cents of BRL
// and dates are calendar dates in YYYY-MM-DD form.
type Invoice struct {
	ID           string `json:"id"`
	CustomerID   string `json:"customerId"`
	CustomerName string `json:"customerName"`
	DueDate      string `json:"dueDate"`
	AmountCents  int64  `json:"amountCents"`
	Status       Status `json:"status"`
	DoNotContact bool   `json:"doNotContact"`
}

// Input is the argument document of the tool.
type Input struct {
	AsOf     string    `json:"asOf"`
	Invoices []Invoice `json:"invoices"`
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

// Account is one customer with at least one overdue open invoice.
type Account struct {
	CustomerID        string   `json:"customerId"`
	CustomerName      string   `json:"customerName"`
	AmountCents       int64    `json:"amountCents"`
	OldestDueDate     string   `json:"oldestDueDate"`
	DaysOverdue       int      `json:"daysOverdue"`
	Priority          Priority `json:"priority"`
	RecommendedAction Action   `json:"recommendedAction"`
	Reason            string   `json:"reason"`
}

// Analysis is the result of [Analyze].
type Analysis struct {
	TotalOpenCents int64     `json:"totalOpenCents"`
	Accounts       []Account `json:"accounts"` // never nil, so it encodes as []
	Warnings       []Warning `json:"warnings"` // never nil, so it encodes as []
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
