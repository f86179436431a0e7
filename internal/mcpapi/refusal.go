package mcpapi

import (
	"bytes"
	"encoding/json"
	"mime"
	"net/http"
	"strconv"
	"strings"

	"github.com/cobranca/cobranca/internal/auditlog"
	"github.com/cobranca/cobranca/internal/failure"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// refusal is one way the endpoint refuses a request before any tool runs:
// the answer — an HTTP status and either a plain-text body or, when rpc is
// set, a JSON-RPC error — with a fixed message, and the stable code that the
// audit event of a refused tool call carries. The messages are the
// endpoint's own and never repeat the request: go-sdk's do (params, raw
// bytes, header values, customer names with them).
type refusal struct {
	code    failure.Code
	status  int
	rpc     int64 // the JSON-RPC error code; 0: a plain-text HTTP error
	message string
	// echoID: the answer carries the request's id (the id was read and is
	// valid); otherwise it carries null, as JSON-RPC requires when the id
	// could not be read.
	echoID bool
}

// The refusals the front handler answers itself.
var (
	refuseVersion = refusal{code: "unsupported_protocol_version", status: http.StatusBadRequest,
		message: "Bad Request: Unsupported protocol version (supported versions: " + strings.Join(servedProtocols, ",") + ")"}
	refuseContentType = refusal{code: "unsupported_media_type", status: http.StatusUnsupportedMediaType,
		message: "Content-Type must be 'application/json'"}
	refuseAccept = refusal{code: "not_acceptable", status: http.StatusBadRequest,
		message: "Accept must contain both 'application/json' and 'text/event-stream'"}
	refuseLastEventID = refusal{code: "bad_request", status: http.StatusBadRequest,
		message: "can't send Last-Event-ID for POST request"}
	// One request per POST. Batches are gone from the revisions cobranca
	// serves (2025-06-18 on), and an older one would let one POST carry
	// thousands of calls past the per-request limits.
	refuseBatch = refusal{code: "batch_not_supported", status: http.StatusBadRequest, rpc: jsonrpc.CodeInvalidRequest,
		message: "JSON-RPC batches are not supported: send one request per POST"}
	refuseParse = refusal{code: "parse_error", status: http.StatusBadRequest, rpc: jsonrpc.CodeParseError,
		message: "Parse error: the body is not well-formed JSON (UTF-8)"}
	refuseTooDeep = refusal{code: "too_deep", status: http.StatusBadRequest, rpc: jsonrpc.CodeParseError,
		message: "Parse error: values nest deeper than " + strconv.Itoa(maxDepth) + " levels"}
	refuseTrailing = refusal{code: "trailing_data", status: http.StatusBadRequest, rpc: jsonrpc.CodeParseError,
		message: "Parse error: the body holds more than one JSON value"}
	refuseInvalid = refusal{code: "invalid_request", status: http.StatusBadRequest, rpc: jsonrpc.CodeInvalidRequest,
		message: "Invalid Request: not a JSON-RPC 2.0 request object"}
	refuseDuplicate = refusal{code: "duplicate_member", status: http.StatusBadRequest, rpc: jsonrpc.CodeInvalidRequest,
		message: "Invalid Request: a member name appears twice"}
	refuseID = refusal{code: "invalid_id", status: http.StatusBadRequest, rpc: jsonrpc.CodeInvalidRequest,
		message: "Invalid Request: id must be a string or an integer between -2^53 and 2^53"}
	refuseNoID = refusal{code: "missing_id", status: http.StatusBadRequest, rpc: jsonrpc.CodeInvalidRequest,
		message: "Invalid Request: this method needs an id"}
	refuseParams = refusal{code: "invalid_params", status: http.StatusOK, rpc: jsonrpc.CodeInvalidParams, echoID: true,
		message: "Invalid params"}
	// A resources/read URI that go-sdk cannot answer in JSON (sdkQuotable).
	refuseURI = refusal{code: "invalid_uri", status: http.StatusOK, rpc: jsonrpc.CodeInvalidParams, echoID: true,
		message: "Invalid params: uri holds a control character, or a character that cannot be printed"}
	refuseUnknownTool = refusal{code: "unknown_tool", status: http.StatusOK, rpc: jsonrpc.CodeInvalidParams, echoID: true,
		message: "unknown tool"}
	// A result that could not be encoded (the tool has run) or an internal
	// error go-sdk answered.
	refuseInternal = refusal{code: "internal_error", status: http.StatusOK, rpc: jsonrpc.CodeInternalError, echoID: true,
		message: "Internal error"}
	refuseMethod = refusal{code: "method_not_found", status: http.StatusOK, rpc: jsonrpc.CodeMethodNotFound, echoID: true,
		message: "Method not found"}
)

// sdkQuotable reports whether go-sdk can answer a request that names s: it
// writes some strings it was sent into its answers with Go's %q (a
// resources/read URI not found: {"uri":%q}), and where Go's quoting is not
// JSON's — \a, \v, \xNN, \UNNNNNNNN, written for control characters, DEL,
// bytes that are not UTF-8 and unprintable runes beyond the BMP — its answer
// is not JSON and nothing can send it. Such a string is refused before
// go-sdk sees it.
func sdkQuotable(s string) bool {
	var back string
	return json.Unmarshal([]byte(strconv.Quote(s)), &back) == nil && back == s
}

// servedProtocols are the protocol revisions the endpoint serves, newest
// first: the fast path's and go-sdk's alike.
var servedProtocols = []string{protocol20260728, "2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"}

// checkHeaders refuses a POST whose headers go-sdk would refuse, in go-sdk's
// order, before its body is looked at. A version newer than any served
// (compared as go-sdk compares them, as strings) is go-sdk's to answer: it
// reads the request and answers the UnsupportedProtocolVersionError of
// SEP-2575 (-32022, HTTP 400), with the versions it serves.
func checkHeaders(r *http.Request) *refusal {
	if v := r.Header.Get("Mcp-Protocol-Version"); !legacyProtocol(v) && v < protocol20260728 {
		return &refuseVersion
	}
	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/json" {
		return &refuseContentType
	}
	if !acceptsBoth(r.Header.Values("Accept")) {
		return &refuseAccept
	}
	if len(r.Header.Values("Last-Event-ID")) > 0 {
		return &refuseLastEventID
	}
	return nil
}

