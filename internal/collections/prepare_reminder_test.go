package collections

import (
	"testing"

	"github.com/cobranca/cobranca/internal/failure"
	"github.com/cobranca/cobranca/internal/value"
)

// FuzzPrepareDecode: prepare_reminder's decoder never panics; it refuses only with
// invalid_arguments (naming a field: but for pipeline.Strict's refusal of a member named "",
// which the input schema refuses first on a served call), and what it accepts holds every rule the schema cannot
// state (the text rule, bare e-mail addresses, real dates, unique invoice ids).
func FuzzPrepareDecode(f *testing.F) {
	for _, s := range []string{
		`{"customer":{"id":"c1","name":"Ana","email":"ana@example.com"},"invoices":[{"id":"1","dueDate":"2026-02-28","amountCents":1}],"tone":"firm"}`,
		`{"customer":{"id":"c1","name":"Ana","email":"ana@example.com"},"invoices":[{"id":"1","dueDate":"2026-02-30","amountCents":1}],"tone":"firm","language":"en"}`,
		`{"customer":{"id":"c1","name":"Ana","email":"Ana <ana@example.com>"},"invoices":[],"tone":"x"}`,
		`{"customer":{"id":"c1","name":"Ana","email":"ana@example.com"},"invoices":[{"id":"1","dueDate":"2026-02-28","amountCents":1},{"id":"1","dueDate":"2026-02-28","amountCents":1}],"tone":"firm"}`,
		`{"customer":null,"invoices":null}`,
		`[]`, `null`, `{"x":1}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		v, _, err := prepareReminderDecode(b)
		if err != nil {
			if fe, ok := failure.As(err); !ok || fe.Code != failure.InvalidArguments || fe.Field == "" && fe.Message != "is not an argument of this tool" {
				t.Fatalf("Decode(%q) = %v, want invalid_arguments naming a field", b, err)
			}
			return
		}
		a := v.(*prepareArgs)
		if fe := a.record().Validate(""); fe != nil {
			t.Fatalf("Decode(%q) accepted a customer its rule refuses: %v", b, fe)
		}
		seen := map[string]bool{}
		for _, inv := range a.Invoices {
			if value.TextProblem(inv.ID) != "" || value.DateProblem(inv.DueDate) != "" || seen[inv.ID] {
				t.Fatalf("Decode(%q) accepted the invoice %+v", b, inv)
			}
			seen[inv.ID] = true
		}
	})
}
