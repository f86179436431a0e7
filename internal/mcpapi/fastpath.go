package mcpapi

import (
	"encoding/json"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/cobranca/cobranca/internal/auth"
	"github.com/cobranca/cobranca/internal/buffers"
	"github.com/cobranca/cobranca/internal/pipeline"
	"github.com/cobranca/cobranca/internal/request"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	sjson "github.com/segmentio/encoding/json"
)

// The fast path answers an ordinary tools/call itself instead of handing it
// to go-sdk, which parses a 77 KB body about five times before a tool runs
// (docs/benchmarks.md, "End to end"). It runs the same pipeline as the SDK path — validation,
// output-schema check, error codes, audit — and writes the bytes the SDK
// would write; the tests prove it by sending the same requests through both
// paths. Any request that is not the plain case (another method, a batch,
// an unexpected member or header, a _meta it does not recognise) goes to the
// SDK untouched, so the SDK keeps deciding every protocol corner.

const (
	protocol20260728 = "2026-07-28"
	metaProtocol     = "io.modelcontextprotocol/protocolVersion"
	metaClientInfo   = "io.modelcontextprotocol/clientInfo"
	metaClientCaps   = "io.modelcontextprotocol/clientCapabilities"
)

// legacyProtocol reports whether v names a served revision before
// 2026-07-28, which the SDK serves statelessly with the plain result shape
// (no header: the oldest it assumes).
func legacyProtocol(v string) bool {
	return v == "" || v != protocol20260728 && slices.Contains(servedProtocols, v)
}

// fastCall reports whether the fast path serves the plain tools/call env,
// read from the body of r, whose headers passed checkHeaders, and whether
// the answer takes the 2026-07-28 shape. It serves only the calls the
// pipeline says always end complete or as a tool error (the bulk low-tier
// read), and decides from the request alone, before anything runs, so that
// a call the fast path takes is never handed to go-sdk afterwards (which
// would run and audit it twice).
func (h *Handler) fastCall(r *http.Request, env callEnvelope) (newProtocol, ok bool) {
	if !h.pipe.FastEligible(env.name) {
		return false, false // the SDK answers the rest, unknown and forbidden tools included
	}
	switch version := r.Header.Get("Mcp-Protocol-Version"); {
	case version == protocol20260728:
		if r.Header.Get("Mcp-Method") != "tools/call" || r.Header.Get("Mcp-Name") != env.name || !plainMeta(env.meta, version) {
			return false, false
		}
		return true, true
	case legacyProtocol(version):
		return false, env.meta == nil
	}
	return false, false
}

// serveFast runs the plain tools/call env (fastCall) through the pipeline
// and answers it.
func (h *Handler) serveFast(w http.ResponseWriter, r *http.Request, pr *auth.Principal, env callEnvelope, newProtocol bool) {
	// analyze_portfolio 1.1.0's results run to about 40 % of the arguments
	// (30 KB for 500 invoices, whose arguments are 77 KB): room for that,
	// and some, spares the encoder a copy into a buffer twice as large.
	rp := buffers.Get(max(32<<10, len(env.args.raw)*5/8))
	call := pipeline.Call{
		Principal: pr,
		Tool:      env.name,
		Args:      env.args.raw,
		Result:    *rp,
	}
	if env.args.decoded {
		call.Decoded = &pipeline.Decoded{Value: env.args.value, Err: env.args.err}
	}
	out := h.pipe.Do(r.Context(), call)
	res, err := toMCP(out)
	if err != nil { // a denial: FastEligible tools never ask for input
		code, msg := refuseInternal.rpc, refuseInternal.message
		if je, ok := err.(*jsonrpc.Error); ok {
			code, msg = je.Code, je.Message
		}
		writeRPCError(w, http.StatusOK, env.id, code, msg, nil)
		buffers.Put(rp, *rp)
		return
	}
	h.writeFast(w, r, env.id, res, newProtocol, len(out.Structured)+2*len(out.Summary)+1024) // the result, its text, the envelope
	if out.Structured != nil {
		buffers.Put(rp, out.Structured)
	} else {
		buffers.Put(rp, *rp)
	}
}

// writeFast answers the call id with the pipeline's result res, in a buffer
// of size bytes to start with. The tool has
// run: should the result not encode, the answer is a fixed internal error
// (the pipeline has audited the call; it must not run again).
func (h *Handler) writeFast(w http.ResponseWriter, r *http.Request, id []byte, res *mcp.CallToolResult, newProtocol bool, size int) {
	op := buffers.Get(size)
	out, err := h.encodeResult(*op, id, res, newProtocol)
	if err != nil {
		buffers.Put(op, *op)
		h.log.ErrorContext(r.Context(), "fast path could not encode a result", "request_id", request.From(r.Context()).ID, "err", err)
		writeRPCError(w, http.StatusOK, id, refuseInternal.rpc, refuseInternal.message, nil)
		return
	}
	h.fastCalls.Add(1)
	hdr := w.Header()
	hdr.Set("Cache-Control", "no-cache, no-transform")
	hdr.Set("Content-Type", "application/json")
	// With its length known the response goes out in one piece, not
	// chunked (the SDK leaves it to net/http; the bytes are the same).
	hdr.Set("Content-Length", strconv.Itoa(len(out)))
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(out)
	// The response is written: its buffer can serve another call.
	buffers.Put(op, out)
}

