package portfolio

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/cobranca/cobranca/internal/value"
)

// TestAppendJSONMatchesMarshal: AppendJSON writes encoding/json's bytes.
func TestAppendJSONMatchesMarshal(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 8))
	odd := []string{"", "plain", "<b>&amp;</b>", "aspas \" e \\ barra", "\x00\x01\x1f\x7f", "\b\f\n\r\t", "\u2028\u2029", "é ção 日本", "\xff\xfe bad", "\xe2\x82", "😀"}
	for i := range 3000 {
		a := Analysis{TotalOpenCents: r.Int64N(1 << 50), Accounts: []Account{}, Warnings: []Warning{}}
		switch i {
		case 0:
			a.Accounts = nil
		case 1:
			a.Warnings = nil
		}
		for range r.IntN(3) {
			code := WarningNameVariants
			if r.IntN(4) == 0 {
				code = WarningCode(odd[r.IntN(len(odd))]) // not a constant: escaped like any string
			}
			a.Warnings = append(a.Warnings, Warning{Code: code, CustomerID: odd[r.IntN(len(odd))], NameCount: r.IntN(MaxInvoices)})
		}
		pick := func(known ...string) string {
			if r.IntN(4) == 0 {
				return odd[r.IntN(len(odd))]
			}
			return known[r.IntN(len(known))]
		}
		dec := func() Decimal { return Decimal{Coef: r.Uint64N(1 << r.IntN(64)), Scale: uint8(r.IntN(25))} }
		for range r.IntN(6) {
			x := Account{
				CustomerID: odd[r.IntN(len(odd))], CustomerName: odd[r.IntN(len(odd))] + odd[r.IntN(len(odd))],
				AmountCents: r.Int64N(1 << 53), OldestDueDate: "2026-01-02", DaysOverdue: r.IntN(1 << 20),
				Priority: PriorityHigh, RecommendedAction: ActionHumanReview, Reason: odd[r.IntN(len(odd))],
				AgingBucket: Bucket(r.IntN(8)), InvoiceCount: int32(r.IntN(MaxInvoices)), // 0, 6, 7: no constant
			}
			if r.IntN(5) > 0 {
				x.PriorityFactors = []Factor{}
			}
			for range r.IntN(4) {
				x.PriorityFactors = append(x.PriorityFactors, Factor{Factor: FactorName(r.IntN(6)), // 0, 4, 5: no constant
					Value: r.Int64N(1<<40) - 1<<20})
			}
			if r.IntN(3) > 0 { // none, or some, maybe all empty: omitted then
				d := &AccountDetails{NextContactAfter: pick("", "2026-12-01T17:30:00Z")}
				for range r.IntN(3) {
					d.Conversions = append(d.Conversions, Conversion{Currency: pick("USD", "JPY"), AmountCents: r.Int64N(1 << 50), Rate: dec(),
						RateDate: pick("2026-11-28"), ConvertedCents: r.Int64N(1 << 50)})
				}
				if r.IntN(8) == 0 {
					d.Conversions = []Conversion{} // empty, not nil: omitted too
				}
				x.AccountDetails = d
			}
			a.Accounts = append(a.Accounts, x)
		}
		a.Summary = Summary{BaseCurrency: pick("BRL", "USD"), AccountsByPriority: ByPriority{r.IntN(9), r.IntN(9)},
			LeftOut: LeftOut{Paid: Count{r.IntN(9), r.IntN(9)}, PromisePending: Count{1, 2}}}
		if r.IntN(4) > 0 {
			a.Summary.Rates = []ExchangeRate{}
			a.Summary.Aging = []AgingBucket{}
		}
		for range r.IntN(3) {
			a.Summary.Rates = append(a.Summary.Rates, ExchangeRate{Currency: pick("USD", "EUR"), Rate: dec(), Date: pick("2026-11-28")})
		}
		for range r.IntN(6) {
			a.Summary.Aging = append(a.Summary.Aging, AgingBucket{Bucket: Bucket(r.IntN(8)), AmountCents: r.Int64N(1 << 50), InvoiceCount: r.IntN(500)})
		}
		want, err := json.Marshal(a)
		if err != nil {
			t.Fatal(err)
		}
		if got := a.AppendJSON(nil); string(got) != string(want) {
			t.Fatalf("AppendJSON = %s\nencoding/json = %s", got, want)
		}
	}
}

func TestAppendInt(t *testing.T) {
	vals := []int64{math.MinInt64, -1e12, -10, -1, 0, 1, 9, 10, 99, 100, 1e12 - 1, 1e12, 1e12 + 1, math.MaxInt64}
	for p := int64(1); p <= 1e18; p *= 10 {
		vals = append(vals, p-1, p, p+1)
	}
	r := rand.New(rand.NewPCG(14, 15))
	for range 10000 {
		vals = append(vals, r.Int64N(2e12)-1e6)
	}
	for _, v := range vals {
		if got, want := appendInt([]byte("x"), v), strconv.AppendInt([]byte("x"), v, 10); string(got) != string(want) {
			t.Fatalf("appendInt(%d) = %s, want %s", v, got, want)
		}
	}
}

