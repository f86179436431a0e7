package mcpapi

import (
	"bytes"
	"unicode/utf8"
)

// callEnvelope is a tools/call request read in one pass over the body: the
// raw id, the tool name, the raw arguments and the raw _meta, all slices of
// the body (nothing is copied or decoded twice).
type callEnvelope struct {
	id   []byte // a JSON integer literal or a plain JSON string, as sent
	name string
	args []byte // a JSON object
	meta []byte // a JSON object, or nil when absent
}

// scanCall reads body as a single JSON-RPC tools/call request of the plain
// shape every client sends. It returns ok=false for anything else — another
// method, a batch, an unexpected member, a duplicate key, an escape in a key
// or in the id or name, malformed JSON — and the caller then hands the
// request to the SDK, which answers it as it always would. So this scanner
// only ever needs to recognise the ordinary case, never to judge the rest.
func scanCall(body []byte) (env callEnvelope, ok bool) {
	s := scanner{b: body}
	s.ws()
	if !s.eat('{') {
		return env, false
	}
	var seenJSONRPC, seenMethod, seenParams, seenID bool
	for first := true; ; first = false {
		s.ws()
		if s.eat('}') {
			if first {
				return env, false
			}
			break
		}
		if !first && !(s.eat(',') && s.wsThen()) {
			return env, false
		}
		key, kok := s.plainString()
		if !kok || !s.colon() {
			return env, false
		}
		switch string(key) {
		case "jsonrpc":
			v, vok := s.plainString()
			if seenJSONRPC || !vok || string(v) != "2.0" {
				return env, false
			}
			seenJSONRPC = true
		case "id":
			v, vok := s.id()
			if seenID || !vok {
				return env, false
			}
			env.id, seenID = v, true
		case "method":
			v, vok := s.plainString()
			if seenMethod || !vok || string(v) != "tools/call" {
				return env, false
			}
			seenMethod = true
		case "params":
			if seenParams || !s.params(&env) {
				return env, false
			}
			seenParams = true
		default:
			return env, false
		}
	}
	s.ws()
	if s.i != len(s.b) || !seenJSONRPC || !seenID || !seenMethod || !seenParams || env.name == "" || env.args == nil {
		return env, false
	}
	return env, true
}

type scanner struct {
	b []byte
	i int
}

func (s *scanner) ws() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

func (s *scanner) wsThen() bool { s.ws(); return true }

func (s *scanner) eat(c byte) bool {
	if s.i < len(s.b) && s.b[s.i] == c {
		s.i++
		return true
	}
	return false
}

func (s *scanner) colon() bool {
	s.ws()
	if !s.eat(':') {
		return false
	}
	s.ws()
	return true
}

// plainString reads a string with no escapes and no control characters,
// returning its contents.
func (s *scanner) plainString() ([]byte, bool) {
	if !s.eat('"') {
		return nil, false
	}
	start := s.i
	for s.i < len(s.b) {
		c := s.b[s.i]
		switch {
		case c == '"':
			v := s.b[start:s.i]
			s.i++
			return v, utf8.Valid(v)
		case c == '\\' || c < 0x20:
			return nil, false
		}
		s.i++
	}
	return nil, false
}

// id reads a JSON-RPC id: a plain string or an integer literal of at most 15
// digits (exact in every JSON implementation), returned as sent.
func (s *scanner) id() ([]byte, bool) {
	start := s.i
	if s.i < len(s.b) && s.b[s.i] == '"' {
		v, ok := s.plainString()
		if !ok || len(v) == 0 || len(v) > 128 {
			return nil, false
		}
		return s.b[start:s.i], true
	}
	s.eat('-')
	digits := s.i
	for s.i < len(s.b) && s.b[s.i] >= '0' && s.b[s.i] <= '9' {
		s.i++
	}
	n := s.i - digits
	if n == 0 || n > 15 || (n > 1 && s.b[digits] == '0') {
		return nil, false
	}
	if s.i < len(s.b) && (s.b[s.i] == '.' || s.b[s.i] == 'e' || s.b[s.i] == 'E') {
		return nil, false
	}
	return s.b[start:s.i], true
}

