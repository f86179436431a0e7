package schema_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/cobranca/cobranca/internal/collections"
	"github.com/cobranca/cobranca/internal/portfolio"
	"github.com/cobranca/cobranca/internal/portfolio/portfoliotest"
	"github.com/cobranca/cobranca/internal/schema"
	"github.com/cobranca/cobranca/internal/value"
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
	tools, err := collections.Tools(collections.Settings{})
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
			AmountCents: 1 + r.Int64N(value.MaxAmountCents), Status: []portfolio.Status{"open", "paid", "void"}[r.IntN(3)],
			DoNotContact: r.IntN(20) == 0,
		}
	}
	doc := portfolio.Input{AsOf: "2026-12-31", Invoices: invs}
	var o portfolio.Options
	if r.IntN(2) == 0 {
		// analyze_portfolio 1.1.0's fields: conversions, disputes, promises,
		// pacing.
		for i := range invs {
			switch r.IntN(8) {
			case 0:
				invs[i].Details().Currency, invs[i].AmountCents = "USD", 1+r.Int64N(1_000_000_00)
			case 1:
				invs[i].Details().Disputed = true
			case 2:
				invs[i].Details().PromiseToPayDate = fmt.Sprintf("2026-12-%02d", 1+r.IntN(31))
			}
		}
		doc.Rates = []portfolio.ExchangeRate{{Currency: "USD", Rate: portfolio.Decimal{Coef: 517, Scale: 2}, Date: "2026-12-30"}}
		for c := range max(1, n/3) {
			if r.IntN(2) == 0 {
				doc.Customers = append(doc.Customers, portfolio.Contact{CustomerID: fmt.Sprintf("c%d", c), LastContactedAt: fmt.Sprintf("2026-12-%02dT10:00:00-03:00", 20+r.IntN(11))})
			}
		}
		o.ContactPacing = 72 * time.Hour
	}
	raw, _ := json.Marshal(doc)
	in, err := portfolio.Parse(raw)
	if err != nil {
		panic(err)
	}
	out, _ := json.Marshal(portfolio.AnalyzeWith(in, o))
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
	func(s string, _ *rand.Rand) string {
		return strings.Replace(s, `"agingBucket":"`, `"agingBucket":"0`, 1)
	},
	func(s string, _ *rand.Rand) string { return strings.Replace(s, `"rate":`, `"rate":-`, 1) },
	func(s string, _ *rand.Rand) string {
		return strings.Replace(s, `"summary":{`, `"summary":{"names":[],`, 1)
	},
	func(s string, _ *rand.Rand) string {
		return strings.Replace(s, `"priorityFactors":[`, `"priorityFactors":[{},`, 1)
	},
	func(s string, _ *rand.Rand) string {
		return strings.Replace(s, `"nextContactAfter":"`, `"nextContactAfter":"x`, 1)
	},
	func(s string, _ *rand.Rand) string {
		return strings.Replace(s, `"invoiceCount":`, `"invoiceCount":-`, 1)
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
	// Keys the expected-key fast path must not take, and strings its
	// word-at-a-time scan must hand to the careful path.
	f.Add([]byte(`{"totalOpenCents":0,"accounts":[{"customerId":"c\u0031","customerN\u0061me":"Nome \u00e9 \"q\"",` +
		`"amountCents":1,"oldestDueDate":"2026-01-31","daysOverdue":1,"priority":"high","recommendedAction":"human_review","reason":"é\\"}]}`))
	f.Add([]byte("{\"totalOpenCents\" : 0 ,\"accounts\":[{\"customerId\":\"\xff\xfe\",\"customerName\":\"\xe9\x80\",\"amountCents\":1," +
		"\"oldestDueDate\":\"2026-01-3\xd9\xa1\",\"daysOverdue\":1,\"priority\":\"high\",\"recommendedAction\":\"human_review\",\"reason\":\"\"}]}"))
	v, ref := outputSchema(f)
	f.Fuzz(func(t *testing.T, doc []byte) { sameVerdict(t, v, ref, doc) })
}

// sameVerdict holds v's verdict on doc to jsonschema-go's on the same
// schema: malformed JSON is refused; with a repeated key, every copy is
// checked where jsonschema-go sees only the last (TestDuplicateKeys), so v
// may be stricter, never looser; otherwise the verdicts are equal.
func sameVerdict(t *testing.T, v *schema.Validator, ref *jsonschema.Resolved, doc []byte) {
	t.Helper()
	want, wellFormed := reference(t, ref, doc)
	got := v.Validate(doc)
	switch {
	case !wellFormed:
		if got == nil {
			t.Fatalf("Validate accepted malformed JSON %q", doc)
		}
	case hasDuplicateKeys(doc):
		if got == nil && !want {
			t.Fatalf("Validate(%q) accepted what jsonschema-go rejects", doc)
		}
	case (got == nil) != want:
		t.Fatalf("Validate(%q) = %v, jsonschema-go valid = %v", doc, got, want)
	}
}

