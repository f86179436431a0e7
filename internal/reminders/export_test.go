package reminders

// SendingSQL is ListSending's query of a filter, for the test of its plan.
var SendingSQL = sendingSQL

// BulksSQL is ListBulks' query, for the test of its plan.
var BulksSQL = bulksSQL
