package portfolio

import (
	"testing"
)

func BenchmarkAnalyze(b *testing.B) {
	in, _ := benchInput(b)
	b.ReportAllocs()
	for b.Loop() {
		Analyze(in)
	}
}

func BenchmarkFormatBRL(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		FormatBRL(123_456_789_012)
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
