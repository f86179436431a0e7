package portfolio

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	bojanz "github.com/bojanz/currency"
	gocmp "github.com/google/go-cmp/cmp"

	"github.com/cobranca/cobranca/internal/timestamp"
	"github.com/cobranca/cobranca/internal/value/valuetest"
)

// FuzzValidate feeds arbitrary bytes to Parse. Parse must not panic; a
// rejection must be a well-formed *Error; an acceptance must pass recheck,
// an independent and deliberately slow restatement of every rule (the text
// rules included: refused characters, blank text, lengths), and Analyze
// must then agree with the literal reference port, its name choice and
// warnings included, on reference-shaped documents, and AnalyzeWith with
// naiveAnalyze on every document. Conversely, a document recheck accepts must be
// accepted by Parse.
func FuzzValidate(f *testing.F) {
	for _, tt := range rejectCases {
		if len(tt.doc) < 4096 {
			f.Add([]byte(tt.doc))
		}
	}
	for _, tt := range acceptCases {
		if len(tt.doc) < 4096 {
			f.Add([]byte(tt.doc))
		}
	}
	// Customers under several names; one blank-looking name beside them.
	f.Add([]byte(rawDoc(7, at(3, `"Cliente 0"`, `"CLIENTE  0"`))))
	f.Add([]byte(rawDoc(5, at(4, `"Cliente 1"`, `"\u00a0Cliente 1\u00ad"`))))
	// An extended portfolio: currencies, disputes, promises, contacts.
	ext, err := json.Marshal(genExtended(6, 1, time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC)))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(ext)
	f.Fuzz(func(t *testing.T, data []byte) {
		in, err := Parse(data)
		checkPrefix(t, data, in, err)
		want, reason := recheck(data)
		if reason == unsure {
			return
		}
		if err != nil {
			var e *Error
			if !errors.As(err, &e) || !slices.Contains(allCodes, e.Code) || in != nil {
				t.Fatalf("Parse(%q) = %v, %v; want nil, *Error with a known code", data, in, err)
			}
			if want != nil {
				t.Fatalf("Parse(%q) = %v, but recheck accepts it", data, err)
			}
			return
		}
		if want == nil {
			t.Fatalf("Parse(%q) accepted it, but recheck rejects it: %s", data, reason)
		}
		if diff := gocmp.Diff(want, in); diff != "" {
			t.Fatalf("Parse(%q) mismatch with recheck (-want +got):\n%s", data, diff)
		}
		if referenceShaped(in) {
			if diff := gocmp.Diff(refResult(in), referenceView(Analyze(in))); diff != "" {
				t.Fatalf("Analyze(Parse(%q)) mismatch with reference (-want +got):\n%s", data, diff)
			}
		}
		o := Options{ContactPacing: 36 * time.Hour}
		if diff := gocmp.Diff(naiveAnalyze(in, o), AnalyzeWith(in, o)); diff != "" {
			t.Fatalf("AnalyzeWith(Parse(%q)) mismatch with naiveAnalyze (-want +got):\n%s", data, diff)
		}
	})
}

// referenceShaped reports whether in uses none of issue 15's fields.
func referenceShaped(in *Input) bool {
	for _, x := range in.Invoices {
		if *x.details() != (InvoiceDetails{}) {
			return false
		}
	}
	return in.BaseCurrency == "" && len(in.Rates) == 0 && len(in.Customers) == 0
}

// checkPrefix holds ParsePrefix to Parse: followed by the rest of a JSON-RPC
// request, a document Parse accepts is accepted whole, with its extent; and
// whatever prefix ParsePrefix accepts, Parse accepts alone, to the same Input.
func checkPrefix(t *testing.T, data []byte, in *Input, err error) {
	t.Helper()
	rest := append(slices.Clip(data), `,"name":"collections.analyze_portfolio"}}`...)
	pin, n, perr := ParsePrefix(rest)
	if err == nil {
		if perr != nil || n != len(bytes.TrimRight(data, " \t\r\n")) || !gocmp.Equal(in, pin) {
			t.Fatalf("ParsePrefix(%q) = %v, %d, %v; Parse accepted %q", rest, pin, n, perr, data)
		}
	}
	if perr != nil {
		var e *Error
		if !errors.As(perr, &e) || !slices.Contains(allCodes, e.Code) || pin != nil || n != 0 {
			t.Fatalf("ParsePrefix(%q) = %v, %d, %v; want nil, 0, *Error with a known code", rest, pin, n, perr)
		}
		return
	}
	whole, werr := Parse(rest[:n])
	if werr != nil || !gocmp.Equal(whole, pin) {
		t.Fatalf("ParsePrefix(%q) accepted %d bytes, but Parse of them = %v", rest, n, werr)
	}
}

