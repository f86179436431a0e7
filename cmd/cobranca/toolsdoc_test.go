package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/cobranca/cobranca/internal/collections"
	"github.com/cobranca/cobranca/internal/contract"
	"github.com/google/jsonschema-go/jsonschema"
)

var updateDocs = flag.Bool("update", false, "rewrite the generated tool reference in docs/tools.md and README.md")

// The generated blocks sit between these markers, as github-mcp-server
// generates its README's tool list; the text around them is written by hand.
const (
	generatedStart = "<!-- START GENERATED TOOLS: go generate ./cmd/cobranca -->\n"
	generatedEnd   = "<!-- END GENERATED TOOLS -->"
)

// TestToolsDoc keeps docs/tools.md's reference and README.md's tools at a
// glance what the served contracts say: it fails when they are stale, and
// `go generate ./cmd/cobranca` (this test with -update) rewrites them.
func TestToolsDoc(t *testing.T) {
	tools, err := servedTools(collections.Settings{}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	var contracts []*contract.Contract
	for _, c := range contractsOf(tools) {
		// The conformance suite's diagnostics exist only in a build with
		// -tags conformance; the docs describe the product.
		if c.Category != contract.CategoryDiagnostic {
			contracts = append(contracts, c)
		}
	}
	for _, doc := range []struct {
		path   string
		render func([]*contract.Contract) string
	}{
		{filepath.Join("..", "..", "docs", "tools.md"), toolsReference},
		{filepath.Join("..", "..", "README.md"), toolsGlance},
	} {
		b, err := os.ReadFile(doc.path)
		if err != nil {
			t.Fatal(err)
		}
		text := string(b)
		before, rest, ok := strings.Cut(text, generatedStart)
		_, after, ok2 := strings.Cut(rest, generatedEnd)
		if !ok || !ok2 {
			t.Fatalf("%s has no generated block (%q … %q)", doc.path, generatedStart, generatedEnd)
		}
		want := before + generatedStart + doc.render(contracts) + generatedEnd + after
		if want == text {
			continue
		}
		if *updateDocs {
			if err := os.WriteFile(doc.path, []byte(want), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		t.Errorf("%s is stale: run go generate ./cmd/cobranca", doc.path)
	}
}

// toolsGlance is README.md's table: one line per tool.
func toolsGlance(contracts []*contract.Contract) string {
	var b strings.Builder
	b.WriteString("| tool | tier | scopes | what it does |\n|---|---|---|---|\n")
	for _, c := range contracts {
		fmt.Fprintf(&b, "| [`%s`](docs/tools.md#%s) | %s | %s | %s |\n", c.Name, anchor(c.Name), c.RiskLevel, codeList(c.Permissions), c.Title)
	}
	return b.String()
}

// toolsReference is docs/tools.md's reference: each contract in prose and
// tables, in the order the server serves them.
func toolsReference(contracts []*contract.Contract) string {
	var b strings.Builder
	for _, c := range contracts {
		fmt.Fprintf(&b, "### %s\n\n", c.Name)
		fmt.Fprintf(&b, "**%s** — contract %s, tier **%s**", c.Title, c.ContractVersion, c.RiskLevel)
		if !c.VisibleToAgents() {
			b.WriteString(" (not served over MCP: people run it from the CLI and the admin API)")
		}
		b.WriteString(".\n\n")
		b.WriteString(c.Description + "\n\n")
		b.WriteString("| | |\n|---|---|\n")
		row := func(k, v string) { fmt.Fprintf(&b, "| %s | %s |\n", k, v) }
		row("scopes", codeList(c.Permissions))
		if len(c.DryRunPermissions) > 0 {
			row("scopes of a dry run", codeList(c.DryRunPermissions))
		}
		row("an agent may run it alone", yesNo(c.AutonomousExecution))
		row("confirmation", "`"+string(c.Confirmation)+"`")
		if c.StepUpAuth.Required {
			row("step-up", fmt.Sprintf("signed in within %d s; %s", c.StepUpAuth.MaxAgeSeconds, c.StepUpAuth.When))
		}
		if len(c.ApproverRoles) > 0 {
			row("approver roles", codeList(c.ApproverRoles))
			row("the requester may approve", yesNo(c.RequesterMayApprove))
		}
		if len(c.AdminRoles) > 0 {
			row("admin roles", codeList(c.AdminRoles))
		}
		changes := "none"
		if len(c.SideEffects.Changes) > 0 {
			changes = strings.Join(c.SideEffects.Changes, "; ")
		}
		row("side effects", changes)
		if len(c.SideEffects.Changes) > 0 {
			row("destructive / external", yesNo(c.SideEffects.Destructive)+" / "+yesNo(c.SideEffects.External))
		}
		row("on repeat", c.SideEffects.OnRepeat)
		row("idempotency", "`"+c.Idempotency.Kind+"`: "+c.Idempotency.Description)
		row("dry run", "`"+string(c.DryRun)+"`")
		row("audit event", "`"+c.AuditEvent+"`")
		if c.View != "" {
			row("result view", "`"+c.View+"`")
		}
		b.WriteString("\n")
		if c.InputSchema != nil && len(c.InputSchema.Properties) > 0 {
			b.WriteString("| argument | type | required | meaning |\n|---|---|---|---|\n")
			for _, name := range sortedKeys(c.InputSchema.Properties) {
				p := c.InputSchema.Properties[name]
				fmt.Fprintf(&b, "| `%s` | %s | %s | %s |\n", name, schemaType(p), yesNo(slices.Contains(c.InputSchema.Required, name)), cell(p.Description))
			}
			b.WriteString("\n")
		}
		b.WriteString("| failure code | meaning | retryable |\n|---|---|---|\n")
		for _, f := range c.FailureModes {
			fmt.Fprintf(&b, "| `%s` | %s | %s |\n", f.Code, cell(f.Meaning), yesNo(f.Retryable))
		}
		b.WriteString("\n")
	}
	return b.String()
}

// anchor is the id GitHub gives a heading "### name".
func anchor(name string) string {
	return strings.ToLower(strings.ReplaceAll(name, ".", ""))
}

func codeList(list []string) string {
	if len(list) == 0 {
		return "none"
	}
	return "`" + strings.Join(list, "`, `") + "`"
}

func yesNo(v bool) string {
	if v {
		return "yes"
	}
	return "no"
}

// cell makes text safe in a table cell: one line, no column separator.
func cell(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	return strings.ReplaceAll(s, "|", `\|`)
}

func sortedKeys(m map[string]*jsonschema.Schema) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// schemaType is a property's JSON type as a reader wants it: "array of
// object", "string or null".
func schemaType(s *jsonschema.Schema) string {
	types := s.Types
	if s.Type != "" {
		types = []string{s.Type}
	}
	if len(types) == 0 {
		return "any"
	}
	out := strings.Join(types, " or ")
	if s.Items != nil && slices.Contains(types, "array") {
		out += " of " + schemaType(s.Items)
	}
	return out
}
