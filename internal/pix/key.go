// Package pix writes the static PIX BR Code of a reminder — the
// copia-e-cola string a customer pastes into a bank app, and the QR code
// that carries it — as BACEN's Manual de Padrões para Iniciação do Pix
// specifies on top of EMV QRCPS-MPM.
//
// The operator's receiving account ([Merchant]: a key of one of the five
// kinds DICT knows, a name and a city) is checked once, when the server
// starts ([NewMerchant]), so that a mistyped key stops the start instead
// of sending customers codes that pay nobody. [Merchant.Code] writes one
// code per charge: the open amount and a txid that names the draft, so
// that the payment that comes back matches its invoices by itself.
//
// It is a leaf: the standard library, rsc.io/qr (the QR symbols) and
// github.com/paemuri/brdoc (CPF and numeric CNPJ check digits) only.
package pix

import (
	"errors"
	"fmt"
	"strings"

	"github.com/paemuri/brdoc"
)

// KeyKind is one of the five kinds of PIX key DICT knows.
type KeyKind string

const (
	KindCPF   KeyKind = "cpf"
	KindCNPJ  KeyKind = "cnpj"
	KindEmail KeyKind = "email"
	KindPhone KeyKind = "phone"
	KindEVP   KeyKind = "evp"
)

// Key is a PIX key, its Value normalized as DICT stores it, so that the
// code carries the key the payer's bank will look up:
//   - cpf: 11 digits;
//   - cnpj: 14 characters, digits or (the alphanumeric CNPJ) uppercase
//     letters in the first 12;
//   - email: lowercased, at most 77 characters;
//   - phone: "+55", the DDD and the number (E.164, 13 or 14 characters);
//   - evp: the random key, a lowercase UUID of 36 characters.
type Key struct {
	Kind  KeyKind
	Value string
}

// MaxEmailLen is DICT's bound on an e-mail key; it is also what keeps the
// merchant account field (26) within 99 bytes.
const MaxEmailLen = 77

// ParseKey reads a PIX key and tells its kind by its shape: an "@" is an
// e-mail, a leading "+" a phone number, a UUID a random key, 11 digits a
// CPF and 14 characters a CNPJ. CPF and CNPJ may be written with their
// punctuation (123.456.789-09, 12.ABC.345/01DE-35), a phone number with
// spaces, dashes and parentheses. The error says which kind the key looked
// like and why it is not one.
func ParseKey(s string) (Key, error) {
	switch {
	case s == "":
		return Key{}, errors.New("is empty")
	case strings.Contains(s, "@"):
		return parseEmail(s)
	case strings.HasPrefix(s, "+"):
		return parsePhone(s)
	case len(s) == 36 && s[8] == '-' && s[13] == '-':
		return parseEVP(s)
	}
	doc, ok := stripDocument(s)
	if !ok || !strings.ContainsAny(doc, "0123456789") {
		return Key{}, errors.New("is none of the five kinds of PIX key: a CPF (11 digits), a CNPJ (14 characters), an e-mail address, a phone number (+55 DDD number) or a random key (UUID)")
	}
	switch len(doc) {
	case 11:
		if !onlyDigits(doc) {
			return Key{}, errors.New("looks like a CPF but holds a letter: a CPF is 11 digits")
		}
		if !brdoc.IsCPF(doc) {
			return Key{}, errors.New("looks like a CPF (11 digits) but its check digits do not verify")
		}
		return Key{KindCPF, doc}, nil
	case 14:
		doc = strings.ToUpper(doc)
		if !onlyDigits(doc[12:]) {
			return Key{}, errors.New("looks like a CNPJ but its last two characters, the check digits, are not digits")
		}
		ok := cnpjValid(doc)
		if onlyDigits(doc) {
			ok = brdoc.IsCNPJ(doc)
		}
		if !ok {
			return Key{}, errors.New("looks like a CNPJ (14 characters) but its check digits do not verify")
		}
		return Key{KindCNPJ, doc}, nil
	}
	return Key{}, fmt.Errorf("has %d digits or letters: a CPF has 11, a CNPJ 14 (a phone number starts with +55, an e-mail holds an @)", len(doc))
}

// stripDocument drops a CPF's or CNPJ's punctuation; false when s holds
// anything but letters, digits and that punctuation.
func stripDocument(s string) (string, bool) {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c >= '0' && c <= '9', c >= 'A' && c <= 'Z', c >= 'a' && c <= 'z':
			b.WriteByte(c)
		case c == '.' || c == '-' || c == '/':
		default:
			return "", false
		}
	}
	return b.String(), true
}

