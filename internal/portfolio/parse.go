package portfolio

import (
	"math"
	"math/bits"
	"strconv"
	"strings"
	"unsafe"

	"github.com/cobranca/cobranca/internal/jsonscan"
)

// Parse decodes the tool's JSON arguments into an Input and runs
// [Validate] on it. On any rejection it returns a nil *Input and an
// [*Error]; the caller can use errors.As to read the Code and Field.
//
// The decoder is a hand-written single pass over the bytes for exactly this
// document shape; it is several times faster than encoding/json and
// allocates a handful of times per document. It accepts exactly the JSON of
// RFC 8259 (whitespace, every string escape, surrogate pairs, numbers) and
// is stricter than encoding/json in these ways:
//
//   - keys match exactly (encoding/json folds case);
//   - a repeated key in one object is invalid_json, with the Field of the
//     repeated member (encoding/json keeps the last);
//   - unknown keys are unknown_field; asOf, invoices, the reference's 7
//     invoice fields and every field of a rate and of a customers entry
//     are required (missing_field); null is never accepted (invalid_type),
//     not even for an optional field; an optional string given as "" is
//     the same as none, as it is to encoding/json and Validate;
//   - a rate is read exactly from its JSON text, in any number form
//     (5.17, 517e-2), never through float64 (see [Decimal]);
//   - amountCents may be written in any JSON number form whose value is an
//     exact integer (100, 100.0, 1e2), as with JSON Schema's "integer";
//     1.5 is invalid_type;
//   - invalid UTF-8 and unpaired \uD800-\uDFFF escapes are kept as invalid
//     UTF-8 (encoding/json replaces them with U+FFFD) so that Validate
//     rejects them.
//
// Which error: a syntax or structure error (invalid_json, unknown_field,
// missing_field, invalid_type) is reported at the first place it occurs in
// the bytes, and decoding stops there. So does out_of_range for the invoice,
// rate and customers counts, checked as the element past the limit begins,
// so an oversized payload costs bounded work. A document that decodes is then checked by
// Validate, whose order is fixed (see [Validate]); that is document order
// whenever keys appear in declaration order. Values of unknown keys are
// never descended into and the shape has three levels, so nesting is
// bounded without a depth counter.
//
// The strings of the result never alias data: they are copies, packed into
// a few blocks, of their decoded bytes alone (about a third of a typical
// document), and a status is the package's constant. A block stays alive
// as long as any of its strings does.
func Parse(data []byte) (*Input, error) {
	in, _, err := parse(data, true)
	return in, err
}

// ParsePrefix is [Parse] for a JSON object at the start of data (after
// optional whitespace) that is followed by more bytes, as the arguments are
// inside a JSON-RPC request: it decodes and validates that object alone and
// also returns n, the number of bytes of data up to the end of the object.
// What follows the object is not examined. On error n is 0.
//
// Parse and ParsePrefix accept the same objects and return the same errors
// for them, except Parse's invalid_json for data after the object.
func ParsePrefix(data []byte) (in *Input, n int, err error) {
	return parse(data, false)
}

func parse(data []byte, whole bool) (*Input, int, error) {
	if len(data) > math.MaxInt32 {
		return nil, 0, &Error{Code: CodeInvalidJSON, Message: "document too large"}
	}
	// d.s aliases data while it is decoded; what the result keeps is
	// copied (see keep), so data is never retained nor written.
	d := decoder{s: unsafe.String(unsafe.SliceData(data), len(data)), list: noField, field: noField}
	in, e := d.document(whole)
	if e != nil {
		return nil, 0, e
	}
	if e := validate(in); e != nil {
		return nil, 0, e
	}
	return in, d.pos, nil
}

// decoder scans one document. list, elem and field locate the value being
// decoded, for error paths.
type decoder struct {
	s       string
	pos     int
	list    int    // fInvoices, fRates or fCustomers while in one of their elements, or noField
	elem    int    // index of that element
	field   int    // known field whose value is being decoded, or noField
	scratch []byte // for strings with escapes
	block   []byte // where keep copies strings; never written below its length
	// details is where invoices' details are allocated, a few at a time.
	details []InvoiceDetails
}