var allCodes = Codes()

// recheck decides, without the package's code, whether data is a valid
// document: it returns the Input, or nil and why not, or nil and "unsure"
// when it cannot tell because encoding/json may have repaired a lone
// surrogate escape to U+FFFD.
func recheck(data []byte) (*Input, string) {
	if !utf8.Valid(data) {
		return nil, "invalid UTF-8"
	}
	// Exact keys, each exactly once, walked with the token API.
	if why := checkKeys(data); why != "" {
		return nil, why
	}
	type refInvoice struct {
		ID           *string          `json:"id"`
		CustomerID   *string          `json:"customerId"`
		CustomerName *string          `json:"customerName"`
		DueDate      *string          `json:"dueDate"`
		AmountCents  *json.RawMessage `json:"amountCents"`
		Status       *string          `json:"status"`
		DoNotContact *bool            `json:"doNotContact"`
		// Present when a document names one of them, as with Parse.
		*InvoiceDetails
	}
	type refRate struct {
		Currency *string          `json:"currency"`
		Rate     *json.RawMessage `json:"rate"`
		Date     *string          `json:"date"`
	}
	type refContact struct {
		CustomerID      *string `json:"customerId"`
		LastContactedAt *string `json:"lastContactedAt"`
	}
	var doc struct {
		AsOf         *string        `json:"asOf"`
		Invoices     *[]*refInvoice `json:"invoices"`
		BaseCurrency string         `json:"baseCurrency"`
		Rates        []*refRate     `json:"rates"`
		Customers    []*refContact  `json:"customers"`
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&doc); err != nil {
		return nil, "encoding/json: " + err.Error()
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, "data after the document"
	}
	if doc.AsOf == nil || doc.Invoices == nil {
		return nil, "missing or null top-level field"
	}
	in := &Input{AsOf: *doc.AsOf}
	if !valuetest.Date(in.AsOf) {
		return nil, "bad asOf"
	}
	if n := len(*doc.Invoices); n < 1 || n > 500 {
		return nil, "invoice count"
	}
	ids := map[string]bool{}
	for _, x := range *doc.Invoices {
		if x == nil || x.ID == nil || x.CustomerID == nil || x.CustomerName == nil || x.DueDate == nil ||
			x.AmountCents == nil || x.Status == nil || x.DoNotContact == nil {
			return nil, "missing or null invoice field"
		}
		for _, s := range []string{*x.ID, *x.CustomerID, *x.CustomerName} {
			if strings.ContainsRune(s, utf8.RuneError) && surrogateEscape.Match(data) {
				return nil, unsure
			}
			if why := valuetest.Text(s); why != "" {
				return nil, why
			}
		}
		if !valuetest.Date(*x.DueDate) {
			return nil, "bad dueDate"
		}
		raw := string(*x.AmountCents)
		if raw == "" || !(raw[0] == '-' || raw[0] >= '0' && raw[0] <= '9') {
			return nil, "amountCents is not a number"
		}
		amount, ok := refAmount(raw)
		if !ok {
			return nil, "bad amountCents"
		}
		if s := *x.Status; s != "open" && s != "paid" && s != "void" {
			return nil, "bad status"
		}
		if ids[*x.ID] {
			return nil, "duplicate id"
		}
		ids[*x.ID] = true
		dt := InvoiceDetails{}
		if x.InvoiceDetails != nil {
			dt = *x.InvoiceDetails
		}
		if dt.Currency != "" && !bojanz.IsValid(dt.Currency) {
			return nil, "bad currency"
		}
		if dt.DisputeReason != "" && !dt.Disputed {
			return nil, "disputeReason without disputed"
		}
		if why := valuetest.Text(dt.DisputeReason); dt.DisputeReason != "" && why != "" {
			return nil, why
		}
		if dt.PromiseToPayDate != "" && !valuetest.Date(dt.PromiseToPayDate) {
			return nil, "bad promiseToPayDate"
		}
		in.Invoices = append(in.Invoices, Invoice{ID: *x.ID, CustomerID: *x.CustomerID, CustomerName: *x.CustomerName,
			DueDate: *x.DueDate, AmountCents: amount, Status: Status(*x.Status), DoNotContact: *x.DoNotContact,
			InvoiceDetails: x.InvoiceDetails})
	}
	in.BaseCurrency = doc.BaseCurrency
	base := cmp.Or(doc.BaseCurrency, "BRL")
	if !bojanz.IsValid(base) {
		return nil, "bad baseCurrency"
	}
	if doc.Rates != nil {
		in.Rates = []ExchangeRate{}
	}
	if len(doc.Rates) > 200 {
		return nil, "too many rates"
	}
	rates := map[string]Decimal{}
	for _, r := range doc.Rates {
		if r == nil || r.Currency == nil || r.Rate == nil || r.Date == nil {
			return nil, "missing or null rate field"
		}
		if !bojanz.IsValid(*r.Currency) || *r.Currency == base {
			return nil, "bad rate currency"
		}
		d, why := refRateValue(string(*r.Rate))
		if why != "" {
			return nil, why
		}
		if !valuetest.Date(*r.Date) {
			return nil, "bad rate date"
		}
		if _, ok := rates[*r.Currency]; ok {
			return nil, "two rates for a currency"
		}
		rates[*r.Currency] = d
		in.Rates = append(in.Rates, ExchangeRate{Currency: *r.Currency, Rate: d, Date: *r.Date})
	}
	if doc.Customers != nil {
		in.Customers = []Contact{}
	}
	if len(doc.Customers) > 500 {
		return nil, "too many customers"
	}
	seen := map[string]bool{}
	for _, c := range doc.Customers {
		if c == nil || c.CustomerID == nil || c.LastContactedAt == nil {
			return nil, "missing or null customers field"
		}
		if strings.ContainsRune(*c.CustomerID, utf8.RuneError) && surrogateEscape.Match(data) {
			return nil, unsure
		}
		if why := valuetest.Text(*c.CustomerID); why != "" {
			return nil, why
		}
		if !valuetest.Date(*c.LastContactedAt) {
			t, err := timestamp.Parse(*c.LastContactedAt)
			if err != nil || t.UTC().Year() < 2000 || t.UTC().Year() > 2099 {
				return nil, "bad lastContactedAt"
			}
		}
		if seen[*c.CustomerID] {
			return nil, "two customers entries for a customer"
		}
		seen[*c.CustomerID] = true
		in.Customers = append(in.Customers, Contact{CustomerID: *c.CustomerID, LastContactedAt: *c.LastContactedAt})
	}
	for _, x := range in.Invoices {
		code := cmp.Or(x.details().Currency, "BRL")
		if code == base {
			continue
		}
		d, ok := rates[code]
		if !ok {
			return nil, "missing rate"
		}
		if v := naiveConvert(x.AmountCents, code, d, base); v < 1 || v > 1_000_000_000_000 {
			return nil, "converted amount out of range"
		}
	}
	return in, ""
}

