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

// session is a go-sdk client of s holding tok, speaking revision version
// ("": go-sdk's default).
func (s *authServer) session(t *testing.T, tok, version string) *mcp.ClientSession {
	t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	sess, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{
		Endpoint: s.URL + "/mcp", HTTPClient: &http.Client{Transport: bearerTransport(tok)},
	}, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sess.Close() })
	return sess
}

// viewOf is the result view tools/list names for tool (its
// _meta.ui.resourceUri), or "".
func viewOf(t *testing.T, sess *mcp.ClientSession, tool string) string {
	t.Helper()
	tools, err := sess.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, listed := range tools.Tools {
		if ui, ok := listed.Meta["ui"].(map[string]any); ok && listed.Name == tool {
			uri, _ := ui["resourceUri"].(string)
			return uri
		}
	}
	return ""
}

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
				sess := s.session(t, tok, v)
				ctx := context.Background()
				if uri := viewOf(t, sess, collections.AnalyzeName); uri != collections.AnalyzeView {
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