// The fields of an invoice, in declaration order; the index is the bit in
// the seen mask, and the first nRequired are required. Then the fields of
// the document, of a rate and of a customers entry, for error paths.
const (
	fID = iota
	fCustomerID
	fCustomerName
	fDueDate
	fAmountCents
	fStatus
	fDoNotContact
	fCurrency
	fDisputed
	fDisputeReason
	fPromiseToPayDate
	nInvoiceFields

	fAsOf = iota - 1
	fInvoices
	fBaseCurrency
	fRates
	fCustomers
	fRateCurrency
	fRateRate
	fRateDate
	fContactCustomerID
	fContactLastContactedAt
	nFields

	nRequired = fDoNotContact + 1
	noField   = -1
)

// fieldNames are the JSON names of the fields.
var fieldNames = [nFields]string{
	fID: "id", fCustomerID: "customerId", fCustomerName: "customerName", fDueDate: "dueDate",
	fAmountCents: "amountCents", fStatus: "status", fDoNotContact: "doNotContact", fCurrency: "currency",
	fDisputed: "disputed", fDisputeReason: "disputeReason", fPromiseToPayDate: "promiseToPayDate",
	fAsOf: "asOf", fInvoices: "invoices", fBaseCurrency: "baseCurrency", fRates: "rates", fCustomers: "customers",
	fRateCurrency: "currency", fRateRate: "rate", fRateDate: "date",
	fContactCustomerID: "customerId", fContactLastContactedAt: "lastContactedAt",
}

// fieldIn returns the field of fields[0], fields[0]+1, ... fields[1]-1
// named key, or -1.
func fieldIn(key string, first, end int) int {
	for f := first; f < end; f++ {
		if fieldNames[f] == key {
			return f
		}
	}
	return -1
}

// document decodes the arguments object; whole requires it to be all of the
// data but whitespace.
func (d *decoder) document(whole bool) (*Input, *Error) {
	d.skipWS()
	if d.pos == len(d.s) {
		return nil, d.syntax("empty document")
	}
	if d.s[d.pos] != '{' {
		return nil, &Error{Code: CodeInvalidJSON, Message: "arguments must be a JSON object"}
	}
	d.pos++
	in := new(Input)
	seen := 0
	for more := d.objectHasMembers(); more; {
		key, e := d.key()
		if e != nil {
			return nil, e
		}
		if d.field = fieldIn(key, fAsOf, fRateCurrency); d.field < 0 {
			return nil, d.unknown(key)
		}
		bit := 1 << (d.field - fAsOf)
		if seen&bit != 0 {
			return nil, d.syntax("repeated key")
		}
		seen |= bit
		switch d.field {
		case fAsOf:
			in.AsOf, e = d.stringValue()
		case fInvoices:
			in.Invoices, e = d.invoices()
		case fBaseCurrency:
			in.BaseCurrency, e = d.stringValue()
		case fRates:
			in.Rates, e = list[ExchangeRate](d, fRates, MaxRates, 0)
		case fCustomers:
			in.Customers, e = list[Contact](d, fCustomers, MaxInvoices, 0)
		}
		if e != nil {
			return nil, e
		}
		d.field = noField
		if more, e = d.endMember(); e != nil {
			return nil, e
		}
	}
	for _, f := range []int{fAsOf, fInvoices} {
		if seen&(1<<(f-fAsOf)) == 0 {
			return nil, &Error{Code: CodeMissingField, Field: fieldNames[f], Message: "is required"}
		}
	}
	if !whole {
		return in, nil
	}
	d.skipWS()
	if d.pos != len(d.s) {
		return nil, d.syntax("unexpected data after the top-level object")
	}
	return in, nil
}

// invoices decodes the invoices array; d.pos is at its value.
func (d *decoder) invoices() ([]Invoice, *Error) {
	// A compact invoice takes over 100 bytes; growing past this is rare.
	return list[Invoice](d, fInvoices, MaxInvoices, min(MaxInvoices, len(d.s)/100+1))
}

