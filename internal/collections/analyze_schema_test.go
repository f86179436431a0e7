package collections

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/cobranca/cobranca/internal/portfolio"
	"github.com/cobranca/cobranca/internal/value"
	"github.com/google/jsonschema-go/jsonschema"
)

// Parse may be stricter than the input schema, and only in these ways:
//
// Semantic rules a JSON Schema cannot express:
//   - the date exists in its month (2025-02-30, 2023-02-29): invalid_date;
//   - invoice ids are unique: duplicate_invoice_id (uniqueItems compares
//     whole invoices, not one field);
//   - a rate per currency and an entry per customer: duplicate_entry; every
//     invoice currency other than the base has a rate: missing_rate;
//   - disputeReason comes only with disputed: true: invalid_value;
//   - a rate has at most MaxRateScale fractional and MaxRateSignif
//     significant digits, read exactly from its decimal text, which a
//     schema (on the float64 a client decodes) cannot see;
//   - a converted amount rounds to 1..MaxAmountCents, and lastContactedAt
//     with its offset lies within MinDate..MaxDate: out_of_range.
//
// Characters a pattern cannot name: beyond U+FFFF, ECMA-262 without the u
// flag sees two UTF-16 code units, so textPattern leaves to Parse the tag
// characters (U+E0000-U+E007F) and the invisible characters up there
// (invalid_text).
//
// Characters a pattern would take kilobytes to name: textPattern counts
// combining marks and unassigned code points as visible, so Parse alone
// refuses a text with nothing visible but them (invalid_text).
//
// Encoding matters the schema never sees, because a schema validates the
// value encoding/json decoded, after it took the last of repeated keys,
// replaced invalid UTF-8 and unpaired surrogate escapes with U+FFFD, and
// rounded numbers to float64:
//   - a key repeated in one object: invalid_json;
//   - invalid UTF-8 or an unpaired \uD800-\uDFFF escape in an id or name:
//     invalid_text;
//   - an amountCents whose decimal value is not an integer but rounds to one
//     in float64 (1.00000000000000001): invalid_type.
//
// Everything else (types, required and unknown fields, counts, lengths,
// control characters, the date form and range, amount range, enums) the
// schema says too, and TestInputSchemaAgreesWithParse holds both to it.

// schemaVerdict decodes doc as encoding/json would for a client and
// validates it; a document that is not JSON fails too.
func schemaVerdict(rs *jsonschema.Resolved, doc []byte) error {
	var v any
	if err := json.Unmarshal(doc, &v); err != nil {
		return fmt.Errorf("not JSON: %w", err)
	}
	return rs.Validate(v)
}

// parseStricterAllowed reports whether Parse may reject doc, which the
// schema accepts, with e: one of the cases listed above.
func parseStricterAllowed(doc []byte, e *portfolio.Error) bool {
	switch e.Code {
	case portfolio.CodeInvalidDate, portfolio.CodeDuplicateInvoiceID, portfolio.CodeDuplicateEntry, portfolio.CodeMissingRate:
		return true
	case portfolio.CodeInvalidJSON:
		return hasRepeatedKey(doc)
	case portfolio.CodeInvalidText:
		return !utf8.Valid(doc) || surrogateEscape.Match(doc) || hasAstralRule(doc) || hasUnlistedInvisible(string(doc))
	case portfolio.CodeInvalidType:
		return strings.HasSuffix(e.Field, ".amountCents") || strings.HasSuffix(e.Field, ".rate")
	case portfolio.CodeInvalidValue:
		// A rate for the base currency (the enums of the schema list every
		// active currency: no other currency refusal is Parse's alone); a
		// rate given with more digits than it may have; disputeReason
		// without disputed: true.
		switch {
		case e.Field == "baseCurrency" || strings.HasSuffix(e.Field, ".currency"):
			code, _ := valueAt(doc, e.Field).(string)
			base, _ := valueAt(doc, "baseCurrency").(string)
			return strings.HasPrefix(e.Field, "rates[") && code == cmp.Or(base, "BRL")
		case strings.HasSuffix(e.Field, ".disputeReason"):
			return valueAt(doc, strings.TrimSuffix(e.Field, ".disputeReason")+".disputed") != true
		}
		return strings.HasSuffix(e.Field, ".rate")
	case portfolio.CodeOutOfRange:
		// A converted amount that rounds to 0 or past the bound; an instant
		// whose offset takes it out of MinDate..MaxDate.
		return strings.HasSuffix(e.Field, ".amountCents") && bytes.Contains(doc, []byte(`"rates"`)) ||
			strings.HasSuffix(e.Field, ".lastContactedAt") || strings.HasSuffix(e.Field, ".rate")
	}
	return false
}

var surrogateEscape = regexp.MustCompile(`\\u[dD][89a-fA-F]`)

// valueAt returns the value at path (a Parse error's field, such as
// invoices[3].currency) in doc, as encoding/json reads it; nil when there
// is none.
func valueAt(doc []byte, path string) any {
	var v any
	if json.Unmarshal(doc, &v) != nil {
		return nil
	}
	for part := range strings.SplitSeq(path, ".") {
		name, index, list := strings.Cut(strings.TrimSuffix(part, "]"), "[")
		obj, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = obj[name]
		if list {
			i, err := strconv.Atoi(index)
			arr, ok := v.([]any)
			if err != nil || !ok || i < 0 || i >= len(arr) {
				return nil
			}
			v = arr[i]
		}
	}
	return v
}

