package customers_test

import (
	"errors"
	"net/mail"
	"strconv"
	"strings"
	"testing"

	"github.com/cobranca/cobranca/internal/customers"
)

// FuzzParseCSV: any file is either refused whole with an *ImportError that
// names lines and columns (a row's by name, the header's by position: never
// a cell's content), or read into customers that each pass Validate, with
// unique ids.
func FuzzParseCSV(f *testing.F) {
	for _, s := range []string{
		"id,name,email\nC-1,Ana,ana@example.com\n",
		"\uFEFFemail,id,name\r\n\"a@b.example\",\"C\"\"1\",\"x\ny\"\r\n",
		"id,name,email\nC-1,Ana,ana@example.com\nC-1,Bob,bob@example.com\n",
		"id,name\n", "", "\"", "id,name,email\nC-1,\"Ana,ana@example.com\n",
		"id,name,email\nC-1,Ana\u202e,Ana <ana@example.com>\n",
		"C-40,Ana,ana@example.com\n", "id,name,email\rC-43,Ana,ana@example.com\r",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, file string) {
		recs, err := customers.ParseCSV(strings.NewReader(file))
		if err != nil {
			var ie *customers.ImportError
			if !errors.As(err, &ie) || recs != nil || len(ie.Rows) == 0 {
				t.Fatalf("ParseCSV = %v, %v; want an *ImportError with rows and no customers", recs, err)
			}
			for _, r := range ie.Rows {
				if r.Line < 1 || r.Message == "" {
					t.Fatalf("bad row %+v: want a line and a message", r)
				}
				if n, err := strconv.Atoi(r.Column); r.Column != "" && r.Column != "id" && r.Column != "name" && r.Column != "email" &&
					(err != nil || n < 1 || strconv.Itoa(n) != r.Column) {
					t.Fatalf("bad row %+v: its column is neither id, name, email nor a position", r)
				}
			}
			return
		}
		seen := map[string]bool{}
		for _, r := range recs {
			if fe := r.Validate(""); fe != nil {
				t.Fatalf("ParseCSV accepted %+v: %v", r, fe)
			}
			if seen[r.ID] {
				t.Fatalf("ParseCSV accepted the id %q twice", r.ID)
			}
			seen[r.ID] = true
		}
	})
}

// FuzzEmailProblem: an accepted address is a bare one that net/mail reads
// back as exactly itself, within the bound, whose domain is no literal.
func FuzzEmailProblem(f *testing.F) {
	for _, s := range []string{"ana@example.com", "Ana <ana@example.com>", `"a b"@x.example`, "a@[127.0.0.1]", "a@[IPv6:::1]", `"a@b"@[10.0.0.1]`, "a@b", "", "a@b.example (c)"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if customers.EmailProblem(s) != "" {
			return
		}
		a, err := mail.ParseAddress(s)
		if err != nil || a.Name != "" || a.Address != s || len(s) > customers.MaxEmailLen {
			t.Fatalf("EmailProblem accepted %q (%v, %v)", s, a, err)
		}
		domain := s[strings.LastIndex(s, "@")+1:]
		labels := strings.Split(domain, ".")
		if last := labels[len(labels)-1]; strings.ContainsAny(domain, "[]") || strings.IndexFunc(last, func(r rune) bool { return r < '0' || r > '9' }) < 0 {
			t.Fatalf("EmailProblem accepted %q, whose domain is a literal or a number", s)
		}
	})
}
