package portfolio

import (
	"strconv"
	"unicode/utf8"
)

// The limits of a valid document.
const (
	// MinDate and MaxDate bound asOf and every dueDate, inclusive. Dates
	// outside them are almost certainly typos, and the bound keeps
	// daysOverdue small.
	MinDate = "2000-01-01"
	MaxDate = "2099-12-31"

	// MaxAmountCents bounds amountCents (R$ 10 billion). With at most
	// MaxInvoices invoices every sum is at most 5e14, far below 2^53, so
	// totals are exact in int64 and as JSON numbers read into float64.
	MaxAmountCents = 1_000_000_000_000

	// MinInvoices and MaxInvoices bound the number of invoices per call.
	MinInvoices = 1
	MaxInvoices = 500

	// MaxTextLen bounds id, customerId and customerName, in characters
	// (runes), not bytes.
	MaxTextLen = 128
)

// Validate checks the semantic rules of an Input: dates, ranges, enums,
// text rules, unique invoice ids and one name per customer. It returns nil
// or an [*Error] for the first violation, in this order: asOf, the invoice
// count, each invoice by index with its fields in declaration order, then
// the cross-invoice rules by index.
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
	for i := range in.Invoices {
		if e := checkInvoice(&in.Invoices[i], i); e != nil {
			return e
		}
	}
	return checkCross(in.Invoices)
}

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
	if inv.AmountCents < 1 || inv.AmountCents > MaxAmountCents {
		return &Error{Code: CodeOutOfRange, Field: invoicePath(i, "amountCents"),
			Message: "must be an integer number of cents from 1 to " + strconv.FormatInt(MaxAmountCents, 10)}
	}
	switch inv.Status {
	case StatusOpen, StatusPaid, StatusVoid:
	default:
		return &Error{Code: CodeInvalidValue, Field: invoicePath(i, "status"),
			Message: `must be one of "open", "paid", "void"`}
	}
	return nil
}

// checkCross finds the first invoice, by index, that repeats an earlier id
// or gives its customer a different name than the customer's first invoice.
func checkCross(invs []Invoice) *Error {
	ids := newStringIndex(len(invs), len(invs))
	customers := newStringIndex(len(invs), len(invs)/4+1)
	firsts := make([]int32, 0, len(invs)/4+1)          // each customer's first invoice
	idOf := func(k int32) string { return invs[k].ID } // ids are numbered as invoices are
	customerOf := func(k int32) string { return invs[firsts[k]].CustomerID }
	for i := range invs {
		inv := &invs[i]
		if _, added := ids.number(inv.ID, idOf); !added {
			return &Error{Code: CodeDuplicateInvoiceID, Field: invoicePath(i, "id"),
				Message: "repeats the id of an earlier invoice"}
		}
		k, added := customers.number(inv.CustomerID, customerOf)
		if added {
			firsts = append(firsts, int32(i))
		} else if invs[firsts[k]].CustomerName != inv.CustomerName {
			return &Error{Code: CodeConflictingCustomerName, Field: invoicePath(i, "customerName"),
				Message: "differs from the name on an earlier invoice of the same customerId"}
		}
	}
	return nil
}

// checkDate validates a date field; i < 0 means the top-level asOf.
func checkDate(s, name string, i int) *Error {
	if goodDate(s) {
		return nil
	}
	var code Code
	var msg string
	switch {
	case !dateShape(s):
		code, msg = CodeInvalidFormat, "must be a date in YYYY-MM-DD form"
	case !realDate(s):
		// The shape is digits and dashes only, so echoing it is safe.
		code, msg = CodeInvalidDate, s+" is not a calendar date"
	case s < MinDate || s > MaxDate:
		// Between valid dates of one shape, string order is date order.
		code, msg = CodeOutOfRange, "must be from "+MinDate+" to "+MaxDate
	default:
		return nil
	}
	field := name
	if i >= 0 {
		field = invoicePath(i, name)
	}
	return &Error{Code: code, Field: field, Message: msg}
}

// checkText applies the rules for id, customerId and customerName.
func checkText(s string, i int, name string) *Error {
	msg := textProblem(s)
	if msg == "" {
		return nil
	}
	return &Error{Code: CodeInvalidText, Field: invoicePath(i, name), Message: msg}
}

// textProblem returns why s is not acceptable text, or "".
func textProblem(s string) string {
	if s == "" {
		return "must not be empty"
	}
	// Fast path: printable ASCII, one byte a character, as nearly every id
	// and name is; eight bytes at a time, the last word overlapping the
	// one before. The bytes before i are printable ASCII.
	i := 0
	if len(s) >= 8 {
		for ; i+8 < len(s); i += 8 {
			if !printableASCII8(load64(s[i:])) {
				break
			}
		}
		if i+8 >= len(s) && printableASCII8(load64(s[len(s)-8:])) {
			i = len(s)
		}
	}
	for i < len(s) && s[i] >= 0x20 && s[i] < 0x7f {
		i++
	}
	if i == len(s) {
		if len(s) > MaxTextLen {
			return "must be at most " + strconv.Itoa(MaxTextLen) + " characters"
		}
		return ""
	}
	n := i
	for i < len(s) {
		c := s[i]
		if c < utf8.RuneSelf {
			if c < 0x20 || c == 0x7f {
				return "must not contain control characters"
			}
			i++
		} else {
			r, size := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && size == 1 {
				return "must be valid UTF-8"
			}
			if r <= 0x9f { // C1 controls U+0080..U+009F
				return "must not contain control characters"
			}
			i += size
			// Past an accented letter, a name goes on in plain ASCII, as
			// a rule: by words again.
			for i+8 <= len(s) && printableASCII8(load64(s[i:])) {
				i += 8
				n += 8
			}
		}
		n++
	}
	if n > MaxTextLen {
		return "must be at most " + strconv.Itoa(MaxTextLen) + " characters"
	}
	return ""
}

func invoicePath(i int, name string) string {
	return "invoices[" + strconv.Itoa(i) + "]." + name
}