// list decodes the array of field f, of at most limit elements; d.pos is at
// its value. It makes room for hint elements at once.
func list[T Invoice | ExchangeRate | Contact](d *decoder, f, limit, hint int) ([]T, *Error) {
	if d.pos >= len(d.s) || d.s[d.pos] != '[' {
		return nil, d.mismatch("an array")
	}
	d.pos++
	var xs []T
	if p, ok := any(&xs).(*[]Invoice); ok {
		*p = invoiceArray(hint)
	} else {
		xs = make([]T, 0, hint)
	}
	d.skipWS()
	if d.pos < len(d.s) && d.s[d.pos] == ']' {
		d.pos++
		return xs, nil
	}
	for {
		if len(xs) == limit {
			return nil, d.tooMany(f)
		}
		d.list, d.elem, d.field = f, len(xs), noField
		if len(xs) < cap(xs) {
			// Room that make zeroed: no need to store a zero element
			// over it, with write barriers.
			xs = xs[:len(xs)+1]
		} else {
			var zero T
			xs = append(xs, zero)
		}
		// Direct calls, where a func value would make d escape.
		var e *Error
		switch x := any(&xs[len(xs)-1]).(type) {
		case *Invoice:
			e = d.invoice(x)
		case *ExchangeRate:
			e = d.element(x, nil)
		case *Contact:
			e = d.element(nil, x)
		}
		if e != nil {
			return nil, e
		}
		d.list, d.field = noField, f
		d.skipWS()
		if d.pos >= len(d.s) {
			return nil, d.syntax("unexpected end of input")
		}
		switch d.s[d.pos] {
		case ',':
			d.pos++
			d.skipWS()
		case ']':
			d.pos++
			return xs, nil
		default:
			return nil, d.syntax("expected ',' or ']'")
		}
	}
}

// tooMany is the error for an array of field f longer than its limit,
// reported as its element past the limit begins.
func (d *decoder) tooMany(f int) *Error {
	msg := "must hold " + strconv.Itoa(MinInvoices) + " to " + strconv.Itoa(MaxInvoices) + " invoices, has more"
	switch f {
	case fRates:
		msg = "must hold at most " + strconv.Itoa(MaxRates) + " rates, has more"
	case fCustomers:
		msg = "must hold at most " + strconv.Itoa(MaxInvoices) + " entries, has more"
	}
	return &Error{Code: CodeOutOfRange, Field: fieldNames[f], Message: msg}
}

// invoice decodes one invoice; d.pos is at its value.
func (d *decoder) invoice(inv *Invoice) *Error {
	if d.pos >= len(d.s) || d.s[d.pos] != '{' {
		return d.mismatch("an object")
	}
	d.pos++
	seen := 0
	for more := d.objectHasMembers(); more; {
		var e *Error
		f := d.nextKey(seen)
		if f < 0 {
			var key string
			if key, e = d.key(); e != nil {
				return e
			}
			if f = fieldIn(key, 0, nInvoiceFields); f < 0 {
				return d.unknown(key)
			}
		}
		d.field = f
		if seen&(1<<f) != 0 {
			return d.syntax("repeated key")
		}
		seen |= 1 << f
		switch f {
		case fID:
			inv.ID, e = d.stringValue()
		case fCustomerID:
			inv.CustomerID, e = d.stringValue()
		case fCustomerName:
			inv.CustomerName, e = d.stringValue()
		case fDueDate:
			inv.DueDate, e = d.stringValue()
		case fAmountCents:
			inv.AmountCents, e = d.integer()
		case fStatus:
			inv.Status, e = d.status()
		case fDoNotContact:
			inv.DoNotContact, e = d.boolean()
		default:
			e = d.invoiceDetail(d.detailsOf(inv), f)
		}
		if e != nil {
			return e
		}
		d.field = noField
		if more, e = d.endMember(); e != nil {
			return e
		}
	}
	if all := 1<<nRequired - 1; seen&all != all {
		for f := range nRequired {
			if seen&(1<<f) == 0 {
				return &Error{Code: CodeMissingField, Field: d.elemPath() + "." + fieldNames[f], Message: "is required"}
			}
		}
	}
	return nil
}

