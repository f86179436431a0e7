// Package schema checks JSON documents against the subset of JSON Schema
// that cobranca's Tool Contracts use, in one pass over the encoded bytes and
// without decoding them into maps.
//
// Every structured result is checked against its tool's output schema
// before it is sent. github.com/google/jsonschema-go does that on a decoded
// map[string]any, which for a 125-account result costs milliseconds and
// thousands of allocations; this package answers the same question over the
// bytes the server is about to send. Compile refuses a schema that uses a
// keyword outside the subset, so a contract can never be checked less than
// its schema says; the tests hold the two validators to the same verdicts.
// One difference, stricter on purpose: every copy of a repeated object key
// is checked, where jsonschema-go (through encoding/json) sees only the last.
package schema

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/cobranca/cobranca/internal/jsonscan"
	"github.com/google/jsonschema-go/jsonschema"
)

type kind uint8

const (
	kObject kind = 1 << iota
	kArray
	kString
	kInteger
	kNumber
	kBoolean
	kNull
)

var kindNames = map[string]kind{
	"object": kObject, "array": kArray, "string": kString, "integer": kInteger,
	"number": kNumber, "boolean": kBoolean, "null": kNull,
}

type node struct {
	types kind // 0: any type
	// props are the declared properties, then the required names that are
	// not declared, in the schema's PropertyOrder (the order the encoder
	// writes them) when it has one, so the next key is usually the next
	// prop and found without hashing; index finds the others.
	props    []prop
	index    map[string]int
	required []string
	reqAll   uint64 // every required property's bit in the seen mask
	closed   bool
	other    *node // any value: undeclared properties, and items when the schema has none
	items    *node
	minItems int
	maxItems int // -1: none
	enum     [][]byte
	minLen   int
	maxLen   int // -1: none
	pattern  *pattern
	minimum  *float64
	maximum  *float64
	strCheck bool // enum, minLen, maxLen or pattern is set
}

type prop struct {
	name   string
	quoted string // `"name":` when name needs no escape in JSON, else ""
	// When quoted has at most 16 bytes, qw holds them (little-endian,
	// zero-padded) and qm selects them, to compare in two loads.
	qw, qm [2]uint64
	node   *node  // nil: required but not declared
	bit    uint64 // its bits in the seen mask, if required
}

// keyAt reports whether b starts with p.quoted.
func (p *prop) keyAt(b []byte) bool {
	if p.qm[0] != 0 && len(b) >= 16 {
		return binary.LittleEndian.Uint64(b)&p.qm[0] == p.qw[0] &&
			binary.LittleEndian.Uint64(b[8:])&p.qm[1] == p.qw[1]
	}
	return p.quoted != "" && len(b) >= len(p.quoted) && string(b[:len(p.quoted)]) == p.quoted
}

// Validator checks documents against one compiled schema.
type Validator struct{ root *node }

// supported are the keywords Compile understands; annotations are ignored.
var supported = []string{
	"type", "properties", "required", "additionalProperties", "items", "minItems", "maxItems",
	"enum", "minLength", "maxLength", "pattern", "minimum", "maximum",
	// annotations (no effect on validity; jsonschema-go treats format as one)
	"description", "title", "format", "$schema", "$id", "examples", "default",
}

// Compile compiles s, or reports why it cannot be checked by this package.
func Compile(s *jsonschema.Schema) (*Validator, error) {
	anyNode := &node{maxItems: -1, maxLen: -1}
	anyNode.other, anyNode.items = anyNode, anyNode
	n, err := compile(s, "#", anyNode)
	if err != nil {
		return nil, err
	}
	return &Validator{root: n}, nil
}