// refRateValue reads a rate, a JSON number: greater than 0, at most 1e9, at most
// 12 decimal places and 18 significant digits once written without
// trailing zeros.
func refRateValue(raw string) (Decimal, string) {
	m := numberRE.FindStringSubmatch(raw)
	if m == nil {
		return Decimal{}, "rate is not a number"
	}
	if exp, err := strconv.Atoi(m[3]); m[3] != "" && (err != nil || exp > 1000 || exp < -1000) {
		return Decimal{}, "rate far out of range"
	}
	r, ok := new(big.Rat).SetString(raw)
	if !ok || r.Sign() <= 0 || r.Cmp(big.NewRat(1_000_000_000, 1)) > 0 {
		return Decimal{}, "rate out of range"
	}
	for scale := 0; scale <= 12; scale++ {
		v := new(big.Rat).Mul(r, new(big.Rat).SetInt(new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(scale)), nil)))
		if v.IsInt() {
			if len(v.Num().String()) > 18 {
				return Decimal{}, "rate has too many digits"
			}
			return Decimal{Coef: v.Num().Uint64(), Scale: uint8(scale)}, ""
		}
	}
	return Decimal{}, "rate has too many decimal places"
}

const unsure = "unsure"

var numberRE = regexp.MustCompile(`^-?(\d+)(?:\.(\d+))?(?:[eE]([+-]?\d+))?$`)

// refAmount reports whether raw, a JSON number, is an integer from 1 to
// MaxAmountCents, and which.
func refAmount(raw string) (int64, bool) {
	m := numberRE.FindStringSubmatch(raw)
	if m == nil {
		return 0, false
	}
	// big.Rat would build 10^exp: settle huge exponents first. A nonzero
	// value times 10^-1000 or less is a fraction, times 10^1000 too large.
	if exp, err := strconv.Atoi(m[3]); m[3] != "" && (err != nil || exp > 1000 || exp < -1000) {
		return 0, false
	}
	r, ok := new(big.Rat).SetString(raw)
	if !ok || !r.IsInt() || r.Sign() <= 0 || r.Num().Cmp(big.NewInt(1_000_000_000_000)) > 0 {
		return 0, false
	}
	return r.Num().Int64(), true
}

