package portfolio

import (
	"encoding/json"
	"math"
	"math/big"
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/cobranca/cobranca/internal/canonical"
)

func TestDecimalOf(t *testing.T) {
	tooLarge, tooPrecise := Decimal{Coef: math.MaxUint64}, Decimal{Coef: 1, Scale: math.MaxUint8}
	tests := []struct {
		s    string
		want Decimal
		ok   bool
	}{
		{"5.17", Decimal{517, 2}, true},
		{"5.170", Decimal{517, 2}, true},
		{"517e-2", Decimal{517, 2}, true},
		{"0.0517E+2", Decimal{517, 2}, true},
		{"5", Decimal{5, 0}, true},
		{"5.0", Decimal{5, 0}, true},
		{"50e-1", Decimal{5, 0}, true},
		{"1e3", Decimal{1000, 0}, true},
		{"0.000000000001", Decimal{1, 12}, true},
		{"1000000000", Decimal{1_000_000_000, 0}, true},
		{"1e9", Decimal{1_000_000_000, 0}, true},
		{"999999999.999999999", Decimal{999_999_999_999_999_999, 9}, true},
		{"0.123456789012345678", tooPrecise, true},
		{"0", Decimal{}, true},
		{"-0.0", Decimal{}, true},
		{"-5.17", Decimal{}, true},
		{"0e-99999999999999999999", Decimal{}, true},
		{"1000000000.000000000001", tooLarge, true},
		{"1000000001", tooLarge, true},
		{"1e10", tooLarge, true},
		{"12345678901234567890123456789012345678901234567890", tooLarge, true},
		{"1e99999999999999999999", tooLarge, true},
		{"0.0000000000001", tooPrecise, true},
		{"1.234567890123456789", tooPrecise, true},
		{"1e-99999999999999999999", tooPrecise, true},
		{"0.1234567890123456789012345678901234567890123456789", tooPrecise, true},
		{"", Decimal{}, false},
		{"5.", Decimal{}, false},
		{".5", Decimal{}, false},
		{"+5", Decimal{}, false},
		{"05", Decimal{}, false},
		{"5 ", Decimal{}, false},
		{`"5"`, Decimal{}, false},
		{"null", Decimal{}, false},
	}
	for _, tt := range tests {
		if got, ok := decimalOf(tt.s); got != tt.want || ok != tt.ok {
			t.Errorf("decimalOf(%q) = %v, %v; want %v, %v", tt.s, got, ok, tt.want, tt.ok)
		}
	}
}

// TestDecimalExact: decimalOf keeps the exact value of every number a rate
// may be, in every spelling, as big.Rat reads it.
func TestDecimalExact(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 7))
	for range 20000 {
		d := Decimal{Coef: 1 + r.Uint64N(999_999_999_999_999_999), Scale: uint8(r.IntN(13))}
		if code, _ := rateProblem(d); code != "" {
			continue
		}
		s := d.String()
		spellings := []string{s, s + "0", strconv.FormatUint(d.Coef, 10) + "e-" + strconv.Itoa(int(d.Scale)), strconv.FormatUint(d.Coef, 10) + "000E-" + strconv.Itoa(int(d.Scale)+3)}
		want, _ := new(big.Rat).SetString(s)
		for _, sp := range spellings {
			got, ok := decimalOf(sp)
			if !ok || naiveRat(got).Cmp(want) != 0 || got != d.normal() {
				t.Fatalf("decimalOf(%q) = %v, %v; want %v", sp, got, ok, d.normal())
			}
		}
		// JSON both ways.
		b, err := json.Marshal(d)
		if err != nil || string(b) != s {
			t.Fatalf("json.Marshal(%v) = %s, %v; want %s", d, b, err, s)
		}
		var back Decimal
		if err := json.Unmarshal(b, &back); err != nil || back != d.normal() {
			t.Fatalf("json.Unmarshal(%s) = %v, %v", b, back, err)
		}
	}
	var d Decimal
	if err := json.Unmarshal([]byte(`"5.17"`), &d); err == nil {
		t.Errorf(`json.Unmarshal("5.17") into a Decimal = nil error, want one`)
	}
}

