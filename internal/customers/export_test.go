package customers

// ListSQL is List's query of a filter, for the test of its plan.
var ListSQL = listSQL
