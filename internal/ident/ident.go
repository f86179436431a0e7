// Package ident makes and checks the ids the server gives what it stores (drafts d_…, files
// f_…, links l_…): a prefix and 128 random bits written as 26 lower-case base32 characters
// (RFC 4648's alphabet, lower-cased, unpadded). One generator and one validator, so that every
// such id is spelled one way and every schema pattern and migration CHECK says that spelling.
package ident

import (
	"crypto/rand"
	"encoding/base32"
	"strconv"
	"strings"
)

// Size is how many bytes of randomness an id carries.
const Size = 16

// Chars is how many characters write those bytes.
const Chars = (Size*8 + 4) / 5

// alphabet is the digits' alphabet, in value order.
const alphabet = "abcdefghijklmnopqrstuvwxyz234567"

var encoding = base32.NewEncoding(alphabet).WithPadding(base32.NoPadding)

// New returns prefix followed by 128 fresh random bits.
func New(prefix string) string {
	var b [Size]byte
	rand.Read(b[:]) // never fails (crypto/rand, Go 1.24+)
	return Encode(prefix, b)
}

// Encode writes b as an id with prefix.
func Encode(prefix string, b [Size]byte) string { return prefix + encoding.EncodeToString(b[:]) }

// Decode returns the bytes of an id with prefix, and whether s is one: exactly as Encode
// writes it (the last character's two unused low bits zero), so that
// Encode(prefix, Decode(prefix, s)) == s.
func Decode(prefix, s string) (b [Size]byte, ok bool) {
	rest, ok := strings.CutPrefix(s, prefix)
	if !ok || len(rest) != Chars {
		return b, false
	}
	for i := 0; i < len(rest); i++ {
		if c := rest[i]; !('a' <= c && c <= 'z' || '2' <= c && c <= '7') {
			return b, false
		}
	}
	n, err := encoding.Decode(b[:], []byte(rest))
	if err != nil || n != Size || Encode(prefix, b) != s {
		return [Size]byte{}, false
	}
	return b, true
}

// Valid reports whether s is an id with prefix, as New makes them.
func Valid(prefix, s string) bool {
	_, ok := Decode(prefix, s)
	return ok
}

// Pattern is the regular expression (RE2 and ECMA-262 alike) of the ids with prefix, for a
// schema; prefix is taken literally and must hold no metacharacter.
func Pattern(prefix string) string { return "^" + prefix + "[a-z2-7]{" + strconv.Itoa(Chars) + "}$" }

// Describe says what an id with prefix looks like, for a schema description.
func Describe(prefix string) string {
	return prefix + " and " + strconv.Itoa(Chars) + " lower-case base32 characters (a-z, 2-7)"
}
