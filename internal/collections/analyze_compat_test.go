package collections

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/cobranca/cobranca/internal/contract"
	"github.com/google/jsonschema-go/jsonschema"
)

// compatProblems lists how schema next breaks a client of schema prev, at
// path at: for an input schema (input), what a caller sends under prev must
// still be accepted; for an output schema, what next produces must still be
// what a reader of prev expects. So, in both: no property removed, no type
// changed, the same pattern and format; in an input, no property newly
// required, no enum value dropped, no bound tightened; in an output, no
// property no longer required, no enum value added, no bound loosened. A
// property next adds is optional in an input; in an output it may be
// required (a reader of prev ignores it, unless prev forbade unknown
// properties: an output's readers are told to ignore what they do not know,
// and 1.0.0 said additionalProperties false only to hold the server to its
// own shape, so an output may add properties).
func compatProblems(prev, next *jsonschema.Schema, input bool, at string) []string {
	var ps []string
	bad := func(format string, a ...any) { ps = append(ps, at+": "+fmt.Sprintf(format, a...)) }
	if prev == nil {
		return nil
	}
	if next == nil {
		return []string{at + ": removed"}
	}
	types := func(s *jsonschema.Schema) []string {
		t := slices.Clone(s.Types)
		if s.Type != "" {
			t = append(t, s.Type)
		}
		slices.Sort(t)
		return t
	}
	if pt, nt := types(prev), types(next); !slices.Equal(pt, nt) {
		bad("type %v became %v", pt, nt)
	}
	if prev.Pattern != next.Pattern {
		bad("pattern %q became %q", prev.Pattern, next.Pattern)
	}
	if prev.Format != next.Format {
		bad("format %q became %q", prev.Format, next.Format)
	}
	if prev.Const != nil || next.Const != nil {
		if prev.Const == nil || next.Const == nil || fmt.Sprint(*prev.Const) != fmt.Sprint(*next.Const) {
			bad("const changed")
		}
	}
	// Enums: an input may accept more, an output may produce less.
	has := func(enum []any, v any) bool {
		return slices.ContainsFunc(enum, func(w any) bool { return fmt.Sprint(w) == fmt.Sprint(v) })
	}
	switch {
	case input && len(next.Enum) > 0 && len(prev.Enum) == 0:
		bad("enum added: values accepted before are refused")
	case input && len(next.Enum) > 0:
		for _, v := range prev.Enum {
			if !has(next.Enum, v) {
				bad("enum value %v is no longer accepted", v)
			}
		}
	case !input && len(prev.Enum) > 0 && len(next.Enum) == 0:
		bad("enum dropped: any value may come")
	case !input && len(prev.Enum) > 0:
		for _, v := range next.Enum {
			if !has(prev.Enum, v) {
				bad("enum value %v is new", v)
			}
		}
	}
	// Bounds: an input's may only loosen, an output's only tighten.
	lower := func(name string, p, n *float64) {
		switch {
		case p == nil && n == nil:
		case input && n != nil && (p == nil || *n > *p):
			bad("%s tightened from %v to %v", name, deref(p), *n)
		case !input && p != nil && (n == nil || *n < *p):
			bad("%s loosened from %v to %v", name, *p, deref(n))
		}
	}
	upper := func(name string, p, n *float64) {
		switch {
		case p == nil && n == nil:
		case input && n != nil && (p == nil || *n < *p):
			bad("%s tightened from %v to %v", name, deref(p), *n)
		case !input && p != nil && (n == nil || *n > *p):
			bad("%s loosened from %v to %v", name, *p, deref(n))
		}
	}
	lower("minimum", prev.Minimum, next.Minimum)
	upper("maximum", prev.Maximum, next.Maximum)
	lower("exclusiveMinimum", prev.ExclusiveMinimum, next.ExclusiveMinimum)
	upper("exclusiveMaximum", prev.ExclusiveMaximum, next.ExclusiveMaximum)
	lower("minLength", float(prev.MinLength), float(next.MinLength))
	upper("maxLength", float(prev.MaxLength), float(next.MaxLength))
	lower("minItems", float(prev.MinItems), float(next.MinItems))
	upper("maxItems", float(prev.MaxItems), float(next.MaxItems))
	// Properties.
	for name, p := range prev.Properties {
		ps = append(ps, compatProblems(p, next.Properties[name], input, at+"."+name)...)
	}
	for _, name := range next.Required {
		if input && !slices.Contains(prev.Required, name) {
			bad("%s is newly required", name)
		}
	}
	for _, name := range prev.Required {
		if !input && !slices.Contains(next.Required, name) {
			bad("%s is no longer always present", name)
		}
	}
	if input {
		for name := range next.Properties {
			if _, ok := prev.Properties[name]; !ok && slices.Contains(next.Required, name) {
				bad("%s is new and required", name)
			}
		}
		if closed(next) && !closed(prev) {
			bad("unknown properties are refused now")
		}
	}
	ps = append(ps, compatProblems(prev.Items, next.Items, input, at+"[]")...)
	if prev.Items == nil && next.Items != nil && input {
		bad("items are constrained now")
	}
	return ps
}

