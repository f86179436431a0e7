package schema_test

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/cobranca/cobranca/internal/mcpapi"
	"github.com/cobranca/cobranca/internal/portfolio"
	"github.com/cobranca/cobranca/internal/schema"
	"github.com/google/jsonschema-go/jsonschema"
)

// reference validates doc the slow, obvious way: decode to any, then
// jsonschema-go.
func reference(t testing.TB, r *jsonschema.Resolved, doc []byte) (valid, wellFormed bool) {
	var v any
	if err := json.Unmarshal(doc, &v); err != nil {
		return false, false
	}
	return r.Validate(v) == nil, true
}

func outputSchema(t testing.TB) (*schema.Validator, *jsonschema.Resolved) {
	tools, err := mcpapi.Tools()
	if err != nil {
		t.Fatal(err)
	}
	s := tools[0].Contract.OutputSchema
	v, err := schema.Compile(s)
	if err != nil {
		t.Fatal(err)
	}
	r, err := s.Resolve(nil)
	if err != nil {
		t.Fatal(err)
	}
	return v, r
}

func randomAnalysis(r *rand.Rand) []byte {
	n := 1 + r.IntN(60)
	invs := make([]portfolio.Invoice, n)
	for i := range invs {
		c := r.IntN(max(1, n/3))
		invs[i] = portfolio.Invoice{
			ID: fmt.Sprintf("i%d", i), CustomerID: fmt.Sprintf("c%d", c), CustomerName: fmt.Sprintf("Nome \u00e9 %d \"q\"", c),
			DueDate:     fmt.Sprintf("2026-%02d-%02d", 1+r.IntN(12), 1+r.IntN(28)),
			AmountCents: 1 + r.Int64N(portfolio.MaxAmountCents), Status: []portfolio.Status{"open", "paid", "void"}[r.IntN(3)],
			DoNotContact: r.IntN(20) == 0,
		}
	}
	raw, _ := json.Marshal(portfolio.Input{AsOf: "2026-12-31", Invoices: invs})
	in, err := portfolio.Parse(raw)
	if err != nil {
		panic(err)
	}
	out, _ := json.Marshal(portfolio.Analyze(in))
	return out
}

// mutate changes one thing in a valid result the way a bug would.
var mutations = []func(string, *rand.Rand) string{
	func(s string, _ *rand.Rand) string {
		return strings.Replace(s, `"priority":"high"`, `"priority":"urgent"`, 1)
	},
	func(s string, _ *rand.Rand) string { return strings.Replace(s, `"daysOverdue":`, `"daysOverdue":-`, 1) },
	func(s string, _ *rand.Rand) string {
		return strings.Replace(s, `"daysOverdue":`, `"daysOverdue":0.5+`, 1)
	},
	func(s string, _ *rand.Rand) string {
		return strings.Replace(s, `"reason":`, `"secret":"x","reason":`, 1)
	},
	func(s string, _ *rand.Rand) string {
		return strings.Replace(s, `"customerName":`, `"customerNome":`, 1)
	},
	func(s string, _ *rand.Rand) string {
		return strings.Replace(s, `"totalOpenCents":`, `"totalOpenCents":-1`, 1)
	},
	func(s string, _ *rand.Rand) string { return strings.Replace(s, `"accounts":[`, `"accounts":[null,`, 1) },
	func(s string, _ *rand.Rand) string { return strings.Replace(s, `"accounts":[`, `"accounts":{`, 1) },
	func(s string, _ *rand.Rand) string {
		return strings.Replace(s, `"oldestDueDate":"2026`, `"oldestDueDate":"1999`, 1)
	},
	func(s string, _ *rand.Rand) string { return strings.Replace(s, `"amountCents":`, `"amountCents":"`, 1) },
	func(s string, _ *rand.Rand) string { return strings.Replace(s, `,"reason":"`, `,"reason":1,"x":"`, 1) },
	func(s string, _ *rand.Rand) string {
		return strings.Replace(s, `"amountCents":`, `"amountCents":1e2,"y":`, 1)
	},
	func(s string, _ *rand.Rand) string {
		return strings.Replace(s, `"recommendedAction":"`, `"recommendedAction":"\u0068`, 1)
	},
	func(s string, r *rand.Rand) string {
		i := r.IntN(len(s))
		return s[:i] + s[i+1:]
	},
	func(s string, r *rand.Rand) string {
		i := r.IntN(len(s))
		return s[:i] + string("{}[],:\"0-e."[r.IntN(11)]) + s[i:]
	},
}

