package schema

import (
	"regexp"
	"regexp/syntax"
	"slices"
	"unicode"
	"unicode/utf8"
)

// pattern is a compiled "pattern" keyword. regexp runs a general machine
// for every string (a fifth of the cost of checking an analyze result, for
// one date per account); a pattern small enough is also turned into a DFA,
// built from the very program regexp runs, that answers the same yes/no
// question with one table look-up per byte or rune.
type pattern struct {
	re  *regexp.Regexp
	dfa *dfa // nil: the pattern needs more than the DFA does; use re
}

func compilePattern(expr string) (*pattern, error) {
	re, err := regexp.Compile(expr)
	if err != nil {
		return nil, err
	}
	return &pattern{re: re, dfa: newDFA(expr)}, nil
}

func (p *pattern) match(s []byte) bool {
	if p.dfa != nil {
		return p.dfa.match(s)
	}
	return p.re.Match(s)
}

func (p *pattern) String() string { return p.re.String() }

// Limits past which a pattern is left to regexp: state ids fit in uint16
// and the tables stay within 64K entries each.
const (
	maxDFAClasses = 256
	maxDFAStates  = 256
)

// dfa decides whether a regexp matches anywhere in a string (regexp.Match),
// for programs whose only assertions are ^ and $ (begin and end of text).
//
// It is the subset construction of the Thompson simulation regexp itself
// performs, over the same syntax.Prog (same parse flags, Simplify, Compile
// as regexp.Compile): a state is the set of instructions waiting for the
// next rune, always including Prog.Start, because regexp.Match looks for a
// match starting at every position. The input is read in runes exactly as
// regexp reads it (a byte that is not valid UTF-8 is one U+FFFD). Runes are
// grouped into classes by the end points of every rune instruction's
// ranges (and of each case-folded literal's orbit), so every instruction
// gives one answer for a whole class, and that answer is taken from
// syntax.Inst.MatchRune on the class's first rune.
//
// Once a match has been found the answer is yes whatever follows, so such
// a state goes nowhere else and counts as a match at the end.
type dfa struct {
	bounds []rune // class k is bounds[k] <= r < bounds[k+1]
	nclass int
	next   []uint16 // next[state*nclass+class]
	ascii  []uint16 // ascii[state<<7|c]: next for an ASCII byte c, skipping its class
	accept []bool   // per state: a match has ended, or ends if the text ends here
}

func (d *dfa) match(s []byte) bool {
	st := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			st = int(d.ascii[st<<7|int(c)])
			i++
			continue
		}
		r, w := utf8.DecodeRune(s[i:])
		st = int(d.next[st*d.nclass+d.classOf(r)])
		i += w
	}
	return d.accept[st]
}

func (d *dfa) classOf(r rune) int {
	// bounds[0] == 0 <= r, so the class is the last bound not above r.
	k, found := slices.BinarySearch(d.bounds, r)
	if !found {
		k--
	}
	return k
}