// cnpjValid checks a CNPJ of 14 characters, numeric or alphanumeric, by the
// Receita Federal's rule (IN RFB 2.229/2024): each character counts as its
// ASCII code minus 48 (so a digit is itself, 'A' is 17), the two check
// digits are modulo 11 with weights 2 to 9 from the right, cycling. brdoc
// v1 knows only the numeric CNPJ; this also refuses what it refuses — all
// characters equal, branch 0000 — so that the two agree on numeric ones (a
// test holds them to it).
func cnpjValid(s string) bool {
	if len(s) != 14 || !onlyDigits(s[12:]) || s[8:12] == "0000" || strings.Count(s, s[:1]) == 14 {
		return false
	}
	for _, c := range []byte(s[:12]) {
		if !(c >= '0' && c <= '9' || c >= 'A' && c <= 'Z') {
			return false
		}
	}
	return cnpjDigit(s[:12]) == s[12] && cnpjDigit(s[:13]) == s[13]
}

// cnpjDigit is the check digit that follows s.
func cnpjDigit(s string) byte {
	sum, w := 0, 2
	for i := len(s) - 1; i >= 0; i-- {
		sum += int(s[i]-'0') * w
		if w++; w > 9 {
			w = 2
		}
	}
	if r := sum % 11; r >= 2 {
		return byte('0' + 11 - r)
	}
	return '0'
}

// parseEmail checks an e-mail key by DICT's shape: a local part of
// letters, digits and the atom's punctuation, and a domain of dot-separated
// labels of letters, digits and inner hyphens.
func parseEmail(s string) (Key, error) {
	s = strings.ToLower(s)
	if len(s) > MaxEmailLen {
		return Key{}, fmt.Errorf("looks like an e-mail address but has %d characters: DICT takes at most %d", len(s), MaxEmailLen)
	}
	local, domain, _ := strings.Cut(s, "@")
	if local == "" || strings.Trim(local, "abcdefghijklmnopqrstuvwxyz0123456789.!#$%&'*+/=?^_`{|}~-") != "" {
		return Key{}, errors.New("looks like an e-mail address but the part before the @ is empty or holds a character an address may not")
	}
	labels := strings.Split(domain, ".")
	if len(labels) < 2 {
		return Key{}, errors.New("looks like an e-mail address but its domain has no dot")
	}
	for _, l := range labels {
		if l == "" || len(l) > 63 || l[0] == '-' || l[len(l)-1] == '-' || strings.Trim(l, "abcdefghijklmnopqrstuvwxyz0123456789-") != "" {
			return Key{}, errors.New("looks like an e-mail address but its domain is not a host name (letters, digits, inner hyphens, dots; one @)")
		}
	}
	return Key{KindEmail, s}, nil
}

// parsePhone checks a phone key: +55, a DDD (two digits 1–9: no Brazilian
// area code ends in 0) and a number of 8 digits, or 9 starting with 9 (a
// mobile). Spaces, dashes and parentheses are dropped.
func parsePhone(s string) (Key, error) {
	var b strings.Builder
	for _, c := range []byte(s[1:]) {
		switch {
		case c >= '0' && c <= '9':
			b.WriteByte(c)
		case c == ' ' || c == '-' || c == '(' || c == ')':
		default:
			return Key{}, errors.New("looks like a phone number but holds a character other than digits, spaces, dashes and parentheses")
		}
	}
	d := b.String()
	switch {
	case !strings.HasPrefix(d, "55"):
		return Key{}, errors.New("looks like a phone number but is not Brazilian: a PIX phone key starts with +55")
	case len(d) != 12 && len(d) != 13:
		return Key{}, fmt.Errorf("looks like a phone number but has %d digits after +55: want a DDD and 8 or 9 digits", len(d)-2)
	case d[2] == '0' || d[3] == '0':
		return Key{}, fmt.Errorf("looks like a phone number but its DDD %s is not an area code (11 to 99, none ending in 0)", d[2:4])
	case len(d) == 13 && d[4] != '9':
		return Key{}, errors.New("looks like a phone number but its 9 digits do not start with 9, as a mobile number's do")
	}
	return Key{KindPhone, "+" + d}, nil
}

// parseEVP checks a random key: a UUID, hexadecimal in groups of 8, 4, 4,
// 4 and 12, lowercased. Its version and variant are not checked: BACEN's
// own example key has neither.
func parseEVP(s string) (Key, error) {
	s = strings.ToLower(s)
	for i, c := range []byte(s) {
		if i == 8 || i == 13 || i == 18 || i == 23 {
			if c != '-' {
				return Key{}, errors.New("looks like a random key (UUID) but its dashes are not at 8-4-4-4-12")
			}
		} else if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return Key{}, errors.New("looks like a random key (UUID) but holds a character that is not hexadecimal")
		}
	}
	return Key{KindEVP, s}, nil
}

func onlyDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}
