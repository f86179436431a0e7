package mcpapi

import (
	"bytes"
	"io"
	"slices"
	"sync"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/cobranca/cobranca/internal/jsonscan"
)

// callEnvelope is a tools/call request read in one pass over the body: the
// raw id, the tool name, the arguments (as sent, and decoded when the
// scanner could) and the raw _meta; id, arguments and _meta are slices of
// the body.
type callEnvelope struct {
	id   []byte // a JSON integer literal or a plain JSON string, as sent
	name string
	args callArgs // raw: a JSON object
	meta []byte   // a JSON object, or nil when absent
}

// scanCall reads body as a single JSON-RPC tools/call request of the plain
// shape every client sends. It returns ok=false for anything else — another
// method, a batch, an unexpected member, a duplicate key, an escape in a key
// or in the id or name, malformed JSON — and the caller then hands the
// request to the SDK, which answers it as it always would. So this scanner
// only ever needs to recognise the ordinary case, never to judge the rest.
//
// When decoder returns the named tool's Decoder, the arguments are decoded
// where they sit, and the decoder's reading of them stands in for skipping
// them: an object a Decoder accepts is well-formed JSON to its end
// (FuzzScanCall holds the two ways of reading to the same envelope).
// Arguments the Decoder refuses are then skipped as usual, so a malformed
// body is still the SDK's to answer, and the refusal is kept for the
// pipeline. Arguments that come before the name (clients that sort keys send
// them so) are decoded for the name nameHint guesses, and what that decoder
// made of them is dropped unless the name read afterwards is the guessed
// one. decoder may be nil.
func scanCall(body []byte, decoder func(name string) Decoder) (env callEnvelope, ok bool) {
	s := scanner{b: body, decoder: decoder}
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
	if s.i != len(s.b) || !seenJSONRPC || !seenID || !seenMethod || !seenParams || env.name == "" || env.args.raw == nil {
		return env, false
	}
	if env.args.decoded && s.decodedFor != env.name {
		env.args = callArgs{raw: env.args.raw} // decoded for a wrong guess
	}
	return env, true
}

// nameHint guesses the tool name of a call whose arguments come before its
// name: the string after the body's last "name" key. It is only a guess,
// which the scanner checks against the name it then reads.
func nameHint(body []byte) string {
	i := bytes.LastIndex(body, []byte(`"name"`))
	if i < 0 {
		return ""
	}
	s := scanner{b: body, i: i}
	if _, ok := s.plainString(); !ok || !s.colon() {
		return ""
	}
	v, _ := s.plainString()
	return string(v)
}

type scanner struct {
	b       []byte
	i       int
	decoder func(name string) Decoder
	// decodedFor is the tool name whose Decoder read the arguments.
	decodedFor string
}

func (s *scanner) ws() { s.i = skipWS(s.b, s.i) }

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
// in UTF-8, returning its contents.
func (s *scanner) plainString() ([]byte, bool) {
	if s.i >= len(s.b) || s.b[s.i] != '"' {
		return nil, false
	}
	start := s.i + 1
	end, fl, f := jsonscan.String(s.b, s.i)
	if f != jsonscan.None || fl&jsonscan.Escaped != 0 {
		return nil, false
	}
	s.i = end
	v := s.b[start : end-1]
	return v, fl&jsonscan.NonASCII == 0 || utf8.Valid(v)
}

// id reads a JSON-RPC id: a plain string, or a number exactID accepts (an
// integer go-sdk echoes exactly), returned as sent.
func (s *scanner) id() ([]byte, bool) {
	start := s.i
	if s.i < len(s.b) && s.b[s.i] == '"' {
		v, ok := s.plainString()
		if !ok || len(v) == 0 || len(v) > 128 {
			return nil, false
		}
		return s.b[start:s.i], true
	}
	end, f := jsonscan.Number(s.b, s.i)
	if f != jsonscan.None || !exactID(s.b[start:end]) {
		return nil, false
	}
	s.i = end
	return s.b[start:end], true
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
			if env.args.raw != nil {
				return false
			}
			if s.decoder != nil && s.i < len(s.b) && s.b[s.i] == '{' {
				name := env.name
				if !seenName {
					name = nameHint(s.b)
				}
				if dec := s.decoder(name); dec != nil {
					s.decodedFor = name
					v, n, err := dec(s.b[s.i:])
					if err == nil {
						env.args = callArgs{raw: s.b[s.i : s.i+n], decoded: true, value: v}
						s.i += n
						continue
					}
					env.args.decoded, env.args.err = true, err
				}
			}
			if env.args.raw, ok = s.object(); !ok {
				return false
			}
		case "_meta":
			if env.meta != nil {
				return false
			}
			if env.meta, ok = s.object(); !ok {
				return false
			}
		default:
			return false
		}
	}
}

