package mcpapi

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"

	"github.com/cobranca/cobranca/internal/contract"
	"github.com/cobranca/cobranca/internal/pipeline"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// addPrompts serves each of the named tools also as an MCP prompt: a
// prompts/get of it is a call through the pipeline — scopes, budget,
// validation, request states and audit as for tools/call — whose text is
// the prompt's messages, one per content (its text, then its media). Only a
// text-only read whose arguments are all strings (a prompt's arguments are)
// can be one.
func (h *Handler) addPrompts(srv *mcp.Server, names []string) error {
	served := map[string]*contract.Contract{}
	for _, c := range h.pipe.Contracts() {
		served[c.Name] = c
	}
	for _, name := range names {
		c := served[name]
		if c == nil {
			return fmt.Errorf("mcpapi: prompt %s: no such tool is served", name)
		}
		if !c.TextOnly() || c.HasSideEffects() {
			return fmt.Errorf("mcpapi: prompt %s: only a text-only read can be served as a prompt", name)
		}
		p := &mcp.Prompt{Name: c.Name, Title: c.Title, Description: c.Description}
		for _, arg := range slices.Sorted(maps.Keys(c.InputSchema.Properties)) {
			prop := c.InputSchema.Properties[arg]
			if prop.Type != "string" {
				return fmt.Errorf("mcpapi: prompt %s: argument %s is not a string", name, arg)
			}
			p.Arguments = append(p.Arguments, &mcp.PromptArgument{Name: arg, Description: prop.Description, Required: slices.Contains(c.InputSchema.Required, arg)})
		}
		srv.AddPrompt(p, h.getPrompt)
	}
	return nil
}

// getPrompt is the go-sdk handler of every prompt: the call, adapted.
func (h *Handler) getPrompt(ctx context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
	args := req.Params.Arguments
	if args == nil {
		args = map[string]string{}
	}
	raw, err := json.Marshal(args)
	if err != nil {
		return nil, err
	}
	res, err := h.do(ctx, req, req.Params.Name, raw, req.Params.InputResponses, req.Params.RequestState, nil)
	if err != nil {
		return nil, err
	}
	switch res.Kind {
	case pipeline.Complete:
		var msgs []*mcp.PromptMessage
		for _, c := range contents(res) {
			msgs = append(msgs, &mcp.PromptMessage{Role: "user", Content: c})
		}
		return &mcp.GetPromptResult{Messages: msgs}, nil
	case pipeline.InputRequired:
		reqs, err := inputRequests(res.Inputs)
		if err != nil {
			return nil, err
		}
		return &mcp.GetPromptResult{InputRequests: reqs, RequestState: res.State}, nil
	case pipeline.Denied:
		return nil, errInsufficientScope
	}
	// A prompt has no error result: a tool error is the request's error.
	return nil, rpcError(res)
}
