package storetest

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/cobranca/cobranca/internal/store"
)

// PlanNode is a node of a PostgreSQL plan, as EXPLAIN (FORMAT JSON) writes it.
type PlanNode struct {
	Type     string  `json:"Node Type"`
	Index    string  `json:"Index Name"`
	Relation string  `json:"Relation Name"`
	Cost     float64 `json:"Total Cost"`
	Plans    []PlanNode
}

// Walk calls fn with n and every node under it, depth first.
func (n PlanNode) Walk(fn func(PlanNode)) {
	fn(n)
	for _, c := range n.Plans {
		c.Walk(fn)
	}
}

// Indexes are the indexes the plan reads, in the order Walk meets them.
func (n PlanNode) Indexes() []string {
	var out []string
	n.Walk(func(m PlanNode) {
		if m.Index != "" {
			out = append(out, m.Index)
		}
	})
	return out
}

// SeqScans are the tables the plan reads whole whose names start with prefix.
func (n PlanNode) SeqScans(prefix string) []string {
	var out []string
	n.Walk(func(m PlanNode) {
		if m.Type == "Seq Scan" && strings.HasPrefix(m.Relation, prefix) {
			out = append(out, m.Relation)
		}
	})
	return out
}

// Sorts reports whether a node of the plan sorts.
func (n PlanNode) Sorts() bool {
	sorts := false
	n.Walk(func(m PlanNode) { sorts = sorts || strings.Contains(m.Type, "Sort") })
	return sorts
}

// ExplainPG is PostgreSQL's EXPLAIN (FORMAT JSON) of sql with args: its root node, and the
// plan as PostgreSQL wrote it (for a failure's message).
func ExplainPG(tb testing.TB, q store.Querier, sql string, args ...any) (PlanNode, string) {
	tb.Helper()
	var out string
	if err := q.QueryRow(context.Background(), `EXPLAIN (FORMAT JSON) `+sql, args...).Scan(&out); err != nil {
		tb.Fatalf("EXPLAIN %s: %v", sql, err)
	}
	var doc []struct{ Plan PlanNode }
	if err := json.Unmarshal([]byte(out), &doc); err != nil || len(doc) != 1 {
		tb.Fatalf("EXPLAIN: %v\n%s", err, out)
	}
	return doc[0].Plan, out
}

// Outline is the plan as one line per node, indented by depth: its type, then the index it
// reads or the table it scans (for a log, and docs/benchmarks.md).
func (n PlanNode) Outline() string {
	var b strings.Builder
	var walk func(PlanNode, int)
	walk = func(m PlanNode, depth int) {
		b.WriteString(strings.Repeat("  ", depth) + m.Type)
		switch {
		case m.Index != "":
			b.WriteString(" using " + m.Index)
		case m.Relation != "":
			b.WriteString(" on " + m.Relation)
		}
		b.WriteString("\n")
		for _, c := range m.Plans {
			walk(c, depth+1)
		}
	}
	walk(n, 0)
	return b.String()
}
