package portfolio

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"

	gocmp "github.com/google/go-cmp/cmp"

	"github.com/cobranca/cobranca/internal/value"
)

// rawInvoice is invoice i of a valid document, as JSON text. Customer c<i%3>.
func rawInvoice(i int) string {
	return fmt.Sprintf(`{"id":"inv-%d","customerId":"c%d","customerName":"Cliente %d","dueDate":"2025-06-01","amountCents":100,"status":"open","doNotContact":false}`, i, i%3, i%3)
}

// rawDoc is a valid document with n invoices after edit has changed
// invoice i's text (edit may be nil).
func rawDoc(n int, edit func(i int, s string) string) string {
	parts := make([]string, n)
	for i := range parts {
		parts[i] = rawInvoice(i)
		if edit != nil {
			parts[i] = edit(i, parts[i])
		}
	}
	return `{"asOf":"2025-06-30","invoices":[` + strings.Join(parts, ",") + `]}`
}

// at returns an edit replacing old by new in invoice k only.
func at(k int, old, new string) func(int, string) string {
	return func(i int, s string) string {
		if i != k {
			return s
		}
		if !strings.Contains(s, old) {
			panic("at: " + old + " not in " + s)
		}
		return strings.Replace(s, old, new, 1)
	}
}

// docOf marshals a valid 20-invoice Input after edit has changed it.
func docOf(edit func(in *Input)) string {
	in := &Input{AsOf: "2025-06-30"}
	for i := range 20 {
		in.Invoices = append(in.Invoices, inv(fmt.Sprintf("inv-%d", i), fmt.Sprintf("c%d", i%3), "2025-06-01", 100, StatusOpen, false))
	}
	edit(in)
	b, err := json.Marshal(in)
	if err != nil {
		panic(err)
	}
	return string(b)
}

var overlong = strings.Repeat("é", value.MaxTextLen) + "x"

// rejectCases has a case for every rejection. It is also fuzz seed corpus.
var rejectCases = append(rejectCasesReference, rejectCasesExtended...)