// object reads one well-formed JSON object and returns its bytes.
func (s *scanner) object() ([]byte, bool) {
	if s.i >= len(s.b) || s.b[s.i] != '{' {
		return nil, false
	}
	start := s.i
	if !s.skipValue(0) {
		return nil, false
	}
	return s.b[start:s.i], true
}

// maxDepth bounds nesting inside a skipped value.
const maxDepth = 64

// skipValue moves past one well-formed JSON value. It checks the grammar
// (RFC 8259) but not the meaning; duplicate keys inside arguments are the
// tool's decoder's business.
func (s *scanner) skipValue(int) bool {
	i, ok := skipJSON(s.b, s.i)
	if ok {
		s.i = i
	}
	return ok
}

// skipJSON returns the index just past the JSON value that starts at b[i]
// (after white space): well formed, in UTF-8 and at most maxDepth deep.
// The fast path uses it only for what the tool's decoder does not read
// (_meta, refused arguments), so it is jsontext's reader, not a loop of
// our own (docs/benchmarks.md, "One JSON reader").
func skipJSON(b []byte, i int) (int, bool) {
	d := newReader(b[i:])
	defer freeReader(d)
	v, ok := readValue(d, b[i:])
	if !ok || !utf8.Valid(v) {
		return i, false
	}
	return i + int(d.InputOffset()), true
}

// readers are jsontext decoders for the readers of this file, reused: each
// is set to a body by newReader and let go of it by freeReader, so a pooled
// one holds no request.
var readers = sync.Pool{New: func() any { return jsontext.NewDecoder(noInput{}) }}

// noInput is the reader a pooled decoder is left with.
type noInput struct{}

func (noInput) Read([]byte) (int, error) { return 0, io.EOF }

// newReader returns a decoder of b, in place (a bytes.Buffer is read
// without a copy). Duplicate names are let through, for the readers count
// them and refuse a duplicate as such; invalid UTF-8 is let through too,
// for the readers check raw bytes themselves (a string value that is not
// UTF-8 is an invalid id or method, not a malformed body) and take an
// escaped lone surrogate as go-sdk's encoding/json does, as U+FFFD.
func newReader(b []byte) *jsontext.Decoder {
	d := readers.Get().(*jsontext.Decoder)
	d.Reset(bytes.NewBuffer(b), jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true))
	return d
}

func freeReader(d *jsontext.Decoder) {
	d.Reset(noInput{})
	readers.Put(d)
}

// readValue reads the next value of d, a decoder of b, and returns it as a
// slice of b: well formed, at most maxDepth deep and, but for a string,
// in UTF-8 (the UTF-8 of a string value is its reader's business).
func readValue(d *jsontext.Decoder, b []byte) ([]byte, bool) {
	v, err := d.ReadValue()
	if err != nil {
		return nil, false
	}
	end := int(d.InputOffset())
	v = b[end-len(v) : end]
	if v[0] != '"' && (!utf8.Valid(v) || nesting(v) > maxDepth) {
		return nil, false
	}
	return v, true
}

// eachMember reads b as one JSON object, calling fn with each member's
// name (escapes decoded) and value (as readValue reads it) until fn returns
// false. It reports false when b is malformed up to where it stopped, or
// fn stopped it.
func eachMember(b []byte, fn func(key string, v []byte) bool) bool {
	d := newReader(b)
	defer freeReader(d)
	return members(d, func(key string) bool {
		v, ok := readValue(d, b)
		return ok && fn(key, v)
	})
}

// members reads the object d is at, calling fn with each member's name
// (escapes decoded, as go-sdk reads it); fn reads the member's value. It
// reports false when the object is malformed up to where fn or it stopped.
func members(d *jsontext.Decoder, fn func(key string) bool) bool {
	if tok, err := d.ReadToken(); err != nil || tok.Kind() != '{' {
		return false
	}
	for d.PeekKind() == '"' {
		name, err := d.ReadValue()
		if err != nil || !utf8.Valid(name) || !fn(jsonString(name)) {
			return false
		}
	}
	tok, err := d.ReadToken()
	return err == nil && tok.Kind() == '}'
}

