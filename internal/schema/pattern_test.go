package schema

import (
	"encoding/json"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"testing"
)

// dfaPatterns are patterns the contracts use (TestDFAForContractPatterns
// reads all of them from the contracts) and others that reach
// every part of newDFA: ^ and $ alone and unanchored, alternation,
// repetition, case folding (k also folds to U+212A KELVIN SIGN), classes
// beyond ASCII, . with and without newline, and empty matches.
var dfaPatterns = []string{
	`^20[0-9]{2}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])$`,
	`^[^\x00-\x1f\x7f-\x9f]*$`,
	`^[a-z]+$`, `[a-z]+`, `abc`, `^abc`, `abc$`, `a|^b|c$`, `^$`, ``, `^`, `$`,
	`(?i)k`, `(?i)^straße$`, `é+`, `^\x{FFFD}$`, `[^a]`, `^.$`, `(?s)^.$`, `^.*x`,
	`^a{2,4}b?$`, `(a|ab)(c|bcd)(d*)`, `^[\x{80}-\x{10FFFF}]+$`, `\x{10FFFF}$`,
	`^(?:[0-9]{3}\.){3}[0-9]{3}$`, `a*?b+?`, `^\p{Greek}+$`,
}

var dfaInputs = []string{
	"", "2026-10-01", "2099-12-31", "2000-00-01", "2026-13-01", "2026-10-32", "2026-10-01\n",
	"x2026-10-01", "2026-10-011", "Cliente 92 Ltda", "a\x1fb", "a\u0085b", "a\u009fb", "a\u00a0b",
	"\xff", "a\xffb", "\xc3", "\xc3\xa9", "é", "éé", "\ufffd", "\xed\xa0\x80", "k", "K", "\u212a",
	"STRASSE", "straße", "STRAßE", "abc", "xabcx", "ab", "bx", "xc", "aab", "aaaab", "abcd",
	"\n", "x\n", "\U0010FFFF", "a\U0010FFFF", "123.456.789.012", "αβγ", "αβγ1", "aaab", "abbb",
}

func TestDFASameAsRegexp(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 8))
	alphabet := []string{"0", "1", "2", "9", "-", "a", "b", "c", "k", "x", "é", "\u212a", "\x7f", "\u0085", "\xff", "\xc3", "\n", " ", "\U0010FFFF"}
	for _, expr := range dfaPatterns {
		checkDFA(t, expr, randomStrings(r, alphabet, 2000, 12))
	}
}

// checkDFA requires a DFA for expr that agrees with regexp on dfaInputs and
// more.
func checkDFA(t *testing.T, expr string, more []string) {
	t.Helper()
	re := regexp.MustCompile(expr)
	d := newDFA(expr)
	if d == nil {
		t.Errorf("newDFA(%+q) = nil, want a DFA", expr)
		return
	}
	for _, s := range append(slices.Clip(dfaInputs), more...) {
		if got, want := d.match([]byte(s)), re.Match([]byte(s)); got != want {
			t.Errorf("newDFA(%+q).match(%+q) = %v, regexp says %v", expr, s, got, want)
		}
	}
}

// randomStrings makes n strings of fewer than pieces pieces of alphabet.
func randomStrings(r *rand.Rand, alphabet []string, n, pieces int) []string {
	out := make([]string, n)
	for i := range out {
		var s []byte
		for range r.IntN(pieces) {
			s = append(s, alphabet[r.IntN(len(alphabet))]...)
		}
		out[i] = string(s)
	}
	return out
}

// TestDFAForContractPatterns: every pattern the published contracts hold
// (read from mcpapi's golden files, so none is copied here) gets a DFA that
// agrees with regexp, on strings of the characters those patterns are about.
func TestDFAForContractPatterns(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "mcpapi", "testdata", "contracts", "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("contract goldens: %v, %d files", err, len(files))
	}
	patterns := map[string]bool{}
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			for k, x := range v {
				if p, ok := x.(string); ok && k == "pattern" {
					patterns[p] = true
				}
				walk(x)
			}
		case []any:
			for _, x := range v {
				walk(x)
			}
		}
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var v any
		if err := json.Unmarshal(b, &v); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		walk(v)
	}
	if len(patterns) < 2 {
		t.Fatalf("found %d patterns in the contracts, want the date and text patterns at least", len(patterns))
	}
	r := rand.New(rand.NewPCG(6, 9))
	alphabet := []string{"0", "2", "9", "-", "a", " ", "\u00a0", "\u00ad", "\u3000", "\u3164", "\u200b", "\u200e", "\u2028",
		"\u202c", "\u202e", "\u202f", "\u2066", "\ufeff", "\ufe0f", "\U000e0041", "\U0001bca0", "😀", "é", "\x00", "\x7f", "\u0085", "\xff"}
	for expr := range patterns {
		checkDFA(t, expr, randomStrings(r, alphabet, 5000, 8))
	}
}

func TestNewDFAFallsBack(t *testing.T) {
	for _, expr := range []string{
		`\bx`, `(?m)^x$`, `x\B`, // assertions that depend on the runes around
		`^[a-z]{300}$`, // more states than allowed
		`\pL`,          // more classes than allowed
	} {
		if d := newDFA(expr); d != nil {
			t.Errorf("newDFA(%q) built a DFA; it must leave this pattern to regexp", expr)
		}
		p, err := compilePattern(expr)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := p.match([]byte("x")), regexp.MustCompile(expr).MatchString("x"); got != want {
			t.Errorf("pattern %q matches %q = %v, want %v", expr, "x", got, want)
		}
	}
}

func FuzzDFA(f *testing.F) {
	for _, expr := range dfaPatterns {
		for _, s := range dfaInputs[:8] {
			f.Add(expr, []byte(s))
		}
	}
	f.Fuzz(func(t *testing.T, expr string, s []byte) {
		re, err := regexp.Compile(expr)
		if err != nil {
			return
		}
		d := newDFA(expr)
		if d == nil {
			return
		}
		if got, want := d.match(s), re.Match(s); got != want {
			t.Fatalf("newDFA(%q).match(%q) = %v, regexp says %v", expr, s, got, want)
		}
	})
}