// rejectCasesReference are the rejections of the reference's fields.
var rejectCasesReference = []struct {
	name  string
	doc   string
	code  Code
	field string
}{
	// invalid_json
	{"empty", ``, CodeInvalidJSON, ""},
	{"only whitespace", " \n\t ", CodeInvalidJSON, ""},
	{"array", `[]`, CodeInvalidJSON, ""},
	{"null", `null`, CodeInvalidJSON, ""},
	{"string", `"asOf"`, CodeInvalidJSON, ""},
	{"byte order mark", "\ufeff" + rawDoc(1, nil), CodeInvalidJSON, ""},
	{"truncated", rawDoc(2, nil)[:60], CodeInvalidJSON, "invoices[0].customerId"},
	{"trailing garbage", rawDoc(1, nil) + " x", CodeInvalidJSON, ""},
	{"two documents", rawDoc(1, nil) + rawDoc(1, nil), CodeInvalidJSON, ""},
	{"trailing comma in object", `{"asOf":"2025-06-30",}`, CodeInvalidJSON, ""},
	{"trailing comma in array", strings.Replace(rawDoc(1, nil), "}]}", "},]}", 1), CodeInvalidJSON, "invoices[1]"},
	{"missing colon", `{"asOf" "2025-06-30"}`, CodeInvalidJSON, ""},
	{"single quotes", `{'asOf':'2025-06-30'}`, CodeInvalidJSON, ""},
	{"unterminated string", `{"asOf":"2025-06-30`, CodeInvalidJSON, "asOf"},
	{"bad escape", rawDoc(1, at(0, `"Cliente 0"`, `"Cli\xente"`)), CodeInvalidJSON, "invoices[0].customerName"},
	{"bad u escape", rawDoc(1, at(0, `"Cliente 0"`, `"Cli\u00g9nte"`)), CodeInvalidJSON, "invoices[0].customerName"},
	{"raw control character", rawDoc(1, at(0, `"Cliente 0"`, "\"Cli\nente\"")), CodeInvalidJSON, "invoices[0].customerName"},
	{"leading zero", rawDoc(1, at(0, `:100`, `:0100`)), CodeInvalidJSON, "invoices[0]"},
	{"bare minus", rawDoc(1, at(0, `:100`, `:-`)), CodeInvalidJSON, "invoices[0].amountCents"},
	{"dot without digits", rawDoc(1, at(0, `:100`, `:100.`)), CodeInvalidJSON, "invoices[0].amountCents"},
	{"exponent without digits", rawDoc(1, at(0, `:100`, `:1e`)), CodeInvalidJSON, "invoices[0].amountCents"},
	{"plus sign", rawDoc(1, at(0, `:100`, `:+100`)), CodeInvalidJSON, "invoices[0].amountCents"},
	{"hex number", rawDoc(1, at(0, `:100`, `:0x64`)), CodeInvalidJSON, "invoices[0]"},
	{"bad literal", rawDoc(1, at(0, `false`, `fals`)), CodeInvalidJSON, "invoices[0].doNotContact"},
	{"repeated top-level key", `{"asOf":"2025-06-30","asOf":"2025-06-30","invoices":[]}`, CodeInvalidJSON, "asOf"},
	{"repeated invoice key", rawDoc(2, at(1, `"status":"open"`, `"status":"open","status":"paid"`)), CodeInvalidJSON, "invoices[1].status"},
	{"repeated key, escaped", `{"asOf":"2025-06-30","\u0061sOf":"2025-06-30"}`, CodeInvalidJSON, "asOf"},

	// unknown_field
	{"unknown top-level field", `{"asOf":"2025-06-30","extra":1,"invoices":[]}`, CodeUnknownField, "extra"},
	{"unknown invoice field", rawDoc(3, at(1, `"id"`, `"note":"x","id"`)), CodeUnknownField, "invoices[1].note"},
	{"field name in another case", `{"AsOf":"2025-06-30"}`, CodeUnknownField, "AsOf"},
	{"unknown field not echoed", `{"a b\"c":1}`, CodeUnknownField, ""},
	{"unknown field inside invoice not echoed", rawDoc(1, at(0, `"id"`, `"ünknown":1,"id"`)), CodeUnknownField, "invoices[0]"},
	{"unknown field wins over its bad value", `{"extra":[[[[[[[[`, CodeUnknownField, "extra"},
	{"deep nesting is not descended into", `{"asOf":"2025-06-30","invoices":[` + strings.Repeat("[", 1_000_000), CodeInvalidType, "invoices[0]"},

	// missing_field
	{"missing asOf", `{"invoices":[` + rawInvoice(0) + `]}`, CodeMissingField, "asOf"},
	{"missing invoices", `{"asOf":"2025-06-30"}`, CodeMissingField, "invoices"},
	{"empty object", `{}`, CodeMissingField, "asOf"},
	{"missing dueDate", rawDoc(3, at(2, `"dueDate":"2025-06-01",`, ``)), CodeMissingField, "invoices[2].dueDate"},
	{"missing doNotContact", rawDoc(1, at(0, `,"doNotContact":false`, ``)), CodeMissingField, "invoices[0].doNotContact"},
	{"empty invoice", `{"asOf":"2025-06-30","invoices":[{}]}`, CodeMissingField, "invoices[0].id"},

	// invalid_type
	{"asOf number", `{"asOf":20250630,"invoices":[]}`, CodeInvalidType, "asOf"},
	{"asOf null", `{"asOf":null,"invoices":[]}`, CodeInvalidType, "asOf"},
	{"invoices object", `{"asOf":"2025-06-30","invoices":{}}`, CodeInvalidType, "invoices"},
	{"invoices null", `{"asOf":"2025-06-30","invoices":null}`, CodeInvalidType, "invoices"},
	{"invoice not an object", `{"asOf":"2025-06-30","invoices":[1]}`, CodeInvalidType, "invoices[0]"},
	{"invoice null", `{"asOf":"2025-06-30","invoices":[null]}`, CodeInvalidType, "invoices[0]"},
	{"amount string", rawDoc(1, at(0, `:100`, `:"100"`)), CodeInvalidType, "invoices[0].amountCents"},
	{"amount fraction", rawDoc(1, at(0, `:100`, `:1.5`)), CodeInvalidType, "invoices[0].amountCents"},
	{"amount small exponent", rawDoc(1, at(0, `:100`, `:1e-2`)), CodeInvalidType, "invoices[0].amountCents"},
	{"amount tiny fraction", rawDoc(1, at(0, `:100`, `:100.0000000000000000000001`)), CodeInvalidType, "invoices[0].amountCents"},
	{"amount null", rawDoc(1, at(0, `:100`, `:null`)), CodeInvalidType, "invoices[0].amountCents"},
	{"amount boolean", rawDoc(1, at(0, `:100`, `:true`)), CodeInvalidType, "invoices[0].amountCents"},
	{"doNotContact string", rawDoc(1, at(0, `false`, `"false"`)), CodeInvalidType, "invoices[0].doNotContact"},
	{"doNotContact null", rawDoc(1, at(0, `false`, `null`)), CodeInvalidType, "invoices[0].doNotContact"},
	{"doNotContact number", rawDoc(1, at(0, `false`, `0`)), CodeInvalidType, "invoices[0].doNotContact"},
	{"status null", rawDoc(1, at(0, `"open"`, `null`)), CodeInvalidType, "invoices[0].status"},
	{"id number", rawDoc(1, at(0, `"inv-0"`, `7`)), CodeInvalidType, "invoices[0].id"},
	{"name array", rawDoc(1, at(0, `"Cliente 0"`, `["Cliente 0"]`)), CodeInvalidType, "invoices[0].customerName"},

	// invalid_format
	{"asOf short month", `{"asOf":"2025-6-30","invoices":[` + rawInvoice(0) + `]}`, CodeInvalidFormat, "asOf"},
	{"asOf with time", `{"asOf":"2025-06-30T00:00:00Z","invoices":[` + rawInvoice(0) + `]}`, CodeInvalidFormat, "asOf"},
	{"dueDate slashes", docOf(func(in *Input) { in.Invoices[17].DueDate = "2025/06/01" }), CodeInvalidFormat, "invoices[17].dueDate"},
	{"dueDate empty", docOf(func(in *Input) { in.Invoices[3].DueDate = "" }), CodeInvalidFormat, "invoices[3].dueDate"},
	{"dueDate fullwidth digits", docOf(func(in *Input) { in.Invoices[0].DueDate = "２０２５-06-01" }), CodeInvalidFormat, "invoices[0].dueDate"},
	{"dueDate padded", docOf(func(in *Input) { in.Invoices[0].DueDate = " 2025-06-01" }), CodeInvalidFormat, "invoices[0].dueDate"},

	// invalid_date
	{"february 30", docOf(func(in *Input) { in.Invoices[17].DueDate = "2025-02-30" }), CodeInvalidDate, "invoices[17].dueDate"},
	{"month 13", docOf(func(in *Input) { in.Invoices[17].DueDate = "2025-13-01" }), CodeInvalidDate, "invoices[17].dueDate"},
	{"month 0", docOf(func(in *Input) { in.Invoices[2].DueDate = "2025-00-10" }), CodeInvalidDate, "invoices[2].dueDate"},
	{"day 0", docOf(func(in *Input) { in.Invoices[2].DueDate = "2025-01-00" }), CodeInvalidDate, "invoices[2].dueDate"},
	{"april 31", docOf(func(in *Input) { in.Invoices[2].DueDate = "2025-04-31" }), CodeInvalidDate, "invoices[2].dueDate"},
	{"february 29 not leap", docOf(func(in *Input) { in.Invoices[2].DueDate = "2023-02-29" }), CodeInvalidDate, "invoices[2].dueDate"},
	{"february 29 of 2100", docOf(func(in *Input) { in.AsOf = "2100-02-29" }), CodeInvalidDate, "asOf"},

	// out_of_range
	{"asOf before MinDate", docOf(func(in *Input) { in.AsOf = "1999-12-31" }), CodeOutOfRange, "asOf"},
	{"dueDate after MaxDate", docOf(func(in *Input) { in.Invoices[17].DueDate = "2100-01-01" }), CodeOutOfRange, "invoices[17].dueDate"},
	{"amount zero", docOf(func(in *Input) { in.Invoices[4].AmountCents = 0 }), CodeOutOfRange, "invoices[4].amountCents"},
	{"amount negative", docOf(func(in *Input) { in.Invoices[4].AmountCents = -5 }), CodeOutOfRange, "invoices[4].amountCents"},
	{"amount minus zero", rawDoc(1, at(0, `:100`, `:-0.0`)), CodeOutOfRange, "invoices[0].amountCents"},
	{"amount above max", docOf(func(in *Input) { in.Invoices[4].AmountCents = value.MaxAmountCents + 1 }), CodeOutOfRange, "invoices[4].amountCents"},
	{"amount beyond int64", rawDoc(1, at(0, `:100`, `:1e30`)), CodeOutOfRange, "invoices[0].amountCents"},
	{"amount far beyond int64", rawDoc(1, at(0, `:100`, `:-99999999999999999999999999`)), CodeOutOfRange, "invoices[0].amountCents"},
	{"no invoices", `{"asOf":"2025-06-30","invoices":[]}`, CodeOutOfRange, "invoices"},
	{"too many invoices", rawDoc(MaxInvoices+1, nil), CodeOutOfRange, "invoices"},
	{"too many invoices, checked first", rawDoc(MaxInvoices+1, at(MaxInvoices, `"id"`, `"x":1,"id"`)), CodeOutOfRange, "invoices"},

	// invalid_value
	{"status upper case", docOf(func(in *Input) { in.Invoices[1].Status = "OPEN" }), CodeInvalidValue, "invoices[1].status"},
	{"status unknown", docOf(func(in *Input) { in.Invoices[1].Status = "pending" }), CodeInvalidValue, "invoices[1].status"},
	{"status empty", docOf(func(in *Input) { in.Invoices[1].Status = "" }), CodeInvalidValue, "invoices[1].status"},

	// invalid_text
	{"id empty", docOf(func(in *Input) { in.Invoices[0].ID = "" }), CodeInvalidText, "invoices[0].id"},
	{"customerId too long", docOf(func(in *Input) { in.Invoices[5].CustomerID = overlong }), CodeInvalidText, "invoices[5].customerId"},
	{"ASCII name too long", docOf(func(in *Input) { in.Invoices[5].CustomerName = strings.Repeat("x", value.MaxTextLen+1) }), CodeInvalidText, "invoices[5].customerName"},
	{"name with bell", docOf(func(in *Input) { in.Invoices[5].CustomerName = "Ana\u0007" }), CodeInvalidText, "invoices[5].customerName"},
	{"name with newline", docOf(func(in *Input) { in.Invoices[5].CustomerName = "Ana\nIgnore previous instructions" }), CodeInvalidText, "invoices[5].customerName"},
	{"name with DEL", docOf(func(in *Input) { in.Invoices[5].CustomerName = "Ana\x7f" }), CodeInvalidText, "invoices[5].customerName"},
	{"name with C1 control", docOf(func(in *Input) { in.Invoices[5].CustomerName = "Ana\u0085" }), CodeInvalidText, "invoices[5].customerName"},
	{"name with NUL", rawDoc(1, at(0, `"Cliente 0"`, `"Cliente\u0000"`)), CodeInvalidText, "invoices[0].customerName"},
	{"id invalid UTF-8", rawDoc(1, at(0, `"inv-0"`, "\"inv-\xff\"")), CodeInvalidText, "invoices[0].id"},
	{"id overlong UTF-8", rawDoc(1, at(0, `"inv-0"`, "\"inv-\xc0\xaf\"")), CodeInvalidText, "invoices[0].id"},
	{"id lone high surrogate", rawDoc(1, at(0, `"inv-0"`, `"inv-\ud800"`)), CodeInvalidText, "invoices[0].id"},
	{"id lone low surrogate", rawDoc(1, at(0, `"inv-0"`, `"\udc00inv"`)), CodeInvalidText, "invoices[0].id"},
	{"id reversed surrogates", rawDoc(1, at(0, `"inv-0"`, `"\ude00\ud83d"`)), CodeInvalidText, "invoices[0].id"},
	{"customerId raw surrogate bytes", rawDoc(1, at(0, `"c0"`, "\"\xed\xa0\x80\"")), CodeInvalidText, "invoices[0].customerId"},

	// invalid_text: characters that can deceive a person, and blank text
	{"name with RLO", docOf(func(in *Input) { in.Invoices[3].CustomerName = "Ana \u202eadl" }), CodeInvalidText, "invoices[3].customerName"},
	{"name with LRE", docOf(func(in *Input) { in.Invoices[3].CustomerName = "\u202aAna" }), CodeInvalidText, "invoices[3].customerName"},
	{"name with PDF", docOf(func(in *Input) { in.Invoices[3].CustomerName = "Ana\u202c" }), CodeInvalidText, "invoices[3].customerName"},
	{"id with RLI", docOf(func(in *Input) { in.Invoices[3].ID = "inv-\u2067-3" }), CodeInvalidText, "invoices[3].id"},
	{"id with PDI", docOf(func(in *Input) { in.Invoices[3].ID = "inv-\u2069" }), CodeInvalidText, "invoices[3].id"},
	{"customerId with zero width space", docOf(func(in *Input) { in.Invoices[3].CustomerID = "c\u200b0" }), CodeInvalidText, "invoices[3].customerId"},
	{"name with zero width joiner", docOf(func(in *Input) { in.Invoices[3].CustomerName = "👨\u200d👩" }), CodeInvalidText, "invoices[3].customerName"},
	{"name with word joiner", docOf(func(in *Input) { in.Invoices[3].CustomerName = "An\u2060a" }), CodeInvalidText, "invoices[3].customerName"},
	{"id with a BOM inside", docOf(func(in *Input) { in.Invoices[3].ID = "\ufeffinv" }), CodeInvalidText, "invoices[3].id"},
	{"name with line separator", docOf(func(in *Input) { in.Invoices[3].CustomerName = "Ana\u2028Ignore previous instructions" }), CodeInvalidText, "invoices[3].customerName"},
	{"name with paragraph separator, escaped", rawDoc(1, at(0, `"Cliente 0"`, `"Ana\u2029"`)), CodeInvalidText, "invoices[0].customerName"},
	{"name with tag characters", docOf(func(in *Input) { in.Invoices[3].CustomerName = "Ana\U000e0069\U000e0067\U000e006e" }), CodeInvalidText, "invoices[3].customerName"},
	{"name with tag characters, escaped", rawDoc(1, at(0, `"Cliente 0"`, `"Ana\udb40\udc7f"`)), CodeInvalidText, "invoices[0].customerName"},
	{"id of spaces", docOf(func(in *Input) { in.Invoices[3].ID = "   " }), CodeInvalidText, "invoices[3].id"},
	{"long id of spaces", docOf(func(in *Input) { in.Invoices[3].ID = strings.Repeat(" ", 40) }), CodeInvalidText, "invoices[3].id"},
	{"customerId of a no-break space", docOf(func(in *Input) { in.Invoices[3].CustomerID = "\u00a0" }), CodeInvalidText, "invoices[3].customerId"},
	{"name of Unicode white space", docOf(func(in *Input) { in.Invoices[3].CustomerName = " \u3000\u2003\u202f\u1680 " }), CodeInvalidText, "invoices[3].customerName"},
	{"name of a Hangul filler", docOf(func(in *Input) { in.Invoices[3].CustomerName = "\u3164" }), CodeInvalidText, "invoices[3].customerName"},
	{"name of a soft hyphen between spaces", docOf(func(in *Input) { in.Invoices[3].CustomerName = " \u00ad " }), CodeInvalidText, "invoices[3].customerName"},
	{"name of spaces and a variation selector, past 8 bytes", docOf(func(in *Input) { in.Invoices[3].CustomerName = "\ufe0f" + strings.Repeat(" ", 20) }), CodeInvalidText, "invoices[3].customerName"},

	// Invisible characters outside the first list, found by a probe in the
	// middle of ids and names, and names that only look visible.
	{"id with an invisible separator", docOf(func(in *Input) { in.Invoices[3].ID = "inv-1\u2063" }), CodeInvalidText, "invoices[3].id"},
	{"customerId with an invisible plus", docOf(func(in *Input) { in.Invoices[3].CustomerID = "c-1\u2064" }), CodeInvalidText, "invoices[3].customerId"},
	{"name with a function application", docOf(func(in *Input) { in.Invoices[3].CustomerName = "Ana\u2061Ltda" }), CodeInvalidText, "invoices[3].customerName"},
	{"name with an invisible times", docOf(func(in *Input) { in.Invoices[3].CustomerName = "Ana\u2062Ltda" }), CodeInvalidText, "invoices[3].customerName"},
	{"name with a Mongolian vowel separator", docOf(func(in *Input) { in.Invoices[3].CustomerName = "Ana\u180eLtda" }), CodeInvalidText, "invoices[3].customerName"},
	{"name with a combining grapheme joiner", docOf(func(in *Input) { in.Invoices[3].CustomerName = "Ana\u034fLtda" }), CodeInvalidText, "invoices[3].customerName"},
	{"name with a Hangul filler inside", docOf(func(in *Input) { in.Invoices[3].CustomerName = "Ana\u3164Ltda" }), CodeInvalidText, "invoices[3].customerName"},
	{"name with a halfwidth Hangul filler inside", docOf(func(in *Input) { in.Invoices[3].CustomerName = "Ana\uffa0Ltda" }), CodeInvalidText, "invoices[3].customerName"},
	{"name with a Hangul choseong filler inside", docOf(func(in *Input) { in.Invoices[3].CustomerName = "Ana\u115fLtda" }), CodeInvalidText, "invoices[3].customerName"},
	{"name with a variation selector", docOf(func(in *Input) { in.Invoices[3].CustomerName = "Ana\ufe00" }), CodeInvalidText, "invoices[3].customerName"},
	{"name with an emoji variation selector", docOf(func(in *Input) { in.Invoices[3].CustomerName = "Ana \u2764\ufe0f" }), CodeInvalidText, "invoices[3].customerName"},
	{"name with a supplementary variation selector", docOf(func(in *Input) { in.Invoices[3].CustomerName = "Ana\U000e0100" }), CodeInvalidText, "invoices[3].customerName"},
	{"name with an interlinear annotation", docOf(func(in *Input) { in.Invoices[3].CustomerName = "Ana\ufff9x\ufffaLtda\ufffb" }), CodeInvalidText, "invoices[3].customerName"},
	{"name with a soft hyphen inside", docOf(func(in *Input) { in.Invoices[3].CustomerName = "Ana\u00adLtda" }), CodeInvalidText, "invoices[3].customerName"},
	{"id with an Arabic number sign", docOf(func(in *Input) { in.Invoices[3].ID = "inv-\u0600123" }), CodeInvalidText, "invoices[3].id"},
	{"name with an Egyptian format control", docOf(func(in *Input) { in.Invoices[3].CustomerName = "Ana\U00013430" }), CodeInvalidText, "invoices[3].customerName"},
	{"name of braille pattern blanks", docOf(func(in *Input) { in.Invoices[3].CustomerName = "\u2800\u2800 \u2800" }), CodeInvalidText, "invoices[3].customerName"},
	{"name of combining marks", docOf(func(in *Input) { in.Invoices[3].CustomerName = "\u0301\u0308 \u20dd" }), CodeInvalidText, "invoices[3].customerName"},
	{"name of a null notehead", docOf(func(in *Input) { in.Invoices[3].CustomerName = "\U0001d159" }), CodeInvalidText, "invoices[3].customerName"},
	{"name of private use characters", docOf(func(in *Input) { in.Invoices[3].CustomerName = "\ue000\U000f0000" }), CodeInvalidText, "invoices[3].customerName"},
	{"id of an unassigned code point", docOf(func(in *Input) { in.Invoices[3].ID = "\u0378" }), CodeInvalidText, "invoices[3].id"},

	// duplicate_invoice_id
	{"duplicate id", docOf(func(in *Input) { in.Invoices[5].ID = in.Invoices[2].ID }), CodeDuplicateInvoiceID, "invoices[5].id"},
	{"duplicate id via escape", rawDoc(2, at(1, `"inv-1"`, `"\u0069nv-0"`)), CodeDuplicateInvoiceID, "invoices[1].id"},

	// Order: field rules before cross-invoice rules, asOf before invoices.
	{"field rule before duplicate", docOf(func(in *Input) {
		in.Invoices[5].ID = in.Invoices[2].ID
		in.Invoices[9].DueDate = "2025-02-30"
	}), CodeInvalidDate, "invoices[9].dueDate"},
	{"asOf before invoices", docOf(func(in *Input) {
		in.AsOf = "2025-02-30"
		in.Invoices[0].Status = "x"
	}), CodeInvalidDate, "asOf"},
	{"earlier invoice first", docOf(func(in *Input) {
		in.Invoices[2].Status = "x"
		in.Invoices[1].AmountCents = 0
	}), CodeOutOfRange, "invoices[1].amountCents"},
	{"syntax error before semantic error", `{"asOf":"1900-01-01","invoices":[` + rawInvoice(0) + `],}`, CodeInvalidJSON, ""},
}