// rpcRequest is a JSON-RPC request as the front handler reads it: member
// names matched exactly, as JSON-RPC and go-sdk read them (case-sensitive,
// escapes decoded), so that what the front checks is what go-sdk dispatches.
// FuzzReadRequest holds the two readings together.
type rpcRequest struct {
	method string
	id     []byte // the id as sent, one exactID accepts; nil for a notification
	// name is params.name of a tools/call, when named: params is an object
	// whose "name" members are one string (sent once, or repeated as is).
	name  string
	named bool
	// names are the tool names of a tools/call whose params name two or
	// more different ones (refused: duplicate_member); the audit event goes
	// to the one served tool among them, if there is one (namedTool).
	names []string
	// args are params.arguments as sent (the first, when sent twice), for
	// the scope check of a dry run (pipeline.Authorize); meta is params._meta
	// as sent (the first), for its progress token.
	args, meta []byte
	// uri is params.uri of a resources/read, when it is one string sent
	// once: the resource whose permissions the front checks (views.go).
	uri string
}

// readRequest reads body as one JSON-RPC request, or refuses it. Where
// go-sdk would pick one of two readings (a duplicate member: it takes the
// last) or ignore bytes (after the JSON value: it stops reading), the front
// refuses instead, so no request can be checked with one reading and run
// with another. What it reads of a refused request (a tool name, when the
// first value is well formed) is returned all the same, for the audit.
func readRequest(body []byte) (rpcRequest, *refusal) {
	var req rpcRequest
	i := skipWS(body, 0)
	if i < len(body) && body[i] == '[' {
		return req, &refuseBatch
	}
	if i >= len(body) || body[i] != '{' {
		if end, ok := skipJSON(body, i); ok && skipWS(body, end) == len(body) {
			return req, &refuseInvalid // JSON, but not a request object
		}
		return req, malformed(body)
	}
	var (
		seen                     [4]int // jsonrpc, id, method, params
		version, id, meth        []byte
		paramsKind               jsontext.Kind
		names, args, metas, uris int
		nameLits                 [][]byte // the "name" values read, as sent
		uriLit                   []byte   // the first "uri" value read, as sent
		methodRead, methodIsCall bool
	)
	d := newReader(body)
	defer freeReader(d)
	// params is walked, not skipped, so that the tool name of a call is
	// known (for its audit event) even when something after it is malformed.
	params := func(key string) bool {
		switch key {
		case "name":
			names++
		case "arguments":
			args++
		case "uri":
			uris++
		case "_meta":
			metas++
		}
		v, ok := readValue(d, body)
		switch {
		case !ok:
		case key == "name":
			nameLits = append(nameLits, v)
		case key == "arguments" && args == 1:
			req.args = v
		case key == "uri" && uris == 1:
			uriLit = v
		case key == "_meta" && metas == 1:
			req.meta = v
		}
		return ok
	}
	ok := members(d, func(key string) bool {
		var dst *[]byte
		switch key {
		case "jsonrpc":
			seen[0]++
			dst = &version
		case "id":
			seen[1]++
			dst = &id
		case "method":
			seen[2]++
			dst = &meth
		case "params":
			seen[3]++
			paramsKind = d.PeekKind()
			if paramsKind == '{' && seen[3] == 1 {
				return members(d, params)
			}
		}
		v, ok := readValue(d, body)
		if ok && dst != nil {
			*dst = v
			if key == "method" && !methodRead {
				methodRead = true
				methodIsCall = string(v) == `"tools/call"` || (validText(v) && v[0] == '"' && jsonString(v) == "tools/call")
			}
		}
		return ok
	})
	end := int(d.InputOffset())
	if methodIsCall && seen[2] <= 1 { // two methods: which reading is a call is ambiguous
		req.name, req.named, req.names = toolNames(nameLits, names)
	}
	if !ok {
		return req, malformed(body)
	}
	if !validText(version) || !validText(meth) {
		return req, &refuseParse
	}
	if len(meth) > 0 && meth[0] == '"' {
		req.method = jsonString(meth)
	}
	badName := names == 1 && (nameLits[0][0] != '"' || !utf8.Valid(nameLits[0]))
	read := req.method == "resources/read"
	switch {
	case skipWS(body, end) != len(body):
		return req, &refuseTrailing
	case seen[0] > 1 || seen[1] > 1 || seen[2] > 1 || seen[3] > 1 || names > 1 || args > 1 || metas > 1 || read && uris > 1:
		return req, &refuseDuplicate
	case string(version) != `"2.0"` && (len(version) == 0 || version[0] != '"' || jsonString(version) != "2.0"):
		return req, &refuseInvalid
	case len(meth) == 0 || meth[0] != '"':
		return req, &refuseInvalid
	case id != nil && !exactID(id):
		return req, &refuseID
	}
	req.id = id
	if read && uris == 1 && uriLit[0] == '"' && utf8.Valid(uriLit) {
		req.uri = jsonString(uriLit)
	}
	if badName || (seen[3] == 1 && paramsKind != '{' && paramsKind != 'n') { // n: null
		return req, &refuseParams
	}
	return req, nil
}