// hasAstralRule reports whether a string of doc holds a character beyond
// U+FFFF that Parse refuses or does not count as visible.
func hasAstralRule(doc []byte) bool {
	return strings.ContainsFunc(string(doc), func(r rune) bool {
		return r > 0xffff && unicode.In(r, value.RefusedInText(), value.InvisibleInText())
	})
}

// hasUnlistedInvisible reports whether s holds a character that does not
// make text visible to Parse but that textPattern counts as visible: a
// combining mark or an unassigned code point.
func hasUnlistedInvisible(s string) bool {
	return strings.ContainsFunc(s, func(r rune) bool {
		return !value.VisibleInText(r) && !unicode.In(r, value.RefusedInText(), value.InvisibleInText())
	})
}

// hasRepeatedKey reports whether some object of doc repeats a key.
func hasRepeatedKey(doc []byte) bool {
	dec := json.NewDecoder(bytes.NewReader(doc))
	type frame struct {
		keys    map[string]bool
		wantKey bool
	}
	var stack []*frame
	for {
		tok, err := dec.Token()
		if err != nil {
			return false
		}
		var top *frame
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		switch {
		case tok == json.Delim('}') || tok == json.Delim(']'):
			stack = stack[:len(stack)-1]
			if len(stack) > 0 && stack[len(stack)-1].keys != nil {
				stack[len(stack)-1].wantKey = true
			}
		case top != nil && top.wantKey:
			k := tok.(string)
			if top.keys[k] {
				return true
			}
			top.keys[k], top.wantKey = true, false
		case tok == json.Delim('{'):
			stack = append(stack, &frame{keys: map[string]bool{}, wantKey: true})
		case tok == json.Delim('['):
			stack = append(stack, &frame{})
		default:
			if top != nil && top.keys != nil {
				top.wantKey = true
			}
		}
	}
}

func TestInputSchemaAgreesWithParse(t *testing.T) {
	rs, err := analyzeInputSchema().Resolve(nil)
	if err != nil {
		t.Fatalf("analyzeInputSchema().Resolve: %v", err)
	}
	docs := fuzzCorpus(t)
	docs = append(docs, ruleDocs()...)
	r := rand.New(rand.NewPCG(3, 5))
	base := ruleDocs()
	n := 20000 // a property over random documents: the fast tier checks it over fewer
	if testing.Short() {
		n = 4000
	}
	for range n {
		docs = append(docs, mutate(r, base[r.IntN(len(base))]))
	}
	var accepted, rejectedBoth, stricter int
	for _, doc := range docs {
		in, perr := portfolio.Parse(doc)
		serr := schemaVerdict(rs, doc)
		switch {
		case perr == nil && serr != nil:
			t.Errorf("Parse accepts %.300q, but the schema rejects it: %v", doc, serr)
		case perr == nil:
			accepted++
			_ = in
		case serr != nil:
			rejectedBoth++
		default:
			var e *portfolio.Error
			if !errors.As(perr, &e) || !parseStricterAllowed(doc, e) {
				t.Errorf("the schema accepts %.300q, but Parse rejects it: %v", doc, perr)
			}
			stricter++
		}
	}
	t.Logf("%d documents: %d accepted by both, %d rejected by both, %d only by Parse", len(docs), accepted, rejectedBoth, stricter)
	if accepted < 100 || rejectedBoth < 100 || stricter < 10 {
		t.Errorf("too few documents of some kind to mean anything: %d, %d, %d", accepted, rejectedBoth, stricter)
	}
}

// fuzzCorpus reads portfolio's committed FuzzValidate corpus.
func fuzzCorpus(t *testing.T) [][]byte {
	t.Helper()
	dir := filepath.Join("..", "portfolio", "testdata", "fuzz", "FuzzValidate")
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatalf("fuzz corpus: %v", err)
	}
	var docs [][]byte
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		// go test fuzz v1\n[]byte("...")\n
		_, arg, ok := strings.Cut(strings.TrimSpace(string(b)), "\n")
		arg, ok2 := strings.CutPrefix(arg, "[]byte(")
		arg, ok3 := strings.CutSuffix(arg, ")")
		s, err := strconv.Unquote(arg)
		if !ok || !ok2 || !ok3 || err != nil {
			t.Fatalf("%s: not a []byte fuzz corpus entry", e.Name())
		}
		docs = append(docs, []byte(s))
	}
	if len(docs) < 5 {
		t.Fatalf("fuzz corpus has %d entries, want the committed ones", len(docs))
	}
	return docs
}