func (s *scanner) params(env *callEnvelope) bool {
	if !s.eat('{') {
		return false
	}
	var seenName bool
	for first := true; ; first = false {
		s.ws()
		if s.eat('}') {
			return !first
		}
		if !first && !(s.eat(',') && s.wsThen()) {
			return false
		}
		key, ok := s.plainString()
		if !ok || !s.colon() {
			return false
		}
		switch string(key) {
		case "name":
			v, ok := s.plainString()
			if seenName || !ok {
				return false
			}
			env.name, seenName = string(v), true
		case "arguments":
			if env.args != nil || s.i >= len(s.b) || s.b[s.i] != '{' {
				return false
			}
			start := s.i
			if !s.skipValue(0) {
				return false
			}
			env.args = s.b[start:s.i]
		case "_meta":
			if env.meta != nil || s.i >= len(s.b) || s.b[s.i] != '{' {
				return false
			}
			start := s.i
			if !s.skipValue(0) {
				return false
			}
			env.meta = s.b[start:s.i]
		default:
			return false
		}
	}
}

// maxDepth bounds nesting inside a skipped value.
const maxDepth = 64

// skipValue moves past one well-formed JSON value. It checks the grammar
// (RFC 8259) but not the meaning; duplicate keys inside arguments are the
// tool's decoder's business.
func (s *scanner) skipValue(depth int) bool {
	if depth > maxDepth || s.i >= len(s.b) {
		return false
	}
	switch c := s.b[s.i]; {
	case c == '{':
		s.i++
		s.ws()
		if s.eat('}') {
			return true
		}
		for {
			s.ws()
			if !s.skipString() || !s.colon() || !s.skipValue(depth+1) {
				return false
			}
			s.ws()
			if s.eat('}') {
				return true
			}
			if !s.eat(',') {
				return false
			}
		}
	case c == '[':
		s.i++
		s.ws()
		if s.eat(']') {
			return true
		}
		for {
			s.ws()
			if !s.skipValue(depth + 1) {
				return false
			}
			s.ws()
			if s.eat(']') {
				return true
			}
			if !s.eat(',') {
				return false
			}
		}
	case c == '"':
		return s.skipString()
	case c == 't':
		return s.literal("true")
	case c == 'f':
		return s.literal("false")
	case c == 'n':
		return s.literal("null")
	default:
		return s.skipNumber()
	}
}

func (s *scanner) literal(lit string) bool {
	if bytes.HasPrefix(s.b[s.i:], []byte(lit)) {
		s.i += len(lit)
		return true
	}
	return false
}

func (s *scanner) skipString() bool {
	if !s.eat('"') {
		return false
	}
	start := s.i
	for s.i < len(s.b) {
		c := s.b[s.i]
		switch {
		case c == '"':
			ok := utf8.Valid(s.b[start:s.i])
			s.i++
			return ok
		case c == '\\':
			if s.i+1 >= len(s.b) {
				return false
			}
			switch s.b[s.i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				s.i += 2
			case 'u':
				if s.i+6 > len(s.b) || !isHex4(s.b[s.i+2:s.i+6]) {
					return false
				}
				s.i += 6
			default:
				return false
			}
		case c < 0x20:
			return false
		default:
			s.i++
		}
	}
	return false
}

func isHex4(b []byte) bool {
	for _, c := range b {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
			return false
		}
	}
	return true
}

func (s *scanner) skipNumber() bool {
	s.eat('-')
	switch {
	case s.eat('0'):
	case s.i < len(s.b) && s.b[s.i] >= '1' && s.b[s.i] <= '9':
		s.digits()
	default:
		return false
	}
	if s.eat('.') && !s.digits() {
		return false
	}
	if s.i < len(s.b) && (s.b[s.i] == 'e' || s.b[s.i] == 'E') {
		s.i++
		if !s.eat('+') {
			s.eat('-')
		}
		if !s.digits() {
			return false
		}
	}
	return true
}

func (s *scanner) digits() bool {
	start := s.i
	for s.i < len(s.b) && s.b[s.i] >= '0' && s.b[s.i] <= '9' {
		s.i++
	}
	return s.i > start
}