// toolNames reads the tool name of a call from the values of its params'
// "name" members (of n sent; those read so far when the body is malformed):
// the name, when every one was read and is the same string; otherwise, when
// every one was read and is a string, the different names (nil when one was
// not read: any tool could be meant).
func toolNames(lits [][]byte, n int) (name string, named bool, names []string) {
	if n == 0 || len(lits) != n {
		return "", false, nil
	}
	for _, l := range lits {
		if l[0] != '"' || !utf8.Valid(l) {
			return "", false, nil
		}
		if s := jsonString(l); !slices.Contains(names, s) {
			names = append(names, s)
		}
	}
	if len(names) == 1 {
		return names[0], true, nil
	}
	return "", false, names
}

// validText reports whether a member value, when a string, is UTF-8.
func validText(v []byte) bool {
	return len(v) == 0 || v[0] != '"' || utf8.Valid(v)
}

// malformed is the refusal of a body that is not well-formed JSON: too deep
// for the front's reader, or not JSON at all.
func malformed(body []byte) *refusal {
	if nesting(body) > maxDepth {
		return &refuseTooDeep
	}
	return &refuseParse
}

// nesting is the deepest bracket nesting of b outside strings (the measure
// go-sdk's own depth check takes).
func nesting(b []byte) int {
	deep, d, inStr := 0, 0, false
	for i := 0; i < len(b); i++ {
		switch c := b[i]; {
		case inStr && c == '\\':
			i++
		case c == '"':
			inStr = !inStr
		case !inStr && (c == '{' || c == '['):
			d++
			deep = max(deep, d)
		case !inStr && (c == '}' || c == ']') && d > 0:
			d--
		}
	}
	return deep
}

func skipWS(b []byte, i int) int { return jsonscan.Space(b, i) }

// jsonString is the value of lit, a well-formed string literal in UTF-8,
// as encoding/json and go-sdk decode it (a lone surrogate becomes U+FFFD).
func jsonString(lit []byte) string {
	var buf [64]byte
	v, _ := jsontext.AppendUnquote(buf[:0], lit)
	return string(v)
}

// maxExactID is the largest integer id every JSON reader holds exactly
// (2^53: go-sdk reads ids as float64).
const maxExactID = 1 << 53

// exactID reports whether lit, a well-formed JSON value, is an id go-sdk
// answers under the very same id: a string whose escapes all stand for
// Unicode characters, in UTF-8 (invalid bytes and lone surrogates would come
// back as U+FFFD), or an integer written without
// fraction or exponent, other than -0, within ±2^53.
func exactID(lit []byte) bool {
	if len(lit) == 0 {
		return false
	}
	if lit[0] == '"' {
		_, fl, _ := jsonscan.String(lit, 0)
		return fl&jsonscan.Lone == 0 && (fl&jsonscan.NonASCII == 0 || utf8.Valid(lit))
	}
	digits := lit
	if digits[0] == '-' {
		digits = digits[1:]
	}
	if len(digits) == 0 || len(digits) > 16 || string(lit) == "-0" {
		return false
	}
	var n uint64
	for _, c := range digits {
		if c < '0' || c > '9' {
			return false // a fraction, an exponent, or not a number
		}
		n = n*10 + uint64(c-'0')
	}
	return n <= maxExactID
}
