package ledger

// The charts' queries, for the benchmark that logs their plans.
const (
	AgingSQL = agingSQL
	CashSQL  = cashSQL
)