// invoiceDetail decodes the value of an optional invoice field f.
func (d *decoder) invoiceDetail(x *InvoiceDetails, f int) (e *Error) {
	switch f {
	case fCurrency:
		x.Currency, e = d.stringValue()
	case fDisputed:
		x.Disputed, e = d.boolean()
	case fDisputeReason:
		x.DisputeReason, e = d.stringValue()
	case fPromiseToPayDate:
		x.PromiseToPayDate, e = d.stringValue()
	}
	return e
}

// detailsOf returns inv's details, giving it empty ones first if it has
// none, as encoding/json does when it meets one of their keys. They are
// allocated a few dozen at a time: a document that has some usually has
// many.
func (d *decoder) detailsOf(inv *Invoice) *InvoiceDetails {
	if inv.InvoiceDetails == nil {
		if len(d.details) == cap(d.details) {
			d.details = make([]InvoiceDetails, 0, 32)
		}
		d.details = d.details[:len(d.details)+1]
		inv.InvoiceDetails = &d.details[len(d.details)-1]
	}
	return inv.InvoiceDetails
}

// element decodes one element of the list d.list, rates or customers: an
// object of its fields, each at most once, all required; d.pos is at its
// value. The element is r or c, whichever is not nil.
func (d *decoder) element(r *ExchangeRate, c *Contact) *Error {
	// The fields of the list's elements are from first to end-1.
	first, end := fRateCurrency, fContactCustomerID
	if d.list == fCustomers {
		first, end = fContactCustomerID, nFields
	}
	if d.pos >= len(d.s) || d.s[d.pos] != '{' {
		return d.mismatch("an object")
	}
	d.pos++
	seen := 0 // by bit f-first
	for more := d.objectHasMembers(); more; {
		key, e := d.key()
		if e != nil {
			return e
		}
		f := fieldIn(key, first, end)
		if f < 0 {
			return d.unknown(key)
		}
		d.field = f
		if seen&(1<<(f-first)) != 0 {
			return d.syntax("repeated key")
		}
		seen |= 1 << (f - first)
		switch f {
		case fRateCurrency:
			r.Currency, e = d.stringValue()
		case fRateRate:
			r.Rate, e = d.decimal()
		case fRateDate:
			r.Date, e = d.stringValue()
		case fContactCustomerID:
			c.CustomerID, e = d.stringValue()
		case fContactLastContactedAt:
			c.LastContactedAt, e = d.stringValue()
		}
		if e != nil {
			return e
		}
		d.field = noField
		if more, e = d.endMember(); e != nil {
			return e
		}
	}
	if all := 1<<(end-first) - 1; seen&all != all {
		for f := first; f < end; f++ {
			if seen&(1<<(f-first)) == 0 {
				return &Error{Code: CodeMissingField, Field: d.elemPath() + "." + fieldNames[f], Message: "is required"}
			}
		}
	}
	return nil
}

// decimal decodes a value that must be a JSON number, exactly (see
// decimalOf).
func (d *decoder) decimal() (Decimal, *Error) {
	s, i := d.s, d.pos
	if i >= len(s) || (s[i] != '-' && (s[i] < '0' || s[i] > '9')) {
		return Decimal{}, d.mismatch("a number")
	}
	end, f := jsonscan.Number(s, i)
	d.pos = end
	if f != jsonscan.None {
		return Decimal{}, d.syntax(f.String())
	}
	v, _ := decimalOf(s[i:end])
	return v, nil
}

// nextKey is a fast path for key and fieldIn in an invoice with the
// fields seen so far: when the member at d.pos has the first of the other
// fields in declaration order as its plain key, directly followed by ':',
// as encoders write it, it consumes what key would and returns that field.
// Otherwise it returns -1 and consumes at most whitespace.
func (d *decoder) nextKey(seen int) int {
	d.skipWS()
	rest := d.s[d.pos:]
	// Comparisons with constant strings of up to 16 bytes compile to a few
	// loads; strings.HasPrefix would call memequal.
	var n int
	var ok bool
	f := bits.TrailingZeros(^uint(seen))
	switch f {
	case fID:
		n, ok = 5, len(rest) >= 5 && rest[:5] == `"id":`
	case fCustomerID:
		n, ok = 13, len(rest) >= 13 && rest[:13] == `"customerId":`
	case fCustomerName:
		n, ok = 15, len(rest) >= 15 && rest[:15] == `"customerName":`
	case fDueDate:
		n, ok = 10, len(rest) >= 10 && rest[:10] == `"dueDate":`
	case fAmountCents:
		n, ok = 14, len(rest) >= 14 && rest[:14] == `"amountCents":`
	case fStatus:
		n, ok = 9, len(rest) >= 9 && rest[:9] == `"status":`
	case fDoNotContact:
		n, ok = 15, len(rest) >= 15 && rest[:15] == `"doNotContact":`
	}
	if !ok {
		return -1
	}
	d.pos += n
	d.skipWS()
	return f
}

