package canonical

import (
	"encoding/json"
	"errors"
	"math"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/cobranca/cobranca/internal/portfolio/portfoliotest"
)

// RFC 8785 §3.2.2, the example of the whole scheme.
func TestRFC8785Example(t *testing.T) {
	in := `{
  "numbers": [333333333.33333329, 1E30, 4.50, 2e-3, 0.000000000000000000000000001],
  "string": "\u20ac$\u000F\u000aA'\u0042\u0022\u005c\\\"\/",
  "literals": [null, true, false]
}`
	want := `{"literals":[null,true,false],"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],"string":"€$\u000f\nA'B\"\\\\\"/"}`
	got, err := Transform([]byte(in))
	if err != nil || string(got) != want {
		t.Fatalf("Transform(RFC 8785 §3.2.2) = %s, %v; want %s", got, err, want)
	}
}

// RFC 8785 §3.2.3: keys sort by their UTF-16 code units, not by UTF-8 bytes
// (U+FB33 sorts after the surrogate pair of U+1F600 in UTF-16, before it in
// UTF-8), and only controls, '"' and '\' are escaped.
func TestRFC8785Sorting(t *testing.T) {
	in := `{
  "\u20ac": "Euro Sign",
  "\r": "Carriage Return",
  "\ufb33": "Hebrew Letter Dalet With Dagesh",
  "1": "One",
  "\ud83d\ude00": "Emoji: Grinning Face",
  "\u0080": "Control",
  "\u00f6": "Latin Small Letter O With Diaeresis"
}`
	want := `{"\r":"Carriage Return","1":"One","` + "\u0080" + `":"Control","ö":"Latin Small Letter O With Diaeresis",` +
		`"€":"Euro Sign","😀":"Emoji: Grinning Face","` + "\ufb33" + `":"Hebrew Letter Dalet With Dagesh"}`
	got, err := Transform([]byte(in))
	if err != nil || string(got) != want {
		t.Fatalf("Transform(RFC 8785 §3.2.3) =\n%s, %v\nwant\n%s", got, err, want)
	}
}

// RFC 8785 Appendix B: the number serialization samples, IEEE-754 bits and
// the ECMAScript text. Each double is written in the shortest form Go reads
// back exactly, inside an array, and must come out as the RFC says.
func TestRFC8785Numbers(t *testing.T) {
	for _, tc := range []struct{ bits, want string }{
		{"0000000000000000", "0"},
		{"8000000000000000", "0"}, // minus zero
		{"0000000000000001", "5e-324"},
		{"8000000000000001", "-5e-324"},
		{"7fefffffffffffff", "1.7976931348623157e+308"},
		{"ffefffffffffffff", "-1.7976931348623157e+308"},
		{"4340000000000000", "9007199254740992"},
		{"c340000000000000", "-9007199254740992"},
		{"4430000000000000", "295147905179352830000"},
		{"44b52d02c7e14af5", "9.999999999999997e+22"},
		{"44b52d02c7e14af6", "1e+23"},
		{"44b52d02c7e14af7", "1.0000000000000001e+23"},
		{"444b1ae4d6e2ef4e", "999999999999999700000"},
		{"444b1ae4d6e2ef4f", "999999999999999900000"},
		{"444b1ae4d6e2ef50", "1e+21"},
		{"3eb0c6f7a0b5ed8c", "9.999999999999997e-7"},
		{"3eb0c6f7a0b5ed8d", "0.000001"},
		{"41b3de4355555553", "333333333.3333332"},
		{"41b3de4355555554", "333333333.33333325"},
		{"41b3de4355555555", "333333333.3333333"},
		{"41b3de4355555556", "333333333.3333334"},
		{"41b3de4355555557", "333333333.33333343"},
		{"becbf647612f3696", "-0.0000033333333333333333"},
		{"43143ff3c1cb0959", "1424953923781206.2"},
	} {
		u, err := strconv.ParseUint(tc.bits, 16, 64)
		if err != nil {
			t.Fatal(err)
		}
		f := math.Float64frombits(u)
		for _, spelling := range []string{strconv.FormatFloat(f, 'g', -1, 64), strconv.FormatFloat(f, 'e', 20, 64)} {
			got, err := Transform([]byte("[" + spelling + "]"))
			if err != nil || string(got) != "["+tc.want+"]" {
				t.Errorf("Transform([%s]) (bits %s) = %s, %v; want [%s]", spelling, tc.bits, got, err, tc.want)
			}
		}
	}
	// NaN and the infinities of the table have no JSON spelling; the numbers
	// that would round to an infinity are refused (I-JSON).
	for _, s := range []string{"1e309", "-1e309", "1.8e308"} {
		if got, err := Transform([]byte(s)); err == nil {
			t.Errorf("Transform(%s) = %s, want an error", s, got)
		}
	}
}

