package collections

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/cobranca/cobranca/internal/failure"
	"github.com/cobranca/cobranca/internal/schedules"
)

// FuzzCreateScheduleDecode: create_schedule's decoder never panics; it refuses with
// invalid_arguments naming a field, or accepts a schedule whose validated form is a fixed
// point: written out and read again, it validates to itself.
func FuzzCreateScheduleDecode(f *testing.F) {
	for _, s := range []string{
		`{"name":"Régua","steps":[{"offset":3,"tone":"friendly"},{"offset":10,"tone":"firm","language":"en"}],"audience":{"all":true},"endDate":"2026-09-30"}`,
		`{"name":"r","steps":[{"offset":-2,"tone":"friendly"}],"audience":{"customerIds":["a","b"],"minOpenCents":1,"maxOpenCents":9,"minBusinessDaysOverdue":0,"maxBusinessDaysOverdue":30},"caps":{"perCustomer7Days":1,"perBatch":10},"window":{"zone":"America/Manaus","open":"09:00","close":"17:30","days":["mon","sat"]},"endDate":"2026-08-01"}`,
		`{"name":"r","steps":[{"offset":3,"tone":"friendly"},{"offset":3,"tone":"firm"}],"audience":{"all":true},"endDate":"2026-09-30"}`,
		`{"name":"r","steps":[],"audience":{},"endDate":"x"}`,
		`{"name":"r","steps":[{"offset":1,"tone":"firm"}],"audience":{"all":true},"window":{"zone":"","open":"24:00","close":"08:00","days":["xyz"]},"endDate":"2026-02-30"}`,
		`[]`, `null`, `{"x":1}`, `{"steps":[{"offset":1e3}]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		v, _, err := createDecode(b)
		if err != nil {
			if fe, ok := failure.As(err); !ok || fe.Code != failure.InvalidArguments || fe.Message == "" || fe.Field == "" && fe.Message != "is not an argument of this tool" {
				t.Fatalf("Decode(%q) = %v, want invalid_arguments naming a field", b, err)
			}
			return
		}
		s, fe := v.(*schedules.Spec).Validate(nil)
		if fe != nil {
			t.Fatalf("Decode(%q) accepted a schedule Validate refuses: %v", b, fe)
		}
		out, err := json.Marshal(s.Spec)
		if err != nil {
			t.Fatal(err)
		}
		again, _, err := createDecode(out)
		if err != nil {
			t.Fatalf("the validated form %s of %q does not decode: %v", out, b, err)
		}
		s2, fe := again.(*schedules.Spec).Validate(nil)
		if fe != nil || !reflect.DeepEqual(s.Spec, s2.Spec) {
			t.Fatalf("the validated form %s validates to %+v (%v), not itself", out, s2.Spec, fe)
		}
	})
}
