package portfolio

import (
	"go/ast"
	"go/parser"
	"go/token"
	"slices"
	"testing"
)

// TestCodesListsEveryConstant reads errors.go and checks that Codes returns
// every Code constant declared there, so a new code cannot be forgotten.
func TestCodesListsEveryConstant(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "errors.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var declared []string
	ast.Inspect(f, func(n ast.Node) bool {
		vs, ok := n.(*ast.ValueSpec)
		if !ok {
			return true
		}
		if id, ok := vs.Type.(*ast.Ident); ok && id.Name == "Code" {
			for _, name := range vs.Names {
				declared = append(declared, name.Name)
			}
		}
		return true
	})
	if len(declared) < 10 {
		t.Fatalf("found only %d Code constants in errors.go: %v", len(declared), declared)
	}
	byName := map[string]Code{
		"CodeInvalidJSON": CodeInvalidJSON, "CodeUnknownField": CodeUnknownField, "CodeMissingField": CodeMissingField,
		"CodeInvalidType": CodeInvalidType, "CodeInvalidFormat": CodeInvalidFormat, "CodeInvalidDate": CodeInvalidDate,
		"CodeOutOfRange": CodeOutOfRange, "CodeInvalidValue": CodeInvalidValue, "CodeInvalidText": CodeInvalidText,
		"CodeDuplicateInvoiceID": CodeDuplicateInvoiceID, "CodeMissingRate": CodeMissingRate, "CodeDuplicateEntry": CodeDuplicateEntry,
	}
	for _, name := range declared {
		c, ok := byName[name]
		if !ok {
			t.Errorf("constant %s is new: add it to Codes and to this test", name)
			continue
		}
		if !slices.Contains(Codes(), c) {
			t.Errorf("Codes() lacks %s", name)
		}
	}
	if len(Codes()) != len(declared) {
		t.Errorf("Codes() has %d entries, errors.go declares %d", len(Codes()), len(declared))
	}
}
