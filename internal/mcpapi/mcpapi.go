// Package mcpapi serves cobranca's tools over MCP Streamable HTTP
// (stateless): go-sdk, and a fast path for the bulk low-tier call. It only
// adapts MCP to internal/pipeline, which runs every call and enforces its
// contract; no tool lives here.
package mcpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"sync/atomic"

	"github.com/cobranca/cobranca/internal/auditlog"
	"github.com/cobranca/cobranca/internal/auth"
	"github.com/cobranca/cobranca/internal/buffers"
	"github.com/cobranca/cobranca/internal/contract"
	"github.com/cobranca/cobranca/internal/failure"
	"github.com/cobranca/cobranca/internal/pipeline"
	"github.com/cobranca/cobranca/internal/request"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Version is reported in the MCP implementation info.
const Version = "0.1.0"

// Options configure the MCP endpoint.
type Options struct {
	Logger       *slog.Logger
	MaxBodyBytes int64
	// Pipeline runs every call (required).
	Pipeline *pipeline.Pipeline
	// Scopes, when set, refuses a tools/call whose token lacks a scope the
	// tool's contract requires with its 403 at the HTTP level, before the
	// body's arguments are looked at. The pipeline refuses such a call in
	// any case; the server always sets it.
	Scopes ScopeChallenger
	// DisableFastPath sends every request through go-sdk
	// (COBRANCA_FASTPATH=off; the tests compare both paths byte for byte).
	DisableFastPath bool
	// Prompts names served tools that are also served as MCP prompts of
	// the same name (prompts.go): the conformance build's diagnostic
	// prompt. None in production, which advertises no prompts capability
	// and answers prompts/* "method not found".
	Prompts []string
	// Resources are served besides the tools' views: the conformance
	// build's fixtures. None in production.
	Resources []Resource
}

// Handler is the MCP endpoint. It reads each request body once, under the
// size limit, reads the JSON-RPC request exactly as go-sdk will (or refuses
// it, with its own fixed answer and, for a named tool, an audit event),
// applies the checks that must answer at the HTTP level, and answers a plain
// tools/call of the bulk low-tier tool itself or hands the request to
// go-sdk's stateless Streamable HTTP handler, whose error messages it
// replaces with its own.
type Handler struct {
	log     *slog.Logger
	maxBody int64
	sdk     http.Handler
	// sdkStream is go-sdk's handler answering with an event stream: a call
	// carrying a progress token gets its progress notifications on it.
	sdkStream http.Handler
	pipe      *pipeline.Pipeline
	slowOnly  bool
	scopes    ScopeChallenger
	// fastCalls counts the calls the fast path answered.
	fastCalls atomic.Int64
	// impl is the server's implementation info, which every 2026-07-28
	// result carries in its _meta; serverInfoMeta is that _meta, encoded.
	impl           *mcp.Implementation
	serverInfoMeta []byte
	// calls and notifications are the methods served (servedMethods).
	calls, notifications map[string]bool
}