// compile compiles s; anyNode is the node that accepts any value.
func compile(s *jsonschema.Schema, at string, anyNode *node) (*node, error) {
	if s == nil {
		return nil, fmt.Errorf("%s: nil schema", at)
	}
	raw, err := json.Marshal(s)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", at, err)
	}
	var keys map[string]json.RawMessage
	if err := json.Unmarshal(raw, &keys); err != nil {
		return nil, fmt.Errorf("%s: %w", at, err)
	}
	for k := range keys {
		if !slices.Contains(supported, k) {
			return nil, fmt.Errorf("%s: keyword %q is not supported", at, k)
		}
	}
	n := &node{maxItems: -1, maxLen: -1, closed: false, other: anyNode, items: anyNode}
	types := s.Types
	if s.Type != "" {
		types = append(types, s.Type)
	}
	for _, t := range types {
		k, ok := kindNames[t]
		if !ok {
			return nil, fmt.Errorf("%s: unknown type %q", at, t)
		}
		n.types |= k
	}
	n.required = slices.Clone(s.Required)
	if len(n.required) > 64 {
		return nil, fmt.Errorf("%s: more than 64 required properties are not supported", at)
	}
	var names []string
	for _, name := range s.PropertyOrder {
		if _, ok := s.Properties[name]; ok && !slices.Contains(names, name) {
			names = append(names, name)
		}
	}
	ordered := len(names)
	for name := range s.Properties {
		if !slices.Contains(names[:ordered], name) {
			names = append(names, name)
		}
	}
	slices.Sort(names[ordered:])
	declared := len(names)
	for _, r := range n.required {
		if !slices.Contains(names, r) {
			names = append(names, r)
		}
	}
	if len(names) > 0 {
		n.index = make(map[string]int, len(names))
	}
	for i, name := range names {
		p := prop{name: name}
		if !strings.ContainsFunc(name, func(r rune) bool { return r < 0x20 || r == '"' || r == '\\' }) {
			p.quoted = `"` + name + `":`
			if len(p.quoted) <= 16 {
				var q [16]byte
				copy(q[:], p.quoted)
				for i := range len(p.quoted) {
					p.qm[i/8] |= 0xff << (8 * (i % 8))
				}
				p.qw = [2]uint64{binary.LittleEndian.Uint64(q[:]), binary.LittleEndian.Uint64(q[8:])}
			}
		}
		if i < declared {
			if p.node, err = compile(s.Properties[name], at+"/properties/"+name, anyNode); err != nil {
				return nil, err
			}
		}
		for j, r := range n.required {
			if r == name {
				p.bit |= 1 << j
			}
		}
		n.reqAll |= p.bit
		n.props = append(n.props, p)
		n.index[name] = i
	}
	if ap := s.AdditionalProperties; ap != nil {
		// Only the false schema is supported.
		if b, err := json.Marshal(ap); err != nil || string(b) != "false" {
			return nil, fmt.Errorf("%s: additionalProperties other than false is not supported", at)
		}
		n.closed = true
	}
	if s.Items != nil {
		if n.items, err = compile(s.Items, at+"/items", anyNode); err != nil {
			return nil, err
		}
	}
	if s.MinItems != nil {
		n.minItems = *s.MinItems
	}
	if s.MaxItems != nil {
		n.maxItems = *s.MaxItems
	}
	for _, e := range s.Enum {
		str, ok := e.(string)
		if !ok {
			return nil, fmt.Errorf("%s: only string enums are supported", at)
		}
		b, _ := json.Marshal(str)
		n.enum = append(n.enum, unquoteOrNil(b))
	}
	if s.MinLength != nil {
		n.minLen = *s.MinLength
	}
	if s.MaxLength != nil {
		n.maxLen = *s.MaxLength
	}
	if s.Pattern != "" {
		if n.pattern, err = compilePattern(s.Pattern); err != nil {
			return nil, fmt.Errorf("%s: pattern: %w", at, err)
		}
	}
	n.minimum, n.maximum = s.Minimum, s.Maximum
	n.strCheck = n.enum != nil || n.minLen > 0 || n.maxLen >= 0 || n.pattern != nil
	return n, nil
}

// Validate reports whether doc, one JSON value, satisfies the schema. It
// also rejects malformed JSON.
func (v *Validator) Validate(doc []byte) error {
	c := cursor{b: doc}
	err := c.document(v.root)
	if ve, ok := err.(*ValidationError); ok {
		ve.Path = pathString(c.within)
	}
	return err
}

func (c *cursor) document(n *node) error {
	c.ws()
	if err := c.value(n); err != nil {
		return err
	}
	c.ws()
	if c.i != len(c.b) {
		return errf("trailing data")
	}
	return nil
}

type cursor struct {
	b   []byte
	i   int
	buf []byte // scratch for unescaped strings
	// within is the path of the value an error was found in, innermost
	// step first, gathered as the error returns through the containers:
	// checking a valid document keeps no path.
	within []seg
}

// seg is one step of a path: an object key, or an array index when key is nil.
type seg struct {
	key   []byte
	index int
}

// pathString spells a path given innermost step first.
func pathString(within []seg) string {
	var sb strings.Builder
	sb.WriteString("$")
	for _, p := range slices.Backward(within) {
		if p.key != nil {
			sb.WriteString("." + string(p.key))
		} else {
			sb.WriteString("[" + strconv.Itoa(p.index) + "]")
		}
	}
	return sb.String()
}