// TestSameVerdicts holds Validator to jsonschema-go's verdicts on valid
// results and on mutated ones.
func TestSameVerdicts(t *testing.T) {
	v, ref := outputSchema(t)
	r := rand.New(rand.NewPCG(7, 11))
	var valid, invalid int
	for i := range 4000 {
		doc := randomAnalysis(r)
		if i%4 != 0 {
			m := mutations[r.IntN(len(mutations))]
			doc = []byte(m(string(doc), r))
		}
		want, wellFormed := reference(t, ref, doc)
		got := v.Validate(doc)
		if !wellFormed {
			if got == nil {
				t.Fatalf("Validate accepted malformed JSON %s", doc)
			}
			continue
		}
		if (got == nil) != want {
			t.Fatalf("Validate(%s) = %v, jsonschema-go valid = %v", doc, got, want)
		}
		if want {
			valid++
		} else {
			invalid++
		}
	}
	if valid < 500 || invalid < 500 {
		t.Errorf("too few cases of each verdict: %d valid, %d invalid", valid, invalid)
	}
}

func TestCompileRefusesUnsupported(t *testing.T) {
	for _, s := range []*jsonschema.Schema{
		{Type: "object", PatternProperties: map[string]*jsonschema.Schema{"^x": {}}},
		{Type: "string", Const: ptr[any]("x")},
		{AnyOf: []*jsonschema.Schema{{Type: "string"}}},
		{Type: "object", AdditionalProperties: &jsonschema.Schema{Type: "string"}},
		{Type: "array", UniqueItems: true},
		{Type: "number", MultipleOf: ptr(2.0)},
	} {
		if _, err := schema.Compile(s); err == nil {
			b, _ := json.Marshal(s)
			t.Errorf("Compile(%s) succeeded; it must refuse what it cannot check", b)
		}
	}
}

func ptr[T any](v T) *T { return &v }

func FuzzValidate(f *testing.F) {
	r := rand.New(rand.NewPCG(1, 1))
	for range 8 {
		f.Add(randomAnalysis(r))
	}
	f.Add([]byte(`{"totalOpenCents":0,"accounts":[]}`))
	f.Add([]byte(`{"totalOpenCents":1.0e0,"accounts":[],"x":"\ud800"}`))
	v, ref := outputSchema(f)
	f.Fuzz(func(t *testing.T, doc []byte) {
		want, wellFormed := reference(t, ref, doc)
		got := v.Validate(doc)
		if !wellFormed {
			if got == nil {
				t.Fatalf("Validate accepted malformed JSON %q", doc)
			}
			return
		}
		if (got == nil) != want {
			t.Fatalf("Validate(%q) = %v, jsonschema-go valid = %v", doc, got, want)
		}
	})
}

func BenchmarkValidate(b *testing.B) {
	v, _ := outputSchema(b)
	doc := randomAnalysis(rand.New(rand.NewPCG(3, 3)))
	b.SetBytes(int64(len(doc)))
	b.ReportAllocs()
	for b.Loop() {
		if err := v.Validate(doc); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkValidateJSONSchemaGo(b *testing.B) {
	_, ref := outputSchema(b)
	doc := randomAnalysis(rand.New(rand.NewPCG(3, 3)))
	b.SetBytes(int64(len(doc)))
	b.ReportAllocs()
	for b.Loop() {
		var v any
		if err := json.Unmarshal(doc, &v); err != nil {
			b.Fatal(err)
		}
		if err := ref.Validate(v); err != nil {
			b.Fatal(err)
		}
	}
}
