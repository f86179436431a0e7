package mcpapi

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/cobranca/cobranca/internal/auth"
	"github.com/cobranca/cobranca/internal/pipeline"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestFixtureResources: a resource of Options.Resources, plain or a
// template, is listed and read by a token holding its scope, with the URI
// read; a token without the scope reads nothing.
func TestFixtureResources(t *testing.T) {
	read := func(uri string) (string, []byte, error) { return "read " + uri, nil, nil }
	h := newHandler(t, Options{Resources: []Resource{
		{URI: "test://plain", Name: "plain", MIMEType: "text/plain", Scope: "test:run", Read: read},
		{URI: "test://t/{id}", Template: true, Name: "t", MIMEType: "text/plain", Scope: "test:run", Read: read},
	}}, pipeline.Options{})
	sess := connect(t, h)
	ctx := context.Background()
	for _, uri := range []string{"test://plain", "test://t/123"} {
		res, err := sess.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
		if err != nil || len(res.Contents) != 1 || res.Contents[0].URI != uri || res.Contents[0].Text != "read "+uri {
			t.Errorf("read %s: %+v, %v", uri, res, err)
		}
	}
	if list, err := sess.ListResources(ctx, nil); err != nil || !strings.Contains(resourceURIs(list), "test://plain") {
		t.Errorf("resources/list = %v, %v; want test://plain", list, err)
	}
	without := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(w, r.WithContext(auth.WithPrincipal(r.Context(), &auth.Principal{Subject: "s", Scopes: []string{"collections:read"}})))
	})
	other := connectAs(t, without, "")
	for _, uri := range []string{"test://plain", "test://t/123"} {
		if res, err := other.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri}); err == nil {
			t.Errorf("read %s without test:run: %+v, want refused", uri, res)
		}
	}
	if _, err := New(Options{Pipeline: h.pipe, Resources: []Resource{{URI: "test://x", Read: read}}}); err == nil {
		t.Error("a resource without a scope was accepted")
	}
}

func resourceURIs(list *mcp.ListResourcesResult) string {
	var b strings.Builder
	for _, r := range list.Resources {
		b.WriteString(r.URI + " ")
	}
	return b.String()
}