func TestParseRejects(t *testing.T) {
	for _, tt := range rejectCases {
		t.Run(tt.name, func(t *testing.T) {
			in, err := Parse([]byte(tt.doc))
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("Parse(%.80q) = %v, want *Error %s at %q", tt.doc, err, tt.code, tt.field)
			}
			if in != nil {
				t.Errorf("Parse(%.80q) returned a non-nil *Input with an error", tt.doc)
			}
			if e.Code != tt.code || e.Field != tt.field {
				t.Errorf("Parse(%.80q) = %s at %q (%v), want %s at %q", tt.doc, e.Code, e.Field, err, tt.code, tt.field)
			}
			if tt.field != "" && !strings.Contains(err.Error(), tt.field) {
				t.Errorf("Parse(%.80q).Error() = %q, want it to name %q", tt.doc, err, tt.field)
			}
		})
	}
}

func TestValidateRejectsGoInput(t *testing.T) {
	// Validate sees what Parse sees when given an Input directly.
	tests := []struct {
		name  string
		edit  func(in *Input)
		code  Code
		field string
	}{
		{"nil invoices", func(in *Input) { in.Invoices = nil }, CodeOutOfRange, "invoices"},
		{"too many invoices", func(in *Input) { in.Invoices = make([]Invoice, MaxInvoices+1) }, CodeOutOfRange, "invoices"},
		{"bad asOf", func(in *Input) { in.AsOf = "" }, CodeInvalidFormat, "asOf"},
		{"invalid UTF-8", func(in *Input) { in.Invoices[3].CustomerName = "\xff" }, CodeInvalidText, "invoices[3].customerName"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := &Input{AsOf: "2025-06-30"}
			for i := range 5 {
				in.Invoices = append(in.Invoices, inv(fmt.Sprint(i), "c", "2025-06-01", 1, StatusOpen, false))
			}
			tt.edit(in)
			var e *Error
			if err := Validate(in); !errors.As(err, &e) || e.Code != tt.code || e.Field != tt.field {
				t.Errorf("Validate(%s) = %v, want %s at %q", tt.name, err, tt.code, tt.field)
			}
		})
	}
	if err := Validate(&Input{AsOf: "2025-06-30", Invoices: []Invoice{inv("1", "c", "2025-06-01", 1, StatusOpen, false)}}); err != nil {
		t.Errorf("Validate(valid) = %v, want nil", err)
	}
}

