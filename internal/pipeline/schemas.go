package pipeline

import (
	"sync"

	"github.com/cobranca/cobranca/internal/schema"
	"github.com/google/jsonschema-go/jsonschema"
)

// compiledSchemas are the compiled contract schemas of this process's pipelines, by the
// schema's identity: a process that builds a pipeline again over the same contracts (a
// test's server, a replica; collections.Tools finishes its contracts once) compiles each
// schema once. Compiling the product's schemas was a fifth of the CPU time of the
// collections tests. Nothing changes a finished contract's schema (contract.Finish copies
// what it adds to), so its pointer names its content.
var compiledSchemas = schemaMemo{max: 512}

// schemaMemo holds at most max schemas' compiled forms: a process that keeps making new
// contracts (a test of contracts) starts it over when it is full, rather than holding
// every schema it ever saw.
type schemaMemo struct {
	mu  sync.Mutex
	max int
	m   map[*jsonschema.Schema]*compiledSchema
}

// compiledSchema is one schema's compiled forms, each made the first time it is asked for.
type compiledSchema struct {
	resolved func() (*jsonschema.Resolved, error)
	fast     func() (*schema.Validator, error)
}

func (m *schemaMemo) entry(s *jsonschema.Schema) *compiledSchema {
	m.mu.Lock()
	defer m.mu.Unlock()
	if e, ok := m.m[s]; ok {
		return e
	}
	if m.m == nil || len(m.m) >= m.max {
		m.m = map[*jsonschema.Schema]*compiledSchema{}
	}
	e := &compiledSchema{
		resolved: sync.OnceValues(func() (*jsonschema.Resolved, error) { return s.Resolve(nil) }),
		fast:     sync.OnceValues(func() (*schema.Validator, error) { return schema.Compile(s) }),
	}
	m.m[s] = e
	return e
}

// resolve is s.Resolve(nil), once per schema.
func (m *schemaMemo) resolve(s *jsonschema.Schema) (*jsonschema.Resolved, error) {
	return m.entry(s).resolved()
}

// compileFast is schema.Compile(s), once per schema.
func (m *schemaMemo) compileFast(s *jsonschema.Schema) (*schema.Validator, error) {
	return m.entry(s).fast()
}
