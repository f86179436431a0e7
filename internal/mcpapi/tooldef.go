package mcpapi

import (
	"github.com/cobranca/cobranca/internal/contract"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// toolDef is the MCP tool declaration of a contract: the contract itself,
// minus its schemas, under _meta[contract.MetaKey], and the four hints
// derived from it. The contract stays free of the SDK; this is the one place
// its MCP shape is written.
func toolDef(c *contract.Contract) *mcp.Tool {
	t := &mcp.Tool{
		Meta:        mcp.Meta{contract.MetaKey: c.Summary()},
		Name:        c.Name,
		Title:       c.Title,
		Description: c.Description,
		InputSchema: c.InputSchema,
		Annotations: annotations(c),
	}
	if c.View != "" {
		viewToolMeta(t.Meta, c)
	}
	if !c.TextOnly() {
		t.OutputSchema = c.OutputSchema
	}
	return t
}

// annotations derives the four MCP hints, all set explicitly: the SDK omits
// a nil destructiveHint or openWorldHint, which clients read as true.
func annotations(c *contract.Contract) *mcp.ToolAnnotations {
	readOnly := len(c.SideEffects.Changes) == 0
	destructive := !readOnly && c.SideEffects.Destructive
	openWorld := c.SideEffects.External
	return &mcp.ToolAnnotations{
		Title:           c.Title,
		ReadOnlyHint:    readOnly,
		DestructiveHint: &destructive,
		IdempotentHint:  readOnly || c.Idempotency.Kind == "key" || c.Idempotency.Kind == "natural",
		OpenWorldHint:   &openWorld,
	}
}