// ValidationError says where a document breaks its schema.
type ValidationError struct {
	Path   string
	Reason string
}

func (e *ValidationError) Error() string { return e.Path + ": " + e.Reason }

func errf(format string, a ...any) error {
	return &ValidationError{Reason: fmt.Sprintf(format, a...)}
}

// inside records that err, from the value at step s, is within that step.
func (c *cursor) inside(err error, s seg) error {
	c.within = append(c.within, s)
	return err
}

var errSyntax = errors.New("malformed JSON")

func (c *cursor) ws() { c.i = jsonscan.Space(c.b, c.i) }

func (c *cursor) value(n *node) error {
	if c.i >= len(c.b) {
		return errf("%v", errSyntax)
	}
	switch ch := c.b[c.i]; {
	case ch == '{':
		if !n.allows(kObject) {
			return errf("is an object, want %s", n.typeNames())
		}
		return c.object(n)
	case ch == '[':
		if !n.allows(kArray) {
			return errf("is an array, want %s", n.typeNames())
		}
		return c.array(n)
	case ch == '"':
		s, ascii, err := c.str()
		if err != nil {
			return errf("%v", err)
		}
		if !n.allows(kString) {
			return errf("is a string, want %s", n.typeNames())
		}
		if !n.strCheck {
			return nil
		}
		return n.checkString(s, ascii)
	case ch == 't' || ch == 'f':
		lit := "true"
		if ch == 'f' {
			lit = "false"
		}
		if !bytes.HasPrefix(c.b[c.i:], []byte(lit)) {
			return errf("%v", errSyntax)
		}
		c.i += len(lit)
		if !n.allows(kBoolean) {
			return errf("is a boolean, want %s", n.typeNames())
		}
		return n.checkEnumless()
	case ch == 'n':
		if !bytes.HasPrefix(c.b[c.i:], []byte("null")) {
			return errf("%v", errSyntax)
		}
		c.i += 4
		if !n.allows(kNull) {
			return errf("is null, want %s", n.typeNames())
		}
		return n.checkEnumless()
	default:
		f, end, isInt, fault := jsonscan.Float(c.b, c.i)
		c.i = end
		if fault != jsonscan.None {
			return errf("%v", errSyntax)
		}
		if !(n.allows(kNumber) || (isInt && n.allows(kInteger))) {
			return errf("is a number, want %s", n.typeNames())
		}
		if n.minimum != nil && f < *n.minimum {
			return errf("%v is less than the minimum %v", f, *n.minimum)
		}
		if n.maximum != nil && f > *n.maximum {
			return errf("%v is more than the maximum %v", f, *n.maximum)
		}
		return n.checkEnumless()
	}
}

func (n *node) allows(k kind) bool {
	if n.types == 0 || n.types&k != 0 {
		return true
	}
	// JSON Schema: "number" admits integers.
	return k == kInteger && n.types&kNumber != 0
}

