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
package schema

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"

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
	types    kind // 0: any type
	props    map[string]*node
	required []string
	reqBit   map[string]uint64 // required property → its bit in the seen mask
	closed   bool
	items    *node
	minItems int
	maxItems int // -1: none
	enum     [][]byte
	minLen   int
	maxLen   int // -1: none
	pattern  *regexp.Regexp
	minimum  *float64
	maximum  *float64
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
	n, err := compile(s, "#")
	if err != nil {
		return nil, err
	}
	return &Validator{root: n}, nil
}

func compile(s *jsonschema.Schema, at string) (*node, error) {
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
	n := &node{maxItems: -1, maxLen: -1, closed: false}
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
	if len(s.Properties) > 0 {
		n.props = make(map[string]*node, len(s.Properties))
		for name, ps := range s.Properties {
			pn, err := compile(ps, at+"/properties/"+name)
			if err != nil {
				return nil, err
			}
			n.props[name] = pn
		}
	}
	n.required = slices.Clone(s.Required)
	if len(n.required) > 64 {
		return nil, fmt.Errorf("%s: more than 64 required properties are not supported", at)
	}
	n.reqBit = make(map[string]uint64, len(n.required))
	for i, r := range n.required {
		n.reqBit[r] |= 1 << i
	}
	if ap := s.AdditionalProperties; ap != nil {
		// Only the false schema is supported.
		if b, err := json.Marshal(ap); err != nil || string(b) != "false" {
			return nil, fmt.Errorf("%s: additionalProperties other than false is not supported", at)
		}
		n.closed = true
	}
	if s.Items != nil {
		if n.items, err = compile(s.Items, at+"/items"); err != nil {
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
		if n.pattern, err = regexp.Compile(s.Pattern); err != nil {
			return nil, fmt.Errorf("%s: pattern: %w", at, err)
		}
	}
	n.minimum, n.maximum = s.Minimum, s.Maximum
	return n, nil
}

// Validate reports whether doc, one JSON value, satisfies the schema. It
// also rejects malformed JSON.
func (v *Validator) Validate(doc []byte) error {
	c := cursor{b: doc}
	c.ws()
	if err := c.value(v.root); err != nil {
		return err
	}
	c.ws()
	if c.i != len(c.b) {
		return c.errf("trailing data")
	}
	return nil
}

type cursor struct {
	b    []byte
	i    int
	buf  []byte // scratch for unescaped strings
	path []seg  // where the cursor is, turned into text only for an error
}

// seg is one step of a path: an object key, or an array index when key is nil.
type seg struct {
	key   []byte
	index int
}

func (c *cursor) pathString() string {
	var sb strings.Builder
	sb.WriteString("$")
	for _, p := range c.path {
		if p.key != nil {
			sb.WriteString("." + string(p.key))
		} else {
			sb.WriteString("[" + strconv.Itoa(p.index) + "]")
		}
	}
	return sb.String()
}

// wrap gives a node-level error the cursor's path.
func (c *cursor) wrap(err error) error {
	if err == nil {
		return nil
	}
	var ve *ValidationError
	if errors.As(err, &ve) && ve.Path == "" {
		ve.Path = c.pathString()
	}
	return err
}

// ValidationError says where a document breaks its schema.
type ValidationError struct {
	Path   string
	Reason string
}

func (e *ValidationError) Error() string { return e.Path + ": " + e.Reason }

func (c *cursor) errf(format string, a ...any) error {
	return &ValidationError{Path: c.pathString(), Reason: fmt.Sprintf(format, a...)}
}

var errSyntax = errors.New("malformed JSON")

func (c *cursor) ws() {
	for c.i < len(c.b) && (c.b[c.i] == ' ' || c.b[c.i] == '\t' || c.b[c.i] == '\n' || c.b[c.i] == '\r') {
		c.i++
	}
}

func (c *cursor) value(n *node) error {
	if c.i >= len(c.b) {
		return c.errf("%v", errSyntax)
	}
	switch ch := c.b[c.i]; {
	case ch == '{':
		if !n.allows(kObject) {
			return c.errf("is an object, want %s", n.typeNames())
		}
		return c.object(n)
	case ch == '[':
		if !n.allows(kArray) {
			return c.errf("is an array, want %s", n.typeNames())
		}
		return c.array(n)
	case ch == '"':
		s, err := c.str()
		if err != nil {
			return c.errf("%v", err)
		}
		if !n.allows(kString) {
			return c.errf("is a string, want %s", n.typeNames())
		}
		return c.wrap(n.checkString(s))
	case ch == 't' || ch == 'f':
		lit := "true"
		if ch == 'f' {
			lit = "false"
		}
		if !bytes.HasPrefix(c.b[c.i:], []byte(lit)) {
			return c.errf("%v", errSyntax)
		}
		c.i += len(lit)
		if !n.allows(kBoolean) {
			return c.errf("is a boolean, want %s", n.typeNames())
		}
		return c.wrap(n.checkEnumless())
	case ch == 'n':
		if !bytes.HasPrefix(c.b[c.i:], []byte("null")) {
			return c.errf("%v", errSyntax)
		}
		c.i += 4
		if !n.allows(kNull) {
			return c.errf("is null, want %s", n.typeNames())
		}
		return c.wrap(n.checkEnumless())
	default:
		f, isInt, err := c.number()
		if err != nil {
			return c.errf("%v", err)
		}
		if !(n.allows(kNumber) || (isInt && n.allows(kInteger))) {
			return c.errf("is a number, want %s", n.typeNames())
		}
		if n.minimum != nil && f < *n.minimum {
			return c.errf("%v is less than the minimum %v", f, *n.minimum)
		}
		if n.maximum != nil && f > *n.maximum {
			return c.errf("%v is more than the maximum %v", f, *n.maximum)
		}
		return c.wrap(n.checkEnumless())
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

func (n *node) checkEnumless() error {
	if n.enum != nil {
		return &ValidationError{Reason: "is not one of the enumerated values"}
	}
	return nil
}

func (n *node) checkString(s []byte) error {
	if n.enum != nil && !slices.ContainsFunc(n.enum, func(e []byte) bool { return bytes.Equal(e, s) }) {
		return &ValidationError{Reason: fmt.Sprintf("%q is not one of the enumerated values", s)}
	}
	if n.minLen > 0 || n.maxLen >= 0 {
		l := utf8.RuneCount(s)
		if l < n.minLen {
			return &ValidationError{Reason: fmt.Sprintf("is shorter than %d characters", n.minLen)}
		}
		if n.maxLen >= 0 && l > n.maxLen {
			return &ValidationError{Reason: fmt.Sprintf("is longer than %d characters", n.maxLen)}
		}
	}
	if n.pattern != nil && !n.pattern.Match(s) {
		return &ValidationError{Reason: fmt.Sprintf("does not match %s", n.pattern)}
	}
	return nil
}

func (c *cursor) object(n *node) error {
	c.i++ // {
	var seen uint64
	c.ws()
	if c.i < len(c.b) && c.b[c.i] == '}' {
		c.i++
		return c.wrap(n.checkRequired(seen))
	}
	for {
		c.ws()
		if c.i >= len(c.b) || c.b[c.i] != '"' {
			return c.errf("%v", errSyntax)
		}
		key, err := c.str()
		if err != nil {
			return c.errf("%v", err)
		}
		c.ws()
		if c.i >= len(c.b) || c.b[c.i] != ':' {
			return c.errf("%v", errSyntax)
		}
		c.i++
		c.ws()
		child, known := n.props[string(key)]
		if !known {
			if n.closed {
				return c.errf("unexpected property %q", key)
			}
			child = &node{maxItems: -1, maxLen: -1}
		}
		seen |= n.reqBit[string(key)]
		if len(c.buf) > 0 && len(key) > 0 && &key[0] == &c.buf[0] {
			key = bytes.Clone(key) // unescaped into the scratch buffer
		}
		c.path = append(c.path, seg{key: key})
		if err := c.value(child); err != nil {
			return err
		}
		c.path = c.path[:len(c.path)-1]
		c.ws()
		if c.i >= len(c.b) {
			return c.errf("%v", errSyntax)
		}
		switch c.b[c.i] {
		case ',':
			c.i++
		case '}':
			c.i++
			return c.wrap(n.checkRequired(seen))
		default:
			return c.errf("%v", errSyntax)
		}
	}
}

func (n *node) checkRequired(seen uint64) error {
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
	if items == nil {
		items = &node{maxItems: -1, maxLen: -1}
	}
	count := 0
	c.ws()
	if c.i < len(c.b) && c.b[c.i] == ']' {
		c.i++
	} else {
		for {
			c.ws()
			c.path = append(c.path, seg{index: count})
			if err := c.value(items); err != nil {
				return err
			}
			c.path = c.path[:len(c.path)-1]
			count++
			c.ws()
			if c.i >= len(c.b) {
				return c.errf("%v", errSyntax)
			}
			if c.b[c.i] == ']' {
				c.i++
				break
			}
			if c.b[c.i] != ',' {
				return c.errf("%v", errSyntax)
			}
			c.i++
		}
	}
	if count < n.minItems {
		return c.errf("has %d items, fewer than %d", count, n.minItems)
	}
	if n.maxItems >= 0 && count > n.maxItems {
		return c.errf("has %d items, more than %d", count, n.maxItems)
	}
	return nil
}

// str reads a string at c.i and returns its unescaped contents; the slice is
// valid until the next call.
func (c *cursor) str() ([]byte, error) {
	c.i++ // "
	start := c.i
	for c.i < len(c.b) {
		ch := c.b[c.i]
		if ch == '"' {
			// Invalid UTF-8 is not refused: encoding/json reads each bad
			// byte as U+FFFD, which counts, matches and compares as one
			// rune here too (utf8.RuneCount, regexp).
			s := c.b[start:c.i]
			c.i++
			return s, nil
		}
		if ch == '\\' {
			return c.strSlow(start)
		}
		if ch < 0x20 {
			return nil, errSyntax
		}
		c.i++
	}
	return nil, errSyntax
}

func (c *cursor) strSlow(start int) ([]byte, error) {
	c.buf = append(c.buf[:0], c.b[start:c.i]...)
	for c.i < len(c.b) {
		ch := c.b[c.i]
		switch {
		case ch == '"':
			c.i++
			return c.buf, nil
		case ch < 0x20:
			return nil, errSyntax
		case ch != '\\':
			c.buf = append(c.buf, ch)
			c.i++
			continue
		}
		if c.i+1 >= len(c.b) {
			return nil, errSyntax
		}
		esc := c.b[c.i+1]
		c.i += 2
		switch esc {
		case '"', '\\', '/':
			c.buf = append(c.buf, esc)
		case 'b':
			c.buf = append(c.buf, '\b')
		case 'f':
			c.buf = append(c.buf, '\f')
		case 'n':
			c.buf = append(c.buf, '\n')
		case 'r':
			c.buf = append(c.buf, '\r')
		case 't':
			c.buf = append(c.buf, '\t')
		case 'u':
			r, ok := c.hex4()
			if !ok {
				return nil, errSyntax
			}
			if utf16.IsSurrogate(r) {
				r2 := rune(-1)
				if c.i+1 < len(c.b) && c.b[c.i] == '\\' && c.b[c.i+1] == 'u' {
					c.i += 2
					if r2, ok = c.hex4(); !ok {
						return nil, errSyntax
					}
				}
				if d := utf16.DecodeRune(r, r2); d != utf8.RuneError {
					r = d
				} else {
					// A lone surrogate decodes to U+FFFD, as encoding/json does.
					c.buf = utf8.AppendRune(c.buf, utf8.RuneError)
					if r2 < 0 {
						continue
					}
					r = r2
					if utf16.IsSurrogate(r) {
						r = utf8.RuneError
					}
				}
			}
			c.buf = utf8.AppendRune(c.buf, r)
		default:
			return nil, errSyntax
		}
	}
	return nil, errSyntax
}

func (c *cursor) hex4() (rune, bool) {
	if c.i+4 > len(c.b) {
		return 0, false
	}
	v, err := strconv.ParseUint(string(c.b[c.i:c.i+4]), 16, 16)
	if err != nil {
		return 0, false
	}
	c.i += 4
	return rune(v), true
}

// number reads a JSON number and reports its value and whether it is an
// integer (a zero fractional part, as JSON Schema's "integer" means).
func (c *cursor) number() (float64, bool, error) {
	start := c.i
	neg := c.i < len(c.b) && c.b[c.i] == '-'
	if neg {
		c.i++
	}
	intStart := c.i
	switch {
	case c.i < len(c.b) && c.b[c.i] == '0':
		c.i++
	case c.i < len(c.b) && c.b[c.i] >= '1' && c.b[c.i] <= '9':
		for c.i < len(c.b) && c.b[c.i] >= '0' && c.b[c.i] <= '9' {
			c.i++
		}
	default:
		return 0, false, errSyntax
	}
	plain := true
	if c.i < len(c.b) && c.b[c.i] == '.' {
		plain = false
		c.i++
		d := c.i
		for c.i < len(c.b) && c.b[c.i] >= '0' && c.b[c.i] <= '9' {
			c.i++
		}
		if c.i == d {
			return 0, false, errSyntax
		}
	}
	if c.i < len(c.b) && (c.b[c.i] == 'e' || c.b[c.i] == 'E') {
		plain = false
		c.i++
		if c.i < len(c.b) && (c.b[c.i] == '+' || c.b[c.i] == '-') {
			c.i++
		}
		d := c.i
		for c.i < len(c.b) && c.b[c.i] >= '0' && c.b[c.i] <= '9' {
			c.i++
		}
		if c.i == d {
			return 0, false, errSyntax
		}
	}
	if plain && c.i-intStart <= 15 {
		var v int64
		for _, d := range c.b[intStart:c.i] {
			v = v*10 + int64(d-'0')
		}
		if neg {
			v = -v
		}
		return float64(v), true, nil
	}
	f, err := strconv.ParseFloat(string(c.b[start:c.i]), 64)
	if err != nil {
		return 0, false, errSyntax
	}
	return f, f == math.Trunc(f) && !math.IsInf(f, 0), nil
}

func unquoteOrNil(b []byte) []byte {
	var s string
	if json.Unmarshal(b, &s) != nil {
		return nil
	}
	return []byte(s)
}
