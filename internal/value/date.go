package value

// MinDate and MaxDate bound every date a tool takes, inclusive. Dates
// outside them are almost certainly typos, and the bound keeps day counts
// small.
const (
	MinDate = "2000-01-01"
	MaxDate = "2099-12-31"
)

// The codes [DateCheck] answers, which every tool answers for a date.
const (
	// CodeInvalidFormat: not of the form YYYY-MM-DD, in ASCII digits.
	CodeInvalidFormat = "invalid_format"
	// CodeInvalidDate: of the form, but not a calendar date (2025-02-30).
	CodeInvalidDate = "invalid_date"
	// CodeOutOfRange: a calendar date outside MinDate to MaxDate.
	CodeOutOfRange = "out_of_range"
)

// DateProblem returns why s is not acceptable as a date, or "" when it is:
// YYYY-MM-DD, a real calendar date, from MinDate to MaxDate. The message
// quotes s only when s has the shape of a date (digits and dashes).
func DateProblem(s string) string {
	_, msg := DateCheck(s)
	return msg
}

// DateCheck is DateProblem with the code of the problem
// ([CodeInvalidFormat], [CodeInvalidDate] or [CodeOutOfRange]); both are
// empty for a good date.
func DateCheck(s string) (code, msg string) {
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

// dateShape reports whether s has the form dddd-dd-dd with ASCII digits.
func dateShape(s string) bool {
	if len(s) != 10 || s[4] != '-' || s[7] != '-' {
		return false
	}
	for i := 0; i < 10; i++ {
		if i == 4 || i == 7 {
			continue
		}
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// goodDate reports whether s is a valid date: dateShape, realDate and from
// MinDate to MaxDate, in one pass.
func goodDate(s string) bool {
	if len(s) != 10 {
		return false
	}
	// Digits and dashes where they belong, a word at a time: xor with
	// "0000-00-" leaves each byte 0 to 9 for a digit and 0 for a dash, so
	// adding 6 to a digit and 15 to a dash keeps the high nibble clear.
	w := load64(s) ^ 0x2d30302d30303030
	if (w|(w+0x0f06060f06060606))&0xf0f0f0f0f0f0f0f0 != 0 {
		return false
	}
	d0, d1 := s[8]-'0', s[9]-'0'
	if d0 > 9 || d1 > 9 {
		return false
	}
	y := int(w&0xff)*1000 + int(w>>8&0xff)*100 + int(w>>16&0xff)*10 + int(w>>24&0xff)
	m := int(w>>40&0xff)*10 + int(w>>48&0xff)
	d := int(d0)*10 + int(d1)
	if m < 1 || m > 12 || d < 1 || d > daysIn(y, m) {
		return false
	}
	// Between dates of one shape, string order is date order.
	return s >= MinDate && s <= MaxDate
}

// realDate reports whether a string of dateShape names a day of the
// proleptic Gregorian calendar.
func realDate(s string) bool {
	y := int(s[0]-'0')*1000 + int(s[1]-'0')*100 + int(s[2]-'0')*10 + int(s[3]-'0')
	m := int(s[5]-'0')*10 + int(s[6]-'0')
	d := int(s[8]-'0')*10 + int(s[9]-'0')
	return m >= 1 && m <= 12 && d >= 1 && d <= daysIn(y, m)
}

func isLeap(y int) bool { return y%4 == 0 && (y%100 != 0 || y%400 == 0) }

func daysIn(y, m int) int {
	switch m {
	case 2:
		if isLeap(y) {
			return 29
		}
		return 28
	case 4, 6, 9, 11:
		return 30
	}
	return 31
}
