package portfolio

import (
	"encoding/json"
	"testing"
	"time"
)

func BenchmarkAnalyze(b *testing.B) {
	in, _ := benchInput(b)
	b.ReportAllocs()
	for b.Loop() {
		Analyze(in)
	}
}

func BenchmarkValidate(b *testing.B) {
	in, _ := benchInput(b)
	b.ReportAllocs()
	for b.Loop() {
		if err := Validate(in); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkParse(b *testing.B) {
	_, data := benchInput(b)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Parse(data); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkUnmarshalStdlib is the yardstick for BenchmarkParse: it only
// decodes, it validates nothing.
func BenchmarkUnmarshalStdlib(b *testing.B) {
	_, data := benchInput(b)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		var in Input
		if err := json.Unmarshal(data, &in); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkAnalyzeExtended is BenchmarkAnalyze's portfolio with issue 15's
// fields (genExtended): currencies, disputes, promises, contacts, pacing.
func BenchmarkAnalyzeExtended(b *testing.B) {
	in := genExtended(MaxInvoices, 1, time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC))
	if err := Validate(in); err != nil {
		b.Fatal(err)
	}
	o := Options{ContactPacing: 72 * time.Hour}
	b.ReportAllocs()
	for b.Loop() {
		AnalyzeWith(in, o)
	}
}
