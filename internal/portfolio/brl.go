package portfolio

// FormatBRL formats an amount of cents as Brazilian reais, exactly as
// JavaScript's
//
//	new Intl.NumberFormat("pt-BR", {style: "currency", currency: "BRL"}).format(cents / 100)
//
// does: "R$", a NO-BREAK SPACE (U+00A0), the integer part grouped in
// thousands with '.', a ',' and two decimals. For example 200000 becomes
// "R$\u00a02.000,00".
//
// Only non-negative amounts are part of the contract (the tool never
// produces others). A negative amount is given a leading '-', which is also
// what Intl prints ("-R$\u00a00,05"), but that is not relied upon.
func FormatBRL(cents int64) string {
	var buf [40]byte
	return string(appendBRL(buf[:0], cents))
}

// appendBRL appends FormatBRL(cents) to dst.
func appendBRL(dst []byte, cents int64) []byte {
	u := uint64(cents)
	if cents < 0 {
		dst = append(dst, '-')
		u = -u // two's complement: right for math.MinInt64 too
	}
	dst = append(dst, "R$\u00a0"...)
	whole, frac := u/100, u%100
	dst = appendGrouped(dst, whole)
	return append(dst, ',', byte('0'+frac/10), byte('0'+frac%10))
}

// brlLen is len(FormatBRL(cents)).
func brlLen(cents int64) int {
	u := uint64(cents)
	if cents < 0 {
		u = -u
	}
	n := decimalLen(u / 100)
	return b2i(cents < 0) + len("R$\u00a0") + n + (n-1)/3 + len(",00")
}

// decimalLen is the number of decimal digits of u.
func decimalLen(u uint64) int {
	n := 1
	for ; u >= 10; u /= 10 {
		n++
	}
	return n
}
