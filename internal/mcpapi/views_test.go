package mcpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/cobranca/cobranca/internal/auth"
	"github.com/cobranca/cobranca/internal/collections"
	"github.com/cobranca/cobranca/internal/contract"
	"github.com/cobranca/cobranca/internal/pipeline"
	"github.com/cobranca/cobranca/internal/pipeline/pipelinetest"
	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// analyzeTool is the product's collections.analyze_portfolio, contract and
// logic; withoutView, the same tool without its result view.
func analyzeTool(t testing.TB, withoutView bool) pipeline.Tool {
	t.Helper()
	tools, err := collections.Tools(collections.Settings{})
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(tools, func(tool pipeline.Tool) bool { return tool.Contract.Name == collections.AnalyzeName })
	tool := tools[i]
	if withoutView {
		c := *tool.Contract
		c.View, tool.View = "", nil
		tool.Contract = &c
	}
	return tool
}

// analyzeHandler is the endpoint serving only analyze_portfolio (with or
// without its view).
func analyzeHandler(t testing.TB, slow, withoutView bool) *Handler {
	t.Helper()
	p, err := pipeline.New(pipeline.Options{Tools: []pipeline.Tool{analyzeTool(t, withoutView)}, States: pipelinetest.Ring(t)})
	if err != nil {
		t.Fatal(err)
	}
	h, err := New(Options{Pipeline: p, Scopes: challenger{}, DisableFastPath: slow})
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// TestViewPublished: a go-sdk client, on both revisions, finds the MCP Apps
// extension advertised, analyze_portfolio pointing at its view (the nested
// key and the flat one older hosts read), the view listed with the MCP Apps
// media type, and reads the embedded HTML; no other tool names a view.
func TestViewPublished(t *testing.T) {
	html := analyzeTool(t, false).View
	if len(html) == 0 {
		t.Fatal("analyze_portfolio has no view HTML")
	}
	h := newTestHandler(t)
	for _, v := range bothRevisions {
		t.Run(v.version, func(t *testing.T) {
			sess := connectAs(t, asCaller(h), v.version)
			ctx := context.Background()

			caps := sess.InitializeResult().Capabilities
			if caps.Resources == nil {
				t.Error("the resources capability is not advertised")
			}
			wantExt := map[string]any{AppsExtension: map[string]any{"mimeTypes": []any{AppsMIMEType}}}
			if diff := cmp.Diff(wantExt, roundTrip(t, caps.Extensions)); diff != "" {
				t.Errorf("capabilities.extensions (-want +got):\n%s", diff)
			}

			tools, err := sess.ListTools(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			found := false
			for _, tool := range tools.Tools {
				ui, legacy := tool.Meta[metaUI], tool.Meta[metaLegacyResourceURI]
				found = found || tool.Name == collections.AnalyzeName
				if tool.Name != collections.AnalyzeName {
					if ui != nil || legacy != nil {
						t.Errorf("%s names a view: %v %v", tool.Name, ui, legacy)
					}
					continue
				}
				want := map[string]any{"resourceUri": collections.AnalyzeView, "visibility": []any{"model"}}
				if diff := cmp.Diff(want, roundTrip(t, ui)); diff != "" {
					t.Errorf("_meta.ui (-want +got):\n%s", diff)
				}
				if legacy != collections.AnalyzeView {
					t.Errorf(`_meta["ui/resourceUri"] = %v, want %s`, legacy, collections.AnalyzeView)
				}
				var pub map[string]any
				if err := json.Unmarshal(mustJSON(t, tool.Meta[contract.MetaKey]), &pub); err != nil || pub["view"] != collections.AnalyzeView {
					t.Errorf("the published contract's view = %v (%v), want %s", pub["view"], err, collections.AnalyzeView)
				}
			}
			if !found {
				t.Errorf("tools/list has no %s, so no view was checked", collections.AnalyzeName)
			}

			list, err := sess.ListResources(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			if len(list.Resources) != 1 {
				t.Fatalf("resources/list = %d resources, want the one view", len(list.Resources))
			}
			r := list.Resources[0]
			if r.URI != collections.AnalyzeView || r.MIMEType != AppsMIMEType || r.Name == "" || r.Size != int64(len(html)) {
				t.Errorf("resources/list entry = %+v", r)
			}
			wantMeta := map[string]any{"ui": map[string]any{"prefersBorder": true}}
			if diff := cmp.Diff(wantMeta, roundTrip(t, r.Meta)); diff != "" {
				t.Errorf("resource _meta (-want +got):\n%s", diff)
			}

			read, err := sess.ReadResource(ctx, &mcp.ReadResourceParams{URI: collections.AnalyzeView})
			if err != nil {
				t.Fatal(err)
			}
			if len(read.Contents) != 1 {
				t.Fatalf("resources/read: %d contents, want 1", len(read.Contents))
			}
			got := read.Contents[0]
			if got.URI != collections.AnalyzeView || got.MIMEType != AppsMIMEType || got.Text != string(html) {
				t.Errorf("resources/read = uri %s, mimeType %s, %d bytes; want %s, %s, the %d bytes embedded", got.URI, got.MIMEType, len(got.Text), collections.AnalyzeView, AppsMIMEType, len(html))
			}
			if diff := cmp.Diff(wantMeta, roundTrip(t, got.Meta)); diff != "" {
				t.Errorf("contents _meta (-want +got):\n%s", diff)
			}
			if tpl, err := sess.ListResourceTemplates(ctx, nil); err != nil || len(tpl.ResourceTemplates) != 0 {
				t.Errorf("resources/templates/list = %v, %v; want none", tpl, err)
			}
		})
	}
}

// TestViewReadRefusals: a resources/read of the view by a caller without
// analyze_portfolio's scope is the 403 challenge, before go-sdk reads it; a
// URI not served is invalid params whose message does not repeat it; a uri
// sent twice is refused, as every other duplicate member is.
func TestViewReadRefusals(t *testing.T) {
	read := func(v revision, params string) string {
		return `{"jsonrpc":"2.0","id":"r","method":"resources/read","params":{` + v.meta() + params + `}}`
	}
	for _, p := range bothPaths {
		for _, v := range bothRevisions {
			t.Run(p.name+"/"+v.version, func(t *testing.T) {
				strange := "ui://cobranca/no-such-view.html?<script>"
				for _, c := range []struct {
					name   string
					scopes []string
					params string
					header string // Mcp-Name on 2026-07-28
					status int
					want   string
				}{
					{"no scope", []string{"other:read"}, `"uri":"` + collections.AnalyzeView + `"`, collections.AnalyzeView, http.StatusForbidden, "insufficient scope: collections:read"},
					{"no scope, escaped", []string{"other:read"}, `"uri":"ui:\/\/cobranca\/portfolio-analysis.html"`, collections.AnalyzeView, http.StatusForbidden, "insufficient scope: collections:read"},
					{"scope", []string{"collections:read"}, `"uri":"` + collections.AnalyzeView + `"`, collections.AnalyzeView, http.StatusOK, `"mimeType":"text/html;profile=mcp-app"`},
					{"unknown uri", []string{"collections:read"}, `"uri":"` + strings.ReplaceAll(strange, "<", `\u003c`) + `"`, strange, statusFor(v, http.StatusBadRequest), `{"jsonrpc":"2.0","id":"r","error":{"code":-32602,"message":"Invalid params"}}`},
					{"uri twice", []string{"collections:read"}, `"uri":"` + collections.AnalyzeView + `","uri":"ui://x/y.html"`, collections.AnalyzeView, http.StatusBadRequest, `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request: a member name appears twice"}}`},
				} {
					s := newViewServer(t, p.slow, c.scopes)
					status, out := s.post(t, v.version, read(v, c.params), v.headers("resources/read", c.header))
					if status != c.status || !bytes.Contains(out, []byte(c.want)) {
						t.Errorf("%s: %d, want %d and %s:\n%s", c.name, status, c.status, c.want, out)
					}
					if bytes.Contains(out, []byte("no-such-view")) || bytes.Contains(out, []byte("<script>")) {
						t.Errorf("%s: the answer repeats the URI:\n%s", c.name, out)
					}
				}
			})
		}
	}
}

// statusFor is the HTTP status of a JSON-RPC error the front answers on
// revision v: 200 before 2026-07-28, status from it on.
func statusFor(v revision, status int) int {
	if v.version == protocol20260728 {
		return status
	}
	return http.StatusOK
}

// newViewServer is the endpoint over real HTTP, each request made by a
// principal holding scopes.
func newViewServer(t *testing.T, slow bool, scopes []string) *frontServer {
	t.Helper()
	h := newHandler(t, Options{Scopes: challenger{}, DisableFastPath: slow}, pipeline.Options{})
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(w, r.WithContext(auth.WithPrincipal(r.Context(), &auth.Principal{Subject: "s", Scopes: scopes})))
	}))
	t.Cleanup(s.Close)
	return &frontServer{Server: s, h: h}
}

