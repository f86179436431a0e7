package pipeline

import (
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
)

func TestSchemaMemo(t *testing.T) {
	m := schemaMemo{max: 2}
	a := &jsonschema.Schema{Type: "object"}
	b := &jsonschema.Schema{Type: "string"}
	ra, err := m.resolve(a)
	if err != nil {
		t.Fatal(err)
	}
	if again, _ := m.resolve(a); again != ra {
		t.Errorf("resolve(a) twice gave two compilations, want one")
	}
	if rb, _ := m.resolve(b); rb == ra || rb.Schema() != b {
		t.Errorf("resolve(b) = the compilation of %v, want b's", rb.Schema())
	}
	fa, err := m.compileFast(a)
	if err != nil {
		t.Fatal(err)
	}
	if again, _ := m.compileFast(a); again != fa {
		t.Errorf("compileFast(a) twice gave two compilations, want one")
	}
	bad := &jsonschema.Schema{Ref: "#/$defs/none"}
	for range 2 {
		if _, err := m.resolve(bad); err == nil {
			t.Error("resolve of a schema whose $ref leads nowhere: no error")
		}
	}
	if len(m.m) > m.max {
		t.Errorf("the memo holds %d schemas, more than its max %d", len(m.m), m.max)
	}
}
