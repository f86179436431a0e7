package server_test

import (
	"bytes"
	"context"
	"net/http"
	"testing"

	"github.com/cobranca/cobranca/internal/auth"
	"github.com/cobranca/cobranca/internal/collections"
	"github.com/cobranca/cobranca/internal/mcpapi"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestResultViewOverHTTP: through the real route table and real tokens, a
// go-sdk client on each revision finds analyze_portfolio's view in
// tools/list and resources/list and reads it; resources/read without a
// token is the 401 challenge, with a token lacking collections:read the
// 403 one, like a tools/call of the tool.
func TestResultViewOverHTTP(t *testing.T) {
	for _, p := range bothPaths {
		s := newAuthServer(t, p.slow)
		tok := mint(t, s.auth, auth.MintOptions{})
		for _, v := range protocolVersions {
			t.Run(p.name+"/"+v, func(t *testing.T) {
				c := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
				sess, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{
					Endpoint: s.URL + "/mcp", HTTPClient: &http.Client{Transport: bearerTransport(tok)},
				}, &mcp.ClientSessionOptions{ProtocolVersion: v})
				if err != nil {
					t.Fatal(err)
				}
				defer sess.Close()
				ctx := context.Background()
				tools, err := sess.ListTools(ctx, nil)
				if err != nil {
					t.Fatal(err)
				}
				var uri any
				for _, tool := range tools.Tools {
					if tool.Name == collections.AnalyzeName {
						if ui, ok := tool.Meta["ui"].(map[string]any); ok {
							uri = ui["resourceUri"]
						}
					}
				}
				if uri != collections.AnalyzeView {
					t.Fatalf("analyze_portfolio's _meta.ui.resourceUri = %v, want %s", uri, collections.AnalyzeView)
				}
				res, err := sess.ListResources(ctx, nil)
				if err != nil || len(res.Resources) != 1 || res.Resources[0].URI != collections.AnalyzeView || res.Resources[0].MIMEType != mcpapi.AppsMIMEType {
					t.Fatalf("resources/list = %+v, %v", res, err)
				}
				read, err := sess.ReadResource(ctx, &mcp.ReadResourceParams{URI: collections.AnalyzeView})
				if err != nil || len(read.Contents) != 1 || !bytes.HasPrefix([]byte(read.Contents[0].Text), []byte("<!DOCTYPE html>")) {
					t.Fatalf("resources/read = %+v, %v", read, err)
				}
			})
		}
		body := []byte(`{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"` + collections.AnalyzeView + `"}}`)
		noToken := `Bearer resource_metadata="` + devMetadataURL + `"`
		if resp, out := s.do(t, http.MethodPost, "/mcp", "", body); resp.StatusCode != http.StatusUnauthorized || resp.Header.Get("WWW-Authenticate") != noToken || bytes.Contains(out, []byte("<!DOCTYPE")) {
			t.Errorf("%s: without a token: %d %q %.200s; want 401 %q", p.name, resp.StatusCode, resp.Header.Get("WWW-Authenticate"), out, noToken)
		}
		other := mint(t, s.auth, auth.MintOptions{Subject: "bob", Scopes: []string{"files:write"}})
		want := `Bearer error="insufficient_scope", error_description="the token lacks scopes this call needs", scope="collections:read", resource_metadata="` + devMetadataURL + `"`
		if resp, out := s.doVersion(t, other, body, "2025-11-25"); resp.StatusCode != http.StatusForbidden || resp.Header.Get("WWW-Authenticate") != want || bytes.Contains(out, []byte("<!DOCTYPE")) {
			t.Errorf("%s: without collections:read: %d %q %.200s; want 403 %q", p.name, resp.StatusCode, resp.Header.Get("WWW-Authenticate"), out, want)
		}
	}
}