// TestViewReadWithoutChallenger: an endpoint built without Options.Scopes
// still refuses the view to a caller without its tool's scope (go-sdk's
// handler checks it), with a fixed JSON-RPC error and no HTML.
func TestViewReadWithoutChallenger(t *testing.T) {
	h := newHandler(t, Options{}, pipeline.Options{})
	sess := connectAs(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(w, r.WithContext(auth.WithPrincipal(r.Context(), &auth.Principal{Subject: "s", Scopes: []string{"other:read"}})))
	}), "")
	res, err := sess.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: collections.AnalyzeView})
	var rpcErr *jsonrpc.Error
	if !errors.As(err, &rpcErr) || rpcErr.Code != jsonrpc.CodeInvalidRequest || res != nil {
		t.Errorf("resources/read without the scope = %v, %v; want a JSON-RPC error %d", res, err, jsonrpc.CodeInvalidRequest)
	}
}

// TestViewLeavesCallsAlone: a host without the extension sees what it saw
// before the view existed. tools/call answers byte for byte as the same
// tool without a view does, on both paths and revisions, for a result and
// a tool error; tools/list differs only by the two _meta keys of the view
// (and the published contract's view).
func TestViewLeavesCallsAlone(t *testing.T) {
	for _, p := range bothPaths {
		for _, v := range bothRevisions {
			t.Run(p.name+"/"+v.version, func(t *testing.T) {
				with := httptest.NewServer(asCaller(analyzeHandler(t, p.slow, false)))
				defer with.Close()
				without := httptest.NewServer(asCaller(analyzeHandler(t, p.slow, true)))
				defer without.Close()
				for _, call := range []struct{ body, want string }{
					{v.call("1", collections.AnalyzeName, validArgs(), ""), `"structuredContent":`},                     // a result
					{v.call("2", collections.AnalyzeName, `{"asOf":"2026-02-30","invoices":[]}`, ""), `"isError":true`}, // a tool error
				} {
					hdr := v.headers("tools/call", collections.AnalyzeName)
					a := (&frontServer{Server: with}).mustPost(t, v.version, call.body, hdr)
					b := (&frontServer{Server: without}).mustPost(t, v.version, call.body, hdr)
					if !bytes.Equal(a, b) {
						t.Errorf("tools/call answers differ with the view:\n%s\nwithout:\n%s", a, b)
					}
					if !bytes.Contains(a, []byte(call.want)) {
						t.Errorf("tools/call answered %.300s, want one with %s", a, call.want)
					}
				}
				list := `{"jsonrpc":"2.0","id":3,"method":"tools/list","params":{` + strings.TrimSuffix(v.meta(), ",") + `}}`
				a := listedTools(t, (&frontServer{Server: with}).mustPost(t, v.version, list, v.headers("tools/list", "")))
				b := listedTools(t, (&frontServer{Server: without}).mustPost(t, v.version, list, v.headers("tools/list", "")))
				meta := a["_meta"].(map[string]any)
				for _, k := range []string{metaUI, metaLegacyResourceURI} {
					if meta[k] == nil {
						t.Errorf("tools/list: _meta[%q] missing", k)
					}
					delete(meta, k)
				}
				delete(meta[contract.MetaKey].(map[string]any), "view")
				if diff := cmp.Diff(b, a); diff != "" {
					t.Errorf("tools/list differs beyond the view's _meta (-without +with):\n%s", diff)
				}
			})
		}
	}
}

