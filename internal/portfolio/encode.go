package portfolio

import (
	"strconv"
	"unicode/utf8"
)

// AppendJSON appends the JSON encoding of a to b: byte for byte what
// encoding/json's Marshal writes for the same value (the tests hold it to
// that), without reflection. The struct and its tags stay the source of the
// field names; this is only the fast way to write them.
func (a *Analysis) AppendJSON(b []byte) []byte {
	b = append(b, `{"totalOpenCents":`...)
	b = strconv.AppendInt(b, a.TotalOpenCents, 10)
	b = append(b, `,"accounts":`...)
	b = appendArray(b, a.Accounts)
	b = append(b, `,"warnings":`...)
	b = appendArray(b, a.Warnings)
	b = append(b, `,"summary":`...)
	b = a.Summary.appendJSON(b)
	return append(b, '}')
}

func (s *Summary) appendJSON(b []byte) []byte {
	b = append(b, `{"baseCurrency":"`...)
	b = appendEscaped(b, asMarshal, s.BaseCurrency)
	b = append(b, `","accountsByPriority":{"high":`...)
	b = appendInt(b, int64(s.AccountsByPriority.High))
	b = append(b, `,"medium":`...)
	b = appendInt(b, int64(s.AccountsByPriority.Medium))
	b = append(b, `},"priorityThresholds":{"daysOverdue":`...)
	b = appendInt(b, int64(s.PriorityThresholds.DaysOverdue))
	b = append(b, `,"openAmountCents":`...)
	b = appendInt(b, s.PriorityThresholds.OpenAmountCents)
	b = append(b, `},"aging":`...)
	b = appendArray(b, s.Aging)
	b = append(b, `,"leftOut":{"doNotContact":`...)
	b = s.LeftOut.DoNotContact.appendJSON(b)
	b = append(b, `,"paid":`...)
	b = s.LeftOut.Paid.appendJSON(b)
	b = append(b, `,"void":`...)
	b = s.LeftOut.Void.appendJSON(b)
	b = append(b, `,"disputed":`...)
	b = s.LeftOut.Disputed.appendJSON(b)
	b = append(b, `,"promisePending":`...)
	b = s.LeftOut.PromisePending.appendJSON(b)
	b = append(b, `},"rates":`...)
	b = appendArray(b, s.Rates)
	return append(b, '}')
}

func (c *Count) appendJSON(b []byte) []byte {
	b = append(b, `{"invoices":`...)
	b = appendInt(b, int64(c.Invoices))
	b = append(b, `,"customers":`...)
	b = appendInt(b, int64(c.Customers))
	return append(b, '}')
}

func (g *AgingBucket) appendJSON(b []byte) []byte {
	b = append(b, `{"bucket":`...)
	b = appendConstant(b, g.Bucket.String(), g.Bucket.Known())
	b = append(b, `,"amountCents":`...)
	b = appendInt(b, g.AmountCents)
	b = append(b, `,"invoiceCount":`...)
	b = appendInt(b, int64(g.InvoiceCount))
	return append(b, '}')
}

func (r *ExchangeRate) appendJSON(b []byte) []byte {
	b = append(b, `{"currency":"`...)
	b = appendEscaped(b, asMarshal, r.Currency)
	b = append(b, `","rate":`...)
	b = appendDecimal(b, r.Rate, '.', false)
	b = append(b, `,"date":"`...)
	b = appendEscaped(b, asMarshal, r.Date)
	return append(b, `"}`...)
}

func (f *Factor) appendJSON(b []byte) []byte {
	switch f.Factor {
	case FactorDaysOverdue:
		b = append(b, `{"factor":"days_overdue","value":`...)
	case FactorOpenAmount:
		b = append(b, `{"factor":"open_amount","value":`...)
	case FactorBrokenPromise:
		b = append(b, `{"factor":"broken_promise","value":`...)
	default:
		b = append(b, `{"factor":`...)
		b = appendString(b, asMarshal, f.Factor.String())
		b = append(b, `,"value":`...)
	}
	b = appendInt(b, f.Value)
	return append(b, '}')
}

func (c *Conversion) appendJSON(b []byte) []byte {
	b = append(b, `{"currency":"`...)
	b = appendEscaped(b, asMarshal, c.Currency)
	b = append(b, `","amountCents":`...)
	b = appendInt(b, c.AmountCents)
	b = append(b, `,"rate":`...)
	b = appendDecimal(b, c.Rate, '.', false)
	b = append(b, `,"rateDate":"`...)
	b = appendEscaped(b, asMarshal, c.RateDate)
	b = append(b, `","convertedCents":`...)
	b = appendInt(b, c.ConvertedCents)
	return append(b, '}')
}

// jsonElement is a pointer to an element of an array AppendJSON writes.
type jsonElement[T any] interface {
	*T
	appendJSON(b []byte) []byte
}

