package schema

import (
	"math/rand/v2"
	"regexp"
	"testing"
)

// dfaPatterns are the patterns the contracts use and others that reach
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
		re := regexp.MustCompile(expr)
		d := newDFA(expr)
		if d == nil {
			t.Errorf("newDFA(%q) = nil, want a DFA", expr)
			continue
		}
		inputs := dfaInputs
		for range 2000 {
			var s []byte
			for range r.IntN(12) {
				s = append(s, alphabet[r.IntN(len(alphabet))]...)
			}
			inputs = append(inputs, string(s))
		}
		for _, s := range inputs {
			if got, want := d.match([]byte(s)), re.Match([]byte(s)); got != want {
				t.Errorf("newDFA(%q).match(%q) = %v, regexp says %v", expr, s, got, want)
			}
		}
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
