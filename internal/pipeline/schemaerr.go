package pipeline

import (
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/cobranca/cobranca/internal/failure"
	"github.com/google/jsonschema-go/jsonschema"
)

// schemaFault turns arguments v that fail the input schema s into the
// caller's invalid_arguments failure: the JSON path of the member or item at
// fault (customer.name, invoices[3].dueDate) and what it must be, said from
// the schema — never the value, which may be a payload, and never a long
// regular expression. jsonschema-go's own error names the schema's path and
// quotes the value, so the pipeline walks both itself: down every member or
// item that fails its subschema (by jsonschema-go's verdict), to the node
// whose own keywords fail.
func (t *compiled) schemaFault(s *jsonschema.Schema, v any) *failure.Error {
	path, msg := t.faults.locate(s, v, "", "")
	if path == "" {
		path = "arguments"
	}
	return &failure.Error{Code: failure.InvalidArguments, Field: path, Message: msg}
}

// faultFinder keeps the subschemas it resolved, by node, for the walks of
// one tool's schema.
type faultFinder struct {
	mu       sync.Mutex
	resolved map[*jsonschema.Schema]*jsonschema.Resolved
	patterns map[string]*regexp.Regexp
}

// valid reports whether v satisfies the subschema s, as jsonschema-go
// judges it (a subschema that does not resolve counts as satisfied: the
// walk then blames the node above).
func (f *faultFinder) valid(s *jsonschema.Schema, v any) bool {
	f.mu.Lock()
	r, ok := f.resolved[s]
	if !ok {
		r, _ = s.Resolve(nil)
		if f.resolved == nil {
			f.resolved = map[*jsonschema.Schema]*jsonschema.Resolved{}
		}
		f.resolved[s] = r
	}
	f.mu.Unlock()
	return r == nil || r.Validate(v) == nil
}

func (f *faultFinder) pattern(p string) *regexp.Regexp {
	f.mu.Lock()
	defer f.mu.Unlock()
	re, ok := f.patterns[p]
	if !ok {
		re, _ = regexp.Compile(p)
		if f.patterns == nil {
			f.patterns = map[string]*regexp.Regexp{}
		}
		f.patterns[p] = re
	}
	return re
}

// locate returns the path of the first fault of v against s under path, and
// what the value there must be; cond says when s applies ("when status is
// \"paused\""), for the faults of a conditional branch.
func (f *faultFinder) locate(s *jsonschema.Schema, v any, path, cond string) (string, string) {
	if msg := typeFault(s, v); msg != "" {
		return path, msg
	}
	switch x := v.(type) {
	case map[string]any:
		for _, name := range s.Required {
			if _, ok := x[name]; !ok {
				return join(path, name), strings.TrimSpace("is required " + cond)
			}
		}
		for _, k := range sortedKeys(x) {
			sub := s.Properties[k]
			if sub == nil {
				if closed(s.AdditionalProperties) {
					if path == "" {
						return k, "is not an argument of this tool"
					}
					return join(path, k), "is not a member of " + path
				}
				sub = s.AdditionalProperties
			}
			if sub != nil && !f.valid(sub, x[k]) {
				return f.locate(sub, x[k], join(path, k), "")
			}
		}
	case []any:
		if s.Items != nil {
			for i, item := range x {
				if !f.valid(s.Items, item) {
					return f.locate(s.Items, item, path+"["+strconv.Itoa(i)+"]", "")
				}
			}
		}
	}
	if s.If != nil {
		branch, when := s.Then, condition(s.If, true)
		if !f.valid(s.If, v) {
			branch, when = s.Else, condition(s.If, false)
		}
		if branch != nil && !f.valid(branch, v) {
			if x, ok := v.(map[string]any); ok && branch.Not != nil && len(branch.Not.Required) > 0 {
				for _, name := range branch.Not.Required {
					if _, present := x[name]; present {
						// Refused where the branch taken holds: allowed only where the other would.
						return join(path, name), "is allowed only " + condition(s.If, branch != s.Then)
					}
				}
			}
			return f.locate(branch, v, path, when)
		}
	}
	for _, sub := range s.AllOf {
		if !f.valid(sub, v) {
			return f.locate(sub, v, path, cond)
		}
	}
	return path, f.ownFault(s, v)
}