// edgeSchema reaches what the analyze contract does not: lengths counted
// in runes, patterns, non-ASCII enums, property names that need an escape,
// a long one, one out of PropertyOrder, and a required property that is not
// declared.
func edgeSchema() *jsonschema.Schema {
	return &jsonschema.Schema{
		Type: "object",
		Properties: map[string]*jsonschema.Schema{
			"name":                  {Type: "string", MinLength: ptr(2), MaxLength: ptr(4)},
			"code":                  {Type: "string", Pattern: `^[a-z]{2}-[0-9]$`},
			"text":                  {Type: "string", Pattern: `^[^\x00-\x1f\x7f-\x9f]*$`, MaxLength: ptr(40)},
			"kind":                  {Type: "string", Enum: []any{"a", "é", `a"b`}},
			`q"k`:                   {Type: "integer"},
			"é":                     {Type: "boolean"},
			"aVeryLongPropertyName": {Type: "number", Minimum: ptr(0.0)},
			"list":                  {Type: "array", Items: &jsonschema.Schema{Type: "string", MinLength: ptr(1)}, MaxItems: ptr(3)},
			"meta": {
				Type:       "object",
				Properties: map[string]*jsonschema.Schema{"x": {Type: "string", MaxLength: ptr(1)}},
				Required:   []string{"ghost"},
			},
		},
		PropertyOrder:        []string{"name", "code", "text", "kind"},
		Required:             []string{"name", "kind"},
		AdditionalProperties: &jsonschema.Schema{Not: &jsonschema.Schema{}},
	}
}

