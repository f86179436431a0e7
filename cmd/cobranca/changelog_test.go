package main

import (
	"fmt"
	"github.com/cobranca/cobranca/internal/collections"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/cobranca/cobranca/internal/contract"
)

// changelogPath is the contracts' changelog, from this package's directory.
var changelogPath = filepath.Join("..", "..", "docs", "contracts", "CHANGELOG.md")

// changelogProblems lists where the changelog text disagrees with the
// contracts: a served tool without a section ("## name"), a section of no
// served tool, a version heading ("### X.Y.Z") that is not a contract
// version or not older than the one above it, a section whose newest
// version is not the tool's contractVersion. The conformance diagnostics,
// absent from production builds, need no section.
func changelogProblems(text string, contracts []*contract.Contract) []string {
	var problems []string
	sections := map[string][]string{}
	var order []string
	tool := ""
	for i, line := range strings.Split(text, "\n") {
		switch {
		case strings.HasPrefix(line, "## "):
			tool = strings.TrimSpace(strings.TrimPrefix(line, "## "))
			if _, ok := sections[tool]; ok {
				problems = append(problems, fmt.Sprintf("line %d: a second section for %s", i+1, tool))
			}
			sections[tool] = []string{}
			order = append(order, tool)
		case strings.HasPrefix(line, "### "):
			v := strings.TrimSpace(strings.TrimPrefix(line, "### "))
			switch {
			case tool == "":
				problems = append(problems, fmt.Sprintf("line %d: version %s outside a tool's section", i+1, v))
			case !contract.ValidVersion(v):
				problems = append(problems, fmt.Sprintf("line %d: %s: %q is not a version MAJOR.MINOR.PATCH", i+1, tool, v))
			default:
				if vs := sections[tool]; len(vs) > 0 && !newer(vs[len(vs)-1], v) {
					problems = append(problems, fmt.Sprintf("line %d: %s: %s is not older than %s above it (newest first)", i+1, tool, v, vs[len(vs)-1]))
				}
				sections[tool] = append(sections[tool], v)
			}
		}
	}
	served := map[string]bool{}
	for _, c := range contracts {
		if c.Category == contract.CategoryDiagnostic {
			continue
		}
		served[c.Name] = true
		vs, ok := sections[c.Name]
		switch {
		case !ok:
			problems = append(problems, fmt.Sprintf("%s (contractVersion %s) has no section", c.Name, c.ContractVersion))
		case len(vs) == 0:
			problems = append(problems, fmt.Sprintf("%s: the section lists no version", c.Name))
		case vs[0] != c.ContractVersion:
			problems = append(problems, fmt.Sprintf("%s: contractVersion is %s, the changelog's newest entry %s", c.Name, c.ContractVersion, vs[0]))
		}
	}
	for _, name := range order {
		if !served[name] {
			problems = append(problems, fmt.Sprintf("section %s names no served tool", name))
		}
	}
	return problems
}

// newer reports whether version a is newer than b (both valid).
func newer(a, b string) bool {
	num := func(v string) []int {
		var n []int
		for _, p := range strings.Split(v, ".") {
			i, _ := strconv.Atoi(p)
			n = append(n, i)
		}
		return n
	}
	return slices.Compare(num(a), num(b)) > 0
}

// TestChangelogMatchesContracts: docs/contracts/CHANGELOG.md has a section
// for every tool this binary serves and for no other, its versions newest
// first, the newest the tool's contractVersion.
func TestChangelogMatchesContracts(t *testing.T) {
	b, err := os.ReadFile(changelogPath)
	if err != nil {
		t.Fatal(err)
	}
	tools, err := servedTools(collections.Settings{}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	var contracts []*contract.Contract
	for _, tool := range tools {
		contracts = append(contracts, tool.Contract)
	}
	if len(contracts) < 10 {
		t.Fatalf("servedTools lists %d tools, want every product tool", len(contracts))
	}
	for _, p := range changelogProblems(string(b), contracts) {
		t.Errorf("%s: %s", changelogPath, p)
	}
}

// TestChangelogProblems: the check finds each kind of disagreement.
func TestChangelogProblems(t *testing.T) {
	c := func(name, v string) *contract.Contract { return &contract.Contract{Name: name, ContractVersion: v} }
	contracts := []*contract.Contract{c("a.one", "1.1.0"), c("a.two", "1.0.0"), {Name: "test_diag", ContractVersion: "1.0.0", Category: contract.CategoryDiagnostic}}
	good := "# Changelog\n\n## a.one\n\n### 1.1.0\n\n- x\n\n### 1.0.0\n\n## a.two\n\n### 1.0.0\n"
	if p := changelogProblems(good, contracts); len(p) > 0 {
		t.Fatalf("changelogProblems(good) = %q, want none", p)
	}
	for _, tt := range []struct{ text, want string }{
		{strings.Replace(good, "## a.two\n\n### 1.0.0\n", "", 1), "a.two (contractVersion 1.0.0) has no section"},
		{strings.Replace(good, "### 1.1.0", "### 1.2.0", 1), "a.one: contractVersion is 1.1.0, the changelog's newest entry 1.2.0"},
		{strings.Replace(good, "### 1.1.0\n\n- x\n\n### 1.0.0", "### 1.0.0\n\n- x\n\n### 1.1.0", 1), "1.1.0 is not older than 1.0.0"},
		{strings.Replace(good, "### 1.1.0\n\n- x\n\n", "", 1), "a.one: contractVersion is 1.1.0, the changelog's newest entry 1.0.0"},
		{strings.Replace(good, "### 1.0.0\n\n## a.two", "### 1.0\n\n## a.two", 1), `"1.0" is not a version`},
		{good + "\n## a.three\n\n### 1.0.0\n", "section a.three names no served tool"},
		{good + "\n## a.two\n", "a second section for a.two"},
		{"### 1.0.0\n" + good, "outside a tool's section"},
	} {
		p := changelogProblems(tt.text, contracts)
		if !slices.ContainsFunc(p, func(s string) bool { return strings.Contains(s, tt.want) }) {
			t.Errorf("changelogProblems(%q) = %q, want one saying %q", tt.text, p, tt.want)
		}
	}
}