// New builds the MCP endpoint.
func New(opts Options) (*Handler, error) {
	if opts.Pipeline == nil {
		return nil, errors.New("mcpapi: a pipeline is required")
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.MaxBodyBytes <= 0 {
		opts.MaxBodyBytes = 1 << 20
	}
	impl := &mcp.Implementation{Name: "cobranca", Title: "cobranca collections", Version: Version}
	serverInfo, err := json.Marshal(mcp.Meta{mcp.MetaKeyServerInfo: impl})
	if err != nil {
		return nil, err
	}
	h := &Handler{
		log:            opts.Logger,
		maxBody:        opts.MaxBodyBytes,
		pipe:           opts.Pipeline,
		slowOnly:       opts.DisableFastPath,
		scopes:         opts.Scopes,
		impl:           impl,
		serverInfoMeta: serverInfo,
	}
	// The SDK logs every stateless session at info level; keep its warnings.
	sdkLog := slog.New(minLevel{Handler: opts.Logger.Handler(), min: slog.LevelWarn})
	caps := &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{}}
	if len(opts.Prompts) > 0 {
		caps.Prompts = &mcp.PromptCapabilities{}
	}
	addViews := h.addViews(caps)
	if len(opts.Resources) > 0 {
		caps.Resources = &mcp.ResourceCapabilities{}
	}
	h.calls, h.notifications = servedMethods(caps)
	srv := mcp.NewServer(impl, &mcp.ServerOptions{
		Logger:       sdkLog,
		Instructions: "Collections (accounts receivable) tools. Every tool carries its Tool Contract under _meta[\"" + contract.MetaKey + "\"]: risk tier, permissions, side effects and failure codes.",
		Capabilities: caps,
	})
	for _, c := range h.pipe.Contracts() {
		srv.AddTool(toolDef(c), h.callTool)
	}
	for _, add := range addViews {
		add(srv)
	}
	if err := h.addPrompts(srv, opts.Prompts); err != nil {
		return nil, err
	}
	if err := addResources(srv, opts.Resources); err != nil {
		return nil, err
	}
	sdkOpts := mcp.StreamableHTTPOptions{
		Stateless:    true,
		JSONResponse: true,
		Logger:       sdkLog,
		// Host and Origin are checked by cobranca's own middleware, with the
		// configured allow-lists (the SDK's check knows only loopback).
		DisableLocalhostProtection: true,
		MaxRequestBodyBytes:        opts.MaxBodyBytes,
	}
	getServer := func(*http.Request) *mcp.Server { return srv }
	h.sdk = mcp.NewStreamableHTTPHandler(getServer, &sdkOpts)
	// With JSONResponse go-sdk drops every message but the answer (a
	// stateless server has no other stream to send it on): a call that asks
	// for progress is served as an event stream instead (progress.go).
	sdkOpts.JSONResponse = false
	h.sdkStream = mcp.NewStreamableHTTPHandler(getServer, &sdkOpts)
	return h, nil
}

// callTool is the go-sdk handler of every tool: the call, adapted.
func (h *Handler) callTool(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	progress, wait := progressOf(ctx, req)
	res, err := h.do(ctx, req, req.Params.Name, req.Params.Arguments, req.Params.InputResponses, req.Params.RequestState, progress)
	wait() // the answer comes after the progress reports
	if err != nil {
		return nil, err
	}
	return toMCP(res)
}

// do runs the call go-sdk dispatched (a tools/call, or a prompts/get of a
// tool served as a prompt) through the pipeline.
func (h *Handler) do(ctx context.Context, req declaring, name string, args json.RawMessage, answers mcp.InputResponseMap, state string, progress func(done, total int64, message string)) (pipeline.Result, error) {
	dispatched(ctx)
	pr, _ := auth.PrincipalFrom(ctx)
	responses, err := inputResponses(answers)
	if err != nil {
		return pipeline.Result{}, err
	}
	return h.pipe.Do(ctx, pipeline.Call{
		Principal: pr,
		Tool:      name,
		Args:      args,
		Client:    clientOf(req),
		Responses: responses,
		State:     state,
		Progress:  progress,
	}), nil
}

// FastCalls is how many calls the fast path has answered (for metrics).
func (h *Handler) FastCalls() int64 { return h.fastCalls.Load() }

// Contracts returns the contracts visible to agents, in listing order.
func (h *Handler) Contracts() []*contract.Contract { return h.pipe.Contracts() }

