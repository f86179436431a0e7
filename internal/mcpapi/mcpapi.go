// Package mcpapi serves cobranca's tools over MCP Streamable HTTP (stateless)
// and runs every tool call through one pipeline that enforces the tool's
// contract: output-schema check, allowed error codes, audit.
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
	"slices"
	"sync/atomic"
	"time"

	"github.com/cobranca/cobranca/internal/contract"
	"github.com/cobranca/cobranca/internal/request"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Version is reported in the MCP implementation info.
const Version = "0.1.0"

// Options configure the MCP endpoint.
type Options struct {
	Logger       *slog.Logger
	MaxBodyBytes int64
	Auditor      Auditor // may be nil until a store is configured
	Now          func() time.Time
	// Extra tools registered besides the built-in ones (tests use this to
	// register tools of tiers no product tool has yet).
	Extra []Tool
	// Limits, when set, enforces the risk tier budgets before a tool runs.
	Limits TierLimits
	// Metrics, when set, counts every call by tool, tier and outcome.
	Metrics CallObserver
	// Scopes, when set, refuses a tools/call whose token lacks a scope the
	// tool's contract requires, with its 403. The server always sets it;
	// only tests of the pipeline alone leave it nil.
	Scopes ScopeChallenger
	// DisableFastPath sends every request through go-sdk (the tests compare
	// both paths byte for byte; benchmarks measure both).
	DisableFastPath bool
}

// Handler is the MCP endpoint. It reads each request body once, under the
// size limit, reads the JSON-RPC request exactly as go-sdk will (or refuses
// it, with its own fixed answer and, for a named tool, an audit event),
// applies the checks that must answer at the HTTP level, and answers a plain
// tools/call itself or hands the request to go-sdk's stateless Streamable
// HTTP handler, whose error messages it replaces with its own.
type Handler struct {
	log      *slog.Logger
	maxBody  int64
	sdk      http.Handler
	tools    map[string]*compiled // the tools served, by name; never a forbidden one
	visible  []*contract.Contract
	pipeline *pipeline
	slowOnly bool
	scopes   ScopeChallenger
	// fastCalls counts the calls the fast path answered.
	fastCalls atomic.Int64
	// impl is the server's implementation info, which every 2026-07-28
	// result carries in its _meta; serverInfoMeta is that _meta, encoded.
	impl           *mcp.Implementation
	serverInfoMeta []byte
	// calls and notifications are the methods served (servedMethods).
	calls, notifications map[string]bool
}

// Tools returns the product's tools, contract and logic, in listing order.
func Tools() ([]Tool, error) {
	c, err := contract.Finish(analyzeContract())
	if err != nil {
		return nil, err
	}
	return []Tool{{Contract: c, Decode: analyzeDecode, Run: analyzeRun}}, nil
}

// New builds the MCP endpoint.
func New(opts Options) (*Handler, error) {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.MaxBodyBytes <= 0 {
		opts.MaxBodyBytes = 1 << 20
	}
	tools, err := Tools()
	if err != nil {
		return nil, err
	}
	tools = append(tools, opts.Extra...)

	impl := &mcp.Implementation{Name: "cobranca", Title: "cobranca collections", Version: Version}
	serverInfo, err := json.Marshal(mcp.Meta{mcp.MetaKeyServerInfo: impl})
	if err != nil {
		return nil, err
	}
	h := &Handler{
		log:            opts.Logger,
		maxBody:        opts.MaxBodyBytes,
		tools:          map[string]*compiled{},
		pipeline:       &pipeline{log: opts.Logger, auditor: opts.Auditor, now: opts.Now},
		slowOnly:       opts.DisableFastPath,
		scopes:         opts.Scopes,
		impl:           impl,
		serverInfoMeta: serverInfo,
	}
	h.pipeline.limits = opts.Limits
	h.pipeline.observe = opts.Metrics
	// The SDK logs every stateless session at info level; keep its warnings.
	sdkLog := slog.New(minLevel{Handler: opts.Logger.Handler(), min: slog.LevelWarn})
	caps := &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{}}
	h.calls, h.notifications = servedMethods(caps)
	srv := mcp.NewServer(impl, &mcp.ServerOptions{
		Logger:       sdkLog,
		Instructions: "Collections (accounts receivable) tools. Every tool carries its Tool Contract under _meta[\"" + contract.MetaKey + "\"]: risk tier, permissions, side effects and failure codes.",
		Capabilities: caps,
	})
	names := map[string]bool{}
	for _, t := range tools {
		if names[t.Contract.Name] {
			return nil, fmt.Errorf("tool %s registered twice", t.Contract.Name)
		}
		names[t.Contract.Name] = true
		ct, err := compile(t)
		if err != nil {
			return nil, err
		}
		if !t.Contract.VisibleToAgents() {
			// The MCP endpoint treats every caller as an agent: a forbidden
			// tool is never served, so listing omits it and calling it is
			// answered exactly like calling a tool that does not exist.
			continue
		}
		h.tools[t.Contract.Name] = ct
		h.visible = append(h.visible, t.Contract)
		srv.AddTool(toolDef(t.Contract), func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			dispatched(ctx)
			if !permitted(ctx, h.scopes, ct.Contract) {
				h.pipeline.refused(ctx, ct, OutcomeDenied, "insufficient_scope")
				return nil, errInsufficientScope
			}
			return h.pipeline.call(ctx, ct, callArgs{raw: req.Params.Arguments}), nil
		})
	}
	h.sdk = mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{
		Stateless:    true,
		JSONResponse: true,
		Logger:       sdkLog,
		// Host and Origin are checked by cobranca's own middleware, with the
		// configured allow-lists (the SDK's check knows only loopback).
		DisableLocalhostProtection: true,
		MaxRequestBodyBytes:        opts.MaxBodyBytes,
	})
	return h, nil
}

