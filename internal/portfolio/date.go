package portfolio

// dateKey maps a date of the form YYYY-MM-DD to a number, so that dates
// compare as numbers in the order they compare as strings: the eight
// digits, in order, one a byte. Any other string maps to 0.
func dateKey(s string) uint64 {
	if len(s) != 10 {
		return 0
	}
	return uint64(s[0])<<56 | uint64(s[1])<<48 | uint64(s[2])<<40 | uint64(s[3])<<32 |
		uint64(s[5])<<24 | uint64(s[6])<<16 | uint64(s[8])<<8 | uint64(s[9])
}

// civil splits a string of the form YYYY-MM-DD into year, month and day.
// It does not check the form; callers do.
func civil(s string) (y, m, d int) {
	if len(s) < 10 {
		return 0, 0, 0
	}
	y = int(s[0]-'0')*1000 + int(s[1]-'0')*100 + int(s[2]-'0')*10 + int(s[3]-'0')
	m = int(s[5]-'0')*10 + int(s[6]-'0')
	d = int(s[8]-'0')*10 + int(s[9]-'0')
	return y, m, d
}

// dayNumber returns the number of days from 1970-01-01 to the date in s,
// which must be a real date in YYYY-MM-DD form. It is the days_from_civil
// algorithm of Howard Hinnant, which avoids time.Parse on the hot path.
func dayNumber(s string) int {
	y, m, d := civil(s)
	return dayNumberOf(y, m, d)
}

// dayNumberOfKey is dayNumber of the date of a dateKey.
func dayNumberOfKey(k uint64) int {
	digit := func(shift int) int { return int(byte(k>>shift) - '0') }
	return dayNumberOf(digit(56)*1000+digit(48)*100+digit(40)*10+digit(32), digit(24)*10+digit(16), digit(8)*10+digit(0))
}

// dayNumberOf is dayNumber of year y, month m, day d.
func dayNumberOf(y, m, d int) int {
	if m <= 2 {
		y--
	}
	era := y / 400
	if y < 0 {
		era = (y - 399) / 400
	}
	yoe := y - era*400
	mp := (m + 9) % 12
	doy := (153*mp+2)/5 + d - 1
	doe := yoe*365 + yoe/4 - yoe/100 + doy
	return era*146097 + doe - 719468
}

// civilOf is the inverse of dayNumber: the year, month and day of the day
// that many days from 1970-01-01 (Howard Hinnant's civil_from_days).
func civilOf(days int) (y, m, d int) {
	z := days + 719468
	era := z / 146097
	if z < 0 {
		era = (z - 146096) / 146097
	}
	doe := z - era*146097
	yoe := (doe - doe/1460 + doe/36524 - doe/146096) / 365
	doy := doe - (365*yoe + yoe/4 - yoe/100)
	mp := (5*doy + 2) / 153
	d = doy - (153*mp+2)/5 + 1
	m = mp + 3
	if m > 12 {
		m -= 12
	}
	y = yoe + era*400
	if m <= 2 {
		y++
	}
	return y, m, d
}

// appendDay appends the date that many days from 1970-01-01, in
// YYYY-MM-DD form; the year must be from 0 to 9999.
func appendDay(b []byte, days int) []byte {
	y, m, d := civilOf(days)
	return append(b, byte('0'+y/1000), byte('0'+y/100%10), byte('0'+y/10%10), byte('0'+y%10), '-',
		byte('0'+m/10), byte('0'+m%10), '-', byte('0'+d/10), byte('0'+d%10))
}

// dayKey is dateKey of the date that many days from 1970-01-01.
func dayKey(days int) uint64 {
	var buf [10]byte
	return dateKey(string(appendDay(buf[:0], days)))
}
