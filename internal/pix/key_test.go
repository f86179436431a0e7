package pix

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/paemuri/brdoc"
)

func TestParseKey(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want Key
		err  string // a word the error must hold: the kind it looked like
	}{
		// CPF
		{in: "123.456.789-09", want: Key{KindCPF, "12345678909"}},
		{in: "12345678909", want: Key{KindCPF, "12345678909"}},
		{in: "529.982.247-25", want: Key{KindCPF, "52998224725"}},
		{in: "123.456.789-00", err: "CPF"},
		{in: "111.111.111-11", err: "CPF"}, // check digits verify, but no CPF is all one digit
		{in: "1234567890A", err: "CPF"},
		{in: "123 456 789 09", err: "none of the five kinds"},
		// CNPJ, numeric and alphanumeric
		{in: "11.222.333/0001-81", want: Key{KindCNPJ, "11222333000181"}},
		{in: "11222333000181", want: Key{KindCNPJ, "11222333000181"}},
		{in: "12.ABC.345/01DE-35", want: Key{KindCNPJ, "12ABC34501DE35"}}, // the Receita Federal's example
		{in: "12abc34501de35", want: Key{KindCNPJ, "12ABC34501DE35"}},
		{in: "11.222.333/0001-82", err: "CNPJ"},
		{in: "12.ABC.345/01DE-36", err: "CNPJ"},
		{in: "12.ABC.345/01DE-3A", err: "CNPJ"},
		{in: "00.000.000/0000-00", err: "CNPJ"},
		{in: "11.222.333/0000-XX", err: "CNPJ"},
		{in: "1122233300018", err: "a CPF has 11, a CNPJ 14"},
		// e-mail
		{in: "Fulano.de-Tal+pix@Example.COM.br", want: Key{KindEmail, "fulano.de-tal+pix@example.com.br"}},
		{in: strings.Repeat("a", 65) + "@example.com", want: Key{KindEmail, strings.Repeat("a", 65) + "@example.com"}}, // 77
		{in: strings.Repeat("a", 66) + "@example.com", err: "e-mail"},                                                  // 78
		{in: "@example.com", err: "e-mail"},
		{in: "fulano@", err: "e-mail"},
		{in: "fulano@localhost", err: "e-mail"},
		{in: "fulano@@example.com", err: "e-mail"},
		{in: "ful ano@example.com", err: "e-mail"},
		{in: "fulano@-example.com", err: "e-mail"},
		{in: "fulano@example..com", err: "e-mail"},
		{in: "fulanó@example.com", err: "e-mail"},
		// phone
		{in: "+5511987654321", want: Key{KindPhone, "+5511987654321"}},
		{in: "+55 (61) 3333-4444", want: Key{KindPhone, "+556133334444"}},
		{in: "+55 99 91234-5678", want: Key{KindPhone, "+5599912345678"}},
		{in: "+1 555 123 4567", err: "+55"},
		{in: "+55 (10) 98765-4321", err: "DDD"},
		{in: "+55 (01) 98765-4321", err: "DDD"},
		{in: "+55 (20) 3333-4444", err: "DDD"},
		{in: "+55 11 8765-432", err: "phone"},
		{in: "+55 11 98765-43210", err: "phone"},
		{in: "+55 11 88765-4321", err: "mobile"},
		{in: "+55.11.98765.4321", err: "phone"},
		// random key (EVP)
		{in: "123e4567-e12b-12d1-a456-426655440000", want: Key{KindEVP, "123e4567-e12b-12d1-a456-426655440000"}},
		{in: "123E4567-E12B-12D1-A456-426655440000", want: Key{KindEVP, "123e4567-e12b-12d1-a456-426655440000"}},
		{in: "123e4567-e12b-12d1-a456-42665544000g", err: "random key"},
		{in: "123e4567-e12b-12d1xa456-426655440000", err: "random key"},
		// none
		{in: "", err: "empty"},
		{in: "12345", err: "a CPF has 11"},
		{in: "fulano de tal", err: "none of the five kinds"},
	} {
		got, err := ParseKey(tt.in)
		switch {
		case tt.err == "" && (err != nil || got != tt.want):
			t.Errorf("ParseKey(%q) = %+v, %v; want %+v", tt.in, got, err, tt.want)
		case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)):
			t.Errorf("ParseKey(%q) = %+v, %v; want an error saying %q", tt.in, got, err, tt.err)
		}
	}
}

// The alphanumeric rule agrees with brdoc on numeric CNPJs: random ones,
// half with their check digits right, and each one with one digit changed.
func TestCNPJAgreesWithBrdoc(t *testing.T) {
	r := rand.New(rand.NewPCG(2229, 2024))
	valid := 0
	for range 20_000 {
		s := digits(r, 14)
		if r.IntN(2) == 0 {
			s = cnpjDigits(s[:12])
		}
		if r.IntN(10) == 0 {
			s = s[:8] + "0000" + s[12:]
		}
		if cnpjValid(s) != brdoc.IsCNPJ(s) {
			t.Fatalf("cnpjValid(%s) = %v, brdoc.IsCNPJ = %v", s, cnpjValid(s), brdoc.IsCNPJ(s))
		}
		if cnpjValid(s) {
			valid++
		}
		b := []byte(s)
		i := r.IntN(14)
		b[i] = byte('0' + (int(b[i]-'0')+1+r.IntN(9))%10)
		if cnpjValid(string(b)) != brdoc.IsCNPJ(string(b)) {
			t.Fatalf("cnpjValid(%s) = %v, brdoc.IsCNPJ = %v", b, cnpjValid(string(b)), brdoc.IsCNPJ(string(b)))
		}
	}
	for _, s := range []string{"00000000000000", "11111111111111", "11222333000181"} {
		if cnpjValid(s) != brdoc.IsCNPJ(s) {
			t.Errorf("cnpjValid(%s) = %v, brdoc.IsCNPJ = %v", s, cnpjValid(s), brdoc.IsCNPJ(s))
		}
	}
	if valid < 5_000 {
		t.Errorf("only %d of the generated CNPJs were valid: the comparison saw too few", valid)
	}
	if !cnpjValid("12ABC34501DE35") || cnpjValid("12ABC34501DE53") {
		t.Error("cnpjValid does not take the Receita Federal's example 12.ABC.345/01DE-35 alone")
	}
}
