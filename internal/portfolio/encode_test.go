package portfolio

import (
	"encoding/json"
	"math/rand/v2"
	"testing"
)

// TestAppendJSONMatchesMarshal: AppendJSON writes encoding/json's bytes.
func TestAppendJSONMatchesMarshal(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 8))
	odd := []string{"", "plain", "<b>&amp;</b>", "aspas \" e \\ barra", "\x00\x01\x1f\x7f", "\b\f\n\r\t", "\u2028\u2029", "é ção 日本", "\xff\xfe bad", "\xe2\x82", "😀"}
	for i := range 3000 {
		a := Analysis{TotalOpenCents: r.Int64N(1 << 50), Accounts: []Account{}}
		if i == 0 {
			a.Accounts = nil
		}
		for range r.IntN(6) {
			a.Accounts = append(a.Accounts, Account{
				CustomerID: odd[r.IntN(len(odd))], CustomerName: odd[r.IntN(len(odd))] + odd[r.IntN(len(odd))],
				AmountCents: r.Int64N(1 << 53), OldestDueDate: "2026-01-02", DaysOverdue: r.IntN(1 << 20),
				Priority: PriorityHigh, RecommendedAction: ActionHumanReview, Reason: odd[r.IntN(len(odd))],
			})
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

func FuzzAppendString(f *testing.F) {
	for _, s := range []string{"", "a<b", "\u2028", "\xff", "\"\\\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want, _ := json.Marshal(s)
		if got := appendString(nil, true, s); string(got) != string(want) {
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
