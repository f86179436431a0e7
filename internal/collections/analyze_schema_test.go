package collections

import (
	"bytes"
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
	"github.com/google/jsonschema-go/jsonschema"
)

// Parse may be stricter than the input schema, and only in these ways:
//
// Semantic rules a JSON Schema cannot express:
//   - the date exists in its month (2025-02-30, 2023-02-29): invalid_date;
//   - invoice ids are unique: duplicate_invoice_id (uniqueItems compares
//     whole invoices, not one field).
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
	case portfolio.CodeInvalidDate, portfolio.CodeDuplicateInvoiceID:
		return true
	case portfolio.CodeInvalidJSON:
		return hasRepeatedKey(doc)
	case portfolio.CodeInvalidText:
		return !utf8.Valid(doc) || surrogateEscape.Match(doc) || hasAstralRule(doc) || hasUnlistedInvisible(string(doc))
	case portfolio.CodeInvalidType:
		return strings.HasSuffix(e.Field, ".amountCents")
	}
	return false
}

var surrogateEscape = regexp.MustCompile(`\\u[dD][89a-fA-F]`)

// hasAstralRule reports whether a string of doc holds a character beyond
// U+FFFF that Parse refuses or does not count as visible.
func hasAstralRule(doc []byte) bool {
	return strings.ContainsFunc(string(doc), func(r rune) bool {
		return r > 0xffff && unicode.In(r, portfolio.RefusedInText(), portfolio.InvisibleInText())
	})
}

// hasUnlistedInvisible reports whether s holds a character that does not
// make text visible to Parse but that textPattern counts as visible: a
// combining mark or an unassigned code point.
func hasUnlistedInvisible(s string) bool {
	return strings.ContainsFunc(s, func(r rune) bool {
		return !portfolio.VisibleInText(r) && !unicode.In(r, portfolio.RefusedInText(), portfolio.InvisibleInText())
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
	for range 20000 {
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
		"text": {"", "a", long(portfolio.MaxTextLen), long(portfolio.MaxTextLen + 1), strings.Repeat("x", portfolio.MaxTextLen+1), "a\u0007", "a\n", "a\u007f", "a\u0085", "a\u009f",
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
		want := s >= portfolio.MinDate && s <= portfolio.MaxDate
		if got := re.MatchString(s); got != want {
			t.Fatalf("datePattern matches %s = %v, want %v (range %s..%s)", s, got, want, portfolio.MinDate, portfolio.MaxDate)
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
	listed, warned := 0, 0
	for range 2000 {
		in := randomPortfolio(r)
		if err := portfolio.Validate(in); err != nil {
			t.Fatalf("randomPortfolio is invalid: %v", err)
		}
		a := portfolio.Analyze(in)
		listed += len(a.Accounts)
		warned += len(a.Warnings)
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
	if listed == 0 || warned == 0 {
		t.Fatalf("%d overdue accounts and %d warnings in all: the test checks too little", listed, warned)
	}
	// And the schema is not vacuous.
	for _, bad := range []string{
		`{"totalOpenCents":-1,"accounts":[],"warnings":[]}`,
		`{"totalOpenCents":0,"warnings":[]}`,
		`{"totalOpenCents":0,"accounts":[]}`,
		`{"totalOpenCents":0,"accounts":[],"warnings":null}`,
		`{"totalOpenCents":0,"accounts":[],"warnings":[],"extra":1}`,
		`{"totalOpenCents":0,"accounts":[{"customerId":"c","customerName":"n","amountCents":1,"oldestDueDate":"2025-01-01","daysOverdue":1,"priority":"low","recommendedAction":"human_review","reason":"r"}],"warnings":[]}`,
		`{"totalOpenCents":0,"accounts":[{"customerId":"c","customerName":"n","amountCents":1,"oldestDueDate":"2025-01-01","daysOverdue":0,"priority":"high","recommendedAction":"human_review","reason":"r"}],"warnings":[]}`,
		`{"totalOpenCents":0,"accounts":[],"warnings":[{"code":"customer_name_variants","customerId":"c","nameCount":1}]}`,
		`{"totalOpenCents":0,"accounts":[],"warnings":[{"code":"other","customerId":"c","nameCount":2}]}`,
		`{"totalOpenCents":0,"accounts":[],"warnings":[{"code":"customer_name_variants","customerId":"c"}]}`,
		`{"totalOpenCents":0,"accounts":[],"warnings":[{"code":"customer_name_variants","customerId":"c","nameCount":2,"names":["A","a"]}]}`,
	} {
		var v any
		if err := json.Unmarshal([]byte(bad), &v); err != nil {
			t.Fatal(err)
		}
		if rs.Validate(v) == nil {
			t.Errorf("output schema accepts %s, want a rejection", bad)
		}
	}
}

// randomPortfolio makes a valid portfolio spread around the priority
// thresholds.
func randomPortfolio(r *rand.Rand) *portfolio.Input {
	asOf := time.Date(2001+r.IntN(98), time.Month(1+r.IntN(12)), 1+r.IntN(28), 0, 0, 0, 0, time.UTC)
	n := 1 + r.IntN(60)
	in := &portfolio.Input{AsOf: asOf.Format(time.DateOnly)}
	for i := range n {
		c := r.IntN(1 + n/3)
		name := fmt.Sprintf("Cliente %d", c)
		if r.IntN(8) == 0 {
			name = strings.ToUpper(name) // a variant, as ERP exports have them
		}
		in.Invoices = append(in.Invoices, portfolio.Invoice{
			ID:           fmt.Sprintf("inv-%d", i),
			CustomerID:   fmt.Sprintf("c%d", c),
			CustomerName: name,
			DueDate:      asOf.AddDate(0, 0, r.IntN(61)-40).Format(time.DateOnly),
			AmountCents:  1 + r.Int64N(portfolio.MaxAmountCents/int64(1+r.IntN(1_000_000))),
			Status:       []portfolio.Status{portfolio.StatusOpen, portfolio.StatusPaid, portfolio.StatusVoid}[r.IntN(3)],
			DoNotContact: r.IntN(20) == 0,
		})
	}
	return in
}