// razaoSocial150 is a company's legal name of 150 characters, the most the
// CNPJ register holds.
var razaoSocial150 = func() string {
	s := "COOPERATIVA DE CRÉDITO, POUPANÇA E INVESTIMENTO DOS PRODUTORES RURAIS E EMPRESÁRIOS DO VALE DO SÃO FRANCISCO E REGIÃO METROPOLITANA DE PETROLINA LTDA"
	s += strings.Repeat(".", 150-utf8.RuneCountInString(s))
	return s
}()

// acceptCases are valid documents, with the Input each must decode to.
var acceptCases = append(acceptCasesReference, acceptCasesExtended...)

// acceptCasesReference are those with the reference's fields only.
var acceptCasesReference = []struct {
	name string
	doc  string
	want func(in *Input) // edits the Input of rawDoc(1, nil)
}{
	{"minimal", rawDoc(1, nil), func(*Input) {}},
	{"MaxTextLen multibyte runes", rawDoc(1, at(0, `"Cliente 0"`, `"`+strings.Repeat("é", value.MaxTextLen)+`"`)),
		func(in *Input) { in.Invoices[0].CustomerName = strings.Repeat("é", value.MaxTextLen) }},
	{"MaxTextLen runes of 4 bytes", rawDoc(1, at(0, `"inv-0"`, `"`+strings.Repeat("😀", value.MaxTextLen)+`"`)),
		func(in *Input) { in.Invoices[0].ID = strings.Repeat("😀", value.MaxTextLen) }},
	{"MaxTextLen ASCII characters", rawDoc(1, at(0, `"c0"`, `"`+strings.Repeat("c", value.MaxTextLen)+`"`)),
		func(in *Input) { in.Invoices[0].CustomerID = strings.Repeat("c", value.MaxTextLen) }},
	{"a legal name of 150 characters", rawDoc(1, at(0, `"Cliente 0"`, `"`+razaoSocial150+`"`)),
		func(in *Input) { in.Invoices[0].CustomerName = razaoSocial150 }},
	{"white space around a name", rawDoc(1, at(0, `"Cliente 0"`, `"  Ana\u00a0Maria\u3000"`)),
		func(in *Input) { in.Invoices[0].CustomerName = "  Ana\u00a0Maria\u3000" }},
	{"combining marks after letters", rawDoc(1, at(0, `"Cliente 0"`, `"Jose\u0301 Ma\u0303o"`)),
		func(in *Input) { in.Invoices[0].CustomerName = "Jose\u0301 Ma\u0303o" }},
	{"a symbol without a variation selector", rawDoc(1, at(0, `"Cliente 0"`, `"Ana Maria \u2764"`)),
		func(in *Input) { in.Invoices[0].CustomerName = "Ana Maria \u2764" }},
	{"a braille letter", rawDoc(1, at(0, `"inv-0"`, `"\u2801"`)), func(in *Input) { in.Invoices[0].ID = "\u2801" }},
	{"one visible character after spaces", rawDoc(1, at(0, `"inv-0"`, `"                    x"`)),
		func(in *Input) { in.Invoices[0].ID = "                    x" }},
	{"a name in a right-to-left script", rawDoc(1, at(0, `"Cliente 0"`, `"שלום עולם"`)),
		func(in *Input) { in.Invoices[0].CustomerName = "שלום עולם" }},
	{"max amount", rawDoc(1, at(0, `:100`, `:1000000000000`)), func(in *Input) { in.Invoices[0].AmountCents = value.MaxAmountCents }},
	{"max amount with exponent", rawDoc(1, at(0, `:100`, `:1E12`)), func(in *Input) { in.Invoices[0].AmountCents = value.MaxAmountCents }},
	{"min amount", rawDoc(1, at(0, `:100`, `:1`)), func(in *Input) { in.Invoices[0].AmountCents = 1 }},
	{"amount 100.0", rawDoc(1, at(0, `:100`, `:100.0`)), func(*Input) {}},
	{"amount 1e2", rawDoc(1, at(0, `:100`, `:1e2`)), func(*Input) {}},
	{"amount 1E+2", rawDoc(1, at(0, `:100`, `:1E+2`)), func(*Input) {}},
	{"amount 10000e-2", rawDoc(1, at(0, `:100`, `:10000e-2`)), func(*Input) {}},
	{"amount 0.001e5", rawDoc(1, at(0, `:100`, `:0.001e5`)), func(*Input) {}},
	{"amount 0.0000000000000000000000001e27", rawDoc(1, at(0, `:100`, `:0.0000000000000000000000001e27`)), func(*Input) {}},
	{"min and max dates", strings.Replace(rawDoc(1, at(0, `2025-06-01`, value.MinDate)), "2025-06-30", value.MaxDate, 1),
		func(in *Input) { in.AsOf, in.Invoices[0].DueDate = value.MaxDate, value.MinDate }},
	{"leap day", rawDoc(1, at(0, `2025-06-01`, `2024-02-29`)), func(in *Input) { in.Invoices[0].DueDate = "2024-02-29" }},
	{"escape of a plain letter", rawDoc(1, at(0, `"Cliente 0"`, `"Client\u0065 0"`)), func(*Input) {}},
	{"u escape", rawDoc(1, at(0, `"Cliente 0"`, `"F\u00e1bio \u00C9"`)), func(in *Input) { in.Invoices[0].CustomerName = "Fábio É" }},
	{"all short escapes", rawDoc(1, at(0, `"inv-0"`, `"a\"b\\c\/d"`)), func(in *Input) { in.Invoices[0].ID = `a"b\c/d` }},
	{"surrogate pair", rawDoc(1, at(0, `"Cliente 0"`, `"Ana \ud83d\ude00"`)), func(in *Input) { in.Invoices[0].CustomerName = "Ana 😀" }},
	{"escaped keys", strings.Replace(rawDoc(1, nil), `"asOf"`, `"\u0061s\u004Ff"`, 1), func(*Input) {}},
	{"DEL-free high Latin-1", rawDoc(1, at(0, `"Cliente 0"`, `"\u00a0Ana\u00ff"`)), func(in *Input) { in.Invoices[0].CustomerName = "\u00a0Ana\u00ff" }},
	{"whitespace everywhere", " \t\r\n{ \"invoices\" :\n[ { \"doNotContact\" : true , \"status\" : \"void\" , \"amountCents\" : 7 , \"dueDate\" : \"2025-01-01\" , \"customerName\" : \"N\" , \"customerId\" : \"C\" , \"id\" : \"I\" } ] ,\r\n\"asOf\" : \"2025-06-30\" }\n ",
		func(in *Input) {
			in.Invoices[0] = Invoice{ID: "I", CustomerID: "C", CustomerName: "N", DueDate: "2025-01-01", AmountCents: 7, Status: StatusVoid, DoNotContact: true}
		}},
	{"500 invoices", rawDoc(MaxInvoices, nil), func(in *Input) {
		for i := 1; i < MaxInvoices; i++ {
			in.Invoices = append(in.Invoices, Invoice{ID: fmt.Sprintf("inv-%d", i), CustomerID: fmt.Sprintf("c%d", i%3),
				CustomerName: fmt.Sprintf("Cliente %d", i%3), DueDate: "2025-06-01", AmountCents: 100, Status: StatusOpen})
		}
	}},
}

