package portfolio

import (
	"strings"
)

// withTop is rawDoc(n, edit) with members added to the top-level object.
func withTop(n int, edit func(int, string) string, members string) string {
	doc := rawDoc(n, edit)
	return doc[:len(doc)-1] + "," + members + "}"
}

// usdInvoice is an edit that puts invoice k in USD.
func usdInvoice(k int) func(int, string) string {
	return at(k, `"doNotContact":false`, `"doNotContact":false,"currency":"USD"`)
}

const (
	usdRate  = `"rates":[{"currency":"USD","rate":5.17,"date":"2025-06-29"}]`
	contacts = `"customers":[{"customerId":"c0","lastContactedAt":"2025-06-28T10:00:00-03:00"},{"customerId":"c1","lastContactedAt":"2025-06-27"}]`
)

// rejectCasesExtended has a case for every rejection of issue 15's fields.
// They join rejectCases, so they are fuzz seeds too.
var rejectCasesExtended = []struct {
	name  string
	doc   string
	code  Code
	field string
}{
	// Structure: types, nulls, keys, missing fields, error paths.
	{"baseCurrency number", withTop(1, nil, `"baseCurrency":986`), CodeInvalidType, "baseCurrency"},
	{"baseCurrency null", withTop(1, nil, `"baseCurrency":null`), CodeInvalidType, "baseCurrency"},
	{"baseCurrency repeated", withTop(1, nil, `"baseCurrency":"BRL","baseCurrency":"BRL"`), CodeInvalidJSON, "baseCurrency"},
	{"baseCurrency in another case", withTop(1, nil, `"basecurrency":"BRL"`), CodeUnknownField, "basecurrency"},
	{"rates object", withTop(1, nil, `"rates":{}`), CodeInvalidType, "rates"},
	{"rates null", withTop(1, nil, `"rates":null`), CodeInvalidType, "rates"},
	{"rate not an object", withTop(1, nil, `"rates":[5.17]`), CodeInvalidType, "rates[0]"},
	{"rate null", withTop(1, nil, `"rates":[{"currency":"USD","rate":null,"date":"2025-06-29"}]`), CodeInvalidType, "rates[0].rate"},
	{"rate string", withTop(1, nil, `"rates":[{"currency":"USD","rate":"5.17","date":"2025-06-29"}]`), CodeInvalidType, "rates[0].rate"},
	{"rate bad number", withTop(1, nil, `"rates":[{"currency":"USD","rate":5.,"date":"2025-06-29"}]`), CodeInvalidJSON, "rates[0].rate"},
	{"rate missing", withTop(1, nil, `"rates":[{"currency":"EUR","rate":6,"date":"2025-06-29"},{"currency":"USD","date":"2025-06-29"}]`), CodeMissingField, "rates[1].rate"},
	{"rate unknown field", withTop(1, nil, `"rates":[{"currency":"USD","rate":5.17,"date":"2025-06-29","source":"BCB"}]`), CodeUnknownField, "rates[0].source"},
	{"rate repeated key", withTop(1, nil, `"rates":[{"currency":"USD","currency":"EUR","rate":5.17,"date":"2025-06-29"}]`), CodeInvalidJSON, "rates[0].currency"},
	{"customers null", withTop(1, nil, `"customers":null`), CodeInvalidType, "customers"},
	{"customer not an object", withTop(1, nil, `"customers":["c0"]`), CodeInvalidType, "customers[0]"},
	{"lastContactedAt null", withTop(1, nil, `"customers":[{"customerId":"c0","lastContactedAt":null}]`), CodeInvalidType, "customers[0].lastContactedAt"},
	{"lastContactedAt missing", withTop(1, nil, `"customers":[{"customerId":"c0"}]`), CodeMissingField, "customers[0].lastContactedAt"},
	{"customerId missing", withTop(1, nil, `"customers":[{"lastContactedAt":"2025-06-27"}]`), CodeMissingField, "customers[0].customerId"},
	{"customer unknown field", withTop(1, nil, `"customers":[{"customerId":"c0","lastContactedAt":"2025-06-27","name":"x"}]`), CodeUnknownField, "customers[0].name"},
	{"currency null", rawDoc(1, at(0, `"doNotContact":false`, `"doNotContact":false,"currency":null`)), CodeInvalidType, "invoices[0].currency"},
	{"disputed string", rawDoc(1, at(0, `"doNotContact":false`, `"doNotContact":false,"disputed":"true"`)), CodeInvalidType, "invoices[0].disputed"},
	{"disputed null", rawDoc(1, at(0, `"doNotContact":false`, `"doNotContact":false,"disputed":null`)), CodeInvalidType, "invoices[0].disputed"},
	{"promiseToPayDate null", rawDoc(4, at(3, `"doNotContact":false`, `"doNotContact":false,"promiseToPayDate":null`)), CodeInvalidType, "invoices[3].promiseToPayDate"},
	{"promiseToPayDate repeated", rawDoc(1, at(0, `"doNotContact":false`, `"promiseToPayDate":"2025-07-01","doNotContact":false,"promiseToPayDate":"2025-07-01"`)), CodeInvalidJSON, "invoices[0].promiseToPayDate"},
	{"too many rates", withTop(1, nil, `"rates":[`+strings.Repeat(`{"currency":"USD","rate":1,"date":"2025-06-29"},`, MaxRates)+`{}]`), CodeOutOfRange, "rates"},
	{"too many customers", withTop(1, nil, `"customers":[`+strings.Repeat(`{"customerId":"c","lastContactedAt":"2025-06-29"},`, MaxInvoices)+`{}]`), CodeOutOfRange, "customers"},

	// Values.
	{"promiseToPayDate not a date", rawDoc(4, at(3, `"doNotContact":false`, `"doNotContact":false,"promiseToPayDate":"2025-02-30"`)), CodeInvalidDate, "invoices[3].promiseToPayDate"},
	{"promiseToPayDate shape", rawDoc(4, at(3, `"doNotContact":false`, `"doNotContact":false,"promiseToPayDate":"1/7/2025"`)), CodeInvalidFormat, "invoices[3].promiseToPayDate"},
	{"promiseToPayDate out of range", rawDoc(4, at(3, `"doNotContact":false`, `"doNotContact":false,"promiseToPayDate":"2100-01-01"`)), CodeOutOfRange, "invoices[3].promiseToPayDate"},
	{"currency lower case", rawDoc(1, at(0, `"doNotContact":false`, `"doNotContact":false,"currency":"usd"`)), CodeInvalidValue, "invoices[0].currency"},
	{"currency withdrawn", rawDoc(1, at(0, `"doNotContact":false`, `"doNotContact":false,"currency":"DEM"`)), CodeInvalidValue, "invoices[0].currency"},
	{"disputeReason without disputed", rawDoc(1, at(0, `"doNotContact":false`, `"doNotContact":false,"disputeReason":"avaria"`)), CodeInvalidValue, "invoices[0].disputeReason"},
	{"disputeReason with disputed false", rawDoc(1, at(0, `"doNotContact":false`, `"doNotContact":false,"disputed":false,"disputeReason":"avaria"`)), CodeInvalidValue, "invoices[0].disputeReason"},
	{"disputeReason with a control character", rawDoc(1, at(0, `"doNotContact":false`, `"doNotContact":false,"disputed":true,"disputeReason":"ava\u0007ria"`)), CodeInvalidText, "invoices[0].disputeReason"},
	{"disputeReason blank", rawDoc(1, at(0, `"doNotContact":false`, `"doNotContact":false,"disputed":true,"disputeReason":"  "`)), CodeInvalidText, "invoices[0].disputeReason"},
	{"baseCurrency unknown", withTop(1, nil, `"baseCurrency":"REAL"`), CodeInvalidValue, "baseCurrency"},
	{"rate currency unknown", withTop(1, nil, `"rates":[{"currency":"US$","rate":5.17,"date":"2025-06-29"}]`), CodeInvalidValue, "rates[0].currency"},
	{"rate for the base currency", withTop(1, nil, `"baseCurrency":"USD","rates":[{"currency":"USD","rate":1,"date":"2025-06-29"}]`), CodeInvalidValue, "rates[0].currency"},
	{"rate zero", withTop(1, nil, `"rates":[{"currency":"USD","rate":0,"date":"2025-06-29"}]`), CodeOutOfRange, "rates[0].rate"},
	{"rate negative", withTop(1, nil, `"rates":[{"currency":"USD","rate":-5.17,"date":"2025-06-29"}]`), CodeOutOfRange, "rates[0].rate"},
	{"third rate above the limit", withTop(1, nil, `"rates":[{"currency":"USD","rate":1,"date":"2025-06-29"},{"currency":"EUR","rate":1,"date":"2025-06-29"},{"currency":"JPY","rate":1000000000.000000000001,"date":"2025-06-29"}]`), CodeOutOfRange, "rates[2].rate"},
	{"rate 1e10", withTop(1, nil, `"rates":[{"currency":"USD","rate":1e10,"date":"2025-06-29"}]`), CodeOutOfRange, "rates[0].rate"},
	{"rate 1e400", withTop(1, nil, `"rates":[{"currency":"USD","rate":1e400,"date":"2025-06-29"}]`), CodeOutOfRange, "rates[0].rate"},
	{"rate of 13 decimal places", withTop(1, nil, `"rates":[{"currency":"USD","rate":0.0000000000001,"date":"2025-06-29"}]`), CodeInvalidValue, "rates[0].rate"},
	{"rate of 19 significant digits", withTop(1, nil, `"rates":[{"currency":"USD","rate":1.234567890123456789,"date":"2025-06-29"}]`), CodeInvalidValue, "rates[0].rate"},
	{"rate 1e-400", withTop(1, nil, `"rates":[{"currency":"USD","rate":1e-400,"date":"2025-06-29"}]`), CodeInvalidValue, "rates[0].rate"},
	{"rate date", withTop(1, nil, `"rates":[{"currency":"USD","rate":5.17,"date":"29/06/2025"}]`), CodeInvalidFormat, "rates[0].date"},
	{"two rates for USD", withTop(1, nil, `"rates":[{"currency":"USD","rate":5.17,"date":"2025-06-29"},{"currency":"EUR","rate":6,"date":"2025-06-29"},{"currency":"USD","rate":5.2,"date":"2025-06-30"}]`), CodeDuplicateEntry, "rates[2].currency"},
	{"customerId blank", withTop(1, nil, `"customers":[{"customerId":" ","lastContactedAt":"2025-06-27"}]`), CodeInvalidText, "customers[0].customerId"},
	{"lastContactedAt without offset", withTop(1, nil, `"customers":[{"customerId":"c0","lastContactedAt":"2025-06-27T10:00:00"}]`), CodeInvalidFormat, "customers[0].lastContactedAt"},
	{"lastContactedAt with a space", withTop(1, nil, `"customers":[{"customerId":"c0","lastContactedAt":"2025-06-27 10:00:00Z"}]`), CodeInvalidFormat, "customers[0].lastContactedAt"},
	{"lastContactedAt offset +24:00", withTop(1, nil, `"customers":[{"customerId":"c0","lastContactedAt":"2025-06-27T10:00:00+24:00"}]`), CodeInvalidFormat, "customers[0].lastContactedAt"},
	{"lastContactedAt offset -03:60", withTop(1, nil, `"customers":[{"customerId":"c0","lastContactedAt":"2025-06-27T10:00:00-03:60"}]`), CodeInvalidFormat, "customers[0].lastContactedAt"},
	{"lastContactedAt month 13", withTop(1, nil, `"customers":[{"customerId":"c0","lastContactedAt":"2025-13-27T10:00:00Z"}]`), CodeInvalidDate, "customers[0].lastContactedAt"},
	{"lastContactedAt date month 13", withTop(1, nil, `"customers":[{"customerId":"c0","lastContactedAt":"2025-13-27"}]`), CodeInvalidDate, "customers[0].lastContactedAt"},
	{"lastContactedAt before MinDate in UTC", withTop(1, nil, `"customers":[{"customerId":"c0","lastContactedAt":"2000-01-01T01:00:00+02:00"}]`), CodeOutOfRange, "customers[0].lastContactedAt"},
	{"two entries for c0", withTop(1, nil, `"customers":[{"customerId":"c0","lastContactedAt":"2025-06-27"},{"customerId":"c0","lastContactedAt":"2025-06-28"}]`), CodeDuplicateEntry, "customers[1].customerId"},
	{"missing rate", rawDoc(3, usdInvoice(2)), CodeMissingRate, "invoices[2].currency"},
	{"converted to 0", withTop(1, usdInvoice(0), `"rates":[{"currency":"USD","rate":0.001,"date":"2025-06-29"}]`), CodeOutOfRange, "invoices[0].amountCents"},

	// Order: per-invoice rules, then top-level ones, then conversions.
	{"invoice field before rates", withTop(2, at(1, `"open"`, `"x"`), `"rates":[{"currency":"USD","rate":0,"date":"2025-06-29"}]`), CodeInvalidValue, "invoices[1].status"},
	{"rates before customers", withTop(1, nil, `"customers":[{"customerId":" ","lastContactedAt":"2025-06-27"}],"rates":[{"currency":"USD","rate":0,"date":"2025-06-29"}]`), CodeOutOfRange, "rates[0].rate"},
	{"customers before missing rate", withTop(1, usdInvoice(0), `"customers":[{"customerId":"c0","lastContactedAt":"x"}]`), CodeInvalidFormat, "customers[0].lastContactedAt"},
}

