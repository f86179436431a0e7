package portfolio

import (
	"encoding/json"
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
