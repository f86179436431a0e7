package mcpapi

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/cobranca/cobranca/internal/contract"
	"github.com/cobranca/cobranca/internal/contract/contracttest"
	"github.com/google/jsonschema-go/jsonschema"
)

// TestAnnotations: the four MCP hints follow from the contract's side
// effects and idempotency, and none is left nil (clients read a missing
// destructiveHint or openWorldHint as true).
func TestAnnotations(t *testing.T) {
	tests := []struct {
		name                                     string
		risk                                     contract.Risk
		edit                                     func(c *contract.Contract)
		readOnly, destructive, idempotent, world bool
	}{
		{"low", contract.Low, nil, true, false, true, false},
		{"medium", contract.Medium, nil, false, false, true, false},
		{"high destructive", contract.High, func(c *contract.Contract) { c.SideEffects.Destructive = true }, false, true, true, false},
		{"critical external", contract.Critical, func(c *contract.Contract) { c.SideEffects.Destructive, c.SideEffects.External = true, true }, false, true, true, true},
		{"natural idempotency", contract.Medium, func(c *contract.Contract) { c.Idempotency.Kind = "natural" }, false, false, true, false},
		{"not idempotent", contract.Medium, func(c *contract.Contract) { c.Idempotency.Kind = "none" }, false, false, false, false},
		{"read-only ignores destructive", contract.Low, func(c *contract.Contract) { c.SideEffects.Destructive = true }, true, false, true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := contracttest.New("test.annotated", tt.risk, "test:run")
			if tt.edit != nil {
				tt.edit(c)
			}
			def := toolDef(c)
			a := def.Annotations
			if a == nil || a.DestructiveHint == nil || a.OpenWorldHint == nil {
				t.Fatalf("toolDef(%s).Annotations left a hint nil: %+v", tt.name, a)
			}
			if a.ReadOnlyHint != tt.readOnly || *a.DestructiveHint != tt.destructive || a.IdempotentHint != tt.idempotent || *a.OpenWorldHint != tt.world {
				t.Errorf("annotations = ro %v destr %v idem %v world %v, want %v %v %v %v",
					a.ReadOnlyHint, *a.DestructiveHint, a.IdempotentHint, *a.OpenWorldHint, tt.readOnly, tt.destructive, tt.idempotent, tt.world)
			}
			if a.Title != c.Title || def.Name != c.Name || def.Title != c.Title || def.Description != c.Description || def.InputSchema != c.InputSchema || def.OutputSchema != c.OutputSchema {
				t.Errorf("toolDef(%s) = %+v, want the contract's name, title, description and schemas", tt.name, def)
			}
			if _, ok := def.Meta[contract.MetaKey]; !ok {
				t.Errorf("toolDef(%s).Meta = %v, want the contract under %q", tt.name, def.Meta, contract.MetaKey)
			}
		})
	}
}

// TestTextOnlyToolDef: a text-only tool (output schema {}) is declared with
// no outputSchema at all — MCP requires one to be an object schema — and
// its JSON has none; any other tool keeps its schema.
func TestTextOnlyToolDef(t *testing.T) {
	c := contracttest.New("test.text", contract.Low, "test:run")
	c.OutputSchema = &jsonschema.Schema{}
	def := toolDef(c)
	b, err := json.Marshal(def)
	if err != nil {
		t.Fatal(err)
	}
	if def.OutputSchema != nil || bytes.Contains(b, []byte(`"outputSchema"`)) {
		t.Errorf("toolDef(text-only) = %s, want no outputSchema", b)
	}
	if s := contracttest.New("test.structured", contract.Low, "test:run"); toolDef(s).OutputSchema == nil {
		t.Error("toolDef(structured) has no outputSchema")
	}
}