// servedMethods are the methods the endpoint answers: the base protocol, and
// those of each capability the server advertises. A call of any other method
// is "method not found", whatever go-sdk would do with it (it serves empty
// resource and prompt lists, and logging/setLevel, to any server). Logging,
// deprecated since 2026-07-28, is never served.
func servedMethods(caps *mcp.ServerCapabilities) (calls, notifications map[string]bool) {
	calls = map[string]bool{"initialize": true, "ping": true, "server/discover": true}
	notifications = map[string]bool{
		"notifications/initialized": true, "notifications/cancelled": true,
		"notifications/progress": true, "notifications/roots/list_changed": true,
	}
	if caps.Tools != nil {
		calls["tools/list"], calls["tools/call"] = true, true
	}
	if caps.Prompts != nil {
		calls["prompts/list"], calls["prompts/get"] = true, true
	}
	if caps.Resources != nil {
		calls["resources/list"], calls["resources/read"], calls["resources/templates/list"] = true, true, true
	}
	if caps.Completions != nil {
		calls["completion/complete"] = true
	}
	return calls, notifications
}

// write answers r with the refusal; id is the request's, when echoID.
func (f *refusal) write(w http.ResponseWriter, r *http.Request, id []byte) {
	if f.rpc == 0 {
		http.Error(w, f.message, f.status)
		return
	}
	status := f.status
	if r.Header.Get("Mcp-Protocol-Version") >= protocol20260728 {
		// As go-sdk answers on 2026-07-28 (SEP-2575): an unknown method is
		// 404, invalid params (an unknown tool, a call without a name) 400.
		switch f.rpc {
		case jsonrpc.CodeMethodNotFound:
			status = http.StatusNotFound
		case jsonrpc.CodeInvalidParams:
			status = http.StatusBadRequest
		}
	}
	if !f.echoID {
		id = nil
	}
	writeRPCError(w, status, id, f.rpc, f.message, nil)
}

