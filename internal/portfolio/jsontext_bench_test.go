package portfolio

import (
	"bytes"
	"io"
	"testing"

	"github.com/go-json-experiment/json/jsontext"
)

// The two benchmarks below are yardsticks for BenchmarkParse, kept because
// they are why Parse stays hand-written (docs/benchmarks.md, "One JSON
// reader"): a decoder written as a jsontext token loop can be no faster
// than reading the same document's tokens, and a reader that validates the
// arguments with jsontext and then decodes them pays a whole extra pass.

// BenchmarkParseJSONTextTokens reads every token of BenchmarkParse's
// document with jsontext and builds nothing: the floor of a jsontext
// decoder for analyze_portfolio's arguments.
func BenchmarkParseJSONTextTokens(b *testing.B) {
	_, data := benchInput(b)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	dec := jsontext.NewDecoder(bytes.NewBuffer(data))
	for b.Loop() {
		dec.Reset(bytes.NewBuffer(data))
		for {
			tok, err := dec.ReadToken()
			if err == io.EOF {
				break
			}
			if err != nil {
				b.Fatal(err)
			}
			_ = tok.Kind()
		}
	}
}

// BenchmarkParseJSONTextValue checks the same document with one jsontext
// ReadValue (syntax, UTF-8, duplicate names), decoding nothing.
func BenchmarkParseJSONTextValue(b *testing.B) {
	_, data := benchInput(b)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	dec := jsontext.NewDecoder(bytes.NewBuffer(data))
	for b.Loop() {
		dec.Reset(bytes.NewBuffer(data))
		if _, err := dec.ReadValue(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCanonicalizeJSONText is jsontext's RFC 8785 form of the same
// arguments, the general way: against BenchmarkAppendCanonicalJSON.
func BenchmarkCanonicalizeJSONText(b *testing.B) {
	_, data := benchInput(b)
	v := make(jsontext.Value, 0, len(data))
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		v = append(v[:0], data...)
		if err := v.Canonicalize(); err != nil {
			b.Fatal(err)
		}
	}
}