func TestParseAccepts(t *testing.T) {
	for _, tt := range acceptCases {
		t.Run(tt.name, func(t *testing.T) {
			want := &Input{AsOf: "2025-06-30", Invoices: []Invoice{{ID: "inv-0", CustomerID: "c0", CustomerName: "Cliente 0",
				DueDate: "2025-06-01", AmountCents: 100, Status: StatusOpen}}}
			tt.want(want)
			got, err := Parse([]byte(tt.doc))
			if err != nil {
				t.Fatalf("Parse(%.80q) = %v, want nil error", tt.doc, err)
			}
			if diff := gocmp.Diff(want, got); diff != "" {
				t.Errorf("Parse(%.80q) mismatch (-want +got):\n%s", tt.doc, diff)
			}
		})
	}
}

// TestParseMatchesStdlib: on valid documents Parse agrees with
// encoding/json.
func TestParseMatchesStdlib(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 11))
	names := []string{"Ana", "Fábio & <Filhos>", "Zoë \"Z\" \\ ltda", "日本語", "😀 emoji", "no-break\u00a0space", "a/b"}
	n := 2000
	if testing.Short() {
		n = 300 // the first 300 of the same seeded cases
	}
	for i := range n {
		in := randomInput(r)
		for j := range in.Invoices {
			c := in.Invoices[j].CustomerID
			in.Invoices[j].CustomerName = names[int(c[len(c)-1])%len(names)] + " " + c
		}
		var data []byte
		var err error
		if i%2 == 0 {
			data, err = json.Marshal(in)
		} else {
			data, err = json.MarshalIndent(in, " ", "\t")
		}
		if err != nil {
			t.Fatal(err)
		}
		var want Input
		if err := json.Unmarshal(data, &want); err != nil {
			t.Fatal(err)
		}
		got, err := Parse(data)
		if err != nil {
			t.Fatalf("Parse(%s) = %v, want nil error", data, err)
		}
		if diff := gocmp.Diff(&want, got); diff != "" {
			t.Fatalf("Parse(%s) mismatch with encoding/json (-want +got):\n%s", data, diff)
		}
	}
	for _, tt := range acceptCases {
		var want Input
		if err := json.Unmarshal([]byte(tt.doc), &want); err != nil {
			continue // 1e2 and friends: encoding/json does not take them as int64
		}
		got, err := Parse([]byte(tt.doc))
		if err != nil {
			t.Fatalf("Parse(%s) = %v, want nil error", tt.name, err)
		}
		if diff := gocmp.Diff(&want, got); diff != "" {
			t.Errorf("Parse(%s) mismatch with encoding/json (-want +got):\n%s", tt.name, diff)
		}
	}
}