// objectHasMembers is called just after '{' and reports whether the object
// has members; it consumes the '}' of an empty object. Errors surface in
// the key that follows.
func (d *decoder) objectHasMembers() bool {
	d.skipWS()
	if d.pos < len(d.s) && d.s[d.pos] == '}' {
		d.pos++
		return false
	}
	return true
}

// endMember is called after a member's value and reports whether another
// member follows.
func (d *decoder) endMember() (bool, *Error) {
	d.skipWS()
	if d.pos >= len(d.s) {
		return false, d.syntax("unexpected end of input")
	}
	switch d.s[d.pos] {
	case ',':
		d.pos++
		return true, nil
	case '}':
		d.pos++
		return false, nil
	}
	return false, d.syntax("expected ',' or '}'")
}

// key decodes a member's key and the ':' after it, leaving d.pos at the
// value.
func (d *decoder) key() (string, *Error) {
	d.skipWS()
	if d.pos >= len(d.s) || d.s[d.pos] != '"' {
		if d.pos >= len(d.s) {
			return "", d.syntax("unexpected end of input")
		}
		return "", d.syntax("expected a string key")
	}
	k, e := d.str()
	if e != nil {
		return "", e
	}
	d.skipWS()
	if d.pos >= len(d.s) || d.s[d.pos] != ':' {
		return "", d.syntax("expected ':'")
	}
	d.pos++
	d.skipWS()
	return k, nil
}

func (d *decoder) skipWS() {
	// Compact JSON has no space to skip: check for that first, inlined.
	if d.pos < len(d.s) && d.s[d.pos] > ' ' {
		return
	}
	d.pos = jsonscan.Space(d.s, d.pos)
}

// stringValue decodes a value that must be a string, and keeps it.
func (d *decoder) stringValue() (string, *Error) {
	if d.pos >= len(d.s) || d.s[d.pos] != '"' {
		return "", d.mismatch("a string")
	}
	s, e := d.str()
	return d.keep(s), e
}

// keep returns a copy of s that the result may hold: in d.block, which
// grows by new blocks, each sized for a good part of what is left of the
// document, so a document's strings take a few allocations in all and
// never a copy of its keys and punctuation.
func (d *decoder) keep(s string) string {
	if len(s) == 0 {
		return ""
	}
	if cap(d.block)-len(d.block) < len(s) {
		// About a third of a compact document is string values.
		d.block = make([]byte, 0, max(len(s), (len(d.s)-d.pos)/3+64))
	}
	start := len(d.block)
	d.block = append(d.block, s...)
	return unsafe.String(&d.block[start], len(s))
}

// str decodes the string at d.pos. The result is valid only until the
// next call: it is a substring of d.s (the caller's data) or, when the
// string has escapes, of d.scratch. Use keep for a string the result holds.
func (d *decoder) str() (string, *Error) {
	start := d.pos + 1
	i, _ := jsonscan.Stop(d.s, start)
	if i < len(d.s) && d.s[i] == '"' {
		d.pos = i + 1
		return d.s[start:i], nil
	}
	// An escape, or a fault. Invalid UTF-8 and unpaired surrogate escapes
	// stay invalid UTF-8, so that Validate rejects them (encoding/json
	// would turn them into U+FFFD silently).
	buf, end, f := jsonscan.Decode(append(d.scratch[:0], d.s[start:i]...), d.s, i, jsonscan.KeepSurrogates)
	d.scratch = buf[:0]
	d.pos = end
	if f != jsonscan.None {
		return "", d.syntax(f.String())
	}
	return unsafe.String(unsafe.SliceData(buf), len(buf)), nil
}

