package pix

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
)

// bacenExample is the static code of BACEN's Manual de Padrões para
// Iniciação do Pix: no amount, txid "***".
const bacenExample = "00020126580014br.gov.bcb.pix0136123e4567-e12b-12d1-a456-4266554400005204000053039865802BR5913Fulano de Tal6008BRASILIA62070503***63041D3D"

func TestBACENExample(t *testing.T) {
	m, err := NewMerchant("123e4567-e12b-12d1-a456-426655440000", "Fulano de Tal", "BRASILIA")
	if err != nil {
		t.Fatalf("NewMerchant: %v", err)
	}
	got, err := m.Code(Charge{})
	if err != nil || got != bacenExample {
		t.Fatalf("Code(Charge{}) = %q, %v\nwant %q", got, err, bacenExample)
	}
	d, err := decode(bacenExample)
	if err != nil {
		t.Fatalf("decode(BACEN's example): %v", err)
	}
	want := decoded{Key: "123e4567-e12b-12d1-a456-426655440000", Name: "Fulano de Tal", City: "BRASILIA", TxID: "***"}
	if d != want {
		t.Errorf("decode(BACEN's example) = %+v, want %+v", d, want)
	}
	// The decoder can fail: one byte changed breaks the CRC.
	if _, err := decode(strings.Replace(bacenExample, "Fulano", "Fulana", 1)); err == nil {
		t.Error("decode accepted the example with its name changed")
	}
}

// CRC-16/CCITT-FALSE's check value, and the package against the test's
// table-driven CRC.
func TestCRC16(t *testing.T) {
	if got := CRC16([]byte("123456789")); got != 0x29B1 {
		t.Errorf("CRC16(123456789) = %04X, want 29B1", got)
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 1000 {
		s := randomText(r, alnum, r.IntN(200))
		if got, want := CRC16([]byte(s)), testCRC(s); got != want {
			t.Fatalf("CRC16(%q) = %04X, want %04X", s, got, want)
		}
	}
}

// Ten thousand random accounts and charges, every kind of key, read back by
// the test's decoder with every field as given.
func TestRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(28, 28))
	kinds := []KeyKind{KindCPF, KindCNPJ, KindEmail, KindPhone, KindEVP}
	for i := range 10_000 {
		kind := kinds[i%len(kinds)]
		written, stored := randomKey(r, kind)
		name, city := randomLabel(r, MaxNameLen), randomLabel(r, MaxCityLen)
		m, err := NewMerchant(written, name, city)
		if err != nil {
			t.Fatalf("NewMerchant(%q, %q, %q): %v", written, name, city, err)
		}
		if want := (Key{kind, stored}); m.Key != want {
			t.Fatalf("NewMerchant(%q).Key = %+v, want %+v", written, m.Key, want)
		}
		c := Charge{AmountCents: randomAmount(r), TxID: randomTxID(r)}
		code, err := m.Code(c)
		if err != nil {
			t.Fatalf("Code(%+v) for %+v: %v", c, m, err)
		}
		d, err := decode(code)
		if err != nil {
			t.Fatalf("decode(%q): %v", code, err)
		}
		want := decoded{Key: stored, Name: name, City: city, TxID: c.TxID}
		if c.TxID == "" {
			want.TxID = "***"
		}
		if c.AmountCents > 0 {
			want.Amount = d.Amount // checked as cents below
			if cents := amountCents(t, d.Amount); cents != c.AmountCents {
				t.Fatalf("code %q: amount %s, want %d cents", code, d.Amount, c.AmountCents)
			}
		}
		if d != want {
			t.Fatalf("decode(Code(%+v) of %+v) = %+v, want %+v", c, m, d, want)
		}
		if got := Codes("Pague: " + code + "\n"); len(got) != 1 || got[0] != code {
			t.Fatalf("Codes(text with %q) = %q", code, got)
		}
	}
}

// amountCents reads a decoded 1234.56 as cents.
func amountCents(t *testing.T, a string) int64 {
	whole, frac, _ := strings.Cut(a, ".")
	w, err1 := strconv.ParseInt(whole, 10, 64)
	f, err2 := strconv.ParseInt(frac, 10, 64)
	if err1 != nil || err2 != nil {
		t.Fatalf("amount %q", a)
	}
	return w*100 + f
}

func TestAmountField(t *testing.T) {
	m, err := NewMerchant("+5561999998888", "Loja", "BRASILIA")
	if err != nil {
		t.Fatal(err)
	}
	for cents, want := range map[int64]string{1: "0.01", 10: "0.10", 100: "1.00", 123456: "1234.56", 999999999999: "9999999999.99"} {
		code, err := m.Code(Charge{AmountCents: cents})
		if err != nil {
			t.Fatalf("Code(%d cents): %v", cents, err)
		}
		if d, err := decode(code); err != nil || d.Amount != want {
			t.Errorf("Code(%d cents): amount %q, %v; want %q", cents, d.Amount, err, want)
		}
		if field := fmt.Sprintf("54%02d%s", len(want), want); !strings.Contains(code, "5303986"+field+"5802BR") {
			t.Errorf("Code(%d cents) = %q: want %s between the currency and the country", cents, code, field)
		}
	}
}

