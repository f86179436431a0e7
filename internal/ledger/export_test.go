package ledger

import "github.com/cobranca/cobranca/internal/store"

// Cursor is the cursor of a list's page ending at parts (for benchmarks
// that start deep in a list).
func Cursor(parts ...string) string { return encodeCursor(parts...) }

// ListSQL is ListInvoices' query of a filter, for the test of its plan.
var ListSQL = listSQL

// ForAnalysisSQL is ForAnalysis's query, for the test of its plan.
var ForAnalysisSQL = forAnalysisSQL

// CandidateSQL is matching's query of its candidates, for the test of its
// plan.
func CandidateSQL(d store.Dialect) string { return candidateSQL(d, true) }

// RecordedSQL is matching's query of the recorded references, for the
// test of its plan.
var RecordedSQL = recordedSQL

// UnmatchedSQL is ListUnmatched's query, for the test of its plan.
var UnmatchedSQL = unmatchedSQL

// SuggestSQL is Suggest's query of the invoices carrying a page's
// references, for the test of its plan.
func SuggestSQL(d store.Dialect) string { return candidateSQL(d, false) }

// CustomerPagesSQL is Suggest's query of a page of each customer's
// candidates, for the test of its plan.
var CustomerPagesSQL = customerPagesSQL
