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
	if a.Accounts == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '[')
		for i := range a.Accounts {
			if i > 0 {
				b = append(b, ',')
			}
			b = a.Accounts[i].appendJSON(b)
		}
		b = append(b, ']')
	}
	return append(b, '}')
}

func (c *Account) appendJSON(b []byte) []byte {
	b = append(b, `{"customerId":`...)
	b = appendString(b, true, c.CustomerID)
	b = append(b, `,"customerName":`...)
	b = appendString(b, true, c.CustomerName)
	b = append(b, `,"amountCents":`...)
	b = strconv.AppendInt(b, c.AmountCents, 10)
	b = append(b, `,"oldestDueDate":`...)
	b = appendString(b, true, c.OldestDueDate)
	b = append(b, `,"daysOverdue":`...)
	b = strconv.AppendInt(b, int64(c.DaysOverdue), 10)
	b = append(b, `,"priority":`...)
	b = appendString(b, true, string(c.Priority))
	b = append(b, `,"recommendedAction":`...)
	b = appendString(b, true, string(c.RecommendedAction))
	b = append(b, `,"reason":`...)
	b = appendString(b, true, c.Reason)
	return append(b, '}')
}

const hexDigits = "0123456789abcdef"

// appendString writes s as encoding/json does: the two-character escapes
// for \b \f \n \r \t \" \\, \u00XX for other control characters (and for
// < > & when html is set, as Marshal does), \ufffd for invalid UTF-8, and
// \u2028 and \u2029 escaped.
func appendString(b []byte, html bool, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
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
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// AppendCanonicalJSON appends the input's canonical encoding: object keys
// sorted, no insignificant space, strings escaped as encoding/json does
// without HTML escaping. It is what auditlog.CanonicalJSON makes of any
// spelling of the same arguments (the tests hold the two together), so the
// audit log can digest a call's arguments without parsing them again.
func (in *Input) AppendCanonicalJSON(b []byte) []byte {
	b = append(b, `{"asOf":`...)
	b = appendString(b, false, in.AsOf)
	b = append(b, `,"invoices":[`...)
	for i := range in.Invoices {
		inv := &in.Invoices[i]
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"amountCents":`...)
		b = strconv.AppendInt(b, inv.AmountCents, 10)
		b = append(b, `,"customerId":`...)
		b = appendString(b, false, inv.CustomerID)
		b = append(b, `,"customerName":`...)
		b = appendString(b, false, inv.CustomerName)
		b = append(b, `,"doNotContact":`...)
		b = strconv.AppendBool(b, inv.DoNotContact)
		b = append(b, `,"dueDate":`...)
		b = appendString(b, false, inv.DueDate)
		b = append(b, `,"id":`...)
		b = appendString(b, false, inv.ID)
		b = append(b, `,"status":`...)
		b = appendString(b, false, string(inv.Status))
		b = append(b, '}')
	}
	return append(b, "]}"...)
}