// appendArray writes xs as encoding/json does a slice: null when nil.
func appendArray[T any, P jsonElement[T]](b []byte, xs []T) []byte {
	if xs == nil {
		return append(b, "null"...)
	}
	b = append(b, '[')
	for i := range xs {
		if i > 0 {
			b = append(b, ',')
		}
		b = P(&xs[i]).appendJSON(b)
	}
	return append(b, ']')
}

func (w *Warning) appendJSON(b []byte) []byte {
	b = append(b, `{"code":`...)
	b = appendConstant(b, string(w.Code), w.Code == WarningNameVariants)
	b = append(b, `,"customerId":"`...)
	b = appendEscaped(b, asMarshal, w.CustomerID)
	b = append(b, `","nameCount":`...)
	b = appendInt(b, int64(w.NameCount))
	return append(b, '}')
}

func (c *Account) appendJSON(b []byte) []byte {
	b = append(b, `{"customerId":"`...)
	b = appendEscaped(b, asMarshal, c.CustomerID)
	b = append(b, `","customerName":"`...)
	b = appendEscaped(b, asMarshal, c.CustomerName)
	b = append(b, `","amountCents":`...)
	b = appendInt(b, c.AmountCents)
	b = append(b, `,"oldestDueDate":"`...)
	b = appendEscaped(b, asMarshal, c.OldestDueDate)
	b = append(b, `","daysOverdue":`...)
	b = appendInt(b, int64(c.DaysOverdue))
	b = append(b, `,"priority":`...)
	b = appendConstant(b, string(c.Priority), c.Priority == PriorityHigh || c.Priority == PriorityMedium)
	b = append(b, `,"recommendedAction":`...)
	b = appendConstant(b, string(c.RecommendedAction), c.RecommendedAction == ActionHumanReview || c.RecommendedAction == ActionPrepareReminder)
	b = append(b, `,"reason":"`...)
	b = appendEscaped(b, asMarshal, c.Reason)
	b = append(b, `","agingBucket":`...)
	b = appendConstant(b, c.AgingBucket.String(), c.AgingBucket.Known())
	b = append(b, `,"invoiceCount":`...)
	b = appendInt(b, int64(c.InvoiceCount))
	b = append(b, `,"priorityFactors":`...)
	b = appendArray(b, c.PriorityFactors)
	if x := c.AccountDetails; x != nil {
		if len(x.Conversions) > 0 {
			b = append(b, `,"conversions":`...)
			b = appendArray(b, x.Conversions)
		}
		if x.NextContactAfter != "" {
			b = append(b, `,"nextContactAfter":"`...)
			b = appendEscaped(b, asMarshal, x.NextContactAfter)
			b = append(b, '"')
		}
	}
	return append(b, '}')
}