// Code refuses what the BR Code cannot carry, naming the field; a Merchant
// built by hand is held to NewMerchant's rules.
func TestCodeRefuses(t *testing.T) {
	good, err := NewMerchant("fulano@example.com", "Fulano", "SAO PAULO")
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		m     Merchant
		c     Charge
		field string
	}{
		{good, Charge{AmountCents: -1}, "amount"},
		{good, Charge{AmountCents: 1_000_000_000_000}, "amount"}, // 10000000000.00: 14 characters
		{good, Charge{TxID: "has space"}, "txid"},
		{good, Charge{TxID: strings.Repeat("A", 26)}, "txid"},
		{good, Charge{TxID: "***"}, "txid"},
		{good, Charge{TxID: "ação"}, "txid"},
		{Merchant{}, Charge{}, "key"},
		{Merchant{Key: Key{KindEmail, "Fulano@Example.com"}, Name: "F", City: "C"}, Charge{}, "key"},
		{Merchant{Key: Key{KindCPF, "fulano@example.com"}, Name: "F", City: "C"}, Charge{}, "key"},
		{Merchant{Key: good.Key, City: "C"}, Charge{}, "name"},
		{Merchant{Key: good.Key, Name: strings.Repeat("N", 26), City: "C"}, Charge{}, "name"},
		{Merchant{Key: good.Key, Name: "N", City: "São Paulo"}, Charge{}, "city"},
		{Merchant{Key: good.Key, Name: "N", City: "SAO PAULO CAPITAL"}, Charge{}, "city"},
	} {
		code, err := tt.m.Code(tt.c)
		var fe *FieldError
		if !errors.As(err, &fe) || fe.Field != tt.field {
			t.Errorf("%+v.Code(%+v) = %q, %v; want a FieldError on %s", tt.m, tt.c, code, err, tt.field)
		}
	}
	if _, err := good.Code(Charge{AmountCents: 999_999_999_999, TxID: strings.Repeat("Z", 25)}); err != nil {
		t.Errorf("the largest amount and txid: %v", err)
	}
}

func TestNewMerchant(t *testing.T) {
	for _, tt := range []struct {
		key, name, city, field string
	}{
		{"123.456.789-09", "Fulano de Tal", "BRASILIA", ""},
		{"123.456.789-09", strings.Repeat("n", 25), strings.Repeat("c", 15), ""},
		{"123.456.789-00", "Fulano de Tal", "BRASILIA", "key"},
		{"", "Fulano de Tal", "BRASILIA", "key"},
		{"123.456.789-09", "", "BRASILIA", "name"},
		{"123.456.789-09", " Fulano", "BRASILIA", "name"},
		{"123.456.789-09", "Fulano ", "BRASILIA", "name"},
		{"123.456.789-09", "Fulano\tde Tal", "BRASILIA", "name"},
		{"123.456.789-09", "Fulano de Tal Comércio", "BRASILIA", "name"},
		{"123.456.789-09", strings.Repeat("n", 26), "BRASILIA", "name"},
		{"123.456.789-09", "Fulano", "", "city"},
		{"123.456.789-09", "Fulano", "BRASÍLIA", "city"},
		{"123.456.789-09", "Fulano", strings.Repeat("c", 16), "city"},
	} {
		_, err := NewMerchant(tt.key, tt.name, tt.city)
		var fe *FieldError
		switch {
		case tt.field == "" && err != nil:
			t.Errorf("NewMerchant(%q, %q, %q) = %v, want nil", tt.key, tt.name, tt.city, err)
		case tt.field != "" && (!errors.As(err, &fe) || fe.Field != tt.field || !strings.HasPrefix(err.Error(), tt.field+": ")):
			t.Errorf("NewMerchant(%q, %q, %q) = %v, want a FieldError on %s", tt.key, tt.name, tt.city, err, tt.field)
		}
	}
}

func TestValidTxID(t *testing.T) {
	for s, want := range map[string]bool{
		"": false, "A": true, "abcXYZ019": true, strings.Repeat("9", 25): true, strings.Repeat("9", 26): false,
		"***": false, "a-b": false, "a b": false, "é": false, "D2K7": true,
	} {
		if got := ValidTxID(s); got != want {
			t.Errorf("ValidTxID(%q) = %v, want %v", s, got, want)
		}
	}
}

// Codes finds every code in free text, in order, and passes over a code
// whose CRC is broken and text that merely starts like one.
func TestCodes(t *testing.T) {
	m, err := NewMerchant("11.222.333/0001-81", "Loja", "RECIFE")
	if err != nil {
		t.Fatal(err)
	}
	a, _ := m.Code(Charge{AmountCents: 1050, TxID: "DRAFTA"})
	b, _ := m.Code(Charge{AmountCents: 99, TxID: "DRAFTB"})
	broken := a[:len(a)-1] + string("0123456789ABCDEF"[(strings.IndexByte("0123456789ABCDEF", a[len(a)-1])+1)%16])
	lower := strings.Replace(bacenExample, "1D3D", "1d3d", 1) // the manual writes the CRC in uppercase
	for _, tt := range []struct {
		text string
		want []string
	}{
		{"", nil},
		{"no code here", nil},
		{a, []string{a}},
		{"Olá,\n\nPIX copia e cola:\n" + a + "\n\nou\n" + b + "\nObrigado", []string{a, b}},
		{a + b, []string{a, b}},
		{"000201" + a, []string{a}},
		{"0002010102" + b, []string{b}},
		{broken + "\n" + b, []string{b}},
		{strings.Replace(a, "Loja", "Loxa", 1), nil},
		{lower, nil},
		{a[:len(a)-2], nil},
		{strings.Repeat("000201", 1000), nil},
	} {
		got := Codes(tt.text)
		if fmt.Sprint(got) != fmt.Sprint(tt.want) {
			t.Errorf("Codes(%q) = %q, want %q", tt.text, got, tt.want)
		}
	}
}
