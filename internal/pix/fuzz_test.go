package pix

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

// FuzzCode: whatever account and charge it is given — through NewMerchant,
// or a Merchant built by hand (kind set) — Code either refuses with a
// FieldError or writes a code the test's decoder reads back, CRC verified
// and every field as given.
func FuzzCode(f *testing.F) {
	f.Add("", "123e4567-e12b-12d1-a456-426655440000", "Fulano de Tal", "BRASILIA", int64(0), "")
	f.Add("", "12.ABC.345/01DE-35", "Loja", "SAO PAULO", int64(123456), "D2K7")
	f.Add("", "+55 (11) 98765-4321", "N", "C", int64(999_999_999_999), strings.Repeat("T", 25))
	f.Add("", strings.Repeat("a", 65)+"@example.com", "Fulano", "RIO", int64(1), "x")
	f.Add("cpf", "12345678909", "Fulano", "RIO", int64(-1), "***")
	f.Add("email", "Fulano@Example.com", "Fulano", "RIO", int64(10), "A")
	f.Fuzz(func(t *testing.T, kind, key, name, city string, cents int64, txid string) {
		var m Merchant
		if kind == "" {
			var err error
			m, err = NewMerchant(key, name, city)
			if err != nil {
				checkFieldError(t, err, "key", "name", "city")
				return
			}
		} else {
			m = Merchant{Key: Key{KeyKind(kind), key}, Name: name, City: city}
		}
		c := Charge{AmountCents: cents, TxID: txid}
		code, err := m.Code(c)
		if err != nil {
			checkFieldError(t, err, "key", "name", "city", "amount", "txid")
			return
		}
		d, err := decode(code)
		if err != nil {
			t.Fatalf("Code(%+v) of %+v = %q, which does not decode: %v", c, m, code, err)
		}
		if d.Key != m.Key.Value || d.Name != m.Name || d.City != m.City {
			t.Fatalf("Code(%+v) of %+v decodes as %+v", c, m, d)
		}
		if want := cmpOr(txid, "***"); d.TxID != want {
			t.Fatalf("Code(%+v): txid %q, want %q", c, d.TxID, want)
		}
		if cents > 0 && amountCents(t, d.Amount) != cents || cents == 0 && d.Amount != "" {
			t.Fatalf("Code(%+v): amount %q", c, d.Amount)
		}
		if got := Codes(code); len(got) != 1 || got[0] != code {
			t.Fatalf("Codes(%q) = %q", code, got)
		}
	})
}

func cmpOr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func checkFieldError(t *testing.T, err error, fields ...string) {
	t.Helper()
	var fe *FieldError
	if !errors.As(err, &fe) || !slices.Contains(fields, fe.Field) || fe.Message == "" {
		t.Fatalf("error %v (%T): want a FieldError on one of %v", err, err, fields)
	}
}

// FuzzParseKey: a key ParseKey takes is normalized (parsing it again gives
// it back) and fits the merchant account field.
func FuzzParseKey(f *testing.F) {
	for _, s := range []string{"123.456.789-09", "12.ABC.345/01DE-35", "11222333000181", "Fulano@Example.com", "+55 (11) 98765-4321", "123E4567-E12B-12D1-A456-426655440000", "", "+", "@"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		k, err := ParseKey(s)
		if err != nil {
			if err.Error() == "" {
				t.Fatalf("ParseKey(%q): empty error", s)
			}
			return
		}
		if again, err := ParseKey(k.Value); err != nil || again != k {
			t.Fatalf("ParseKey(%q) = %+v, but ParseKey(%q) = %+v, %v", s, k, k.Value, again, err)
		}
		if len(k.Value) > MaxEmailLen || k.Value == "" {
			t.Fatalf("ParseKey(%q) = %+v: %d bytes", s, k, len(k.Value))
		}
	})
}

// FuzzCodes: whatever the text, every code Codes finds is in it and
// decodes with its CRC verified.
func FuzzCodes(f *testing.F) {
	f.Add(bacenExample)
	f.Add("x" + bacenExample + bacenExample[:40] + "000201")
	f.Add(strings.Repeat("0002", 40))
	f.Fuzz(func(t *testing.T, text string) {
		for _, c := range Codes(text) {
			if !strings.Contains(text, c) || !strings.HasPrefix(c, "000201") {
				t.Fatalf("Codes(%q) found %q", text, c)
			}
			if _, err := walkTLV(c); err != nil {
				t.Fatalf("Codes(%q) found %q: %v", text, c, err)
			}
			if got, err := testCRCOf(c); err != nil {
				t.Fatalf("Codes(%q) found %q: %v (%04X)", text, c, err, got)
			}
		}
	})
}

// testCRCOf checks the CRC at the end of a code by the test's CRC.
func testCRCOf(c string) (uint16, error) {
	if len(c) < 8 || c[len(c)-8:len(c)-4] != "6304" {
		return 0, errors.New("no CRC field at the end")
	}
	got := testCRC(c[:len(c)-4])
	if c[len(c)-4:] != fmtHex(got) {
		return got, errors.New("CRC does not verify")
	}
	return got, nil
}

func fmtHex(v uint16) string {
	const digits = "0123456789ABCDEF"
	return string([]byte{digits[v>>12], digits[v>>8&15], digits[v>>4&15], digits[v&15]})
}