// edgeDocs are valid and invalid documents for edgeSchema.
var edgeDocs = []string{
	`{"name":"ab","kind":"a"}`,
	`{"name":"a","kind":"a"}`,
	`{"name":"abcd","kind":"a"}`,
	`{"name":"abcde","kind":"a"}`,
	`{"name":"éé","kind":"a"}`,
	`{"name":"éééé","kind":"a"}`,
	`{"name":"ééééé","kind":"a"}`,
	`{"name":"\u00e9\u00e9\u00e9\u00e9","kind":"a"}`,
	`{"name":"\u00e9\u00e9\u00e9\u00e9\u00e9","kind":"a"}`,
	`{"name":"\ud83d\ude00\ud83d\ude00","kind":"a"}`,
	// A lone high surrogate before a pair: U+FFFD and the pair's character
	// (4 runes), as encoding/json reads it; not three U+FFFD per pair.
	`{"name":"\ud800\ud83d\ude00\ud800\ud83d\ude00","kind":"a"}`,
	`{"name":"\udbff\udbff\udfffab","kind":"a"}`,
	"{\"name\":\"\xff\xff\",\"kind\":\"a\"}",
	"{\"name\":\"\xff\",\"kind\":\"a\"}",
	"{\"name\":\"\xe9\x80\",\"kind\":\"a\"}",
	"{\"name\":\"\xf0\x9f\x98\x80\xf0\x9f\x98\x80\xf0\x9f\x98\x80\xf0\x9f\x98\x80\xf0\x9f\x98\x80\",\"kind\":\"a\"}",
	`{"n\u0061me":"ab","kind":"a"}`,
	`{"nam":"ab","kind":"a"}`,
	`{"names":"ab","kind":"a"}`,
	`{"name" : "ab" , "kind" :"a" }`,
	" {\n\t\"name\":\r\"ab\",\"kind\":\"a\"} ",
	`{"kind":"a","name":"ab"}`,
	`{"kind":"a","name":"ab","name":"abc"}`,
	`{"kind":"a","name":"a","name":"abcde"}`,
	`{"name":"ab"}`,
	`{"kind":"a"}`,
	`{}`,
	`{"name":"ab","kind":"é"}`,
	`{"name":"ab","kind":"\u00e9"}`,
	`{"name":"ab","kind":"e\u0301"}`,
	`{"name":"ab","kind":"a\"b"}`,
	`{"name":"ab","kind":"a\\b"}`,
	`{"name":"ab","kind":"A"}`,
	`{"name":"ab","kind":"a","q\"k":1}`,
	`{"name":"ab","kind":"a","q\u0022k":1.5}`,
	`{"name":"ab","kind":"a","qk":1}`,
	`{"name":"ab","kind":"a","é":true}`,
	`{"name":"ab","kind":"a","\u00e9":false}`,
	`{"name":"ab","kind":"a","é":1}`,
	`{"name":"ab","kind":"a","aVeryLongPropertyName":0}`,
	`{"name":"ab","kind":"a","aVeryLongPropertyName":-1e-9}`,
	`{"name":"ab","kind":"a","aVeryLongPropertyNam":0}`,
	`{"name":"ab","kind":"a","aVeryLongPropertyName":0,"aVeryLongPropertyName":1}`,
	`{"name":"ab","code":"ab-1","kind":"a"}`,
	`{"name":"ab","code":"ab-12","kind":"a"}`,
	`{"name":"ab","code":"AB-1","kind":"a"}`,
	`{"name":"ab","code":"ab-1\n","kind":"a"}`,
	`{"name":"ab","code":"\u0061b-1","kind":"a"}`,
	`{"name":"ab","code":"ab-١","kind":"a"}`,
	`{"name":"ab","text":"","kind":"a"}`,
	`{"name":"ab","text":"a\u0085b","kind":"a"}`,
	`{"name":"ab","text":"a\u00a0b","kind":"a"}`,
	`{"name":"ab","text":"a\u007fb","kind":"a"}`,
	`{"name":"ab","text":"tab\there","kind":"a"}`,
	`{"name":"ab","text":"\ud800","kind":"a"}`,
	`{"name":"ab","text":"\ud800\u0041","kind":"a"}`,
	"{\"name\":\"ab\",\"text\":\"\xff\xc2\",\"kind\":\"a\"}",
	"{\"name\":\"ab\",\"text\":\"a\xc2\x85b\",\"kind\":\"a\"}",
	`{"name":"ab","text":"` + strings.Repeat("é", 40) + `","kind":"a"}`,
	`{"name":"ab","text":"` + strings.Repeat("é", 41) + `","kind":"a"}`,
	`{"name":"ab","text":"` + strings.Repeat("x", 40) + `","kind":"a"}`,
	`{"name":"ab","text":"` + strings.Repeat("x", 41) + `","kind":"a"}`,
	`{"name":"ab","text":"abcdefgh\"ijklmnop","kind":"a"}`,
	`{"name":"ab","text":"abcdefghijklmnop\u0041","kind":"a"}`,
	`{"name":"ab","text":"abcdefghijklmno/\/","kind":"a"}`,
	"{\"name\":\"ab\",\"text\":\"abcdefghij\x01klm\",\"kind\":\"a\"}",
	"{\"name\":\"ab\",\"text\":\"abcdefghij\x7fklm\",\"kind\":\"a\"}",
	`{"name":"ab","kind":"a","list":["a","b","c"]}`,
	`{"name":"ab","kind":"a","list":["a","b","c","d"]}`,
	`{"name":"ab","kind":"a","list":[""]}`,
	`{"name":"ab","kind":"a","list":[]}`,
	`{"name":"ab","kind":"a","meta":{"ghost":null}}`,
	`{"name":"ab","kind":"a","meta":{"gh\u006fst":[{}]}}`,
	`{"name":"ab","kind":"a","meta":{}}`,
	`{"name":"ab","kind":"a","meta":{"ghost":1,"x":"é","other":{}}}`,
	`{"name":"ab","kind":"a","meta":{"ghost":1,"x":"ab"}}`,
	`{"name":"ab","kind":"a","meta":{"x":"a","ghost":1,"x":"b"}}`,
	`{"name":"ab","kind":"a","zzz":1}`,
	`{"name":"ab","kind":"a","ghost":1}`,
	`{"name":"ab","kind":"a"`,
	`{"name":"ab","kind":"a`,
	`{"name":"ab","kind":`,
	`{"name":"ab","kind"`,
	`{"name":"ab","kind`,
	`{"name":"ab",`,
	`{"name"`,
	`{"name":"ab" "kind":"a"}`,
	`{"name":"ab","kind":"a"}}`,
	`{"name":"ab","kind":"a",}`,
	"{\"name\":\"ab\x01\",\"kind\":\"a\"}",
	`{"name":"ab\x","kind":"a"}`,
	`{"name":"ab\u12","kind":"a"}`,
	`{"name":"ab","kind":"a","q\"k":01}`,
	`{"name":"ab","kind":"a","q\"k":1.}`,
}