var surrogateEscape = regexp.MustCompile(`\\[uU][dD][89a-fA-F]`)

// checkKeys walks data's tokens and checks that the document object and
// each invoice object use exactly the schema's keys, once each. It reports
// nothing about syntax; encoding/json does that afterwards.
func checkKeys(data []byte) string {
	type frame struct {
		kind    string // doc, invoices, invoice or other
		object  bool
		keys    map[string]bool
		wantKey bool
		key     string // the key whose value comes next
	}
	// The keys of each kind of object; the required ones first, as many
	// as required says.
	fields := map[string][]string{
		"doc": {"asOf", "invoices", "baseCurrency", "rates", "customers"},
		"invoice": {"id", "customerId", "customerName", "dueDate", "amountCents", "status", "doNotContact",
			"currency", "disputed", "disputeReason", "promiseToPayDate"},
		"rate":     {"currency", "rate", "date"},
		"customer": {"customerId", "lastContactedAt"},
	}
	required := map[string]int{"doc": 2, "invoice": 7, "rate": 3, "customer": 2}
	var stack []*frame
	dec := json.NewDecoder(bytes.NewReader(data))
	for {
		tok, err := dec.Token()
		if err != nil {
			return "" // the end, or a syntax error for encoding/json to report
		}
		var top *frame
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		if d, ok := tok.(json.Delim); ok && (d == '}' || d == ']') {
			if _, ok := fields[top.kind]; ok && top.object {
				for _, k := range fields[top.kind][:required[top.kind]] {
					if !top.keys[k] {
						return "missing " + top.kind + " field"
					}
				}
			}
			stack = stack[:len(stack)-1]
			if len(stack) > 0 && stack[len(stack)-1].object {
				stack[len(stack)-1].wantKey = true
			}
			continue
		}
		if top != nil && top.object && top.wantKey {
			key := tok.(string)
			if want, ok := fields[top.kind]; ok && !slices.Contains(want, key) {
				return fmt.Sprintf("key %q not in the schema", key)
			}
			if top.keys[key] {
				return fmt.Sprintf("repeated key %q", key)
			}
			top.keys[key], top.key, top.wantKey = true, key, false
			continue
		}
		if d, ok := tok.(json.Delim); ok { // '{' or '[' opens a value
			kind := "other"
			switch {
			case top == nil && d == '{':
				kind = "doc"
			case top != nil && top.kind == "doc" && top.key == "invoices" && d == '[':
				kind = "invoices"
			case top != nil && top.kind == "invoices" && d == '{':
				kind = "invoice"
			case top != nil && top.kind == "doc" && top.key == "rates" && d == '[':
				kind = "rates"
			case top != nil && top.kind == "rates" && d == '{':
				kind = "rate"
			case top != nil && top.kind == "doc" && top.key == "customers" && d == '[':
				kind = "customers"
			case top != nil && top.kind == "customers" && d == '{':
				kind = "customer"
			}
			stack = append(stack, &frame{kind: kind, object: d == '{', keys: map[string]bool{}, wantKey: d == '{'})
			continue
		}
		if top != nil && top.object {
			if _, ok := fields[top.kind]; ok && tok == nil {
				return "null value of " + top.key
			}
			top.wantKey = true
		}
	}
}

// FuzzDecimal holds decimalOf to refRateValue, big.Rat's reading of the
// rules for a rate: on every JSON number, both accept or both refuse, and
// accept the same value.
func FuzzDecimal(f *testing.F) {
	for _, s := range []string{"5.17", "517e-2", "0.000000000001", "1e9", "1000000000.000000000001", "1.234567890123456789", "-0", "1e-400", "0.10"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, ok := decimalOf(s)
		if !ok {
			if numberRE.MatchString(s) && json.Valid([]byte(s)) {
				t.Fatalf("decimalOf(%q) refused a JSON number", s)
			}
			return
		}
		want, why := refRateValue(s)
		code, _ := rateProblem(d)
		if (why == "") != (code == "") || why == "" && d.normal() != want {
			t.Fatalf("decimalOf(%q) = %v (%q); big.Rat says %v (%q)", s, d, code, want, why)
		}
	})
}