// plainMeta reports whether a 2026-07-28 request _meta holds exactly what the
// SDK's clients send — the protocol version (matching the header), client
// capabilities, and optionally client info — all well formed. Keys are
// matched exactly, once each, and the values decoded as go-sdk decodes them
// (case-sensitive): a key or field another reader would take for one of these
// is the SDK's to judge.
func plainMeta(meta []byte, version string) bool {
	if meta == nil {
		return false
	}
	var seenProtocol, seenInfo, seenCaps, protocolOK bool
	ok := eachMember(meta, func(key string, val []byte) bool {
		switch key {
		case metaProtocol:
			if seenProtocol || val[0] != '"' || !utf8.Valid(val) {
				return false
			}
			seenProtocol, protocolOK = true, jsonString(val) == version
		case metaClientInfo:
			var info mcp.Implementation
			if seenInfo || val[0] != '{' || !strictDecode(val, &info) {
				return false
			}
			seenInfo = true
		case metaClientCaps:
			var caps mcp.ClientCapabilities
			if seenCaps || val[0] != '{' || !strictDecode(val, &caps) {
				return false
			}
			seenCaps = true
		default:
			return false
		}
		return true
	})
	return ok && protocolOK && seenCaps
}

// strictDecode decodes b into v as go-sdk reads JSON (field names matched
// case-sensitively), refusing fields v does not have.
func strictDecode(b []byte, v any) bool {
	rest, err := sjson.Parse(b, v, sjson.DontMatchCaseInsensitiveStructFields|sjson.DisallowUnknownFields)
	return err == nil && len(rest) == 0
}

func acceptsBoth(values []string) bool {
	var jsonOK, streamOK bool
	for _, value := range values {
		for _, raw := range strings.Split(value, ",") {
			base, _, _ := strings.Cut(strings.TrimSpace(raw), ";")
			switch strings.ToLower(strings.TrimSpace(base)) {
			case "application/json", "application/*":
				jsonOK = true
			case "text/event-stream", "text/*":
				streamOK = true
			case "*/*":
				jsonOK, streamOK = true, true
			}
		}
	}
	return jsonOK && streamOK
}

// encodeResult appends to buf the JSON-RPC response exactly as go-sdk v1.8.0
// writes a stateless JSON response: members in the SDK's order, the
// structured content as the pipeline produced it.
func (h *Handler) encodeResult(buf []byte, id []byte, res *mcp.CallToolResult, newProtocol bool) ([]byte, error) {
	var structured []byte
	switch sc := res.StructuredContent.(type) {
	case nil: // an error result has none
	case json.RawMessage:
		structured = sc
	default:
		b, err := json.Marshal(sc)
		if err != nil {
			return nil, err
		}
		structured = b
	}
	meta, err := h.resultMeta(res.Meta, newProtocol)
	if err != nil {
		return nil, err
	}
	buf = append(buf, `{"jsonrpc":"2.0","id":`...)
	buf = append(buf, id...)
	buf = append(buf, `,"result":{`...)
	if meta != nil {
		buf = append(buf, `"_meta":`...)
		buf = append(buf, meta...)
		buf = append(buf, ',')
	}
	buf = append(buf, `"content":[`...)
	for i, c := range res.Content {
		if i > 0 {
			buf = append(buf, ',')
		}
		b, err := json.Marshal(c)
		if err != nil {
			return nil, err
		}
		buf = append(buf, b...)
	}
	buf = append(buf, ']')
	if structured != nil {
		buf = append(buf, `,"structuredContent":`...)
		buf = append(buf, structured...)
	}
	if res.IsError {
		buf = append(buf, `,"isError":true`...)
	}
	if newProtocol {
		buf = append(buf, `,"resultType":"complete"`...)
	}
	buf = append(buf, "}}"...)
	return buf, nil
}

// resultMeta returns a result's _meta as the SDK sends it, or nil when it
// sends none: the tool's own (an error result's failure detail), and on
// 2026-07-28 the server's info besides unless the tool set it (go-sdk's
// annotateServerInfo), encoded like any map: keys sorted.
func (h *Handler) resultMeta(m mcp.Meta, newProtocol bool) ([]byte, error) {
	if len(m) == 0 {
		if newProtocol {
			return h.serverInfoMeta, nil // a success: no encoding per call
		}
		return nil, nil
	}
	if _, ok := m[mcp.MetaKeyServerInfo]; newProtocol && !ok {
		m = maps.Clone(m)
		m[mcp.MetaKeyServerInfo] = h.impl
	}
	return json.Marshal(m)
}