func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.Body == nil {
		h.sdk.ServeHTTP(w, r) // 405 with Allow: POST, as the SDK answers
		return
	}
	bp, body, err := readBody(http.MaxBytesReader(w, r.Body, h.maxBody), r.ContentLength, h.maxBody)
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			http.Error(w, fmt.Sprintf("request body exceeds %d bytes", mbe.Limit), http.StatusRequestEntityTooLarge)
			return
		}
		http.Error(w, "could not read request body", http.StatusBadRequest)
		return
	}
	// Headers go-sdk would refuse are refused before anything runs; the body
	// is still read, so that a refused tool call is audited (and a caller
	// without the tool's scopes is denied first).
	// The caller, as the token check put it in the context: read once here.
	pr, _ := auth.PrincipalFrom(r.Context())
	refused := checkHeaders(r)
	fast := refused == nil && !h.slowOnly
	// The plain tools/call is read in one pass; anything else is read by
	// readRequest, exactly as go-sdk will read it, or refused.
	var decoders func(string) pipeline.Decoder
	if fast {
		decoders = func(name string) pipeline.Decoder { return h.pipe.Decoder(pr, name) }
	}
	call, plain := scanCall(body, decoders)
	req := rpcRequest{method: "tools/call", id: call.id, name: call.name, named: true, args: call.args.raw, meta: call.meta}
	if !plain {
		var bad *refusal
		req, bad = readRequest(body)
		if refused == nil {
			refused = bad
		}
	}
	tool := h.namedTool(req)
	if tool != "" {
		request.From(r.Context()).Tool = tool
	}
	// Authorization comes before validation: a call of a served tool whose
	// name can be read, from a caller without the tool's scopes, is the 403
	// challenge and a denied event, whatever else is wrong with it.
	if tool != "" && h.scopes != nil {
		if missing := h.pipe.Authorize(pr, tool, req.args); len(missing) > 0 {
			h.scopes.WriteInsufficientScope(w, missing)
			h.pipe.Refused(r.Context(), pr, tool, auditlog.Denied, failure.InsufficientScope)
			return
		}
	}
	if refused == nil && h.refuseViewRead(w, pr, req) {
		return
	}
	if refused == nil {
		var done bool
		if refused, done = h.route(w, req); done {
			return
		}
	}
	if refused != nil {
		refused.write(w, r, req.id)
		if tool != "" {
			h.pipe.Refused(r.Context(), pr, tool, refused.outcome(), refused.code)
		}
		return
	}
	if plain && fast {
		if newProtocol, ok := h.fastCall(r, call); ok {
			h.serveFast(w, r, pr, call, newProtocol)
			buffers.Put(bp, body) // the answer is written; nothing holds the body
			return
		}
	}
	h.serveSDK(w, r, pr, body, req.id, tool, tool != "" && hasProgressToken(req.meta))
}

// namedTool is the tool a tools/call names whose calls are audited (a
// served or a forbidden one, pipeline.Known), or "": the one it names
// (once, or repeated as is), or the one served tool among different names
// it sends (a request refused, whose audit event has no other tool to go to).
func (h *Handler) namedTool(req rpcRequest) string {
	if req.named {
		if h.pipe.Known(req.name) {
			return req.name
		}
		return ""
	}
	var t string
	for _, name := range req.names {
		if h.pipe.Known(name) {
			if t != "" && t != name {
				return "" // two served tools: no single one
			}
			t = name
		}
	}
	return t
}

// route refuses a well-formed request the endpoint does not serve: a method
// outside the advertised capabilities, a call sent as a notification, a
// resources/read of a URI go-sdk cannot answer in JSON, a tools/call without
// a tool name or of a tool not served. A notification of
// a method not served is accepted and dropped (done): JSON-RPC never answers
// a notification.
func (h *Handler) route(w http.ResponseWriter, req rpcRequest) (_ *refusal, done bool) {
	switch {
	case req.id == nil && h.notifications[req.method]:
		return nil, false
	case req.id == nil && h.calls[req.method]:
		return &refuseNoID, false
	case req.id == nil:
		w.WriteHeader(http.StatusAccepted)
		return nil, true
	case !h.calls[req.method]:
		return &refuseMethod, false
	case req.method == "resources/read" && !sdkQuotable(req.uri):
		return &refuseURI, false
	case req.method != "tools/call":
		return nil, false
	case !req.named:
		return &refuseParams, false
	case !h.pipe.Serves(req.name):
		return &refuseUnknownTool, false
	}
	return nil, false
}

