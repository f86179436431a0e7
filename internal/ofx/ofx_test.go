package ofx

import (
	"bytes"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cobranca/cobranca/internal/golden"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// minorUnits is the ISO 4217 table's answer for the currencies the tests use.
func minorUnits(code string) (int, bool) {
	switch code {
	case "BRL", "USD":
		return 2, true
	case "JPY":
		return 0, true
	}
	return 0, false
}

func read(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestReadGolden(t *testing.T) {
	for _, name := range []string{"extrato-v102.ofx", "extrato-v220.ofx"} {
		t.Run(name, func(t *testing.T) {
			st, err := Read(bytes.NewReader(read(t, name)), minorUnits)
			if err != nil {
				t.Fatal(err)
			}
			golden.JSON(t, filepath.Join("testdata", strings.TrimSuffix(name, ".ofx")+".json"), st, *update)
		})
	}
	// Checked by hand besides the golden file: the 1.x file's credits,
	// the debit left out, the date in the bank's own offset (23:00 BRT on
	// the 29th is the 29th, not UTC's 30th), an amount without decimals.
	st, err := Read(bytes.NewReader(read(t, "extrato-v102.ofx")), minorUnits)
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Credits) != 2 || st.Debits != 1 {
		t.Fatalf("%d credits, %d debits; want 2, 1", len(st.Credits), st.Debits)
	}
	c := st.Credits[1]
	if c.AmountCents != 76000 || c.PostedOn != "2026-11-29" || c.Account != "0341/98765-1" || c.Index != 3 || c.Currency != "BRL" {
		t.Errorf("second credit = %+v", c)
	}
	if st.Credits[0].RefNum != "TX20261128A" || st.Credits[0].AmountCents != 151530 {
		t.Errorf("first credit = %+v", st.Credits[0])
	}
}

func TestReadRefuses(t *testing.T) {
	v102 := string(read(t, "extrato-v102.ofx"))
	cases := []struct {
		name, in    string
		transaction int
		element     string
	}{
		{"not OFX", "SEKRET,1,2", 0, ""},
		{"broken SGML", strings.Replace(v102, "<BANKTRANLIST>", "<BANKTRANLIST><STMTTRN><TRNAMT>SEKRET", 1), 0, ""},
		{"a tenth of a centavo", strings.Replace(v102, "1515.30", "1515.305", 1), 1, "TRNAMT"},
		{"an amount beyond R$ 10 billion", strings.Replace(v102, "1515.30", "10000000000.01", 1), 1, "TRNAMT"},
		{"an unknown currency", strings.Replace(v102, "<CURDEF>BRL", "<CURDEF>XTS", 1), 1, "CURDEF"},
		{"the same FITID twice", strings.Replace(v102, "202611290001", "202611280001", 1), 3, "FITID"},
		{"no transaction", strings.Replace(strings.Replace(v102, "<STMTTRN>", "<!--", -1), "</STMTTRN>", "-->", -1), 0, "BANKTRANLIST"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			st, err := Read(strings.NewReader(c.in), minorUnits)
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("Read = %+v, %v; want an *Error", st, err)
			}
			if e.Transaction != c.transaction || e.Element != c.element {
				t.Errorf("error = %v (transaction %d, element %q); want transaction %d, element %q", err, e.Transaction, e.Element, c.transaction, c.element)
			}
			if strings.Contains(err.Error(), "SEKRET") || strings.Contains(err.Error(), "1515") {
				t.Errorf("the error quotes the file: %v", err)
			}
		})
	}
}

func FuzzRead(f *testing.F) {
	f.Add(string(read(f, "extrato-v102.ofx")))
	f.Add(string(read(f, "extrato-v220.ofx")))
	f.Fuzz(func(t *testing.T, in string) {
		st, err := Read(strings.NewReader(in), minorUnits)
		if err != nil {
			if !IsError(err) {
				t.Fatalf("not an *Error: %v", err)
			}
			return
		}
		for _, c := range st.Credits {
			if c.AmountCents <= 0 || c.AmountCents > 1_000_000_000_000 || len(c.PostedOn) != 10 {
				t.Fatalf("accepted credit %+v", c)
			}
		}
	})
}
