package pix

import (
	"fmt"
	"math/rand/v2"
	"strings"
)

// The generators write keys the way people do (punctuation, mixed case)
// and say what DICT stores; their check digits are computed here, apart
// from the package's.

const alnum = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ"

func digits(r *rand.Rand, n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte('0' + r.IntN(10))
	}
	return string(b)
}

// cpfDigits appends a CPF's two check digits to its 9 digits: weights 10
// down to 2, then 11 down to 2; remainder of sum×10 by 11, 10 written 0.
func cpfDigits(nine string) string {
	s := nine
	for _, top := range []int{10, 11} {
		sum := 0
		for i := 0; i < len(s); i++ {
			sum += int(s[i]-'0') * (top - i)
		}
		s += fmt.Sprint(sum * 10 % 11 % 10)
	}
	return s
}

// cnpjDigits appends a CNPJ's two check digits, each character worth its
// ASCII code minus 48, with the Receita Federal's weight tables.
func cnpjDigits(twelve string) string {
	s := twelve
	for _, w := range [][]int{{5, 4, 3, 2, 9, 8, 7, 6, 5, 4, 3, 2}, {6, 5, 4, 3, 2, 9, 8, 7, 6, 5, 4, 3, 2}} {
		sum := 0
		for i, wi := range w {
			sum += int(s[i]-48) * wi
		}
		dv := 0
		if sum%11 >= 2 {
			dv = 11 - sum%11
		}
		s += fmt.Sprint(dv)
	}
	return s
}

// randomKey is a valid key of kind k: as written, and as DICT stores it.
func randomKey(r *rand.Rand, k KeyKind) (written, stored string) {
	switch k {
	case KindCPF:
		nine := digits(r, 9)
		for strings.Count(nine, nine[:1]) == 9 {
			nine = digits(r, 9)
		}
		s := cpfDigits(nine)
		if r.IntN(2) == 0 {
			return s[:3] + "." + s[3:6] + "." + s[6:9] + "-" + s[9:], s
		}
		return s, s
	case KindCNPJ:
		b := []byte(digits(r, 12))
		if r.IntN(2) == 0 { // alphanumeric
			for i := range b {
				b[i] = alnum[r.IntN(len(alnum))]
			}
			b[r.IntN(8)] = alnum[10+r.IntN(26)]
		}
		if string(b[8:12]) == "0000" {
			b[11] = '1'
		}
		s := cnpjDigits(string(b))
		w := s
		if r.IntN(2) == 0 {
			w = s[:2] + "." + s[2:5] + "." + s[5:8] + "/" + s[8:12] + "-" + s[12:]
		}
		if r.IntN(3) == 0 {
			w = strings.ToLower(w)
		}
		return w, s
	case KindEmail:
		const local = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._+-"
		var b strings.Builder
		for range 1 + r.IntN(40) {
			b.WriteByte(local[r.IntN(len(local))])
		}
		b.WriteString("@")
		for i := range 1 + r.IntN(3) {
			if i > 0 {
				b.WriteString(".")
			}
			b.WriteString(strings.ToLower(randomText(r, "abcdefghijklmnopqrstuvwxyz0123456789", 1+r.IntN(10))))
		}
		b.WriteString(".com.br")
		w := b.String()
		if len(w) > MaxEmailLen {
			w = w[len(w)-MaxEmailLen:]
			w = "x" + w[1:]
		}
		if !strings.Contains(w, "@") || strings.HasPrefix(w, "@") {
			w = "a@b.com.br"
		}
		return w, strings.ToLower(w)
	case KindPhone:
		ddd := fmt.Sprintf("%d%d", 1+r.IntN(9), 1+r.IntN(9))
		num := fmt.Sprint(2+r.IntN(8)) + digits(r, 7)
		if r.IntN(2) == 0 {
			num = "9" + digits(r, 8)
		}
		s := "+55" + ddd + num
		if r.IntN(2) == 0 {
			return "+55 (" + ddd + ") " + num[:len(num)-4] + "-" + num[len(num)-4:], s
		}
		return s, s
	default:
		const hex = "0123456789abcdef"
		b := []byte(randomText(r, hex, 36))
		for _, i := range []int{8, 13, 18, 23} {
			b[i] = '-'
		}
		s := string(b)
		if r.IntN(2) == 0 {
			return strings.ToUpper(s), s
		}
		return s, s
	}
}

func randomText(r *rand.Rand, set string, n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = set[r.IntN(len(set))]
	}
	return string(b)
}

// randomLabel is 1 to max printable ASCII characters, no space at either end.
func randomLabel(r *rand.Rand, max int) string {
	var set strings.Builder
	for c := byte(0x20); c <= 0x7e; c++ {
		set.WriteByte(c)
	}
	s := []byte(randomText(r, set.String(), 1+r.IntN(max)))
	if s[0] == ' ' {
		s[0] = 'A'
	}
	if s[len(s)-1] == ' ' {
		s[len(s)-1] = 'z'
	}
	return string(s)
}

// randomAmount is 0 (no amount) one time in ten, else up to 9999999999.99
// at every magnitude.
func randomAmount(r *rand.Rand) int64 {
	if r.IntN(10) == 0 {
		return 0
	}
	max := int64(10)
	for range r.IntN(12) {
		max *= 10
	}
	return 1 + r.Int64N(max-1)
}

func randomTxID(r *rand.Rand) string {
	if r.IntN(10) == 0 {
		return ""
	}
	return randomText(r, alnum+"abcdefghijklmnopqrstuvwxyz", 1+r.IntN(MaxTxIDLen))
}
