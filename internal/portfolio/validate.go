package portfolio

import (
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/cobranca/cobranca/internal/timestamp"
	"github.com/cobranca/cobranca/internal/value"
)

// The limits of a valid document, beyond the value rules every tool
// shares (value.MinDate, value.MaxDate, value.MaxAmountCents,
// value.MaxTextLen).
const (
	// MinInvoices and MaxInvoices bound the number of invoices per call.
	// MaxInvoices also bounds the customers entries.
	MinInvoices = 1
	MaxInvoices = 500

	// MaxRates bounds the rates.
	MaxRates = 200
)

// Validate checks the semantic rules of an Input: dates, ranges, enums,
// currencies, text rules, unique invoice ids, rates and customers entries.
// It returns nil or an [*Error] for the first violation, in this order:
// asOf, the invoice count, each invoice by index with its fields in
// declaration order, duplicate invoice ids, baseCurrency, the rates (their
// count, each by index with its fields in order, then duplicate
// currencies), the customers entries (likewise), and last each invoice by
// index whose currency needs a rate: missing_rate, then its amount once
// converted.
//
// [Parse] calls Validate; call it yourself on an Input built in Go before
// passing it to [Analyze].
func Validate(in *Input) error {
	// Keep a nil *Error from becoming a non-nil error.
	if e := validate(in); e != nil {
		return e
	}
	return nil
}

func validate(in *Input) *Error {
	if e := checkDate(in.AsOf, "asOf", -1); e != nil {
		return e
	}
	if n := len(in.Invoices); n < MinInvoices || n > MaxInvoices {
		return &Error{Code: CodeOutOfRange, Field: "invoices",
			Message: "must hold " + strconv.Itoa(MinInvoices) + " to " + strconv.Itoa(MaxInvoices) + " invoices, has " + strconv.Itoa(n)}
	}
	foreign := false // some invoice names a currency
	for i := range in.Invoices {
		if e := checkInvoice(&in.Invoices[i], i); e != nil {
			return e
		}
		foreign = foreign || in.Invoices[i].details().Currency != ""
	}
	if e := checkUniqueIDs(in.Invoices); e != nil {
		return e
	}
	if in.BaseCurrency == "" && len(in.Rates) == 0 && len(in.Customers) == 0 && !foreign {
		return nil // reference-shaped
	}
	base := value.CurrencyOf(codeOrBase(in.BaseCurrency))
	if base == nil {
		return &Error{Code: CodeInvalidValue, Field: "baseCurrency", Message: msgCurrency}
	}
	if e := checkRates(in.Rates, base); e != nil {
		return e
	}
	if e := checkCustomers(in.Customers); e != nil {
		return e
	}
	return checkConversions(in, base)
}

// msgCurrency is the message for a code that is not in the currency table.
const msgCurrency = "must be an active ISO 4217 currency code in upper case, such as BRL or USD"

func checkInvoice(inv *Invoice, i int) *Error {
	if e := checkText(inv.ID, i, "id"); e != nil {
		return e
	}
	if e := checkText(inv.CustomerID, i, "customerId"); e != nil {
		return e
	}
	if e := checkText(inv.CustomerName, i, "customerName"); e != nil {
		return e
	}
	if e := checkDate(inv.DueDate, "dueDate", i); e != nil {
		return e
	}
	if inv.AmountCents < 1 || inv.AmountCents > value.MaxAmountCents {
		return &Error{Code: CodeOutOfRange, Field: invoicePath(i, "amountCents"),
			Message: "must be an integer number of cents from 1 to " + strconv.FormatInt(value.MaxAmountCents, 10)}
	}
	switch inv.Status {
	case StatusOpen, StatusPaid, StatusVoid:
	default:
		return &Error{Code: CodeInvalidValue, Field: invoicePath(i, "status"),
			Message: `must be one of "open", "paid", "void"`}
	}
	x := inv.InvoiceDetails
	if x == nil {
		return nil
	}
	if x.Currency != "" && value.CurrencyOf(x.Currency) == nil {
		return &Error{Code: CodeInvalidValue, Field: invoicePath(i, "currency"), Message: msgCurrency}
	}
	if x.DisputeReason != "" {
		if !x.Disputed {
			return &Error{Code: CodeInvalidValue, Field: invoicePath(i, "disputeReason"), Message: "is allowed only with disputed: true"}
		}
		if e := checkText(x.DisputeReason, i, "disputeReason"); e != nil {
			return e
		}
	}
	if x.PromiseToPayDate != "" {
		if e := checkDate(x.PromiseToPayDate, "promiseToPayDate", i); e != nil {
			return e
		}
	}
	return nil
}