// oddStrings holds every kind of byte appendString treats apart, at every
// offset within and around a word: each odd piece alone, then after 0 to
// 17 plain bytes and before 0 to 9.
func oddStrings() []string {
	pieces := []string{"", "a", "<", ">", "&", "\"", "\\", "/", "\x00", "\x1f", " ", "\x7f", "\u0080", "\u00a0", "é",
		"\u2028", "\u2029", "\u2027", "\u202a", "😀", "\xff", "\xe2\x80", "\xed\xa0\x80", "\xc0\xaf", "\b\f\n\r\t"}
	out := []string{strings.Repeat("é", value.MaxTextLen), strings.Repeat("x", value.MaxTextLen), strings.Repeat("é", value.MaxTextLen) + "<"}
	for _, p := range pieces {
		for before := range 18 {
			for after := range 10 {
				out = append(out, strings.Repeat("a", before)+p+strings.Repeat("b", after))
			}
		}
	}
	return out
}

func TestAppendStringMatchesMarshal(t *testing.T) {
	for _, s := range oddStrings() {
		want, _ := json.Marshal(s)
		if got := appendString(nil, asMarshal, s); string(got) != string(want) {
			t.Fatalf("appendString(%q) = %s, encoding/json %s", s, got, want)
		}
	}
}

func FuzzAppendString(f *testing.F) {
	for _, s := range []string{"", "a<b", "\u2028", "\xff", "\"\\\n", "01234567<", "0123456789abcde\x00f"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want, _ := json.Marshal(s)
		if got := appendString(nil, asMarshal, s); string(got) != string(want) {
			t.Fatalf("appendString(%q) = %s, encoding/json %s", s, got, want)
		}
	})
}

func BenchmarkAppendJSON(b *testing.B) {
	in, _ := benchInput(b)
	a := Analyze(in)
	buf := make([]byte, 0, 64<<10)
	b.ReportAllocs()
	for b.Loop() {
		buf = a.AppendJSON(buf[:0])
	}
}

func BenchmarkMarshalStdlib(b *testing.B) {
	in, _ := benchInput(b)
	a := Analyze(in)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := json.Marshal(a); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkAppendCanonicalJSON(b *testing.B) {
	in, data := benchInput(b)
	buf := make([]byte, 0, len(data)+64)
	b.ReportAllocs()
	for b.Loop() {
		buf = in.AppendCanonicalJSON(buf[:0])
	}
}

// A FactorName is a number in Go and its name everywhere else.
func TestFactorNameText(t *testing.T) {
	for _, f := range []FactorName{FactorDaysOverdue, FactorOpenAmount, FactorBrokenPromise} {
		b, err := f.MarshalText()
		var back FactorName
		if err != nil || string(b) != f.String() || !f.Known() || back.UnmarshalText(b) != nil || back != f {
			t.Errorf("%d: MarshalText = %q, %v; UnmarshalText back = %d", f, b, err, back)
		}
	}
	if got := []string{FactorDaysOverdue.String(), FactorOpenAmount.String(), FactorBrokenPromise.String()}; strings.Join(got, " ") != "days_overdue open_amount broken_promise" {
		t.Errorf("names = %q, want days_overdue open_amount broken_promise", got)
	}
	for _, f := range []FactorName{0, 4, 255} {
		if b, err := f.MarshalText(); f.Known() || err != nil || string(b) != "FactorName("+strconv.Itoa(int(f))+")" {
			t.Errorf("%d: Known = %v, MarshalText = %q, %v", f, f.Known(), b, err)
		}
	}
	var f FactorName
	for _, text := range []string{"", "Days_overdue", "days_overdue ", "FactorName(1)"} {
		if err := f.UnmarshalText([]byte(text)); err == nil {
			t.Errorf("UnmarshalText(%q) = nil, want an error", text)
		}
	}
	var a Account
	if err := json.Unmarshal([]byte(`{"priorityFactors":[{"factor":"open_amount","value":5}]}`), &a); err != nil ||
		len(a.PriorityFactors) != 1 || a.PriorityFactors[0] != (Factor{FactorOpenAmount, 5}) {
		t.Errorf("json.Unmarshal = %+v, %v; want one open_amount factor of 5", a.PriorityFactors, err)
	}
}

// A Bucket is a number in Go and its name everywhere else.
func TestBucketText(t *testing.T) {
	var names []string
	for b := BucketCurrent; b <= BucketOver90; b++ {
		text, err := b.MarshalText()
		var back Bucket
		if err != nil || string(text) != b.String() || !b.Known() || back.UnmarshalText(text) != nil || back != b {
			t.Errorf("%d: MarshalText = %q, %v; UnmarshalText back = %d", b, text, err, back)
		}
		names = append(names, b.String())
	}
	if got := strings.Join(names, " "); got != "current 1-30 31-60 61-90 90+" {
		t.Errorf("names = %q, want current 1-30 31-60 61-90 90+", got)
	}
	for _, b := range []Bucket{0, 6, 255} {
		if text, _ := b.MarshalText(); b.Known() || string(text) != "Bucket("+strconv.Itoa(int(b))+")" {
			t.Errorf("%d: Known = %v, MarshalText = %q", b, b.Known(), text)
		}
	}
	var b Bucket
	if err := b.UnmarshalText([]byte("90")); err == nil || b != 0 {
		t.Errorf(`UnmarshalText("90") = %v, %d; want an error, 0`, err, b)
	}
	var s Summary
	if err := json.Unmarshal([]byte(`{"aging":[{"bucket":"61-90","amountCents":5,"invoiceCount":1}]}`), &s); err != nil ||
		len(s.Aging) != 1 || s.Aging[0] != (AgingBucket{Bucket61To90, 5, 1}) {
		t.Errorf("json.Unmarshal = %+v, %v; want one 61-90 bucket of 5 cents, 1 invoice", s.Aging, err)
	}
}