// acceptCasesExtended are valid documents with issue 15's fields, with the
// Input each must decode to (edits of rawDoc(1, nil)'s).
var acceptCasesExtended = []struct {
	name string
	doc  string
	want func(in *Input)
}{
	{"every field", withTop(1, func(i int, s string) string {
		return strings.Replace(s, `"doNotContact":false`, `"doNotContact":false,"currency":"USD","disputed":true,"disputeReason":"mercadoria avariada","promiseToPayDate":"2025-07-10"`, 1)
	}, `"baseCurrency":"BRL",`+usdRate+`,`+contacts), func(in *Input) {
		x := &in.Invoices[0]
		x.InvoiceDetails = &InvoiceDetails{Currency: "USD", Disputed: true, DisputeReason: "mercadoria avariada", PromiseToPayDate: "2025-07-10"}
		in.BaseCurrency = "BRL"
		in.Rates = []ExchangeRate{{Currency: "USD", Rate: Decimal{517, 2}, Date: "2025-06-29"}}
		in.Customers = []Contact{{CustomerID: "c0", LastContactedAt: "2025-06-28T10:00:00-03:00"}, {CustomerID: "c1", LastContactedAt: "2025-06-27"}}
	}},
	{"optional fields empty", withTop(1, at(0, `"doNotContact":false`, `"doNotContact":false,"currency":"","disputed":false,"disputeReason":"","promiseToPayDate":""`), `"baseCurrency":"","rates":[],"customers":[]`),
		func(in *Input) {
			in.Invoices[0].Details() // present, all empty: as encoding/json decodes it
			in.Rates, in.Customers = []ExchangeRate{}, []Contact{}
		}},
	{"rate as 517e-2, trailing zeros and a base other than BRL", withTop(1, at(0, `"doNotContact":false`, `"doNotContact":false,"currency":"EUR"`),
		`"baseCurrency":"USD","rates":[{"currency":"BRL","rate":0.1800,"date":"2025-06-29"},{"currency":"EUR","rate":517E-2,"date":"2025-06-29"}]`),
		func(in *Input) {
			in.Invoices[0].Details().Currency, in.BaseCurrency = "EUR", "USD"
			in.Rates = []ExchangeRate{{Currency: "BRL", Rate: Decimal{18, 2}, Date: "2025-06-29"}, {Currency: "EUR", Rate: Decimal{517, 2}, Date: "2025-06-29"}}
		}},
	{"the limits of a rate", withTop(1, nil, `"rates":[{"currency":"USD","rate":1000000000,"date":"2025-06-29"},{"currency":"EUR","rate":0.000000000001,"date":"2025-06-29"},{"currency":"JPY","rate":123456.789012345678,"date":"2025-06-29"},{"currency":"GBP","rate":1000000000.000000000000e0,"date":"2025-06-29"}]`),
		func(in *Input) {
			in.Rates = []ExchangeRate{{Currency: "USD", Rate: Decimal{1_000_000_000, 0}, Date: "2025-06-29"}, {Currency: "EUR", Rate: Decimal{1, 12}, Date: "2025-06-29"},
				{Currency: "JPY", Rate: Decimal{123456789012345678, 12}, Date: "2025-06-29"}, {Currency: "GBP", Rate: Decimal{1_000_000_000, 0}, Date: "2025-06-29"}}
		}},
	{"a customers entry for no customer, fractions of a second", withTop(1, nil, `"customers":[{"customerId":"someone else","lastContactedAt":"2099-12-31T23:59:59.999999999+00:00"},{"customerId":"c0","lastContactedAt":"2025-06-28T10:00:00.5Z"}]`),
		func(in *Input) {
			in.Customers = []Contact{{CustomerID: "someone else", LastContactedAt: "2099-12-31T23:59:59.999999999+00:00"}, {CustomerID: "c0", LastContactedAt: "2025-06-28T10:00:00.5Z"}}
		}},
	{"the widest offsets", withTop(1, nil, `"customers":[{"customerId":"a","lastContactedAt":"2025-06-28T10:00:00+23:59"},{"customerId":"b","lastContactedAt":"2025-06-28T10:00:00-23:59"}]`),
		func(in *Input) {
			in.Customers = []Contact{{CustomerID: "a", LastContactedAt: "2025-06-28T10:00:00+23:59"}, {CustomerID: "b", LastContactedAt: "2025-06-28T10:00:00-23:59"}}
		}},
	{"keys in any order", `{"customers":[{"lastContactedAt":"2025-06-27","customerId":"c0"}],"rates":[{"date":"2025-06-29","rate":5.17,"currency":"USD"}],"invoices":[{"promiseToPayDate":"2025-07-01","currency":"USD","status":"open","amountCents":100,"dueDate":"2025-06-01","doNotContact":false,"customerName":"Cliente 0","customerId":"c0","id":"inv-0"}],"asOf":"2025-06-30"}`,
		func(in *Input) {
			in.Invoices[0].InvoiceDetails = &InvoiceDetails{Currency: "USD", PromiseToPayDate: "2025-07-01"}
			in.Rates = []ExchangeRate{{Currency: "USD", Rate: Decimal{517, 2}, Date: "2025-06-29"}}
			in.Customers = []Contact{{CustomerID: "c0", LastContactedAt: "2025-06-27"}}
		}},
}
