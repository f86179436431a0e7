// Package portfolio is the pure core of the collections.analyze_portfolio
// tool: it turns an operator-supplied invoice portfolio into an explainable,
// read-only priority queue of overdue customers.
//
// It imports only the standard library, internal/jsonscan (the JSON lexer
// under its decoder), internal/timestamp (the RFC 3339 reader) and
// internal/value (the text, date and money rules every tool shares), each a
// standard-library leaf (tests enforce it), and does no I/O: no clock, no
// logging, no storage. The behaviour of [Analyze] follows the TypeScript
// reference implementation (analyzePortfolio) exactly, except that ties are
// broken by customer id so the order is total.
//
// The package has three parts:
//
//   - [Parse] decodes the tool's JSON arguments with a hand-written,
//     single-pass scanner for exactly this document shape, then runs
//     [Validate]. Every rejection is an [*Error] with a stable [Code] and the
//     path of the offending field.
//   - [Validate] applies the semantic rules (calendar dates, ranges, text
//     rules, duplicate ids) to an [Input], however it was built; the rules
//     for one date, text or amount are internal/value's.
//   - [Analyze] and [AnalyzeWith] compute the [Analysis], with [Warning]s
//     for what it went past (one customer under several names), a
//     [Summary], and issue 15's rules: disputes, promises to pay, contact
//     pacing, aging buckets and conversion to a base currency at
//     caller-supplied rates, exactly, in integers ([Decimal]). They assume
//     a validated [Input].
//
// An invalid call never runs the core: [Analyze] takes an *Input, and the
// only way this package turns bytes into an *Input is [Parse], which returns a
// nil *Input whenever it returns an error. Callers that build an Input in Go
// must run [Validate] first; callers that receive bytes have no way to reach
// Analyze except through Parse.
package portfolio
