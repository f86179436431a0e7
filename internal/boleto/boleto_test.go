package boleto

import (
	"errors"
	"testing"
)

// Banco do Brasil's published example: the line and the barcode it encodes.
const (
	bbLine    = "00190.50095 40144.816069 06809.350314 3 37370000000100"
	bbBarcode = "00193373700000001000500940144816060680935031"
)

func TestParseExample(t *testing.T) {
	l, err := Parse(bbLine)
	if err != nil {
		t.Fatalf("Parse(%q): %v", bbLine, err)
	}
	if got := l.Barcode(); got != bbBarcode {
		t.Errorf("Barcode() = %s, want %s", got, bbBarcode)
	}
	if l.Bank != "001" || l.Currency != "9" || l.DueFactor != 3737 || l.AmountCents != 100 {
		t.Errorf("Parse(%q) = %+v", bbLine, l)
	}
	if got := l.Formatted(); got != bbLine {
		t.Errorf("Formatted() = %q, want %q", got, bbLine)
	}
	if _, err := Parse("00190500954014481606906809350314337370000000100"); err != nil {
		t.Errorf("digits alone: %v", err)
	}
}

// Every single digit typed wrong is caught, by the check of its field.
func TestParseEverySingleDigitError(t *testing.T) {
	good := []byte("00190500954014481606906809350314337370000000100")
	for i := range good {
		for d := byte('0'); d <= '9'; d++ {
			if d == good[i] {
				continue
			}
			bad := append([]byte(nil), good...)
			bad[i] = d
			_, err := Parse(string(bad))
			var want error
			switch {
			case i < 10:
				want = ErrField1
			case i < 21:
				want = ErrField2
			case i < 32:
				want = ErrField3
			default:
				want = ErrGeneral
			}
			if !errors.Is(err, want) {
				t.Errorf("digit %d (position %d) %c→%c: err = %v, want %v", i, i+1, good[i], d, err, want)
			}
		}
	}
}

func TestParseRefuses(t *testing.T) {
	for s, want := range map[string]error{
		"": ErrLength,
		"0019050095401448160690680935031433737000000010":          ErrLength,
		"001905009540144816069068093503143373700000001000":        ErrLength,
		"00190-50095 40144.816069 06809.350314 3 37370000000100":  ErrCharacter,
		"00190.50095\t40144.816069 06809.350314 3 37370000000100": ErrCharacter,
		"００190.50095 40144.816069 06809.350314 3 37370000000100":  ErrCharacter,
		"23790.12301 60000.000053 25000.456704 9 10010000012345":  ErrGeneral,
	} {
		if _, err := Parse(s); !errors.Is(err, want) {
			t.Errorf("Parse(%q) = %v, want %v", s, err, want)
		}
	}
}

func FuzzParse(f *testing.F) {
	f.Add(bbLine)
	f.Add("23790.12301 60000.000053 25000.456704 9 10010000012345")
	f.Fuzz(func(t *testing.T, s string) {
		l, err := Parse(s)
		if err != nil {
			return
		}
		if len(l.Digits) != Length || len(l.Barcode()) != 44 {
			t.Fatalf("accepted %q as %+v", s, l)
		}
		again, err := Parse(l.Formatted())
		if err != nil || again != l {
			t.Fatalf("Formatted() %q reads back as %+v, %v", l.Formatted(), again, err)
		}
	})
}

// Lines of three banks that verify, with what they encode.
func TestParseValid(t *testing.T) {
	for _, c := range []struct {
		line, bank string
		factor     int
		cents      int64
	}{
		{bbLine, "001", 3737, 100},
		{"23793.38128 60007.827136 61793.000003 1 11350000002599", "237", 1135, 2599},
		{"34191.09008 00123.456782 90123.456783 3 11040000150000", "341", 1104, 150000},
	} {
		l, err := Parse(c.line)
		if err != nil || l.Bank != c.bank || l.Currency != "9" || l.DueFactor != c.factor || l.AmountCents != c.cents || l.Formatted() != c.line {
			t.Errorf("Parse(%q) = %+v, %v; want bank %s, factor %d, %d cents", c.line, l, err, c.bank, c.factor, c.cents)
		}
	}
}