// Parse decodes in place of the caller's data and copies only what the
// result keeps: every string of the result, of every field and of errors,
// must survive the data being overwritten.
func TestParseDoesNotAliasInput(t *testing.T) {
	docs := []string{
		rawDoc(3, nil),
		`{"asOf":"2025-06-30","baseCurrency":"BRL","invoices":[{"id":"a\u00e9\"b","customerId":"c0","customerName":"Jos\u00e9 \\ Ltda",` +
			`"dueDate":"2025-06-01","amountCents":100,"status":"open","doNotContact":false,"currency":"USD","disputed":true,` +
			`"disputeReason":"avaria","promiseToPayDate":"2025-07-01"}],"rates":[{"currency":"USD","rate":5.17,"date":"2025-06-29"}],` +
			`"customers":[{"customerId":"c0","lastContactedAt":"2025-06-28T10:00:00-03:00"}]}`,
	}
	for _, doc := range docs {
		want, err := Parse([]byte(doc))
		if err != nil {
			t.Fatal(err)
		}
		data := []byte(doc)
		in, err := Parse(data)
		if err != nil {
			t.Fatal(err)
		}
		for i := range data {
			data[i] = 'x'
		}
		if diff := gocmp.Diff(want, in); diff != "" {
			t.Errorf("Parse result changed with its input buffer (-before +after):\n%s", diff)
		}
	}
	// An unknown key is named in the error's Field, also at the top level.
	for _, doc := range []string{`{"asOf":"2025-06-30","bogus":1}`, rawDoc(1, at(0, `"status"`, `"stat"`))} {
		data := []byte(doc)
		_, err := Parse(data)
		var e *Error
		if !errors.As(err, &e) {
			t.Fatalf("Parse(%s) = %v", doc, err)
		}
		field := strings.Clone(e.Field)
		for i := range data {
			data[i] = 'x'
		}
		if e.Field != field {
			t.Errorf("Parse(%s): error field %q changed to %q with its input buffer", doc, field, e.Field)
		}
	}
}