// writeRPCError writes a JSON-RPC error response as go-sdk encodes one; a nil
// id is written null, a nil data not at all.
func writeRPCError(w http.ResponseWriter, status int, id []byte, code int64, message string, data []byte) {
	if id == nil {
		id = []byte("null")
	}
	b := make([]byte, 0, 96+len(id)+len(message)+len(data))
	b = append(b, `{"jsonrpc":"2.0","id":`...)
	b = append(b, id...)
	b = append(b, `,"error":{"code":`...)
	b = strconv.AppendInt(b, code, 10)
	b = append(b, `,"message":`...)
	b = strconv.AppendQuote(b, message) // fixed ASCII messages: JSON and Go quoting agree
	if data != nil {
		b = append(b, `,"data":`...)
		b = append(b, data...)
	}
	b = append(b, "}}"...)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

// sdkRefusal is the fixed answer that stands for one go-sdk gave: by its
// JSON-RPC error code when it answered one (rpc != 0), else by HTTP status.
func sdkRefusal(status int, rpc int64) refusal {
	f := refusal{status: status, rpc: rpc, echoID: true}
	switch rpc {
	case 0:
		f.code, f.message = "bad_request", http.StatusText(status)
		switch status {
		case http.StatusNotFound:
			f.code = "not_found"
		case http.StatusRequestEntityTooLarge:
			f.code = "too_large"
		case http.StatusUnsupportedMediaType:
			f.code = "unsupported_media_type"
		case http.StatusInternalServerError:
			f.code = "internal_error"
		}
	case jsonrpc.CodeParseError:
		f.code, f.message = refuseParse.code, "Parse error"
	case jsonrpc.CodeInvalidRequest:
		f.code, f.message = refuseInvalid.code, "Invalid Request"
	case jsonrpc.CodeMethodNotFound:
		f.code, f.message = refuseMethod.code, refuseMethod.message
	case jsonrpc.CodeInvalidParams:
		f.code, f.message = refuseParams.code, refuseParams.message
	case jsonrpc.CodeInternalError:
		f.code, f.message = refuseInternal.code, refuseInternal.message
	case mcp.CodeHeaderMismatch:
		f.code, f.message = "header_mismatch", "Header mismatch: Mcp-Method, Mcp-Name and Mcp-Protocol-Version must agree with the request body"
	case mcp.CodeUnsupportedProtocolVersion:
		f.code, f.message = refuseVersion.code, "Unsupported protocol version"
	default:
		f.code, f.message = "refused", "Request refused"
	}
	return f
}

// outcome is how a tool call refused this way ends in the audit log.
func (f *refusal) outcome() Outcome {
	if f.status >= 500 || f.rpc == jsonrpc.CodeInternalError {
		return auditlog.Failed
	}
	return auditlog.Rejected
}

// sdkWriter holds go-sdk's answer to a request until the front has checked
// it: go-sdk's error messages repeat the request, so they are replaced
// (rewrite) before anything is sent. A call served as an event stream
// (out set) is passed through to out as soon as the pipeline runs it
// (dispatch): from then on go-sdk writes only the call's own events —
// progress notifications and the pipeline's answer — which must reach the
// client as they are written.
type sdkWriter struct {
	header   http.Header
	status   int
	body     bytes.Buffer
	out      http.ResponseWriter
	dispatch *dispatch
	passed   bool // the answer went to out as go-sdk wrote it
}

func (s *sdkWriter) Header() http.Header { return s.header }

func (s *sdkWriter) WriteHeader(status int) {
	if s.status == 0 {
		s.status = status
	}
}

func (s *sdkWriter) Write(p []byte) (int, error) {
	if s.status == 0 {
		s.status = http.StatusOK
	}
	if !s.passed && s.out != nil && s.dispatch.ran.Load() && s.status == http.StatusOK && eventStream(s.header) {
		s.pass()
	}
	if s.passed {
		return s.out.Write(p)
	}
	return s.body.Write(p)
}

// FlushError flushes what was passed through (go-sdk flushes each event).
func (s *sdkWriter) FlushError() error {
	if !s.passed {
		return nil
	}
	return http.NewResponseController(s.out).Flush()
}

// pass starts passing go-sdk's event stream through to out.
func (s *sdkWriter) pass() {
	s.passed = true
	dst := s.out.Header()
	for k, v := range s.header {
		dst[k] = v
	}
	s.out.WriteHeader(s.status)
	_, _ = s.out.Write(s.body.Bytes())
	s.body.Reset()
}

// send writes go-sdk's answer to w, its error messages replaced by the
// endpoint's. Only a result (or a notification accepted: 202, no body) is
// sent as go-sdk wrote it, and the JSON-RPC error of a call the pipeline ran
// (dispatched: the pipeline's messages never repeat the request, and their
// data carry the failure's code); any other answer — a JSON-RPC error with
// or without an id (go-sdk's header checks answer a notification so), a
// plain text error, anything else — is replaced by the fixed one that
// stands for it. It returns that refusal, or nil when go-sdk's answer was
// sent.
func (s *sdkWriter) send(w http.ResponseWriter, r *http.Request, reqID []byte, dispatched bool) *refusal {
	status := s.status
	if status == 0 {
		status = http.StatusOK
	}
	body := s.body.Bytes()
	if eventStream(s.header) {
		// An event stream the pipeline never ran a call on holds go-sdk's
		// own answer, one message: it is checked, and sent, as JSON.
		body = lastEventData(body)
		s.header.Set("Content-Type", "application/json")
		s.header.Del("Connection")
	}
	id, code, data, kind := rpcAnswer(body)
	if kind != answerError {
		id = reqID
	}
	switch {
	case status < 400 && (kind == answerResult || status == http.StatusAccepted && skipWS(body, 0) == len(body)),
		dispatched && kind == answerError && status < 500:
		dst := w.Header()
		for k, v := range s.header {
			dst[k] = v
		}
		w.WriteHeader(status)
		_, _ = w.Write(body)
		return nil
	case kind == answerError:
		f := sdkRefusal(status, code)
		writeRPCError(w, status, id, code, f.message, protocolData(code, data))
		return &f
	}
	if status < 400 || status >= 500 {
		// Neither a result nor an error, or go-sdk's plain-text 500 (an
		// answer it could not encode): every answer of /mcp is JSON-RPC.
		refuseInternal.write(w, r, id)
		return &refuseInternal
	}
	f := sdkRefusal(status, 0)
	f.write(w, r, nil)
	return &f
}

// The kinds of answer rpcAnswer tells apart.
const (
	answerOther  = iota // not a JSON-RPC response object
	answerResult        // a response with a "result" member
	answerError         // a response with an "error" object
)

// rpcAnswer reads b as a JSON-RPC response: its kind and, for an error, its
// id (nil when absent: the answer to a notification), error code and data
// (nil when absent).
func rpcAnswer(b []byte) (id []byte, code int64, data []byte, kind int) {
	i := skipWS(b, 0)
	if i >= len(b) || b[i] != '{' {
		return nil, 0, nil, answerOther
	}
	var errObj []byte
	result := false
	d := newReader(b[i:])
	defer freeReader(d)
	members(d, func(key string) bool {
		if key == "result" {
			result = true
			return false // go-sdk writes a result alone: nothing more to learn, nor to read
		}
		v, ok := readValue(d, b[i:])
		switch {
		case !ok:
		case key == "id":
			id = v
		case key == "error":
			errObj = v
		}
		return ok
	})
	switch {
	case len(errObj) > 0 && errObj[0] == '{':
	case result:
		return nil, 0, nil, answerResult
	default:
		return nil, 0, nil, answerOther
	}
	eachMember(errObj, func(key string, v []byte) bool {
		switch key {
		case "code":
			code, _ = strconv.ParseInt(string(v), 10, 64)
		case "data":
			data = v
		}
		return true
	})
	if string(id) == "null" {
		id = nil
	}
	return id, code, data, answerError
}

// protocolData is the data of a go-sdk refusal that the protocol defines and
// clients act on — the UnsupportedProtocolVersionError's: the versions the
// server serves, and the caller's own (SEP-2575 requires both) — read into
// its type and encoded again, so that nothing else go-sdk put there is
// passed on; nil for any other error.
func protocolData(code int64, data []byte) []byte {
	if code != mcp.CodeUnsupportedProtocolVersion || data == nil {
		return nil
	}
	var v mcp.UnsupportedProtocolVersionData
	if json.Unmarshal(data, &v) != nil {
		return nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	return b
}