// TestSameVerdictsEdge holds Validator to jsonschema-go's verdicts on
// edgeDocs.
func TestSameVerdictsEdge(t *testing.T) {
	s := edgeSchema()
	v, err := schema.Compile(s)
	if err != nil {
		t.Fatal(err)
	}
	ref, err := s.Resolve(nil)
	if err != nil {
		t.Fatal(err)
	}
	var valid, invalid int
	for _, doc := range edgeDocs {
		want, wellFormed := reference(t, ref, []byte(doc))
		got := v.Validate([]byte(doc))
		switch {
		case !wellFormed && got == nil:
			t.Errorf("Validate accepted malformed JSON %q", doc)
		case wellFormed && (got == nil) != want:
			t.Errorf("Validate(%q) = %v, jsonschema-go valid = %v", doc, got, want)
		case got == nil:
			valid++
		default:
			invalid++
		}
	}
	if valid < 30 || invalid < 30 {
		t.Errorf("too few cases of each verdict: %d valid, %d invalid", valid, invalid)
	}
}

func FuzzEdgeSchema(f *testing.F) {
	for _, doc := range edgeDocs {
		f.Add([]byte(doc))
	}
	s := edgeSchema()
	v, err := schema.Compile(s)
	if err != nil {
		f.Fatal(err)
	}
	ref, err := s.Resolve(nil)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, doc []byte) { sameVerdict(t, v, ref, doc) })
}

// TestDuplicateKeys pins where Validate knowingly differs from
// jsonschema-go: of a key given twice, jsonschema-go sees only the last
// value (encoding/json keeps it), while Validate checks every one.
func TestDuplicateKeys(t *testing.T) {
	v, err := schema.Compile(edgeSchema())
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		doc   string
		valid bool
	}{
		{`{"name":"ab","kind":"a","name":"abc"}`, true},
		{`{"name":"abcde","kind":"a","name":"abc"}`, false},
		{`{"name":"abc","kind":"a","name":"abcde"}`, false},
		{`{"name":"ab","kind":"a","meta":{"x":"00","ghost":0,"x":""}}`, false},
	} {
		if !hasDuplicateKeys([]byte(tc.doc)) {
			t.Errorf("hasDuplicateKeys(%s) = false, want true", tc.doc)
		}
		if err := v.Validate([]byte(tc.doc)); (err == nil) != tc.valid {
			t.Errorf("Validate(%s) = %v, want valid = %v", tc.doc, err, tc.valid)
		}
	}
	if hasDuplicateKeys([]byte(`{"a":{"b":1},"b":{"a":[{"a":1},{"a":2}]}}`)) {
		t.Error("hasDuplicateKeys: found a duplicate in a document without one")
	}
}

// hasDuplicateKeys reports whether an object in doc, well-formed JSON, has
// a key twice, as encoding/json reads keys.
func hasDuplicateKeys(doc []byte) bool {
	d := json.NewDecoder(bytes.NewReader(doc))
	var dup func() bool // reads one value
	dup = func() bool {
		tok, err := d.Token()
		if err != nil {
			return false
		}
		switch tok {
		case json.Delim('{'):
			seen := map[string]bool{}
			for d.More() {
				k, err := d.Token()
				if err != nil {
					return false
				}
				key := k.(string)
				if seen[key] {
					return true
				}
				seen[key] = true
				if dup() {
					return true
				}
			}
			_, _ = d.Token()
		case json.Delim('['):
			for d.More() {
				if dup() {
					return true
				}
			}
			_, _ = d.Token()
		}
		return false
	}
	return dup()
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

// largeAnalysis is an analyze_portfolio result the size the server sends
// under load (500 invoices, 99 accounts, ≈23 KB): the one mcpapi's
// BenchmarkCheckOutput checks, from the input its benchArgs(500) builds.
func largeAnalysis(tb testing.TB) []byte {
	in, err := portfolio.Parse(portfoliotest.Args(500))
	if err != nil {
		tb.Fatal(err)
	}
	a := portfolio.Analyze(in)
	return a.AppendJSON(nil)
}

// BenchmarkValidateLarge is the output check of one large analyze result,
// the validate half of mcpapi's BenchmarkCheckOutput.
func BenchmarkValidateLarge(b *testing.B) {
	v, _ := outputSchema(b)
	doc := largeAnalysis(b)
	b.SetBytes(int64(len(doc)))
	b.ReportAllocs()
	for b.Loop() {
		if err := v.Validate(doc); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkValidateLargeJSONSchemaGo is BenchmarkValidateLarge done the
// general way, as the pipeline checks other tools' results: decode to any,
// then jsonschema-go. It is why this package stays (docs/benchmarks.md).
func BenchmarkValidateLargeJSONSchemaGo(b *testing.B) {
	_, ref := outputSchema(b)
	doc := largeAnalysis(b)
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