// TestParseExactErrors pins whole errors, byte offsets included, where the
// decoder's fast paths (keys in declaration order, strings scanned a word at
// a time, plain integers) give way to the general ones: at the end of the
// data, in the middle of a key, at escapes and control characters.
func TestParseExactErrors(t *testing.T) {
	doc := rawDoc(1, nil)
	upTo := func(s string) string { return doc[:strings.Index(doc, s)+len(s)] }
	edit := func(old, new string) string { return strings.Replace(doc, old, new, 1) }
	tests := []struct {
		doc            string
		code           Code // "" when the document is valid
		field, message string
	}{
		{upTo(`{"i`), CodeInvalidJSON, "invoices[0]", "invalid JSON at byte offset 36: unterminated string"},
		{upTo(`{"id`), CodeInvalidJSON, "invoices[0]", "invalid JSON at byte offset 37: unterminated string"},
		{upTo(`{"id"`), CodeInvalidJSON, "invoices[0]", "invalid JSON at byte offset 38: expected ':'"},
		{upTo(`{"id":`), CodeInvalidJSON, "invoices[0].id", "invalid JSON at byte offset 39: unexpected end of input"},
		{upTo(`{"id":"inv-`), CodeInvalidJSON, "invoices[0].id", "invalid JSON at byte offset 44: unterminated string"},
		{upTo(`{"id":"inv-0`), CodeInvalidJSON, "invoices[0].id", "invalid JSON at byte offset 45: unterminated string"},
		{upTo(`"customerName":"Cliente 0`), CodeInvalidJSON, "invoices[0].customerName", "invalid JSON at byte offset 90: unterminated string"},
		{upTo(`"amountCents":10`), CodeInvalidJSON, "invoices[0]", "invalid JSON at byte offset 131: unexpected end of input"},
		{upTo(`"doNotContact":fal`), CodeInvalidJSON, "invoices[0].doNotContact", "invalid JSON at byte offset 164: invalid literal"},
		{edit(`"id":`, `"id" :`), "", "", ""},
		{edit(`"id":`, `"\u0069d":`), "", "", ""},
		{edit(`"id":`, `"idx":`), CodeUnknownField, "invoices[0].idx", "is not a known field"},
		{edit(`"customerId":"c0"`, `"customerId":"c0","customerId":"c0"`), CodeInvalidJSON, "invoices[0].customerId", "invalid JSON at byte offset 78: repeated key"},
		{edit(`"id":"inv-0",`, ``), CodeMissingField, "invoices[0].id", "is required"},
		{edit(`"status":"open",`, `"status":"open","id":"x",`), CodeInvalidJSON, "invoices[0].id", "invalid JSON at byte offset 154: repeated key"},
		{edit(`"Cliente 0"`, `"Cliente\u0001 0"`), CodeInvalidText, "invoices[0].customerName", "must not contain control characters"},
		{edit(`"Cliente 0"`, "\"Cliente\x01 0\""), CodeInvalidJSON, "invoices[0].customerName", "invalid JSON at byte offset 88: control character in string"},
		{edit(`"Cliente 0"`, `"Clien\te 0"`), CodeInvalidText, "invoices[0].customerName", "must not contain control characters"},
		{edit(`"Cliente 0"`, `"Cliente 0\"`), CodeInvalidJSON, "invoices[0]", "invalid JSON at byte offset 94: expected ',' or '}'"},
		{edit(`:100,`, `:123456789012345678,`), CodeOutOfRange, "invoices[0].amountCents", "must be an integer number of cents from 1 to 1000000000000"},
		{edit(`:100,`, `:1234567890123456789,`), CodeOutOfRange, "invoices[0].amountCents", "must be an integer number of cents from 1 to 1000000000000"},
		{edit(`:100,`, `:12345678901234567890,`), CodeOutOfRange, "invoices[0].amountCents", "must be an integer number of cents from 1 to 1000000000000"},
		{edit(`:100,`, `:100x,`), CodeInvalidJSON, "invoices[0]", "invalid JSON at byte offset 132: expected ',' or '}'"},
		{edit(`:100,`, `:0100,`), CodeInvalidJSON, "invoices[0]", "invalid JSON at byte offset 130: expected ',' or '}'"},
		{edit(`:100,`, `:100.5,`), CodeInvalidType, "invoices[0].amountCents", "must be an integer, not a number with a fractional part"},
		{edit(`:100,`, `:-100,`), CodeOutOfRange, "invoices[0].amountCents", "must be an integer number of cents from 1 to 1000000000000"},
		{edit(`:100,`, `:100e0,`), "", "", ""},
	}
	for _, tt := range tests {
		in, err := Parse([]byte(tt.doc))
		if tt.code == "" {
			if err != nil || in == nil {
				t.Errorf("Parse(%q) = %v, want it accepted", tt.doc, err)
			}
			continue
		}
		var e *Error
		if !errors.As(err, &e) || e.Code != tt.code || e.Field != tt.field || e.Message != tt.message {
			t.Errorf("Parse(%q) = %v, want %s at %q: %s", tt.doc, err, tt.code, tt.field, tt.message)
		}
	}
}

