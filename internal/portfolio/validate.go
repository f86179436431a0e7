package portfolio

import (
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/cobranca/cobranca/internal/timestamp"
	"unicode"
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
	// MaxInvoices also bounds the customers entries.
	MinInvoices = 1
	MaxInvoices = 500

	// MaxRates bounds the rates.
	MaxRates = 200

	// MaxTextLen bounds id, customerId and customerName, in characters
	// (runes), not bytes. A company's legal name (razão social) runs to 150
	// characters in the CNPJ register.
	MaxTextLen = 255
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
	base := currencyOf(codeOrBase(in.BaseCurrency))
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
	x := inv.InvoiceDetails
	if x == nil {
		return nil
	}
	if x.Currency != "" && currencyOf(x.Currency) == nil {
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
func checkRates(rates []ExchangeRate, base *currencyInfo) *Error {
	if len(rates) > MaxRates {
		return &Error{Code: CodeOutOfRange, Field: "rates",
			Message: "must hold at most " + strconv.Itoa(MaxRates) + " rates, has " + strconv.Itoa(len(rates))}
	}
	for i := range rates {
		r := &rates[i]
		field := func(name string) string { return listPath("rates", i, name) }
		switch {
		case currencyOf(r.Currency) == nil:
			return &Error{Code: CodeInvalidValue, Field: field("currency"), Message: msgCurrency}
		case r.Currency == base.code:
			return &Error{Code: CodeInvalidValue, Field: field("currency"),
				Message: "must not be the base currency " + base.code + ": a rate converts another currency to it"}
		}
		if code, msg := rateProblem(r.Rate); code != "" {
			return &Error{Code: code, Field: field("rate"), Message: msg}
		}
		if !goodDate(r.Date) {
			code, msg := dateProblem(r.Date)
			return &Error{Code: code, Field: field("date"), Message: msg}
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
		if msg := TextProblem(cs[i].CustomerID); msg != "" {
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
func checkConversions(in *Input, base *currencyInfo) *Error {
	var rates rateIndex
	for i := range in.Invoices {
		inv := &in.Invoices[i]
		code := codeOrBase(inv.details().Currency)
		if code == base.code {
			continue
		}
		if rates.rates == nil {
			rates = newRateIndex(in.Rates)
		}
		r := rates.find(code)
		if r < 0 {
			return &Error{Code: CodeMissingRate, Field: invoicePath(i, "currency"),
				Message: `"` + code + `" has no rate to ` + base.code + " in rates"}
		}
		if _, ok := convert(inv.AmountCents, currencyOf(code).exp, in.Rates[r].Rate, base.exp); !ok {
			return &Error{Code: CodeOutOfRange, Field: invoicePath(i, "amountCents"),
				Message: "converted to " + base.code + " at the rate of " + code + ", must be from 1 to " +
					strconv.FormatInt(MaxAmountCents, 10) + " minor units"}
		}
	}
	return nil
}

// contactTime reads a lastContactedAt: an RFC 3339 date-time with an
// offset, or a date, read as its start in UTC. It returns the code and
// message Validate answers when s is neither or is outside MinDate to
// MaxDate (in UTC); they never quote s.
func contactTime(s string) (time.Time, Code, string) {
	if len(s) == len("2006-01-02") {
		if code, msg := dateProblem(s); code != "" {
			return time.Time{}, code, msg
		}
		y, m, d := civil(s)
		return time.Date(y, time.Month(m), d, 0, 0, 0, 0, time.UTC), "", ""
	}
	t, err := timestamp.Parse(s)
	if err != nil {
		if len(s) > 10 && dateShape(s[:10]) && !realDate(s[:10]) {
			return time.Time{}, CodeInvalidDate, "is not a calendar date"
		}
		return time.Time{}, CodeInvalidFormat, "must be an RFC 3339 date-time with an offset (2026-11-28T14:30:00-03:00) or a date (YYYY-MM-DD)"
	}
	t = t.UTC()
	if day := t.Format(time.DateOnly); day < MinDate || day > MaxDate {
		return time.Time{}, CodeOutOfRange, "must be from " + MinDate + " to " + MaxDate
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

// DateProblem returns why s is not acceptable as a date, or "" when it is:
// the rule [Validate] applies to asOf and every dueDate (YYYY-MM-DD, a real
// calendar date, from MinDate to MaxDate), exported so that other tools hold
// their dates to the same one. The message quotes s only when s has the
// shape of a date (digits and dashes).
func DateProblem(s string) string {
	_, msg := dateProblem(s)
	return msg
}

// DateCheck is DateProblem with the code Validate answers for the problem
// (invalid_format, invalid_date or out_of_range); both are empty for a good
// date. Other tools that take dates answer with the same codes.
func DateCheck(s string) (Code, string) { return dateProblem(s) }

// checkDate validates a date field of invoice i; i < 0 means the
// top-level asOf.
func checkDate(s, name string, i int) *Error {
	if goodDate(s) {
		return nil
	}
	code, msg := dateProblem(s)
	field := name
	if i >= 0 {
		field = invoicePath(i, name)
	}
	return &Error{Code: code, Field: field, Message: msg}
}

// dateProblem is DateProblem with the code Validate answers.
func dateProblem(s string) (code Code, msg string) {
	if goodDate(s) {
		return "", ""
	}
	switch {
	case !dateShape(s):
		code, msg = CodeInvalidFormat, "must be a date in YYYY-MM-DD form"
	case !realDate(s):
		// The shape is digits and dashes only, so echoing it is safe.
		code, msg = CodeInvalidDate, s+" is not a calendar date"
	case s < MinDate || s > MaxDate:
		// Between valid dates of one shape, string order is date order.
		code, msg = CodeOutOfRange, "must be from "+MinDate+" to "+MaxDate
	}
	return code, msg
}

// checkText applies the rules for id, customerId and customerName.
func checkText(s string, i int, name string) *Error {
	msg := TextProblem(s)
	if msg == "" {
		return nil
	}
	return &Error{Code: CodeInvalidText, Field: invoicePath(i, name), Message: msg}
}

// refusedInText holds the characters refused anywhere in an id or name,
// because a person cannot see them or they change how their neighbours
// display, so two ids or names that differ only by them look alike:
//
//   - the control characters (Unicode Cc) and the line and paragraph
//     separators (Zl, Zp);
//   - every format character (Cf): zero-width characters, the
//     bidirectional controls and marks (all of Bidi_Control), invisible
//     operators (U+2061-U+2064), the interlinear annotation characters
//     (U+FFF9-U+FFFB), tag characters (which can hide instructions from a
//     person while a model still reads them), Egyptian hieroglyph format
//     controls, and the prepended concatenation marks (U+0600-U+0605,
//     U+06DD, U+070F, U+0890-U+0891, U+08E2, U+110BD, U+110CD): these do
//     show, but as a sign spread over or around the digits that follow, so
//     they change how the neighbours display, and no id or name of a
//     portfolio needs one;
//   - the rest of Unicode's Default_Ignorable_Code_Point, that is
//     Other_Default_Ignorable_Code_Point (the Hangul fillers, the combining
//     grapheme joiner, unassigned code points reserved as ignorable) and
//     Variation_Selector (which, like the zero width joiner, make emoji
//     sequences, so those are refused).
//
// A test derives the set from the unicode package's tables, for every code
// point.
var refusedInText = &unicode.RangeTable{
	R16: []unicode.Range16{
		{Lo: 0x0000, Hi: 0x001f, Stride: 1}, // C0 controls
		{Lo: 0x007f, Hi: 0x009f, Stride: 1}, // DEL, C1 controls
		{Lo: 0x00ad, Hi: 0x00ad, Stride: 1}, // soft hyphen
		{Lo: 0x034f, Hi: 0x034f, Stride: 1}, // combining grapheme joiner
		{Lo: 0x0600, Hi: 0x0605, Stride: 1}, // Arabic number signs (prepended)
		{Lo: 0x061c, Hi: 0x061c, Stride: 1}, // ALM
		{Lo: 0x06dd, Hi: 0x06dd, Stride: 1}, // Arabic end of ayah (prepended)
		{Lo: 0x070f, Hi: 0x070f, Stride: 1}, // Syriac abbreviation mark (prepended)
		{Lo: 0x0890, Hi: 0x0891, Stride: 1}, // Arabic pound and piastre marks above (prepended)
		{Lo: 0x08e2, Hi: 0x08e2, Stride: 1}, // Arabic disputed end of ayah (prepended)
		{Lo: 0x115f, Hi: 0x1160, Stride: 1}, // Hangul choseong and jungseong fillers
		{Lo: 0x17b4, Hi: 0x17b5, Stride: 1}, // Khmer inherent vowels
		{Lo: 0x180b, Hi: 0x180f, Stride: 1}, // Mongolian variation selectors, vowel separator
		{Lo: 0x200b, Hi: 0x200f, Stride: 1}, // zero width space, non-joiner, joiner; LRM, RLM
		{Lo: 0x2028, Hi: 0x202e, Stride: 1}, // line and paragraph separators; LRE, RLE, PDF, LRO, RLO
		{Lo: 0x2060, Hi: 0x206f, Stride: 1}, // word joiner, invisible operators; LRI, RLI, FSI, PDI; deprecated format characters
		{Lo: 0x3164, Hi: 0x3164, Stride: 1}, // Hangul filler
		{Lo: 0xfe00, Hi: 0xfe0f, Stride: 1}, // variation selectors
		{Lo: 0xfeff, Hi: 0xfeff, Stride: 1}, // zero width no-break space (BOM)
		{Lo: 0xffa0, Hi: 0xffa0, Stride: 1}, // halfwidth Hangul filler
		{Lo: 0xfff0, Hi: 0xfffb, Stride: 1}, // reserved ignorable; interlinear annotation
	},
	R32: []unicode.Range32{
		{Lo: 0x110bd, Hi: 0x110bd, Stride: 1}, // Kaithi number sign (prepended)
		{Lo: 0x110cd, Hi: 0x110cd, Stride: 1}, // Kaithi number sign above (prepended)
		{Lo: 0x13430, Hi: 0x1343f, Stride: 1}, // Egyptian hieroglyph format controls
		{Lo: 0x1bca0, Hi: 0x1bca3, Stride: 1}, // shorthand format controls
		{Lo: 0x1d173, Hi: 0x1d17a, Stride: 1}, // musical symbol format controls
		{Lo: 0xe0000, Hi: 0xe0fff, Stride: 1}, // tags, variation selectors supplement, reserved ignorable
	},
	LatinOffset: 3,
}

// invisibleInText holds the characters, refused ones aside, that a
// schema pattern can list and that do not make an id or name visible:
// white space (Unicode White_Space), private use (Co), and the letters and
// symbols that look blank (the Hangul fillers U+115F, U+1160, U+3164,
// U+FFA0, which are refused too, the braille pattern blank U+2800 and the
// musical symbol null notehead U+1D159). Combining marks (M) and unassigned
// code points (Cn) do not make text visible either; see [VisibleInText].
var invisibleInText = &unicode.RangeTable{
	R16: []unicode.Range16{
		{Lo: 0x0009, Hi: 0x000d, Stride: 1}, // white space
		{Lo: 0x0020, Hi: 0x0020, Stride: 1},
		{Lo: 0x0085, Hi: 0x0085, Stride: 1},
		{Lo: 0x00a0, Hi: 0x00a0, Stride: 1},
		{Lo: 0x115f, Hi: 0x1160, Stride: 1}, // Hangul choseong and jungseong fillers
		{Lo: 0x1680, Hi: 0x1680, Stride: 1}, // white space
		{Lo: 0x2000, Hi: 0x200a, Stride: 1},
		{Lo: 0x2028, Hi: 0x2029, Stride: 1},
		{Lo: 0x202f, Hi: 0x202f, Stride: 1},
		{Lo: 0x205f, Hi: 0x205f, Stride: 1},
		{Lo: 0x2800, Hi: 0x2800, Stride: 1}, // braille pattern blank
		{Lo: 0x3000, Hi: 0x3000, Stride: 1}, // white space
		{Lo: 0x3164, Hi: 0x3164, Stride: 1}, // Hangul filler
		{Lo: 0xe000, Hi: 0xf8ff, Stride: 1}, // private use
		{Lo: 0xffa0, Hi: 0xffa0, Stride: 1}, // halfwidth Hangul filler
	},
	R32: []unicode.Range32{
		{Lo: 0x1d159, Hi: 0x1d159, Stride: 1},   // musical symbol null notehead
		{Lo: 0xf0000, Hi: 0xffffd, Stride: 1},   // private use
		{Lo: 0x100000, Hi: 0x10fffd, Stride: 1}, // private use
	},
	LatinOffset: 4,
}

// RefusedInText returns the characters [Validate] refuses anywhere in an id
// or name (code invalid_text), for the input schema to say the same. The
// table must not be modified.
func RefusedInText() *unicode.RangeTable { return refusedInText }

// InvisibleInText returns the characters other than combining marks and
// unassigned code points that do not make an id or name visible (see
// [VisibleInText]), for the input schema to say what a pattern can. The
// table must not be modified.
func InvisibleInText() *unicode.RangeTable { return invisibleInText }

// VisibleInText reports whether r makes an id or name visible: [Validate]
// refuses one without such a character (invalid_text), so one empty once
// white space is trimmed, or invisible. A visible character is a letter,
// number, punctuation or symbol (Unicode L, N, P, S) that does not look
// blank; combining marks alone, private use and unassigned code points do
// not count.
func VisibleInText(r rune) bool {
	return unicode.In(r, unicode.L, unicode.N, unicode.P, unicode.S) && !unicode.Is(invisibleInText, r)
}

// softHyphen is the one character of refusedInText between the C1 controls
// and firstRefusedAbove.
const softHyphen = 0x00ad

// firstRefusedAbove is the first character of refusedInText above the soft
// hyphen (the combining grapheme joiner): a letter before it, as every
// accented Latin letter is, needs no table look-up.
const firstRefusedAbove = 0x034f

// The messages of TextProblem that do not vary.
const (
	msgEmpty   = "must not be empty"
	msgBlank   = "must not be blank: it has only white space or invisible characters"
	msgControl = "must not contain control characters"
	msgUTF8    = "must be valid UTF-8"
	// msgRefused follows "must not contain U+XXXX".
	msgRefused = ", an invisible or formatting character that can hide or reorder text (zero-width, default-ignorable, format or bidirectional control, variation selector, tag, line or paragraph separator)"
)

// TextProblem returns why s is not acceptable as an id or name, or "" when
// it is: the rule [Validate] applies to id, customerId and customerName
// (code invalid_text), exported so that other identifiers a person may have
// to read (idempotency keys) are held to the same one. The message never
// holds s.
func TextProblem(s string) string {
	if s == "" {
		return msgEmpty
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
			return tooLong()
		}
		if s[0] == ' ' && strings.TrimLeft(s, " ") == "" {
			return msgBlank
		}
		return ""
	}
	// Printable ASCII other than the space is visible.
	visible := strings.TrimLeft(s[:i], " ") != ""
	n := i
	for i < len(s) {
		c := s[i]
		if c < utf8.RuneSelf {
			if c < 0x20 || c == 0x7f {
				return msgControl
			}
			visible = visible || c != ' '
			i++
		} else {
			r, size := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && size == 1 {
				return msgUTF8
			}
			if r <= 0x9f { // C1 controls U+0080..U+009F
				return msgControl
			}
			if r == softHyphen || r >= firstRefusedAbove && unicode.Is(refusedInText, r) {
				return "must not contain " + codePoint(r) + msgRefused
			}
			visible = visible || VisibleInText(r)
			i += size
			// Past an accented letter, a name goes on in plain ASCII, as
			// a rule: by words again.
			for i+8 <= len(s) {
				w := load64(s[i:])
				if !printableASCII8(w) {
					break
				}
				visible = visible || w != ' '*lsb
				i += 8
				n += 8
			}
		}
		n++
	}
	if n > MaxTextLen {
		return tooLong()
	}
	if !visible {
		return msgBlank
	}
	return ""
}

// codePoint writes r as U+XXXX.
func codePoint(r rune) string {
	h := strings.ToUpper(strconv.FormatInt(int64(r), 16))
	return "U+" + strings.Repeat("0", max(0, 4-len(h))) + h
}

func tooLong() string {
	return "must be at most " + strconv.Itoa(MaxTextLen) + " characters"
}

func invoicePath(i int, name string) string {
	return listPath("invoices", i, name)
}

// listPath is the path of field name of element i of the list.
func listPath(list string, i int, name string) string {
	return list + "[" + strconv.Itoa(i) + "]." + name
}
