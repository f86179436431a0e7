package mcpapi

import (
	"context"
	"fmt"

	"github.com/cobranca/cobranca/internal/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Resource is a resource served besides the tools' views: the conformance
// build's fixtures (internal/diagnostics). None in production.
type Resource struct {
	// URI, or with Template a URI template (RFC 6570 level 1) whose reads
	// Read answers for any URI it matches.
	URI      string
	Template bool
	Name     string
	MIMEType string
	// Scope is the permission a reader's token must hold.
	Scope string
	// Read answers the contents of uri: Text, or Blob for binary data.
	Read func(uri string) (text string, blob []byte, err error)
}

// addResources serves rs, each read only by a token holding its scope.
func addResources(srv *mcp.Server, rs []Resource) error {
	for _, r := range rs {
		if r.URI == "" || r.Scope == "" || r.Read == nil {
			return fmt.Errorf("mcpapi: resource %q needs a URI, a scope and a reader", r.URI)
		}
		read := func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			if pr, _ := auth.PrincipalFrom(ctx); !pr.HasScope(r.Scope) {
				return nil, errInsufficientScope
			}
			uri := req.Params.URI
			text, blob, err := r.Read(uri)
			if err != nil {
				return nil, err
			}
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: uri, MIMEType: r.MIMEType, Text: text, Blob: blob}}}, nil
		}
		if r.Template {
			srv.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: r.URI, Name: r.Name, MIMEType: r.MIMEType}, read)
		} else {
			srv.AddResource(&mcp.Resource{URI: r.URI, Name: r.Name, MIMEType: r.MIMEType}, read)
		}
	}
	return nil
}