// FastCalls is how many calls the fast path has answered (for metrics).
func (h *Handler) FastCalls() int64 { return h.fastCalls.Load() }

// Contracts returns the contracts visible to agents, in listing order.
func (h *Handler) Contracts() []*contract.Contract { return slices.Clone(h.visible) }

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
	refused := checkHeaders(r)
	fast := refused == nil && !h.slowOnly
	// The plain tools/call is read in one pass; anything else is read by
	// readRequest, exactly as go-sdk will read it, or refused.
	var decoders func(string) Decoder
	if fast {
		decoders = h.decoders(r)
	}
	call, plain := scanCall(body, decoders)
	req := rpcRequest{method: "tools/call", id: call.id, name: call.name, named: true}
	if !plain {
		var bad *refusal
		req, bad = readRequest(body)
		if refused == nil {
			refused = bad
		}
	}
	t := h.namedTool(req)
	if t != nil {
		request.From(r.Context()).Tool = t.Contract.Name
	}
	// Authorization comes before validation: a call of a served tool whose
	// name can be read, from a caller without the tool's scopes, is the 403
	// challenge and a denied event, whatever else is wrong with it.
	if t != nil && !authorize(h.scopes, h.tools, w, r, t.Contract.Name) {
		h.pipeline.refused(r.Context(), t, OutcomeDenied, "insufficient_scope")
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
		h.pipeline.refused(r.Context(), t, refused.outcome(), refused.code)
		return
	}
	if plain && fast {
		if t, newProtocol := h.fastCall(r, call); t != nil {
			h.serveFast(w, r, call, t, newProtocol)
			putBuffer(bp, body) // the answer is written; nothing holds the body
			return
		}
	}
	h.serveSDK(w, r, body, t)
}

// namedTool is the served tool a tools/call names, or nil: the one it names
// (once, or repeated as is), or the one served tool among different names
// it sends (a request refused, whose audit event has no other tool to go to).
func (h *Handler) namedTool(req rpcRequest) *compiled {
	if req.named {
		return h.tools[req.name]
	}
	var t *compiled
	for _, name := range req.names {
		if c := h.tools[name]; c != nil {
			if t != nil {
				return nil // two served tools: no single one
			}
			t = c
		}
	}
	return t
}

// route refuses a well-formed request the endpoint does not serve: a method
// outside the advertised capabilities, a call sent as a notification, a
// tools/call without a tool name or of a tool not served. A notification of
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
	case req.method != "tools/call":
		return nil, false
	case !req.named:
		return &refuseParams, false
	case h.tools[req.name] == nil:
		return &refuseUnknownTool, false
	}
	return nil, false
}

// serveSDK hands the request to go-sdk and sends its answer with the
// endpoint's own messages in place of go-sdk's. A tools/call of tool t that
// go-sdk refused before dispatch (a header or _meta that does not match the
// body, params it cannot decode) is audited here; one it dispatched was
// audited by the pipeline.
func (h *Handler) serveSDK(w http.ResponseWriter, r *http.Request, body []byte, t *compiled) {
	var d dispatch
	r = r.WithContext(context.WithValue(r.Context(), dispatchKey{}, &d))
	r.Body = io.NopCloser(bytes.NewReader(body))
	r.ContentLength = int64(len(body))
	sw := &sdkWriter{header: http.Header{}}
	h.sdk.ServeHTTP(sw, r)
	if f := sw.send(w, r); f != nil && t != nil && !d.ran.Load() {
		h.pipeline.refused(r.Context(), t, f.outcome(), f.code)
	}
}

// dispatch records that go-sdk ran a tool handler for the request: the
// pipeline audits every call it runs, so the front must not audit it again.
type dispatch struct{ ran atomic.Bool }

type dispatchKey struct{}

func dispatched(ctx context.Context) {
	if d, ok := ctx.Value(dispatchKey{}).(*dispatch); ok {
		d.ran.Store(true)
	}
}

// decoders returns the scanner's decoder lookup for r, a request whose
// headers leave it to the fast path (mayServeFast): the named tool's
// Decoder, or nil, so that arguments are decoded before the pipeline only
// where the pipeline would run nothing before decoding them — the caller
// holds the tool's scopes (authorize refuses it otherwise, with nothing
// decoded) and the tool's tier spends no budget (a budget is spent before
// any work).
func (h *Handler) decoders(r *http.Request) func(name string) Decoder {
	return func(name string) Decoder {
		t, ok := h.tools[name]
		if !ok || t.Decode == nil || !permitted(r.Context(), h.scopes, t.Contract) ||
			(h.pipeline.limits != nil && h.pipeline.limits.Budgeted(t.Contract.RiskLevel)) {
			return nil
		}
		return t.Decode
	}
}

// minLevel drops records below min.
type minLevel struct {
	slog.Handler
	min slog.Level
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
	p := getBuffer(int(size))
	buf := bytes.NewBuffer(*p)
	_, err := buf.ReadFrom(r)
	return p, buf.Bytes(), err
}