// appendConstant writes s, quoted as-is when it is one of the package's
// constants (known), which need no escaping, or escaped like any string.
func appendConstant(b []byte, s string, known bool) []byte {
	if !known {
		return appendString(b, asMarshal, s)
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

const hexDigits = "0123456789abcdef"

// appendInt is strconv.AppendInt(b, v, 10), with a shorter way for the
// amounts and day counts of this package, which are under 10^12.
func appendInt(b []byte, v int64) []byte {
	if v < 0 || v >= 1e12 {
		return strconv.AppendInt(b, v, 10)
	}
	var buf [12]byte
	i := len(buf) - 1
	u := uint64(v)
	for ; u >= 10; i-- {
		q := u / 10
		buf[i] = byte('0' + u - 10*q)
		u = q
	}
	buf[i] = byte('0' + u)
	return append(b, buf[i:]...)
}

// escaping says which JSON string escaping appendString does.
type escaping bool

const (
	asMarshal escaping = false // encoding/json's Marshal: results
	asJCS     escaping = true  // RFC 8785: canonical arguments
)

// appendString writes s as a JSON string: as encoding/json's Marshal does
// (asMarshal: the two-character escapes for \b \f \n \r \t \" \\,
// \u00XX for other control characters and for < > &, \ufffd for invalid
// UTF-8, \u2028 and \u2029 escaped); as RFC 8785 does (asJCS: the
// same escapes for '"', '\\' and control characters, and nothing else: < > &
// U+2028 U+2029 are written as they are, and invalid UTF-8 as U+FFFD itself,
// which is the canonical form of what Marshal writes for it).
func appendString(b []byte, esc escaping, s string) []byte {
	b = append(b, '"')
	b = appendEscaped(b, esc, s)
	return append(b, '"')
}

// appendEscaped is appendString without the quotes.
func appendEscaped(b []byte, esc escaping, s string) []byte {
	jcs := esc == asJCS
	html := !jcs
	// Fast path: nothing to escape, as in nearly every id, name and date.
	// Eight bytes at a time; the last word may overlap the one before. The
	// bytes before i need no escaping.
	i := 0
	if len(s) >= 8 {
		for ; i+8 < len(s); i += 8 {
			if !jsonSafe8(load64(s[i:]), html) {
				break
			}
		}
		if i+8 >= len(s) && jsonSafe8(load64(s[len(s)-8:]), html) {
			return append(b, s...)
		}
	}
	start := 0
	for i < len(s) {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && (!html || c != '<' && c != '>' && c != '&') {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			if jcs {
				b = utf8.AppendRune(b, utf8.RuneError)
			} else {
				b = append(b, `\ufffd`...)
			}
			i += size
			start = i
			continue
		}
		if !jcs && (r == '\u2028' || r == '\u2029') {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
		// Past an accented letter, a name goes on in plain ASCII, as a
		// rule: by words again.
		for i+8 <= len(s) && jsonSafe8(load64(s[i:]), html) {
			i += 8
		}
	}
	return append(b, s[start:]...)
}

// AppendCanonicalJSON appends the input's RFC 8785 canonical form: exactly
// what canonical.Transform makes of the input as encoding/json writes it
// (the tests of internal/mcpapi and of this package hold the two together,
// as this package may import only the standard library), so the audit log
// can digest a call's arguments without parsing them again. Keys are sorted
// by UTF-16 code units, which for these ASCII names is their byte order;
// optional fields at their zero value are left out, as encoding/json's
// omitempty leaves them; strings are escaped as RFC 8785 says
// (appendString); an amount is written as the IEEE-754 double JSON readers
// make of it, which is the integer itself up to 2^53, and a rate likewise
// (appendCanonicalDecimal).
func (in *Input) AppendCanonicalJSON(b []byte) []byte {
	b = append(b, `{"asOf":"`...)
	b = appendEscaped(b, asJCS, in.AsOf)
	if in.BaseCurrency != "" {
		b = append(b, `","baseCurrency":"`...)
		b = appendEscaped(b, asJCS, in.BaseCurrency)
	}
	if len(in.Customers) > 0 {
		b = append(b, `","customers":[`...)
		for i := range in.Customers {
			c := &in.Customers[i]
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"customerId":"`...)
			b = appendEscaped(b, asJCS, c.CustomerID)
			b = append(b, `","lastContactedAt":"`...)
			b = appendEscaped(b, asJCS, c.LastContactedAt)
			b = append(b, `"}`...)
		}
		b = append(b, `],"invoices":[`...)
	} else {
		b = append(b, `","invoices":[`...)
	}
	for i := range in.Invoices {
		inv := &in.Invoices[i]
		x := inv.details()
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"amountCents":`...)
		b = appendCanonicalInt(b, inv.AmountCents)
		if x.Currency != "" {
			b = append(b, `,"currency":"`...)
			b = appendEscaped(b, asJCS, x.Currency)
			b = append(b, '"')
		}
		b = append(b, `,"customerId":"`...)
		b = appendEscaped(b, asJCS, inv.CustomerID)
		b = append(b, `","customerName":"`...)
		b = appendEscaped(b, asJCS, inv.CustomerName)
		if x.DisputeReason != "" {
			b = append(b, `","disputeReason":"`...)
			b = appendEscaped(b, asJCS, x.DisputeReason)
		}
		if x.Disputed {
			b = append(b, `","disputed":true`...)
		} else {
			b = append(b, '"')
		}
		if inv.DoNotContact {
			b = append(b, `,"doNotContact":true,"dueDate":"`...)
		} else {
			b = append(b, `,"doNotContact":false,"dueDate":"`...)
		}
		b = appendEscaped(b, asJCS, inv.DueDate)
		b = append(b, `","id":"`...)
		b = appendEscaped(b, asJCS, inv.ID)
		if x.PromiseToPayDate != "" {
			b = append(b, `","promiseToPayDate":"`...)
			b = appendEscaped(b, asJCS, x.PromiseToPayDate)
		}
		switch inv.Status {
		case StatusOpen:
			b = append(b, `","status":"open"}`...)
		case StatusPaid:
			b = append(b, `","status":"paid"}`...)
		case StatusVoid:
			b = append(b, `","status":"void"}`...)
		default:
			b = append(b, `","status":"`...)
			b = appendEscaped(b, asJCS, string(inv.Status))
			b = append(b, `"}`...)
		}
	}
	b = append(b, ']')
	if len(in.Rates) > 0 {
		b = append(b, `,"rates":[`...)
		for i := range in.Rates {
			r := &in.Rates[i]
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"currency":"`...)
			b = appendEscaped(b, asJCS, r.Currency)
			b = append(b, `","date":"`...)
			b = appendEscaped(b, asJCS, r.Date)
			b = append(b, `","rate":`...)
			b = appendCanonicalDecimal(b, r.Rate)
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	return append(b, '}')
}

// appendCanonicalInt writes v as RFC 8785 writes a number, the ECMAScript
// serialization of the double nearest to v: the integer's digits while it is
// exact (|v| <= 2^53), otherwise that double's shortest round-trip digits
// padded with zeros, which is what ECMAScript writes below 1e21 (and every
// int64 is).
func appendCanonicalInt(b []byte, v int64) []byte {
	if -1<<53 <= v && v <= 1<<53 {
		return appendInt(b, v)
	}
	return strconv.AppendFloat(b, float64(v), 'f', -1, 64)
}