// status decodes a value that must be a string, as the package's constant
// when it is one.
func (d *decoder) status() (Status, *Error) {
	if d.pos >= len(d.s) || d.s[d.pos] != '"' {
		return "", d.mismatch("a string")
	}
	s, e := d.str()
	switch Status(s) {
	case StatusOpen:
		return StatusOpen, e
	case StatusPaid:
		return StatusPaid, e
	case StatusVoid:
		return StatusVoid, e
	}
	return Status(d.keep(s)), e
}

// boolean decodes a value that must be true or false.
func (d *decoder) boolean() (bool, *Error) {
	s := d.s[d.pos:]
	switch {
	case len(s) >= 4 && s[:4] == "true":
		d.pos += 4
		return true, nil
	case len(s) >= 5 && s[:5] == "false":
		d.pos += 5
		return false, nil
	case len(s) > 0 && (s[0] == 't' || s[0] == 'f'):
		return false, d.syntax("invalid literal")
	}
	return false, d.mismatch("a boolean")
}

// integer decodes a value that must be a JSON number with an integer value
// (see jsonscan.Int). Values beyond int64 saturate to math.MaxInt64 or
// math.MinInt64, which Validate rejects as out of range like any other.
func (d *decoder) integer() (int64, *Error) {
	s, i := d.s, d.pos
	if v, end := jsonscan.PlainInt(s, i); end > i {
		d.pos = end
		return v, nil
	}
	if i >= len(s) || (s[i] != '-' && (s[i] < '0' || s[i] > '9')) {
		return 0, d.mismatch("an integer")
	}
	v, end, integral, f := jsonscan.Int(s, i)
	switch {
	case f != jsonscan.None:
		d.pos = end
		return 0, d.syntax(f.String())
	case !integral:
		return 0, d.mismatch("an integer") // d.pos at the number
	}
	d.pos = end
	return v, nil
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// path names the value being decoded, for errors.
func (d *decoder) path() string {
	switch {
	case d.list != noField && d.field == noField:
		return d.elemPath()
	case d.list != noField:
		return d.elemPath() + "." + fieldNames[d.field]
	case d.field == noField:
		return ""
	}
	return fieldNames[d.field]
}

// elemPath names the element being decoded, such as "rates[2]".
func (d *decoder) elemPath() string {
	return fieldNames[d.list] + "[" + strconv.Itoa(d.elem) + "]"
}

func (d *decoder) syntax(msg string) *Error {
	return &Error{Code: CodeInvalidJSON, Field: d.path(),
		Message: "invalid JSON at byte offset " + strconv.Itoa(d.pos) + ": " + msg}
}

// mismatch reports a value of the wrong type at d.pos, or a syntax error
// if no JSON value starts there.
func (d *decoder) mismatch(want string) *Error {
	if d.pos >= len(d.s) {
		return d.syntax("unexpected end of input")
	}
	var got string
	switch d.s[d.pos] {
	case '"':
		got = "a string"
	case '{':
		got = "an object"
	case '[':
		got = "an array"
	case 't', 'f':
		got = "a boolean"
	case 'n':
		got = "null"
	case '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		got = "a number"
		if want == "an integer" {
			got = "a number with a fractional part"
		}
	default:
		return d.syntax("unexpected character")
	}
	return &Error{Code: CodeInvalidType, Field: d.path(), Message: "must be " + want + ", not " + got}
}

// unknown reports an unknown key. The key is named in Field only when it
// is a plain identifier, so no arbitrary input text reaches the message.
func (d *decoder) unknown(key string) *Error {
	field := d.path()
	if plainKey(key) {
		if field == "" {
			field = strings.Clone(key) // key may alias data
		} else {
			field += "." + key
		}
		return &Error{Code: CodeUnknownField, Field: field, Message: "is not a known field"}
	}
	return &Error{Code: CodeUnknownField, Field: field, Message: "has a field that is not known"}
}

func plainKey(k string) bool {
	if k == "" || len(k) > 64 {
		return false
	}
	for _, c := range []byte(k) {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}