func (n *node) typeNames() string {
	var out []string
	for name, k := range kindNames {
		if n.types&k != 0 {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return fmt.Sprint(out)
}

func (n *node) inEnum(s []byte) bool {
	for _, e := range n.enum {
		if string(e) == string(s) {
			return true
		}
	}
	return false
}

func (n *node) checkEnumless() error {
	if n.enum != nil {
		return &ValidationError{Reason: "is not one of the enumerated values"}
	}
	return nil
}

// checkString checks the string s; ascii says s is all ASCII, so its
// length in runes is len(s).
func (n *node) checkString(s []byte, ascii bool) error {
	if n.enum != nil && !n.inEnum(s) {
		return &ValidationError{Reason: fmt.Sprintf("%q is not one of the enumerated values", s)}
	}
	if n.minLen > 0 || n.maxLen >= 0 {
		l := len(s)
		if !ascii {
			l = utf8.RuneCount(s)
		}
		if l < n.minLen {
			return &ValidationError{Reason: fmt.Sprintf("is shorter than %d characters", n.minLen)}
		}
		if n.maxLen >= 0 && l > n.maxLen {
			return &ValidationError{Reason: fmt.Sprintf("is longer than %d characters", n.maxLen)}
		}
	}
	if n.pattern != nil && !n.pattern.match(s) {
		return &ValidationError{Reason: fmt.Sprintf("does not match %s", n.pattern)}
	}
	return nil
}

func (c *cursor) object(n *node) error {
	c.i++ // {
	var seen uint64
	hint := 0 // the prop expected next
	c.ws()
	if c.i < len(c.b) && c.b[c.i] == '}' {
		c.i++
		return n.checkRequired(seen)
	}
	for {
		c.ws()
		if c.i >= len(c.b) || c.b[c.i] != '"' {
			return errf("%v", errSyntax)
		}
		var key []byte
		j := -1
		if hint < len(n.props) {
			// The expected key, written plainly and followed by its colon,
			// is what str, ws and the look-up below would find.
			if p := &n.props[hint]; p.keyAt(c.b[c.i:]) {
				key = c.b[c.i+1 : c.i+len(p.quoted)-2]
				c.i += len(p.quoted)
				j = hint
			}
		}
		if j < 0 {
			var err error
			if key, _, err = c.str(); err != nil {
				return errf("%v", err)
			}
			c.ws()
			if c.i >= len(c.b) || c.b[c.i] != ':' {
				return errf("%v", errSyntax)
			}
			c.i++
			var ok bool
			if j, ok = n.index[string(key)]; !ok {
				j = -1
			}
		}
		c.ws()
		child, declared := n.other, false
		if j >= 0 {
			p := &n.props[j]
			seen |= p.bit
			if p.node != nil {
				child, declared = p.node, true
			}
			hint = j + 1
		}
		if !declared && n.closed {
			return errf("unexpected property %q", key)
		}
		if len(c.buf) > 0 && len(key) > 0 && &key[0] == &c.buf[0] {
			key = bytes.Clone(key) // unescaped into the scratch buffer
		}
		if err := c.value(child); err != nil {
			return c.inside(err, seg{key: key})
		}
		c.ws()
		if c.i >= len(c.b) {
			return errf("%v", errSyntax)
		}
		switch c.b[c.i] {
		case ',':
			c.i++
		case '}':
			c.i++
			return n.checkRequired(seen)
		default:
			return errf("%v", errSyntax)
		}
	}
}

func (n *node) checkRequired(seen uint64) error {
	if seen&n.reqAll == n.reqAll {
		return nil
	}
	for i, r := range n.required {
		if seen&(1<<i) == 0 {
			return &ValidationError{Reason: fmt.Sprintf("missing required property %q", r)}
		}
	}
	return nil
}

func (c *cursor) array(n *node) error {
	c.i++ // [
	items := n.items
	count := 0
	c.ws()
	if c.i < len(c.b) && c.b[c.i] == ']' {
		c.i++
	} else {
		for {
			c.ws()
			if err := c.value(items); err != nil {
				return c.inside(err, seg{index: count})
			}
			count++
			c.ws()
			if c.i >= len(c.b) {
				return errf("%v", errSyntax)
			}
			if c.b[c.i] == ']' {
				c.i++
				break
			}
			if c.b[c.i] != ',' {
				return errf("%v", errSyntax)
			}
			c.i++
		}
	}
	if count < n.minItems {
		return errf("has %d items, fewer than %d", count, n.minItems)
	}
	if n.maxItems >= 0 && count > n.maxItems {
		return errf("has %d items, more than %d", count, n.maxItems)
	}
	return nil
}

// str reads a string at c.i and returns its unescaped contents, and whether
// they are all ASCII; the slice is valid until the next call.
//
// Invalid UTF-8 is not refused: encoding/json reads each bad byte, and
// each unpaired surrogate escape, as U+FFFD; a bad byte left as it is
// counts, matches and compares as one rune here too (utf8.RuneCount,
// regexp, dfa), and an escape is decoded as encoding/json decodes it.
func (c *cursor) str() (s []byte, ascii bool, err error) {
	start := c.i + 1
	// Most strings have no escape: one scan to the closing quote.
	j, high := jsonscan.Stop(c.b, start)
	if j < len(c.b) && c.b[j] == '"' {
		c.i = j + 1
		return c.b[start:j], !high, nil
	}
	c.buf, c.i, err = decodeString(append(c.buf[:0], c.b[start:j]...), c.b, j)
	return c.buf, false, err
}

// decodeString appends to dst, which holds the plain start of a string's
// contents, the rest of them from b[j], escapes decoded, and returns the
// offset past the string.
func decodeString(dst, b []byte, j int) ([]byte, int, error) {
	dst, end, f := jsonscan.Decode(dst, b, j, jsonscan.ReplaceSurrogates)
	if f != jsonscan.None {
		return dst, end, errSyntax
	}
	return dst, end, nil
}

func unquoteOrNil(b []byte) []byte {
	var s string
	if json.Unmarshal(b, &s) != nil {
		return nil
	}
	return []byte(s)
}