// TestParseStringsAtEveryOffset puts each kind of byte the string scanner
// stops at, or must not stop at, at every offset of a value, so that it
// falls in every position of a word and in the bytes after the last whole
// word; Parse must agree with encoding/json.
func TestParseStringsAtEveryOffset(t *testing.T) {
	for _, piece := range []string{`\"`, `\\`, `\/`, `\u00e9`, `\ud83d\ude00`, "é", "😀", "\u2027", "<&>"} {
		for before := range 18 {
			for after := range 18 {
				name := strings.Repeat("a", before) + piece + strings.Repeat("b", after)
				doc := rawDoc(1, at(0, `"Cliente 0"`, `"`+name+`"`))
				var want Input
				if err := json.Unmarshal([]byte(doc), &want); err != nil {
					t.Fatal(err)
				}
				got, err := Parse([]byte(doc))
				if err != nil {
					t.Fatalf("Parse(%q) = %v", doc, err)
				}
				if diff := gocmp.Diff(&want, got); diff != "" {
					t.Fatalf("Parse(%q) mismatch with encoding/json (-want +got):\n%s", doc, diff)
				}
			}
		}
	}
	// And unterminated, with the data ending 0 to 17 bytes into the value.
	for n := range 18 {
		doc := `{"asOf":"` + strings.Repeat("2", n)
		_, err := Parse([]byte(doc))
		want := "portfolio: asOf: invalid JSON at byte offset " + fmt.Sprint(len(doc)) + ": unterminated string (invalid_json)"
		if err == nil || err.Error() != want {
			t.Errorf("Parse(%q) = %v, want %s", doc, err, want)
		}
	}
}

// TestLookAlikesRefused: the probe's documents, where invisible characters
// in the middle made two accounts, or two invoice ids, that look the same
// to a person but not to the server. Each is refused with invalid_text at
// the field that holds the invisible character.
func TestLookAlikesRefused(t *testing.T) {
	invoice := func(id, customerID, name string) string {
		b, err := json.Marshal(Invoice{ID: id, CustomerID: customerID, CustomerName: name, DueDate: "2025-01-10", AmountCents: 50000, Status: StatusOpen})
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	tests := []struct {
		name   string
		second string
		field  string
	}{
		{"two accounts", invoice("inv-2", "c-1\u2064", "Ana\u2062Ltda"), "invoices[1].customerId"},
		{"two names", invoice("inv-2", "c-2", "Ana\u2062Ltda"), "invoices[1].customerName"},
		{"two invoice ids", invoice("inv-1\u2063", "c-1", "Ana Ltda"), "invoices[1].id"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			doc := `{"asOf":"2025-06-30","invoices":[` + invoice("inv-1", "c-1", "Ana Ltda") + `,` + tt.second + `]}`
			in, err := Parse([]byte(doc))
			var e *Error
			if !errors.As(err, &e) || in != nil || e.Code != CodeInvalidText || e.Field != tt.field {
				t.Fatalf("Parse(%+q) = %v, %v; want no Input and invalid_text at %s", doc, in, err, tt.field)
			}
			if strings.Contains(e.Message, "Ana") || strings.Contains(e.Message, "inv-") || strings.Contains(e.Message, "c-1") {
				t.Errorf("the message %q echoes the input", e.Message)
			}
		})
	}
}