func deref(f *float64) any {
	if f == nil {
		return "none"
	}
	return *f
}

func float(i *int) *float64 {
	if i == nil {
		return nil
	}
	f := float64(*i)
	return &f
}

func closed(s *jsonschema.Schema) bool {
	b, _ := json.Marshal(s.AdditionalProperties)
	return string(b) == "false"
}

// publishedContract is a contract as kept in testdata/contracts: its name,
// version and schemas.
type publishedContract struct {
	Name            string             `json:"name"`
	ContractVersion string             `json:"contractVersion"`
	InputSchema     *jsonschema.Schema `json:"inputSchema"`
	OutputSchema    *jsonschema.Schema `json:"outputSchema"`
}

// TestAnalyzeContractOnlyAdds: the schemas of analyze_portfolio as 1.0.0
// published them (testdata, taken from the golden of that version) are
// served by this version compatibly: it only adds optional inputs and
// outputs, and its minor version is higher with the same major.
func TestAnalyzeContractOnlyAdds(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("testdata", "contracts", AnalyzeName+"-1.0.0.json"))
	if err != nil {
		t.Fatal(err)
	}
	var prev publishedContract
	if err := json.Unmarshal(b, &prev); err != nil {
		t.Fatal(err)
	}
	c, err := contract.Finish(analyzeContract())
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(c.ContractVersion, "1.") || c.ContractVersion == prev.ContractVersion {
		t.Errorf("contractVersion = %s, want a 1.x above %s: the change is compatible and not wording only", c.ContractVersion, prev.ContractVersion)
	}
	// Round-trip the served schemas through JSON, as a client reads them.
	served := func(s *jsonschema.Schema) *jsonschema.Schema {
		b, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		var out jsonschema.Schema
		if err := json.Unmarshal(b, &out); err != nil {
			t.Fatal(err)
		}
		return &out
	}
	for _, p := range compatProblems(prev.InputSchema, served(c.InputSchema), true, "inputSchema") {
		t.Errorf("%s %s breaks a 1.0.0 client: %s", AnalyzeName, c.ContractVersion, p)
	}
	for _, p := range compatProblems(prev.OutputSchema, served(c.OutputSchema), false, "outputSchema") {
		t.Errorf("%s %s breaks a 1.0.0 client: %s", AnalyzeName, c.ContractVersion, p)
	}
	// What 1.1.0 adds is there.
	for _, name := range []string{"baseCurrency", "rates", "customers"} {
		if c.InputSchema.Properties[name] == nil {
			t.Errorf("inputSchema lacks %s", name)
		}
	}
	if !slices.Contains(c.OutputSchema.Required, "summary") {
		t.Errorf("outputSchema does not require summary")
	}
}