// One value has one form: the spellings of the example and of every
// escape agree.
func TestSpellingsAgree(t *testing.T) {
	for _, group := range [][]string{
		{`100`, `100.0`, `1e2`, `1E+2`, `10000e-2`, ` 100 `},
		{`{"a":1,"b":[true,null]}`, "{ \"b\" : [ true , null ] ,\n\t\"a\" : 1.0 }", `{"\u0062":[true,null],"a":1}`},
		{`"\u2028\u2029"`, "\"\u2028\u2029\""},
		{`"é😀"`, `"\u00e9\ud83d\ude00"`, `"\u00E9\uD83D\uDE00"`},
		{`"\/"`, `"/"`, `"\u002f"`},
		{`"\b\f\n\r\t\"\\"`, `"\u0008\u000c\u000A\u000d\u0009\u0022\u005c"`},
		{`"\u0000\u001f\u007f"`, "\"\\u0000\\u001F\x7f\""},
	} {
		first, err := Transform([]byte(group[0]))
		if err != nil {
			t.Fatalf("Transform(%s): %v", group[0], err)
		}
		for _, s := range group[1:] {
			if got, err := Transform([]byte(s)); err != nil || string(got) != string(first) {
				t.Errorf("Transform(%s) = %s, %v; Transform(%s) = %s", s, got, err, group[0], first)
			}
		}
	}
	// And the escapes written are exactly RFC 8785's.
	got, err := Transform([]byte(`"\u0000\u0008\u0009\u000a\u000b\u000c\u000d\u001f\u0020\u007f\u2028<>&"`))
	if want := `"\u0000\b\t\n\u000b\f\r\u001f ` + "\x7f\u2028" + `<>&"`; err != nil || string(got) != want {
		t.Errorf("Transform(escapes) = %s, %v; want %s", got, err, want)
	}
}

// Whatever is not exactly one I-JSON value is refused, with a message that
// names the fault and quotes none of the document.
func TestRefused(t *testing.T) {
	for _, tc := range []struct{ doc, fault string }{
		{"", "unexpected EOF"},
		{" \n", "unexpected EOF"},
		{`1 2`, "improperly terminated"},
		{`{"a":1}x`, "improperly terminated"},
		{`{"secret":1,"secret":2}`, "duplicate key"},
		{`{"secret":1,"\u0073ecret":2}`, "duplicate key"},
		{`"\udc00"`, "surrogate"},
		{`"\ud800x"`, "surrogate"},
		{`"\ud800\u0041"`, "surrogate"},
		{`"\ud800"`, ""},
		{"\"secret \xff\"", "invalid UTF-8"},
		{"\"secret \xed\xa0\x80\"", "invalid UTF-8"},
		{"\xef\xbb\xbf1", "non-ASCII"},
		{"\"a\x01\"", "unterminated string"},
		{`"\x"`, "unexpected escape"},
		{`1e400`, "number out of range"},
		{`-1e400`, "number out of range"},
		{`01`, "invalid literal or number"},
		{`+1`, "invalid literal or number"},
		{`1.`, "invalid literal or number"},
		{`.5`, "invalid literal or number"},
		{`0x10`, "invalid literal or number"},
		{`NaN`, "invalid literal or number"},
		{`Infinity`, "invalid literal or number"},
		{`secret`, "invalid literal or number"},
		{`[1,]`, ""},
		{`{"a" 1}`, "expected ':'"},
		{`{"a":1`, ""},
		{`[`, ""},
	} {
		got, err := Transform([]byte(tc.doc))
		var ce *Error
		if !errors.As(err, &ce) {
			t.Errorf("Transform(%q) = %s, %v; want a *canonical.Error", tc.doc, got, err)
			continue
		}
		if msg := err.Error(); !strings.HasPrefix(msg, "canonical json: ") || !strings.Contains(msg, tc.fault) || strings.Contains(msg, "secret") {
			t.Errorf("Transform(%q) error = %q, want %q naming %q and quoting nothing", tc.doc, msg, "canonical json: ", tc.fault)
		}
	}
	if got, err := Transform(nil); err == nil || !strings.Contains(err.Error(), "unexpected EOF") {
		t.Errorf("Transform(nil) = %s, %v; want the empty document's error", got, err)
	}
}

// Deep nesting is refused, not a stack overflow.
func TestDeepNesting(t *testing.T) {
	doc := strings.Repeat("[", 20000) + strings.Repeat("]", 20000)
	if _, err := Transform([]byte(doc)); err == nil || !strings.Contains(err.Error(), "nesting") {
		t.Errorf("Transform(20000 nested arrays) error = %v, want the nesting limit", err)
	}
}

// FuzzTransform: the canonical form is a fixed point, is valid JSON of the
// same value as the input (as encoding/json reads both), and what encoding/json
// refuses has no canonical form.
func FuzzTransform(f *testing.F) {
	for _, s := range []string{`{"b":1,"a":[1.0,"x"]}`, `"\u2028"`, `1e2`, `{"\ud83d\ude00":1,"\ufb33":2}`, `[0.1,-0,5e-324]`,
		`"\u0000\""`, "\"\xff\"", `{"a":1,"a":1}`, `[[[]]]`, `123456789012345678901234567890`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, doc []byte) {
		c, err := Transform(doc)
		if err != nil {
			var ce *Error
			if !errors.As(err, &ce) {
				t.Fatalf("Transform(%q) error %v is not a *canonical.Error", doc, err)
			}
			return
		}
		if !json.Valid(doc) {
			t.Fatalf("Transform(%q) = %s, but encoding/json refuses the input", doc, c)
		}
		again, err := Transform(c)
		if err != nil || string(again) != string(c) {
			t.Fatalf("Transform(Transform(%q)) = %s, %v; want %s", doc, again, err, c)
		}
		var a, b any
		if err := json.Unmarshal(doc, &a); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(c, &b); err != nil {
			t.Fatalf("canonical form %s of %q is not JSON: %v", c, doc, err)
		}
		if !reflect.DeepEqual(a, b) { // numbers compare with ==, so -0 is 0
			t.Fatalf("Transform(%q) = %s changes the value: %v vs %v", doc, c, a, b)
		}
	})
}

// BenchmarkTransform is the canonical form of a 500-invoice analyze call's
// arguments, what the audit digests when a tool has no faster way.
func BenchmarkTransform(b *testing.B) {
	doc := portfoliotest.Args(500)
	b.SetBytes(int64(len(doc)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Transform(doc); err != nil {
			b.Fatal(err)
		}
	}
}