// ruleDocs is a valid document and a variant for each rule of Parse and the
// schema, one field at a time, like portfolio's validation table.
func ruleDocs() [][]byte {
	invoice := func(i int) map[string]any {
		return map[string]any{"id": fmt.Sprintf("inv-%d", i), "customerId": fmt.Sprintf("c%d", i%3),
			"customerName": fmt.Sprintf("Cliente %d", i%3), "dueDate": "2025-06-01", "amountCents": 100,
			"status": "open", "doNotContact": false}
	}
	doc := func(n int, edit func(d map[string]any, invs []map[string]any)) []byte {
		invs := make([]map[string]any, n)
		list := make([]any, n)
		for i := range invs {
			invs[i] = invoice(i)
			list[i] = invs[i]
		}
		d := map[string]any{"asOf": "2025-06-30", "invoices": list}
		if edit != nil {
			edit(d, invs)
		}
		b, err := json.Marshal(d)
		if err != nil {
			panic(err)
		}
		return b
	}
	long := func(n int) string { return strings.Repeat("é", n) }
	values := map[string][]any{
		"dates":       {"2025-02-30", "2023-02-29", "2024-02-29", "2025-13-01", "2025-00-01", "2025-01-00", "2025-04-31", "2025-01-32", "1999-12-31", "2000-01-01", "2099-12-31", "2100-01-01", "2025-1-01", "2025/01/01", "", "2025-01-01T00:00:00Z", 20250101, nil, "١٩٩٩-01-01"},
		"amountCents": {0, 1, -1, 1.5, 1e12, 1e12 + 1, 1e30, "100", nil, true, 99.99},
		"status":      {"open", "paid", "void", "OPEN", "x", "", nil, 1},
		"text": {"", "a", long(value.MaxTextLen), long(value.MaxTextLen + 1), strings.Repeat("x", value.MaxTextLen+1), "a\u0007", "a\n", "a\u007f", "a\u0085", "a\u009f",
			"a\u00a0", "a\u2028", "a\u2029", "😀", " ", "   ", "\u00a0", " \u3000 ", "\u00ad", "\u3164\ufe0f", " a ", "\u00a0a", "a\u00ad", "a\u200b", "a\u200d", "\u2060a", "\ufeffa",
			"a\u202a", "a\u202e", "a\u2066", "a\u2069", "a\u200e", "a\u200f", "\u061ca", "a\U000e0041", "\U000e007f", "\U0001bca0", " \U0001bca0", "a\U0001bca0",
			"c-1\u2064", "Ana\u2062Ltda", "a\u180e", "a\u034f", "a\u3164", "a\ufe00", "a\ufff9", "\u0600a", "\u2800", " \u2800a", "\u0301", " \u0301 ", "a\u0301",
			"\u0378", "a\u0378", "\ue000", "a\ue000", "\U0001d159", "a\U0001d159", "\U000f0000", 1, nil},
		"doNotContact": {true, false, "true", 0, nil},
	}
	var docs [][]byte
	docs = append(docs, doc(3, nil), doc(portfolio.MaxInvoices, nil), doc(portfolio.MaxInvoices+1, nil), doc(0, nil))
	for _, v := range values["dates"] {
		docs = append(docs,
			doc(3, func(d map[string]any, _ []map[string]any) { d["asOf"] = v }),
			doc(3, func(_ map[string]any, invs []map[string]any) { invs[1]["dueDate"] = v }))
	}
	for _, field := range []string{"amountCents", "status", "doNotContact", "id", "customerId", "customerName"} {
		vs := values[field]
		if vs == nil {
			vs = values["text"]
		}
		for _, v := range vs {
			docs = append(docs, doc(3, func(_ map[string]any, invs []map[string]any) { invs[2][field] = v }))
		}
		docs = append(docs,
			doc(3, func(_ map[string]any, invs []map[string]any) { delete(invs[0], field) }),
			doc(3, func(_ map[string]any, invs []map[string]any) { invs[0][field+"X"] = 1 }))
	}
	docs = append(docs,
		doc(3, func(d map[string]any, _ []map[string]any) { delete(d, "asOf") }),
		doc(3, func(d map[string]any, _ []map[string]any) { delete(d, "invoices") }),
		doc(3, func(d map[string]any, _ []map[string]any) { d["extra"] = true }),
		doc(3, func(d map[string]any, _ []map[string]any) { d["invoices"] = nil }),
		doc(3, func(d map[string]any, _ []map[string]any) { d["invoices"] = map[string]any{} }),
		doc(3, func(d map[string]any, _ []map[string]any) { d["invoices"] = []any{1} }),
		doc(5, func(_ map[string]any, invs []map[string]any) { invs[4]["id"] = "inv-1" }),
		doc(5, func(_ map[string]any, invs []map[string]any) { invs[4]["customerName"] = "Other" }),
		[]byte(`[]`), []byte(`null`), []byte(``), []byte(`{"asOf":"2025-06-30","asOf":"2025-06-30","invoices":[]}`),
		[]byte(`{"asOf":"2025-06-30","invoices":[{"id":"a","customerId":"c","customerName":"N","dueDate":"2025-01-01","amountCents":1.00000000000000001,"status":"open","doNotContact":false}]}`),
		[]byte(`{"asOf":"2025-06-30","invoices":[{"id":"a\ud800","customerId":"c","customerName":"N","dueDate":"2025-01-01","amountCents":1e2,"status":"open","doNotContact":false}]}`),
		[]byte("{\"asOf\":\"2025-06-30\",\"invoices\":[{\"id\":\"a\xff\",\"customerId\":\"c\",\"customerName\":\"N\",\"dueDate\":\"2025-01-01\",\"amountCents\":100.0,\"status\":\"open\",\"doNotContact\":false}]}"),
	)

	// The optional fields of 1.1.0, one at a time, on a document that uses
	// them all: invoices in USD and EUR converted to BRL, a dispute, a
	// promise, two customers' last contacts.
	extended := func(edit func(d map[string]any, invs []map[string]any, rates, custs []map[string]any)) []byte {
		return doc(4, func(d map[string]any, invs []map[string]any) {
			invs[1]["currency"] = "USD"
			invs[2]["currency"] = "EUR"
			invs[2]["disputed"] = true
			invs[2]["disputeReason"] = "Mercadoria não entregue"
			invs[3]["promiseToPayDate"] = "2025-07-10"
			rates := []map[string]any{{"currency": "USD", "rate": 5.17, "date": "2025-06-28"}, {"currency": "EUR", "rate": 6.0125, "date": "2025-06-28"}}
			custs := []map[string]any{{"customerId": "c0", "lastContactedAt": "2025-06-28T14:30:00-03:00"}, {"customerId": "c1", "lastContactedAt": "2025-06-27"}}
			d["baseCurrency"] = "BRL"
			if edit != nil {
				edit(d, invs, rates, custs)
			}
			list := func(ms []map[string]any) []any {
				out := make([]any, len(ms))
				for i, m := range ms {
					out[i] = m
				}
				return out
			}
			if _, ok := d["rates"]; !ok {
				d["rates"] = list(rates)
			}
			if _, ok := d["customers"]; !ok {
				d["customers"] = list(custs)
			}
		})
	}
	currencies := []any{"USD", "EUR", "BRL", "JPY", "KWD", "usd", "US", "USDX", "XXX", "ZZZ", "", " USD", 1, nil}
	rateValues := []any{5.17, 1, 0, -1, 1e-12, 1e-13, 0.000000000001, 0.0000000000015, 1e9, 1e9 + 1, 1.123456789012, 1.1234567890123,
		123456789.123456789, 12345678.1234567891, "5.17", nil, true}
	times := []any{"2025-06-28", "2025-06-28T14:30:00Z", "2025-06-28T14:30:00-03:00", "2025-06-28T14:30:00.123456789+05:30", "2025-06-28T14:30:00.1234567890Z",
		"2025-06-28t14:30:00z", "2025-06-28T24:00:00Z", "2025-06-28T14:30:60Z", "2025-06-28T14:30Z", "2025-06-28T14:30:00", "2025-06-28T14:30:00+24:00",
		"2025-06-28 14:30:00Z", "2000-01-01T00:00:00+01:00", "2000-01-01T00:00:00-01:00", "2099-12-31T23:30:00-03:00", "2099-12-31T23:30:00+03:00",
		"2025-02-30", "2025-02-30T10:00:00Z", "1999-12-31T23:59:59Z", "2100-01-01", "", 1, nil}
	docs = append(docs, extended(nil))
	for _, v := range currencies {
		docs = append(docs,
			extended(func(d map[string]any, _, _, _ []map[string]any) { d["baseCurrency"] = v }),
			extended(func(_ map[string]any, invs, _, _ []map[string]any) { invs[0]["currency"] = v }),
			extended(func(_ map[string]any, invs, _, _ []map[string]any) { invs[1]["currency"] = v }),
			extended(func(_ map[string]any, _, rates, _ []map[string]any) { rates[1]["currency"] = v }))
	}
	for _, v := range rateValues {
		docs = append(docs, extended(func(_ map[string]any, _, rates, _ []map[string]any) { rates[0]["rate"] = v }))
	}
	for _, v := range values["dates"] {
		docs = append(docs,
			extended(func(_ map[string]any, _, rates, _ []map[string]any) { rates[0]["date"] = v }),
			extended(func(_ map[string]any, invs, _, _ []map[string]any) { invs[0]["promiseToPayDate"] = v }))
	}
	for _, v := range times {
		docs = append(docs, extended(func(_ map[string]any, _, _, custs []map[string]any) { custs[0]["lastContactedAt"] = v }))
	}
	for _, v := range values["text"] {
		docs = append(docs,
			extended(func(_ map[string]any, invs, _, _ []map[string]any) { invs[2]["disputeReason"] = v }),
			extended(func(_ map[string]any, _, _, custs []map[string]any) { custs[1]["customerId"] = v }))
	}
	for _, v := range []any{true, false, "true", 1, nil} {
		docs = append(docs, extended(func(_ map[string]any, invs, _, _ []map[string]any) { invs[2]["disputed"] = v }))
	}
	many := func(n int, entry func(i int) map[string]any) []any {
		out := make([]any, n)
		for i := range out {
			out[i] = entry(i)
		}
		return out
	}
	docs = append(docs,
		extended(func(_ map[string]any, invs, _, _ []map[string]any) { delete(invs[2], "disputed") }),        // a reason without a dispute
		extended(func(_ map[string]any, invs, _, _ []map[string]any) { delete(invs[2], "disputeReason") }),   // a dispute without a reason
		extended(func(_ map[string]any, invs, _, _ []map[string]any) { invs[0]["disputeReason"] = "x" }),     // a reason on an undisputed invoice
		extended(func(_ map[string]any, invs, _, _ []map[string]any) { invs[0]["currency"] = "JPY" }),        // no rate for it
		extended(func(d map[string]any, _, _, _ []map[string]any) { d["baseCurrency"] = "USD" }),             // a rate for the base currency
		extended(func(_ map[string]any, _, rates, _ []map[string]any) { rates[1]["currency"] = "USD" }),      // two rates for USD
		extended(func(_ map[string]any, _, _, custs []map[string]any) { custs[1]["customerId"] = "c0" }),     // two entries for c0
		extended(func(_ map[string]any, _, _, custs []map[string]any) { custs[1]["customerId"] = "nobody" }), // ignored
		extended(func(_ map[string]any, invs, _, _ []map[string]any) { invs[1]["amountCents"] = 1e12 }),      // converted, too much
		extended(func(_ map[string]any, _, rates, _ []map[string]any) { rates[0]["rate"] = 1e-12 }),          // converted, rounds to 0
		extended(func(_ map[string]any, _, rates, _ []map[string]any) { delete(rates[0], "date") }),
		extended(func(_ map[string]any, _, rates, _ []map[string]any) { rates[0]["x"] = 1 }),
		extended(func(_ map[string]any, _, _, custs []map[string]any) { delete(custs[0], "lastContactedAt") }),
		extended(func(_ map[string]any, _, _, custs []map[string]any) { custs[0]["x"] = 1 }),
		extended(func(d map[string]any, _, _, _ []map[string]any) { d["rates"] = nil }),
		extended(func(d map[string]any, _, _, _ []map[string]any) { d["customers"] = nil }),
		extended(func(d map[string]any, _, _, _ []map[string]any) { d["rates"] = []any{} }),
		extended(func(d map[string]any, _, _, _ []map[string]any) { d["customers"] = []any{} }),
		extended(func(d map[string]any, _, _, _ []map[string]any) {
			d["customers"] = many(portfolio.MaxInvoices, func(i int) map[string]any {
				return map[string]any{"customerId": fmt.Sprintf("c%d", i), "lastContactedAt": "2025-06-01"}
			})
		}),
		extended(func(d map[string]any, _, _, _ []map[string]any) {
			d["customers"] = many(portfolio.MaxInvoices+1, func(i int) map[string]any {
				return map[string]any{"customerId": fmt.Sprintf("c%d", i), "lastContactedAt": "2025-06-01"}
			})
		}),
		extended(func(d map[string]any, _, _, _ []map[string]any) {
			d["rates"] = many(portfolio.MaxRates+1, func(i int) map[string]any {
				return map[string]any{"currency": fmt.Sprintf("%c%c%c", 'A'+i/26/26%26, 'A'+i/26%26, 'A'+i%26), "rate": 1, "date": "2025-06-01"}
			})
		}),
	)
	return docs
}