// ownFault says which of s's own keywords v fails.
func (f *faultFinder) ownFault(s *jsonschema.Schema, v any) string {
	if len(s.Enum) > 0 && !slices.ContainsFunc(s.Enum, func(e any) bool { return jsonEqual(e, v) }) {
		words := make([]string, len(s.Enum))
		for i, e := range s.Enum {
			b, _ := json.Marshal(e)
			words[i] = string(b)
		}
		return "must be one of " + strings.Join(words, ", ")
	}
	if s.Const != nil && !jsonEqual(*s.Const, v) {
		b, _ := json.Marshal(*s.Const)
		return "must be " + string(b)
	}
	switch x := v.(type) {
	case string:
		n := utf8.RuneCountInString(x)
		if s.MinLength != nil && n < *s.MinLength || s.MaxLength != nil && n > *s.MaxLength {
			return "must be " + bounds(s.MinLength, s.MaxLength, "character") + " long"
		}
		if s.Pattern != "" {
			if re := f.pattern(s.Pattern); re != nil && !re.MatchString(x) {
				switch {
				case s.Format == "date":
					return "must be a calendar date written YYYY-MM-DD"
				case len(s.Pattern) <= 64:
					return "must match the pattern " + s.Pattern
				}
				return "is blank, or holds a character this field does not accept (a control, invisible or bidirectional one)"
			}
		}
	case float64:
		lo, hi := s.Minimum, s.Maximum
		if lo != nil && x < *lo || hi != nil && x > *hi {
			return "must be " + numBounds(lo, hi)
		}
		if s.ExclusiveMinimum != nil && x <= *s.ExclusiveMinimum {
			return "must be greater than " + strconv.FormatFloat(*s.ExclusiveMinimum, 'f', -1, 64)
		}
		if s.ExclusiveMaximum != nil && x >= *s.ExclusiveMaximum {
			return "must be less than " + strconv.FormatFloat(*s.ExclusiveMaximum, 'f', -1, 64)
		}
	case []any:
		n := len(x)
		if s.MinItems != nil && n < *s.MinItems || s.MaxItems != nil && n > *s.MaxItems {
			return "must hold " + bounds(s.MinItems, s.MaxItems, "item")
		}
		if s.UniqueItems {
			return "must not hold the same item twice"
		}
	}
	return "does not match the tool's input schema"
}

// typeFault says what v must be when it is not of s's type (v as
// encoding/json decodes into any: numbers are float64).
func typeFault(s *jsonschema.Schema, v any) string {
	types := s.Types
	if s.Type != "" {
		types = []string{s.Type}
	}
	if len(types) == 0 || slices.ContainsFunc(types, func(t string) bool { return hasType(v, t) }) {
		return ""
	}
	words := make([]string, len(types))
	for i, t := range types {
		words[i] = article(t)
	}
	return "must be " + strings.Join(words, " or ")
}

func hasType(v any, t string) bool {
	switch x := v.(type) {
	case nil:
		return t == "null"
	case bool:
		return t == "boolean"
	case string:
		return t == "string"
	case float64:
		return t == "number" || t == "integer" && x == math.Trunc(x) && !math.IsInf(x, 0)
	case []any:
		return t == "array"
	case map[string]any:
		return t == "object"
	}
	return false
}

func article(t string) string {
	switch t {
	case "integer", "object", "array":
		return "an " + t
	case "null":
		return "null"
	}
	return "a " + t
}

// closed reports whether a schema admits no value at all ({"not": {}}), as
// additionalProperties: false is written.
func closed(s *jsonschema.Schema) bool {
	return s != nil && s.Not != nil && isEmpty(s.Not)
}

func isEmpty(s *jsonschema.Schema) bool { return reflect.ValueOf(*s).IsZero() }

// condition says when an if-schema holds, or does not: its members' const
// values, as "when status is \"paused\"".
func condition(s *jsonschema.Schema, holds bool) string {
	var parts []string
	for _, k := range sortedKeys(s.Properties) {
		if c := s.Properties[k].Const; c != nil {
			b, _ := json.Marshal(*c)
			verb := " is "
			if !holds {
				verb = " is not "
			}
			parts = append(parts, k+verb+string(b))
		}
	}
	// A member the if-schema requires without saying its value: "when draftIds is given".
	for _, k := range s.Required {
		if p := s.Properties[k]; p != nil && p.Const != nil {
			continue
		}
		if holds {
			parts = append(parts, k+" is given")
		} else {
			parts = append(parts, k+" is not given")
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return "when " + strings.Join(parts, " and ")
}

func bounds(lo, hi *int, unit string) string {
	plural := func(n int) string {
		if n == 1 {
			return "1 " + unit
		}
		return strconv.Itoa(n) + " " + unit + "s"
	}
	switch {
	case lo != nil && hi != nil:
		return fmt.Sprintf("%d to %s", *lo, plural(*hi))
	case lo != nil:
		return "at least " + plural(*lo)
	case hi != nil:
		return "at most " + plural(*hi)
	}
	return "of another size"
}

func numBounds(lo, hi *float64) string {
	f := func(x float64) string { return strconv.FormatFloat(x, 'f', -1, 64) }
	switch {
	case lo != nil && hi != nil:
		return "between " + f(*lo) + " and " + f(*hi)
	case lo != nil:
		return "at least " + f(*lo)
	}
	return "at most " + f(*hi)
}

func join(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func jsonEqual(a, b any) bool {
	x, err1 := json.Marshal(a)
	y, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && string(x) == string(y)
}
