package mcpapi

import (
	"context"
	"net/http"
	"path"
	"strings"

	"github.com/cobranca/cobranca/internal/auth"
	"github.com/cobranca/cobranca/internal/contract"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// MCP Apps (SEP-1865, the official extension io.modelcontextprotocol/ui,
// specification 2026-01-26): a tool names the ui:// resource its results are
// rendered in, a host that renders MCP Apps reads it with resources/read and
// shows it in a sandboxed iframe, handing it the call's result by
// postMessage. A host without the extension ignores the tool's _meta and
// sees the same structuredContent and text as ever.
const (
	// AppsExtension is the extension's identifier, advertised under the
	// server's capabilities.extensions.
	AppsExtension = "io.modelcontextprotocol/ui"
	// AppsMIMEType is the media type of an MCP Apps HTML resource.
	AppsMIMEType = "text/html;profile=mcp-app"
	// metaUI is the tool's and the resource's _meta key of the extension.
	metaUI = "ui"
	// metaLegacyResourceURI is the flat key hosts older than the nested
	// _meta.ui read; deprecated by the specification, still written by the
	// official server helper (registerAppTool) beside the nested one.
	metaLegacyResourceURI = "ui/resourceUri"
)

// viewToolMeta is what a tool with a result view adds to its _meta: the view,
// under both keys hosts read, and who may call the tool — the model only:
// the page needs no call of its own (it renders the result it is handed),
// so a host refuses any tools/call the page would make.
func viewToolMeta(m mcp.Meta, c *contract.Contract) {
	m[metaUI] = map[string]any{"resourceUri": c.View, "visibility": []string{"model"}}
	m[metaLegacyResourceURI] = c.View
}

// viewResourceMeta is the resource's _meta.ui, on its resources/list entry
// and on its contents: a border, and no content security settings, which
// leaves the host's restrictive default (no network, no external script,
// style, frame or image): the page is self-contained.
func viewResourceMeta() mcp.Meta {
	return mcp.Meta{metaUI: map[string]any{"prefersBorder": true}}
}

// addViews serves each tool's result view as an MCP resource, and
// advertises the resources capability and the extension for them.
func (h *Handler) addViews(caps *mcp.ServerCapabilities) []func(*mcp.Server) {
	views := h.pipe.Views()
	if len(views) == 0 {
		return nil
	}
	caps.Resources = &mcp.ResourceCapabilities{}
	caps.AddExtension(AppsExtension, map[string]any{"mimeTypes": []string{AppsMIMEType}})
	var adds []func(*mcp.Server)
	for _, v := range views {
		c, html := v.Contract, string(v.HTML)
		meta := viewResourceMeta() // once: the SDK only reads it
		res := &mcp.Resource{
			URI:         c.View,
			Name:        strings.TrimSuffix(path.Base(c.View), ".html"),
			Title:       c.Title,
			Description: "The result view of " + c.Name + " for hosts that render MCP Apps: it shows the structuredContent of a call.",
			MIMEType:    AppsMIMEType,
			Size:        int64(len(html)),
			Meta:        meta,
		}
		read := func(ctx context.Context, _ *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			if pr, _ := auth.PrincipalFrom(ctx); len(h.pipe.AuthorizeView(pr, c.View)) > 0 { // refuseViewRead answers it first; checked again in depth
				return nil, errInsufficientScope
			}
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{
				URI: c.View, MIMEType: AppsMIMEType, Text: html, Meta: meta,
			}}}, nil
		}
		adds = append(adds, func(srv *mcp.Server) { srv.AddResource(res, read) })
	}
	return adds
}

// refuseViewRead answers, at the HTTP level, a resources/read of a view by a
// caller without its tool's scopes: the 403 challenge a tools/call of the
// tool gets (done), before go-sdk reads the request.
func (h *Handler) refuseViewRead(w http.ResponseWriter, pr *auth.Principal, req rpcRequest) (done bool) {
	if req.method != "resources/read" || h.scopes == nil {
		return false
	}
	missing := h.pipe.AuthorizeView(pr, req.uri)
	if len(missing) == 0 {
		return false
	}
	h.scopes.WriteInsufficientScope(w, missing)
	return true
}
