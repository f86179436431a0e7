package portfolio

import (
	"testing"

	"github.com/cobranca/cobranca/internal/value"
)

// TestAsOfDateRule: Validate holds asOf to the shared date rule, in the
// same words and codes, and says nothing of a date that is good.
func TestAsOfDateRule(t *testing.T) {
	for _, s := range []string{"2026-02-28", value.MinDate, value.MaxDate, "2024-02-29", "", "28/02/2026", "2026-02-30",
		"2025-02-29", "1999-12-31", "2100-01-01"} {
		code, msg := value.DateCheck(s)
		in := &Input{AsOf: s, Invoices: []Invoice{{ID: "1", CustomerID: "c", CustomerName: "C", DueDate: value.MinDate, AmountCents: 1, Status: StatusOpen}}}
		e := validate(in)
		if (e == nil) != (msg == "") || e != nil && (e.Field != "asOf" || e.Message != msg || string(e.Code) != code) {
			t.Errorf("validate(asOf %q) = %v; want %q, %q on asOf", s, e, code, msg)
		}
	}
}
