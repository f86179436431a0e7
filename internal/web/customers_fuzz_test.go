package web

import (
	"testing"

	"github.com/cobranca/cobranca/internal/failure"
	"github.com/cobranca/cobranca/internal/reminders"
)

// FuzzParsePosition: a place in a list read from a query parameter is either refused naming
// the parameter, or one the pages' own links write back as it came.
func FuzzParsePosition(f *testing.F) {
	for _, s := range []string{"", "1.d_aaaaaaaaaaaaaaaaaaaaaaaaaa", "01.d_x", "-1.d_x", "1e3.b_x", "12", ".", "9223372036854775808.d_x", "1.d_\x00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p, err := parsePosition(s, "after", reminders.ValidID)
		switch {
		case err != nil:
			if fe, ok := failure.As(err); !ok || fe.Code != failure.InvalidArguments || fe.Field != "after" {
				t.Fatalf("parsePosition(%q) = %v, want invalid_arguments naming after", s, err)
			}
		case s == "":
			if p != nil {
				t.Fatalf("parsePosition(\"\") = %+v, want the first page", p)
			}
		default:
			if p.at < 0 || !reminders.ValidID(p.id) || formatPosition(p.at, p.id) != s {
				t.Fatalf("parsePosition(%q) = %+v, which the links write as %q", s, p, formatPosition(p.at, p.id))
			}
		}
	})
}