func TestRateProblem(t *testing.T) {
	tests := []struct {
		d    Decimal
		code Code
	}{
		{Decimal{517, 2}, ""}, {Decimal{5170, 3}, ""}, {Decimal{1, 12}, ""}, {Decimal{10, 13}, ""},
		{Decimal{1_000_000_000, 0}, ""}, {Decimal{999_999_999_999_999_999, 9}, ""}, {Decimal{100_000_000_000_000_000, 8}, ""},
		{Decimal{}, CodeOutOfRange}, {Decimal{0, 5}, CodeOutOfRange}, {Decimal{1_000_000_001, 0}, CodeOutOfRange},
		{Decimal{10_000_000_001, 1}, CodeOutOfRange}, {Decimal{math.MaxUint64, 0}, CodeOutOfRange},
		{Decimal{1, 13}, CodeInvalidValue}, {Decimal{1, 255}, CodeInvalidValue}, {Decimal{1_000_000_000_000_000_001, 18}, CodeInvalidValue},
		{Decimal{math.MaxUint64, 19}, CodeInvalidValue},
	}
	for _, tt := range tests {
		if code, _ := rateProblem(tt.d); code != tt.code {
			t.Errorf("rateProblem(%v) = %q, want %q", tt.d, code, tt.code)
		}
	}
}

func TestAppendDecimal(t *testing.T) {
	tests := []struct {
		d          Decimal
		json, ptBR string
	}{
		{Decimal{517, 2}, "5.17", "5,17"},
		{Decimal{5170, 3}, "5.17", "5,17"},
		{Decimal{5, 0}, "5", "5"},
		{Decimal{12, 5}, "0.00012", "0,00012"},
		{Decimal{12345, 1}, "1234.5", "1.234,5"},
		{Decimal{1_000_000_000, 0}, "1000000000", "1.000.000.000"},
		{Decimal{}, "0", "0"},
		{Decimal{1, 25}, "0.0000000000000000000000001", "0,0000000000000000000000001"},
		{Decimal{math.MaxUint64, 0}, "18446744073709551615", "18.446.744.073.709.551.615"},
	}
	for _, tt := range tests {
		if got := string(appendDecimal(nil, tt.d, '.', false)); got != tt.json {
			t.Errorf("appendDecimal(%v, JSON) = %s, want %s", tt.d, got, tt.json)
		}
		if got := string(appendDecimal(nil, tt.d, ',', true)); got != tt.ptBR {
			t.Errorf("appendDecimal(%v, pt-BR) = %s, want %s", tt.d, got, tt.ptBR)
		}
	}
}

// TestAppendCanonicalDecimal: a rate's RFC 8785 form is the canonical
// package's form of the JSON number encoding/json writes for it.
func TestAppendCanonicalDecimal(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 9))
	ds := []Decimal{{517, 2}, {1, 12}, {1, 7}, {1, 6}, {15, 7}, {999_999_999_999_999_999, 9}, {123456789012345678, 12}, {1_000_000_000, 0},
		{1, 0}, {}, {math.MaxUint64, 0}, {1, 255}, {math.MaxUint64, 40}}
	for range 5000 {
		ds = append(ds, Decimal{Coef: r.Uint64N(1 << r.IntN(64)), Scale: uint8(r.IntN(20))})
	}
	for _, d := range ds {
		b, _ := json.Marshal(d)
		want, err := canonical.Transform(b)
		if err != nil {
			t.Fatalf("canonical.Transform(%s): %v", b, err)
		}
		if got := appendCanonicalDecimal(nil, d); string(got) != string(want) {
			t.Fatalf("appendCanonicalDecimal(%v) = %s, canonical.Transform(%s) = %s", d, got, b, want)
		}
	}
}
