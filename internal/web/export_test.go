package web

// FormatPosition is the customer and outbox pages' place in a list (?after=, ?bulks=), for
// the tests that start deep in one.
var FormatPosition = formatPosition