// TestNoViewNoResources: an endpoint whose tools have no view advertises
// neither resources nor the extension, and answers resources/* method not
// found, as before.
func TestNoViewNoResources(t *testing.T) {
	sess := connectAs(t, asCaller(analyzeHandler(t, false, true)), "")
	caps := sess.InitializeResult().Capabilities
	if caps.Resources != nil || caps.Extensions != nil {
		t.Errorf("capabilities = resources %v, extensions %v; want neither", caps.Resources, caps.Extensions)
	}
	var rpcErr *jsonrpc.Error
	if _, err := sess.ListResources(context.Background(), nil); !errors.As(err, &rpcErr) || rpcErr.Code != jsonrpc.CodeMethodNotFound {
		t.Errorf("resources/list: %v, want method not found", err)
	}
}

// TestViewHTMLSelfContained: the view loads nothing from elsewhere and
// never builds markup or code from strings: no external URL in a src, href
// or url(), no eval or Function, no innerHTML or document.write, no inline
// event attribute. (The browser test renders it.)
func TestViewHTMLSelfContained(t *testing.T) {
	// The SVG namespace is a name, never fetched.
	html := strings.ReplaceAll(string(analyzeTool(t, false).View), `"http://www.w3.org/2000/svg"`, "")
	for _, bad := range []string{"src=", "href=", "url(", "@import", "eval(", "Function(", "innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "setTimeout(\"", "javascript:", " onclick=", " onload=", " onerror=", "http://", "https://"} {
		if strings.Contains(html, bad) {
			t.Errorf("the view's HTML contains %q", bad)
		}
	}
	if !strings.HasPrefix(html, "<!DOCTYPE html>") {
		t.Error("the view is not an HTML5 document")
	}
}

// mustPost posts and returns the answer's body only (headers differ by
// date).
func (s *frontServer) mustPost(t *testing.T, version, body string, hdr map[string]string) []byte {
	t.Helper()
	status, out := s.post(t, version, body, hdr)
	if status != http.StatusOK {
		t.Fatalf("POST %.200s = %d %s, want 200", body, status, out)
	}
	_, b, _ := bytes.Cut(out, []byte("\r\n\r\n"))
	return b
}

// listedTools is the one tool of a tools/list answer, as JSON values.
func listedTools(t *testing.T, body []byte) map[string]any {
	t.Helper()
	var res struct {
		Result struct {
			Tools []map[string]any `json:"tools"`
		} `json:"result"`
	}
	if err := json.Unmarshal(body, &res); err != nil || len(res.Result.Tools) != 1 {
		t.Fatalf("tools/list answer %s: %v", body, err)
	}
	return res.Result.Tools[0]
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// roundTrip is v as JSON values (maps, []any, float64).
func roundTrip(t *testing.T, v any) any {
	t.Helper()
	var out any
	if err := json.Unmarshal(mustJSON(t, v), &out); err != nil {
		t.Fatal(err)
	}
	if m, ok := out.(map[string]any); ok {
		return maps.Clone(m)
	}
	return out
}
