package mcpapi

import (
	"encoding/json"
	"fmt"

	"github.com/cobranca/cobranca/internal/auditlog"
	"github.com/cobranca/cobranca/internal/failure"
	"github.com/cobranca/cobranca/internal/pipeline"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Outcome is how a tool call ended: the audit log's outcomes, which the
// access log and the metrics use as they are.
type Outcome = auditlog.Outcome

// ErrorMetaKey is the reverse-DNS _meta key under which a tool error result
// carries its failure.Detail: {code, message, field?, retryAfterMs?}.
//
// An error result has no structuredContent. The official TypeScript SDK 1.x
// client and the Inspector validate a structuredContent that is present
// against the tool's outputSchema, isError or not, and would throw on an
// error shape; every client tolerates its absence when isError is true. The
// outputSchema thus stays the strict success shape, the text content says
// "code: field: message" for a model, and a program reads the code from
// _meta.
const ErrorMetaKey = "io.cobranca/error"

func errorResult(fe *failure.Error) *mcp.CallToolResult {
	return &mcp.CallToolResult{
		Meta:    mcp.Meta{ErrorMetaKey: fe.Detail()},
		IsError: true,
		Content: []mcp.Content{&mcp.TextContent{Text: fe.Text()}},
	}
}

// toMCP adapts the pipeline's result to MCP: a tool result, or the JSON-RPC
// error of a request the pipeline refused as a whole.
func toMCP(res pipeline.Result) (*mcp.CallToolResult, error) {
	switch res.Kind {
	case pipeline.Complete:
		out := &mcp.CallToolResult{Content: contents(res)}
		if res.Structured != nil {
			out.StructuredContent = json.RawMessage(res.Structured)
		}
		return out, nil
	case pipeline.InputRequired:
		reqs, err := inputRequests(res.Inputs)
		if err != nil {
			return nil, err
		}
		return &mcp.CallToolResult{InputRequests: reqs, RequestState: res.State}, nil
	case pipeline.ToolError:
		return errorResult(res.Err), nil
	case pipeline.Denied:
		return nil, errInsufficientScope
	}
	return nil, rpcError(res)
}

// rpcError is the JSON-RPC error of a refused request: its code by the
// failure's, and the failure's detail (and the capabilities the client
// must declare) as data.
func rpcError(res pipeline.Result) error {
	code := int64(jsonrpc.CodeInvalidParams)
	data := map[string]any{"error": res.Err.Detail()}
	if res.Err.Code == failure.MissingClientCapability {
		code = mcp.CodeMissingRequiredClientCapabilities
		data["requiredCapabilities"] = res.RequiredCapabilities
	}
	b, err := json.Marshal(data)
	if err != nil {
		return err
	}
	return &jsonrpc.Error{Code: code, Message: res.Err.Text(), Data: b}
}

// inputRequests decodes the pipeline's {method, params} requests into the
// SDK's types, as a client will read them.
func inputRequests(in map[string]pipeline.Input) (mcp.InputRequestMap, error) {
	b, err := json.Marshal(in)
	if err != nil {
		return nil, err
	}
	var m mcp.InputRequestMap
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("input requests: %w", err)
	}
	return m, nil
}

// inputResponses encodes the client's answers back to JSON for the pipeline.
func inputResponses(m mcp.InputResponseMap) (map[string]json.RawMessage, error) {
	if len(m) == 0 {
		return nil, nil
	}
	out := make(map[string]json.RawMessage, len(m))
	for k, v := range m {
		b, err := json.Marshal(v)
		if err != nil {
			return nil, err
		}
		out[k] = b
	}
	return out, nil
}

// declaring is a request that carries the client's declarations: a
// tools/call, or a prompts/get.
type declaring interface {
	ProtocolVersion() string
	ClientCapabilities() *mcp.ClientCapabilities
}

// clientOf is what the caller's client declared for this request.
func clientOf(req declaring) pipeline.Client {
	c := pipeline.Client{Protocol: req.ProtocolVersion()}
	c.InputRequests = c.Protocol >= protocol20260728
	if caps := req.ClientCapabilities(); caps != nil {
		if e := caps.Elicitation; e != nil {
			// An elicitation capability naming no mode means form (MCP
			// 2025-11-25); one naming only url does not show forms.
			c.Elicitation, c.ElicitationForm, c.ElicitationURL = true, e.Form != nil || e.URL == nil, e.URL != nil
		}
		// Sampling and roots are deprecated since 2026-07-28 (SEP-2577) but
		// still part of the protocol: a client may declare them, and the
		// conformance suite's input requests use them.
		c.Sampling = caps.Sampling != nil                       //lint:ignore SA1019 still served (SEP-2577's deprecation window)
		c.Roots = caps.RootsV2 != nil || caps.Roots.ListChanged //lint:ignore SA1019 still served (SEP-2577's deprecation window)
	}
	return c
}

// contents are a complete result's contents: its text, then its media (a
// result of media alone has no text content).
func contents(res pipeline.Result) []mcp.Content {
	var out []mcp.Content
	if res.Summary != "" || len(res.Media) == 0 {
		out = append(out, &mcp.TextContent{Text: res.Summary})
	}
	for _, m := range res.Media {
		switch m.Kind {
		case pipeline.Image:
			out = append(out, &mcp.ImageContent{MIMEType: m.MIMEType, Data: m.Data})
		case pipeline.Audio:
			out = append(out, &mcp.AudioContent{MIMEType: m.MIMEType, Data: m.Data})
		case pipeline.Resource:
			rc := &mcp.ResourceContents{URI: m.URI, MIMEType: m.MIMEType, Text: m.Text}
			if m.Text == "" {
				rc.Blob = m.Data
			}
			out = append(out, &mcp.EmbeddedResource{Resource: rc})
		}
	}
	return out
}