// checkUniqueIDs finds the first invoice, by index, that repeats an
// earlier id. One customerId under several names is not an error: Analyze
// takes the reference's name and reports the customer in its warnings.
func checkUniqueIDs(invs []Invoice) *Error {
	if i := firstRepeat(len(invs), func(i int) string { return invs[i].ID }); i >= 0 {
		return &Error{Code: CodeDuplicateInvoiceID, Field: invoicePath(i, "id"),
			Message: "repeats the id of an earlier invoice"}
	}
	return nil
}

// firstRepeat returns the first index i below n whose key(i) is the key of
// an earlier one, or -1.
func firstRepeat(n int, key func(i int) string) int {
	m := getScratch()
	defer m.free()
	ids, _ := m.index(n, 0)
	idOf := func(k int32) string { return key(int(k)) } // keys are numbered as indexes are, up to the first repeat
	for i := range n {
		if _, added := ids.number(key(i), idOf); !added {
			return i
		}
	}
	return -1
}

// checkRates checks the rates: each one's fields, then that no currency
// comes twice.
func checkRates(rates []ExchangeRate, base *value.Currency) *Error {
	if len(rates) > MaxRates {
		return &Error{Code: CodeOutOfRange, Field: "rates",
			Message: "must hold at most " + strconv.Itoa(MaxRates) + " rates, has " + strconv.Itoa(len(rates))}
	}
	for i := range rates {
		r := &rates[i]
		field := func(name string) string { return listPath("rates", i, name) }
		switch {
		case value.CurrencyOf(r.Currency) == nil:
			return &Error{Code: CodeInvalidValue, Field: field("currency"), Message: msgCurrency}
		case r.Currency == base.Code():
			return &Error{Code: CodeInvalidValue, Field: field("currency"),
				Message: "must not be the base currency " + base.Code() + ": a rate converts another currency to it"}
		}
		if code, msg := rateProblem(r.Rate); code != "" {
			return &Error{Code: code, Field: field("rate"), Message: msg}
		}
		if code, msg := value.DateCheck(r.Date); code != "" {
			return &Error{Code: Code(code), Field: field("date"), Message: msg}
		}
	}
	if i := firstRepeat(len(rates), func(i int) string { return rates[i].Currency }); i >= 0 {
		return &Error{Code: CodeDuplicateEntry, Field: listPath("rates", i, "currency"), Message: "repeats the currency of an earlier rate"}
	}
	return nil
}

// checkCustomers checks the customers entries: each one's fields, then
// that no customerId comes twice.
func checkCustomers(cs []Contact) *Error {
	if len(cs) > MaxInvoices {
		return &Error{Code: CodeOutOfRange, Field: "customers",
			Message: "must hold at most " + strconv.Itoa(MaxInvoices) + " entries, has " + strconv.Itoa(len(cs))}
	}
	for i := range cs {
		if msg := value.TextProblem(cs[i].CustomerID); msg != "" {
			return &Error{Code: CodeInvalidText, Field: listPath("customers", i, "customerId"), Message: msg}
		}
		if _, code, msg := contactTime(cs[i].LastContactedAt); code != "" {
			return &Error{Code: code, Field: listPath("customers", i, "lastContactedAt"), Message: msg}
		}
	}
	if i := firstRepeat(len(cs), func(i int) string { return cs[i].CustomerID }); i >= 0 {
		return &Error{Code: CodeDuplicateEntry, Field: listPath("customers", i, "customerId"), Message: "repeats the customerId of an earlier entry"}
	}
	return nil
}