// newDFA returns nil when expr is outside what dfa handles or too big.
func newDFA(expr string) *dfa {
	re, err := syntax.Parse(expr, syntax.Perl) // as regexp.Compile
	if err != nil {
		return nil
	}
	prog, err := syntax.Compile(re.Simplify())
	if err != nil {
		return nil
	}
	bounds := []rune{0}
	for i := range prog.Inst {
		in := &prog.Inst[i]
		switch in.Op {
		case syntax.InstAlt, syntax.InstAltMatch, syntax.InstCapture, syntax.InstNop,
			syntax.InstMatch, syntax.InstFail:
		case syntax.InstEmptyWidth:
			if syntax.EmptyOp(in.Arg)&^(syntax.EmptyBeginText|syntax.EmptyEndText) != 0 {
				return nil // line and word boundaries depend on the runes around
			}
		case syntax.InstRune, syntax.InstRune1, syntax.InstRuneAny, syntax.InstRuneAnyNotNL:
			// Every op keeps its ranges in Rune, which MatchRune reads.
			if len(in.Rune) == 1 {
				r0 := in.Rune[0]
				bounds = append(bounds, r0, r0+1)
				if syntax.Flags(in.Arg)&syntax.FoldCase != 0 {
					for r := unicode.SimpleFold(r0); r != r0; r = unicode.SimpleFold(r) {
						bounds = append(bounds, r, r+1)
					}
				}
				break
			}
			for j := 0; j+1 < len(in.Rune); j += 2 {
				bounds = append(bounds, in.Rune[j], in.Rune[j+1]+1)
			}
		default:
			return nil
		}
	}
	slices.Sort(bounds)
	bounds = slices.Compact(bounds)
	if bounds[len(bounds)-1] > unicode.MaxRune {
		bounds = bounds[:len(bounds)-1] // the end of the last class
	}
	if len(bounds) > maxDFAClasses {
		return nil
	}
	d := &dfa{bounds: bounds, nclass: len(bounds)}

	b := dfaBuilder{prog: prog, ids: map[string]int{}}
	// State 0 is the start of the text, where ^ holds; every later state
	// is between runes or at the end, where it does not.
	b.state([]uint32{uint32(prog.Start)}, true)
	for st := 0; st < len(b.sets); st++ {
		set, begin := b.sets[st], st == 0
		var at syntax.EmptyOp
		if begin {
			at = syntax.EmptyBeginText
		}
		now, waiting := b.closure(set, at)
		end, _ := b.closure(set, at|syntax.EmptyEndText)
		d.accept = append(d.accept, now || end)
		for k := range d.nclass {
			if now {
				d.next = append(d.next, uint16(st))
				continue
			}
			next := []uint32{uint32(prog.Start)}
			for _, pc := range waiting {
				if in := &prog.Inst[pc]; in.MatchRune(bounds[k]) {
					next = append(next, in.Out)
				}
			}
			id := b.state(next, false)
			if id < 0 {
				return nil
			}
			d.next = append(d.next, uint16(id))
		}
	}
	for st := range d.accept {
		for c := range rune(utf8.RuneSelf) {
			d.ascii = append(d.ascii, d.next[st*d.nclass+d.classOf(c)])
		}
	}
	return d
}

type dfaBuilder struct {
	prog *syntax.Prog
	sets [][]uint32
	ids  map[string]int
}

// state returns the id of the state waiting at set, or -1 past the limit.
func (b *dfaBuilder) state(set []uint32, begin bool) int {
	slices.Sort(set)
	set = slices.Compact(set)
	key := make([]byte, 0, 1+4*len(set))
	if begin {
		key = append(key, 1)
	} else {
		key = append(key, 0)
	}
	for _, pc := range set {
		key = append(key, byte(pc), byte(pc>>8), byte(pc>>16), byte(pc>>24))
	}
	if id, ok := b.ids[string(key)]; ok {
		return id
	}
	if len(b.sets) == maxDFAStates {
		return -1
	}
	b.ids[string(key)] = len(b.sets)
	b.sets = append(b.sets, set)
	return len(b.sets) - 1
}

// closure follows the instructions of set that consume no rune, where the
// assertions in at hold; it reports whether a match is reached and the
// rune instructions reached.
func (b *dfaBuilder) closure(set []uint32, at syntax.EmptyOp) (match bool, runes []uint32) {
	seen := make([]bool, len(b.prog.Inst))
	stack := slices.Clone(set)
	for len(stack) > 0 {
		pc := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if seen[pc] {
			continue
		}
		seen[pc] = true
		in := &b.prog.Inst[pc]
		switch in.Op {
		case syntax.InstAlt, syntax.InstAltMatch:
			stack = append(stack, in.Out, in.Arg)
		case syntax.InstCapture, syntax.InstNop:
			stack = append(stack, in.Out)
		case syntax.InstEmptyWidth:
			if syntax.EmptyOp(in.Arg)&^at == 0 {
				stack = append(stack, in.Out)
			}
		case syntax.InstMatch:
			match = true
		case syntax.InstFail:
		default: // a rune instruction
			runes = append(runes, pc)
		}
	}
	return match, runes
}