// serveSDK hands the request to go-sdk and sends its answer with the
// endpoint's own messages in place of go-sdk's. A tools/call of the served
// tool that go-sdk refused before dispatch (a header or _meta that does not
// match the body, params it cannot decode) is audited here; one it
// dispatched was audited by the pipeline.
//
// A call carrying a progress token (every request that gets here accepts an
// event stream: checkHeaders) is served by go-sdk's event-stream handler;
// once the pipeline runs it, go-sdk's events — progress notifications, then
// the answer — pass straight through (progress.go).
func (h *Handler) serveSDK(w http.ResponseWriter, r *http.Request, pr *auth.Principal, body, id []byte, tool string, progress bool) {
	d := dispatch{stream: progress}
	r = r.WithContext(context.WithValue(r.Context(), dispatchKey{}, &d))
	r.Body = io.NopCloser(bytes.NewReader(body))
	r.ContentLength = int64(len(body))
	sw := &sdkWriter{header: http.Header{}}
	sdk := h.sdk
	if progress {
		sdk, sw.out, sw.dispatch = h.sdkStream, w, &d
	}
	sdk.ServeHTTP(sw, r)
	if sw.passed {
		return // the call ran: the pipeline audited it
	}
	if f := sw.send(w, r, id, d.ran.Load()); f != nil && tool != "" && !d.ran.Load() {
		h.pipe.Refused(r.Context(), pr, tool, f.outcome(), f.code)
	}
}

// dispatch records that go-sdk ran a tool handler for the request: the
// pipeline audits every call it runs, so the front must not audit it again.
// stream: the request is served as an event stream, for its progress.
type dispatch struct {
	ran    atomic.Bool
	stream bool
}

type dispatchKey struct{}

func dispatched(ctx context.Context) {
	if d, ok := ctx.Value(dispatchKey{}).(*dispatch); ok {
		d.ran.Store(true)
	}
}

// minLevel drops records below min, go-sdk's errors about what a client
// sent (clientCaused) first lowered to debug.
type minLevel struct {
	slog.Handler
	min slog.Level
}

// clientCaused are the messages go-sdk logs at ERROR about a request, not a
// fault of the server: a 2026-07-28 client's initialize or ping (removed in
// that revision), a handshake repeated or out of order. Any client can send
// them at will; answered -32601 or ignored, they are not errors to keep.
var clientCaused = map[string]bool{
	"method removed in the new protocol":   true,
	"method invalid during initialization": true,
	"initialized before initialize":        true,
	"duplicate initialized notification":   true,
	"duplicate initialize request":         true,
}

func (m minLevel) Handle(ctx context.Context, r slog.Record) error {
	if r.Level >= slog.LevelError && clientCaused[r.Message] {
		r.Level = slog.LevelDebug
	}
	if r.Level < m.min {
		return nil
	}
	return m.Handler.Handle(ctx, r)
}

func (m minLevel) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= m.min && m.Handler.Enabled(ctx, l)
}

func (m minLevel) WithAttrs(as []slog.Attr) slog.Handler {
	return minLevel{Handler: m.Handler.WithAttrs(as), min: m.min}
}

func (m minLevel) WithGroup(name string) slog.Handler {
	return minLevel{Handler: m.Handler.WithGroup(name), min: m.min}
}

// readBody reads the whole body into one recycled buffer with room for
// Content-Length when it is declared (io.ReadAll would grow a buffer by
// doubling: about twice a 77 KB body in garbage per call). It returns the
// buffer for putBuffer, and the body.
func readBody(r io.Reader, declared, max int64) (*[]byte, []byte, error) {
	size := int64(bytes.MinRead)
	if declared > 0 && declared <= max {
		size += declared
	}
	p := buffers.Get(int(size))
	buf := bytes.NewBuffer(*p)
	_, err := buf.ReadFrom(r)
	return p, buf.Bytes(), err
}