// checkConversions finds the first invoice, by index, in a currency with no
// rate to base, or whose amount converted is out of range.
func checkConversions(in *Input, base *value.Currency) *Error {
	var rates rateIndex
	for i := range in.Invoices {
		inv := &in.Invoices[i]
		code := codeOrBase(inv.details().Currency)
		if code == base.Code() {
			continue
		}
		if rates.rates == nil {
			rates = newRateIndex(in.Rates)
		}
		r := rates.find(code)
		if r < 0 {
			return &Error{Code: CodeMissingRate, Field: invoicePath(i, "currency"),
				Message: `"` + code + `" has no rate to ` + base.Code() + " in rates"}
		}
		if _, ok := convert(inv.AmountCents, value.CurrencyOf(code).Exp(), in.Rates[r].Rate, base.Exp()); !ok {
			return &Error{Code: CodeOutOfRange, Field: invoicePath(i, "amountCents"),
				Message: "converted to " + base.Code() + " at the rate of " + code + ", must be from 1 to " +
					strconv.FormatInt(value.MaxAmountCents, 10) + " minor units"}
		}
	}
	return nil
}

// contactTime reads a lastContactedAt: an RFC 3339 date-time with an
// offset, or a date, read as its start in UTC. It returns the code and
// message Validate answers when s is neither or is outside value.MinDate
// to value.MaxDate (in UTC); they never quote s.
func contactTime(s string) (time.Time, Code, string) {
	if len(s) == len("2006-01-02") {
		if code, msg := value.DateCheck(s); code != "" {
			return time.Time{}, Code(code), msg
		}
		y, m, d := civil(s)
		return time.Date(y, time.Month(m), d, 0, 0, 0, 0, time.UTC), "", ""
	}
	t, err := timestamp.Parse(s)
	if err != nil {
		if len(s) > 10 {
			if code, _ := value.DateCheck(s[:10]); code == value.CodeInvalidDate {
				return time.Time{}, CodeInvalidDate, "is not a calendar date"
			}
		}
		return time.Time{}, CodeInvalidFormat, "must be an RFC 3339 date-time with an offset (2026-11-28T14:30:00-03:00) or a date (YYYY-MM-DD)"
	}
	t = t.UTC()
	if day := t.Format(time.DateOnly); day < value.MinDate || day > value.MaxDate {
		return time.Time{}, CodeOutOfRange, "must be from " + value.MinDate + " to " + value.MaxDate
	}
	return t, "", ""
}

// rateIndex finds a rate by currency: the rates' indexes in order of
// currency code, for a binary search.
type rateIndex struct {
	rates []ExchangeRate
	order []int32
}

func newRateIndex(rates []ExchangeRate) rateIndex {
	order := make([]int32, len(rates))
	for i := range order {
		order[i] = int32(i)
	}
	slices.SortStableFunc(order, func(a, b int32) int { return strings.Compare(rates[a].Currency, rates[b].Currency) })
	return rateIndex{rates: rates, order: order}
}

// find returns the index of the first rate in code, or -1.
func (x *rateIndex) find(code string) int {
	i, ok := slices.BinarySearchFunc(x.order, code, func(k int32, code string) int { return strings.Compare(x.rates[k].Currency, code) })
	if !ok {
		return -1
	}
	return int(x.order[i])
}

// checkDate validates a date field of invoice i; i < 0 means the
// top-level asOf.
func checkDate(s, name string, i int) *Error {
	code, msg := value.DateCheck(s)
	if code == "" {
		return nil
	}
	field := name
	if i >= 0 {
		field = invoicePath(i, name)
	}
	return &Error{Code: Code(code), Field: field, Message: msg}
}

// checkText applies the rules for id, customerId and customerName.
func checkText(s string, i int, name string) *Error {
	msg := value.TextProblem(s)
	if msg == "" {
		return nil
	}
	return &Error{Code: CodeInvalidText, Field: invoicePath(i, name), Message: msg}
}

func invoicePath(i int, name string) string {
	return listPath("invoices", i, name)
}

// listPath is the path of field name of element i of the list.
func listPath(list string, i int, name string) string {
	return list + "[" + strconv.Itoa(i) + "]." + name
}