// mutate changes doc a little: a byte, a token swapped for another, or a
// slice cut out.
func mutate(r *rand.Rand, doc []byte) []byte {
	d := bytes.Clone(doc)
	tokens := []string{`"`, `\`, `\u0000`, `\ud83d\ude00`, `\u00e9`, `null`, `1e2`, `-1`, `1.5`, `0`, `true`, `{}`, `[]`, `,`, `:`, ` `, "\x7f", "\u0085", "é", `"2024-02-29"`, `"2025-02-29"`, `"x"`, `1000000000001`,
		`" "`, `"\u00a0"`, "\u202e", "\u200b", "\u00ad", `\u2028`, "\U000e0041",
		"\u2063", `\u2062`, "\u3164", "\u2800", "\u0301", "\u0378", "\ue000"}
	for range 1 + r.IntN(3) {
		if len(d) == 0 {
			return []byte(tokens[r.IntN(len(tokens))])
		}
		i := r.IntN(len(d))
		switch r.IntN(4) {
		case 0:
			d[i] = byte(r.IntN(256))
		case 1:
			d = append(d[:i], append([]byte(tokens[r.IntN(len(tokens))]), d[i:]...)...)
		case 2:
			j := min(len(d), i+1+r.IntN(8))
			d = append(d[:i], d[j:]...)
		default:
			// Replace a string or number value with a token.
			j := bytes.IndexByte(d[i:], ':')
			if j < 0 {
				continue
			}
			k := i + j + 1
			end := k
			for end < len(d) && d[end] != ',' && d[end] != '}' {
				end++
			}
			d = append(d[:k], append([]byte(tokens[r.IntN(len(tokens))]), d[end:]...)...)
		}
	}
	return d
}

// TestTextPatternMatchesParse holds the pattern to Parse's text rule for
// every character up to U+FFFF (beyond it, see the top of this file): alone,
// between white space, before and after a visible character.
func TestTextPatternMatchesParse(t *testing.T) {
	re := regexp.MustCompile(textPattern())
	valid := func(s string) bool {
		in := &portfolio.Input{AsOf: "2025-06-30", Invoices: []portfolio.Invoice{{ID: "i", CustomerID: "c", CustomerName: s,
			DueDate: "2025-06-01", AmountCents: 1, Status: portfolio.StatusOpen}}}
		return portfolio.Validate(in) == nil
	}
	var refused, blank, unlisted int
	for r := rune(0); r <= 0xffff; r++ {
		if utf16.IsSurrogate(r) {
			continue
		}
		c := string(r)
		for _, s := range []string{c, " " + c + "\u00a0", "a" + c, c + "a", "\u3000" + c + "a"} {
			got, want := re.MatchString(s), valid(s)
			if got && !want && hasUnlistedInvisible(c) && valid(s+"a") {
				unlisted++ // blank to Parse only (see the top of this file)
				continue
			}
			if got != want {
				t.Errorf("textPattern matches %+q = %v, but Parse accepts it = %v", s, got, want)
			}
		}
		if !valid("a" + c) {
			refused++
		} else if !valid(c) {
			blank++
		}
	}
	if refused < 70 || blank < 2000 || unlisted < 2000 {
		t.Errorf("%d characters refused, %d blank, %d blank to Parse only: the rule is not the one this test is for", refused, blank, unlisted)
	}
	// Every bidirectional control, the marks included, is refused.
	for _, rg := range unicode.Bidi_Control.R16 {
		for r := rune(rg.Lo); r <= rune(rg.Hi); r += rune(rg.Stride) {
			if s := "a" + string(r) + "b"; re.MatchString(s) {
				t.Errorf("textPattern matches %+q, a bidirectional control", s)
			}
		}
	}
}

// TestTextPatternDisplaysInOrder: the bidirectional controls the pattern
// holds as themselves are balanced, so the published schema displays in
// logical order after the pattern.
func TestTextPatternDisplaysInOrder(t *testing.T) {
	p := textPattern()
	embeddings, isolates, controls := 0, 0, 0
	for _, r := range p {
		switch r {
		case lre, rle, lro, rlo:
			embeddings++
		case pdf:
			embeddings = max(0, embeddings-1)
		case lri, rli, fsi:
			isolates++
		case pdi:
			isolates = max(0, isolates-1)
		default:
			continue
		}
		controls++
	}
	if embeddings != 0 || isolates != 0 {
		t.Errorf("textPattern() = %+q leaves %d embeddings or overrides and %d isolates open", p, embeddings, isolates)
	}
	if controls == 0 {
		t.Errorf("textPattern() = %+q holds no bidirectional control: the test checks nothing", p)
	}
}

func TestDatePatternMatchesPortfolioRange(t *testing.T) {
	re := regexp.MustCompile(datePattern)
	for d := time.Date(1999, 12, 1, 0, 0, 0, 0, time.UTC); d.Year() < 2101; d = d.AddDate(0, 0, 1) {
		s := d.Format(time.DateOnly)
		want := s >= value.MinDate && s <= value.MaxDate
		if got := re.MatchString(s); got != want {
			t.Fatalf("datePattern matches %s = %v, want %v (range %s..%s)", s, got, want, value.MinDate, value.MaxDate)
		}
	}
	for _, s := range []string{"2025-00-01", "2025-13-01", "2025-01-00", "2025-01-32", "2025-1-01", "٢٠٢٥-01-01"} {
		if re.MatchString(s) {
			t.Errorf("datePattern matches %s, want no match", s)
		}
	}
}

func TestOutputSchemaValidatesAnalyze(t *testing.T) {
	rs, err := analyzeOutputSchema().Resolve(nil)
	if err != nil {
		t.Fatalf("analyzeOutputSchema().Resolve: %v", err)
	}
	r := rand.New(rand.NewPCG(8, 13))
	var listed, warned, converted, paced, factors3, unfactored int
	n := 2000 // a property over random portfolios: the fast tier checks it over fewer
	if testing.Short() {
		n = 400
	}
	for range n {
		in := randomPortfolio(r)
		if err := portfolio.Validate(in); err != nil {
			t.Fatalf("randomPortfolio is invalid: %v", err)
		}
		var o portfolio.Options
		if r.IntN(2) == 0 {
			o.ContactPacing = time.Duration(1+r.IntN(10*24)) * time.Hour
		}
		a := portfolio.AnalyzeWith(in, o)
		listed += len(a.Accounts)
		warned += len(a.Warnings)
		for _, acc := range a.Accounts {
			if d := acc.AccountDetails; d != nil {
				converted += len(d.Conversions)
				if d.NextContactAfter != "" {
					paced++
				}
			}
			for _, f := range acc.PriorityFactors {
				if f.Factor == portfolio.FactorBrokenPromise {
					factors3++
				}
			}
			if len(acc.PriorityFactors) == 0 {
				unfactored++
			}
		}
		b, err := json.Marshal(a)
		if err != nil {
			t.Fatal(err)
		}
		var v any
		if err := json.Unmarshal(b, &v); err != nil {
			t.Fatal(err)
		}
		if err := rs.Validate(v); err != nil {
			t.Fatalf("output schema rejects Analyze's result %s: %v", b, err)
		}
	}
	if listed == 0 || warned == 0 || converted == 0 || paced == 0 || factors3 == 0 || unfactored == 0 {
		t.Fatalf("%d overdue accounts, %d warnings, %d conversions, %d paced accounts, %d broken promises, %d medium accounts in all: the test checks too little",
			listed, warned, converted, paced, factors3, unfactored)
	}
	// And the schema is not vacuous: each document is a valid result but for
	// one thing.
	const summary = `"summary":{"baseCurrency":"BRL","accountsByPriority":{"high":1,"medium":0},"priorityThresholds":{"daysOverdue":14,"openAmountCents":200000},"aging":[` +
		`{"bucket":"current","amountCents":0,"invoiceCount":0},{"bucket":"1-30","amountCents":1,"invoiceCount":1},` +
		`{"bucket":"31-60","amountCents":0,"invoiceCount":0},{"bucket":"61-90","amountCents":0,"invoiceCount":0},{"bucket":"90+","amountCents":0,"invoiceCount":0}],` +
		`"leftOut":{"doNotContact":{"invoices":0,"customers":0},"paid":{"invoices":0,"customers":0},"void":{"invoices":0,"customers":0},` +
		`"disputed":{"invoices":0,"customers":0},"promisePending":{"invoices":0,"customers":0}},"rates":[]}`
	const account = `{"customerId":"c","customerName":"n","amountCents":1,"oldestDueDate":"2025-01-01","daysOverdue":15,"priority":"high",` +
		`"recommendedAction":"human_review","reason":"r","agingBucket":"1-30","invoiceCount":1,` +
		`"priorityFactors":[{"factor":"days_overdue","value":15}]}`
	valid := `{"totalOpenCents":1,"accounts":[` + account + `],"warnings":[],` + summary + `}`
	var v any
	if err := json.Unmarshal([]byte(valid), &v); err != nil {
		t.Fatal(err)
	}
	if err := rs.Validate(v); err != nil {
		t.Fatalf("output schema rejects %s: %v", valid, err)
	}
	edit := func(old, new string) string {
		if !strings.Contains(valid, old) {
			t.Fatalf("the valid result lacks %s", old)
		}
		return strings.Replace(valid, old, new, 1)
	}
	for _, bad := range []string{
		edit(`"totalOpenCents":1`, `"totalOpenCents":-1`),
		edit(`"accounts":[`+account+`],`, ``),
		edit(`"warnings":[],`, ``),
		edit(`"warnings":[]`, `"warnings":null`),
		edit(`"warnings":[]`, `"warnings":[],"extra":1`),
		edit(`"priority":"high"`, `"priority":"low"`),
		edit(`"daysOverdue":15`, `"daysOverdue":0`),
		edit(`"warnings":[]`, `"warnings":[{"code":"customer_name_variants","customerId":"c","nameCount":1}]`),
		edit(`"warnings":[]`, `"warnings":[{"code":"other","customerId":"c","nameCount":2}]`),
		edit(`"warnings":[]`, `"warnings":[{"code":"customer_name_variants","customerId":"c"}]`),
		edit(`"warnings":[]`, `"warnings":[{"code":"customer_name_variants","customerId":"c","nameCount":2,"names":["A","a"]}]`),
		// 1.1.0's fields
		edit(`,`+summary, ``),
		edit(`"baseCurrency":"BRL"`, `"baseCurrency":"brl"`),
		edit(`"accountsByPriority":{"high":1,"medium":0}`, `"accountsByPriority":{"high":1}`),
		edit(`"accountsByPriority":{"high":1,"medium":0}`, `"accountsByPriority":{"high":1,"medium":0,"low":0}`),
		edit(`"priorityThresholds":{"daysOverdue":14,"openAmountCents":200000},`, ``),
		edit(`"priorityThresholds":{"daysOverdue":14,"openAmountCents":200000}`, `"priorityThresholds":{"daysOverdue":14}`),
		edit(`"priorityThresholds":{"daysOverdue":14,"openAmountCents":200000}`, `"priorityThresholds":{"daysOverdue":0,"openAmountCents":200000}`),
		edit(`"openAmountCents":200000}`, `"openAmountCents":200000,"brokenPromise":1}`),
		edit(`{"bucket":"90+","amountCents":0,"invoiceCount":0}`, `{"bucket":"120+","amountCents":0,"invoiceCount":0}`),
		edit(`,{"bucket":"90+","amountCents":0,"invoiceCount":0}`, ``),
		edit(`{"bucket":"current","amountCents":0,`, `{"bucket":"current","amountCents":-1,`),
		edit(`"promisePending":{"invoices":0,"customers":0}`, `"promisePending":{"invoices":0}`),
		edit(`"void":{"invoices":0,"customers":0},`, ``),
		edit(`"rates":[]`, `"rates":null`),
		edit(`"rates":[]`, `"rates":[{"currency":"USD","rate":0,"date":"2025-01-01"}]`),
		edit(`"rates":[]`, `"rates":[{"currency":"USD","rate":"5.17","date":"2025-01-01"}]`),
		edit(`"agingBucket":"1-30"`, `"agingBucket":"current"`),
		edit(`"agingBucket":"1-30",`, ``),
		edit(`"invoiceCount":1,"priorityFactors"`, `"invoiceCount":0,"priorityFactors"`),
		edit(`"priorityFactors":[{"factor":"days_overdue","value":15}]`, `"priorityFactors":null`),
		edit(`,"priorityFactors":[{"factor":"days_overdue","value":15}]`, ``),
		edit(`{"factor":"days_overdue","value":15}`, `{"factor":"days_late","value":15}`),
		edit(`{"factor":"days_overdue","value":15}`, `{"factor":"days_overdue","value":0}`),
		edit(`{"factor":"days_overdue","value":15}`, `{"factor":"days_overdue"}`),
		edit(`{"factor":"days_overdue","value":15}`, `{"factor":"days_overdue","value":15,"threshold":14,"met":true}`),
		edit(`{"factor":"days_overdue","value":15}`, `{"factor":"days_overdue","value":15},{"factor":"open_amount","value":1},{"factor":"broken_promise","value":1},{"factor":"broken_promise","value":1}`),
		edit(`"value":15}]}`, `"value":15}],"conversions":[]}`),
		edit(`"value":15}]}`, `"value":15}],"conversions":[{"currency":"USD","amountCents":1,"rate":5.17,"rateDate":"2025-01-01"}]}`),
		edit(`"value":15}]}`, `"value":15}],"conversions":[{"currency":"USD","amountCents":1,"rate":-5.17,"rateDate":"2025-01-01","convertedCents":5}]}`),
		edit(`"value":15}]}`, `"value":15}],"nextContactAfter":"2025-01-01"}`),
		edit(`"value":15}]}`, `"value":15}],"nextContactAfter":"2025-01-01T10:00:00-03:00"}`),
		edit(`"value":15}]}`, `"value":15}],"lastContactedAt":"2025-01-01T10:00:00Z"}`),
	} {
		var v any
		if err := json.Unmarshal([]byte(bad), &v); err != nil {
			t.Fatal(err)
		}
		if rs.Validate(v) == nil {
			t.Errorf("output schema accepts %s, want a rejection", bad)
		}
	}
	for _, good := range []string{
		edit(`"value":15}]}`, `"value":15}],"conversions":[{"currency":"USD","amountCents":1,"rate":5.17,"rateDate":"2025-01-01","convertedCents":5}],"nextContactAfter":"2025-01-03T10:00:00Z"}`),
		edit(`"value":15}]}`, `"value":15},{"factor":"broken_promise","value":3}]}`),
		edit(`"priorityFactors":[{"factor":"days_overdue","value":15}]`, `"priorityFactors":[]`),
		edit(`"rates":[]`, `"rates":[{"currency":"JPY","rate":0.000000000001,"date":"2025-01-01"}]`),
	} {
		var v any
		if err := json.Unmarshal([]byte(good), &v); err != nil {
			t.Fatal(err)
		}
		if err := rs.Validate(v); err != nil {
			t.Errorf("output schema rejects %s: %v", good, err)
		}
	}
}

// randomPortfolio makes a valid portfolio spread around the priority
// thresholds, with 1.1.0's optional fields in about half of them: invoices
// in foreign currencies (and another base currency), disputes, promises to
// pay kept, pending and broken, customers' last contacts.
func randomPortfolio(r *rand.Rand) *portfolio.Input {
	asOf := time.Date(2001+r.IntN(98), time.Month(1+r.IntN(12)), 1+r.IntN(28), 0, 0, 0, 0, time.UTC)
	n := 1 + r.IntN(60)
	in := &portfolio.Input{AsOf: asOf.Format(time.DateOnly)}
	extended := r.IntN(2) == 0
	if extended && r.IntN(3) == 0 {
		in.BaseCurrency = []string{"BRL", "USD", "JPY", "KWD"}[r.IntN(4)]
	}
	base := in.BaseCurrency
	if base == "" {
		base = "BRL"
	}
	used := map[string]bool{}
	for i := range n {
		c := r.IntN(1 + n/3)
		name := fmt.Sprintf("Cliente %d", c)
		if r.IntN(8) == 0 {
			name = strings.ToUpper(name) // a variant, as ERP exports have them
		}
		inv := portfolio.Invoice{
			ID:           fmt.Sprintf("inv-%d", i),
			CustomerID:   fmt.Sprintf("c%d", c),
			CustomerName: name,
			DueDate:      asOf.AddDate(0, 0, r.IntN(61)-40).Format(time.DateOnly),
			AmountCents:  1 + r.Int64N(value.MaxAmountCents/int64(1+r.IntN(1_000_000))),
			Status:       []portfolio.Status{portfolio.StatusOpen, portfolio.StatusPaid, portfolio.StatusVoid}[r.IntN(3)],
			DoNotContact: r.IntN(20) == 0,
		}
		if extended {
			x := inv.Details()
			if r.IntN(4) == 0 {
				x.Currency = []string{"BRL", "USD", "EUR", "JPY"}[r.IntN(4)]
			}
			if cur := cmp.Or(x.Currency, "BRL"); cur != base {
				used[cur] = true
				// Converted at a rate of 0.01 to 100 between minor units
				// 10^-2 to 10^3 apart, it stays within 1..MaxAmountCents.
				inv.AmountCents = 5000 + r.Int64N(1_000_000)
			}
			if r.IntN(6) == 0 {
				x.Disputed = true
				if r.IntN(2) == 0 {
					x.DisputeReason = "valor em discussão"
				}
			}
			if r.IntN(6) == 0 {
				x.PromiseToPayDate = asOf.AddDate(0, 0, r.IntN(31)-15).Format(time.DateOnly)
			}
		}
		in.Invoices = append(in.Invoices, inv)
	}
	for _, cur := range []string{"BRL", "EUR", "JPY", "USD"} {
		if used[cur] {
			in.Rates = append(in.Rates, portfolio.ExchangeRate{Currency: cur, Rate: portfolio.Decimal{Coef: 100 + uint64(r.IntN(999_900)), Scale: 4},
				Date: asOf.AddDate(0, 0, -r.IntN(5)).Format(time.DateOnly)})
		}
	}
	if extended {
		for c := range 1 + n/3 {
			if r.IntN(2) == 0 {
				at := asOf.Add(-time.Duration(r.IntN(15*24*60)) * time.Minute)
				last := at.In(time.FixedZone("", -3*3600)).Format(time.RFC3339)
				if r.IntN(3) == 0 {
					last = at.Format(time.DateOnly)
				}
				in.Customers = append(in.Customers, portfolio.Contact{CustomerID: fmt.Sprintf("c%d", c), LastContactedAt: last})
			}
		}
	}
	return in
}