// TestCompatProblems: the checker finds each kind of break, in the
// direction that makes it one.
func TestCompatProblems(t *testing.T) {
	obj := func(req []string, props map[string]*jsonschema.Schema) *jsonschema.Schema {
		return &jsonschema.Schema{Type: "object", Properties: props, Required: req, AdditionalProperties: &jsonschema.Schema{Not: &jsonschema.Schema{}}}
	}
	base := func() *jsonschema.Schema {
		return obj([]string{"a", "e"}, map[string]*jsonschema.Schema{
			"a": {Type: "integer", Minimum: ptr(1.0), Maximum: ptr(10.0)},
			"e": {Type: "string", Enum: []any{"x", "y"}},
			"o": {Type: "string", Pattern: "^a$"},
			"l": {Type: "array", Items: obj([]string{"k"}, map[string]*jsonschema.Schema{"k": {Type: "string"}}), MaxItems: ptr(5)},
		})
	}
	if p := compatProblems(base(), base(), true, "in"); len(p) > 0 {
		t.Fatalf("compatProblems(same, input) = %q, want none", p)
	}
	if p := compatProblems(base(), base(), false, "out"); len(p) > 0 {
		t.Fatalf("compatProblems(same, output) = %q, want none", p)
	}
	for _, tt := range []struct {
		name  string
		edit  func(s *jsonschema.Schema)
		input bool
		want  string // "" : compatible
	}{
		{"input: optional property added", func(s *jsonschema.Schema) { s.Properties["n"] = &jsonschema.Schema{Type: "string"} }, true, ""},
		{"input: required property added", func(s *jsonschema.Schema) {
			s.Properties["n"] = &jsonschema.Schema{Type: "string"}
			s.Required = append(s.Required, "n")
		}, true, "n is newly required"},
		{"input: optional property made required", func(s *jsonschema.Schema) { s.Required = append(s.Required, "o") }, true, "o is newly required"},
		{"input: property removed", func(s *jsonschema.Schema) { delete(s.Properties, "o") }, true, "in.o: removed"},
		{"input: type changed", func(s *jsonschema.Schema) { s.Properties["a"].Type = "number" }, true, "type [integer] became [number]"},
		{"input: enum narrowed", func(s *jsonschema.Schema) { s.Properties["e"].Enum = []any{"x"} }, true, "enum value y is no longer accepted"},
		{"input: enum widened", func(s *jsonschema.Schema) { s.Properties["e"].Enum = []any{"x", "y", "z"} }, true, ""},
		{"input: minimum raised", func(s *jsonschema.Schema) { s.Properties["a"].Minimum = ptr(2.0) }, true, "minimum tightened"},
		{"input: maximum raised", func(s *jsonschema.Schema) { s.Properties["a"].Maximum = ptr(20.0) }, true, ""},
		{"input: maxItems lowered", func(s *jsonschema.Schema) { s.Properties["l"].MaxItems = ptr(4) }, true, "maxItems tightened"},
		{"input: pattern changed", func(s *jsonschema.Schema) { s.Properties["o"].Pattern = "^b$" }, true, "pattern"},
		{"input: nested property removed", func(s *jsonschema.Schema) { delete(s.Properties["l"].Items.Properties, "k") }, true, "in.l[].k: removed"},
		{"output: property added, required", func(s *jsonschema.Schema) {
			s.Properties["n"] = &jsonschema.Schema{Type: "string"}
			s.Required = append(s.Required, "n")
		}, false, ""},
		{"output: property removed", func(s *jsonschema.Schema) { delete(s.Properties, "o") }, false, "out.o: removed"},
		{"output: required property made optional", func(s *jsonschema.Schema) { s.Required = []string{"a"} }, false, "e is no longer always present"},
		{"output: enum widened", func(s *jsonschema.Schema) { s.Properties["e"].Enum = []any{"x", "y", "z"} }, false, "enum value z is new"},
		{"output: enum narrowed", func(s *jsonschema.Schema) { s.Properties["e"].Enum = []any{"x"} }, false, ""},
		{"output: enum dropped", func(s *jsonschema.Schema) { s.Properties["e"].Enum = nil }, false, "enum dropped"},
		{"output: maximum raised", func(s *jsonschema.Schema) { s.Properties["a"].Maximum = ptr(20.0) }, false, "maximum loosened"},
		{"output: minimum raised", func(s *jsonschema.Schema) { s.Properties["a"].Minimum = ptr(2.0) }, false, ""},
		{"output: type changed in items", func(s *jsonschema.Schema) { s.Properties["l"].Items.Properties["k"].Type = "integer" }, false, "out.l[].k: type"},
	} {
		next := base()
		tt.edit(next)
		at := "in"
		if !tt.input {
			at = "out"
		}
		p := compatProblems(base(), next, tt.input, at)
		switch {
		case tt.want == "" && len(p) > 0:
			t.Errorf("%s: compatProblems = %q, want none", tt.name, p)
		case tt.want != "" && !slices.ContainsFunc(p, func(s string) bool { return strings.Contains(s, tt.want) }):
			t.Errorf("%s: compatProblems = %q, want one saying %q", tt.name, p, tt.want)
		}
	}
}
