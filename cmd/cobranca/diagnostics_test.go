package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/cobranca/cobranca/internal/deptest"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

const diagnosticsPkg = "github.com/cobranca/cobranca/internal/diagnostics"

// diagnosticNames are the tools the conformance suite calls, all of which
// a build with -tags conformance serves.
var diagnosticNames = []string{
	"json_schema_2020_12_tool",
	"test_audio_content", "test_custom_header", "test_embedded_resource", "test_error_handling", "test_image_content", "test_input_required_result_capabilities", "test_input_required_result_elicitation",
	"test_input_required_result_list_roots", "test_input_required_result_multi_round",
	"test_input_required_result_multiple_inputs", "test_input_required_result_prompt", "test_input_required_result_request_state",
	"test_input_required_result_sampling", "test_input_required_result_tampered_state",
	"test_logging_tool", "test_missing_capability", "test_multiple_content_types", "test_prompt_with_arguments",
	"test_prompt_with_embedded_resource", "test_prompt_with_image", "test_simple_prompt", "test_simple_text",
	"test_streaming_elicitation", "test_tool_with_progress",
}

// diagnosticPromptNames are the diagnostic tools also served as prompts, in
// the order prompts/list gives.
var diagnosticPromptNames = []string{"test_input_required_result_prompt", "test_prompt_with_arguments",
	"test_prompt_with_embedded_resource", "test_prompt_with_image", "test_simple_prompt"}

func promptNames(res *mcp.ListPromptsResult) []string {
	if res == nil {
		return nil
	}
	var names []string
	for _, p := range res.Prompts {
		names = append(names, p.Name)
	}
	return names
}

// TestDiagnosticsOnlyWithTag: the production build of cobranca links no
// part of internal/diagnostics, while a build with -tags conformance does
// (so the check can fail).
func TestDiagnosticsOnlyWithTag(t *testing.T) {
	const self = "github.com/cobranca/cobranca/cmd/cobranca"
	if deps := deptest.NonStd(t, self); slices.Contains(deps, diagnosticsPkg) {
		t.Errorf("go list -deps %s includes %s: the production build links the diagnostic tools", self, diagnosticsPkg)
	}
	if deps := deptest.NonStd(t, self, "-tags", "conformance"); !slices.Contains(deps, diagnosticsPkg) {
		t.Errorf("go list -deps -tags conformance %s lacks %s", self, diagnosticsPkg)
	}
}

// TestDiagnosticToolsServed: a running server lists, to a token holding every scope,
// the diagnostic tools exactly when it was built with -tags conformance —
// in the production build, no test_ tool, in tools/list or in `cobranca
// contracts`. (The plain test run checks the production build; .ci/run
// runs this package's TestDiagnostic* tests with the tag too: a test whose
// outcome depends on the tag is named so, or .ci/run's tagged run misses it.)
func TestDiagnosticToolsServed(t *testing.T) {
	addr := freeAddr(t)
	// The token's audience is the server's resource URL: serve and token
	// read the same address.
	environ := []string{"COBRANCA_DATA_DIR=" + t.TempDir(), "COBRANCA_ADDR=" + addr}
	var out bytes.Buffer
	if err := run(t.Context(), []string{"contracts"}, environ, nil, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	var listed struct {
		Contracts []struct {
			Name        string   `json:"name"`
			Permissions []string `json:"permissions"`
		} `json:"contracts"`
	}
	if err := json.Unmarshal(out.Bytes(), &listed); err != nil {
		t.Fatal(err)
	}
	var contracts, scopes []string
	for _, c := range listed.Contracts {
		contracts = append(contracts, c.Name)
		scopes = append(scopes, c.Permissions...)
	}
	startServe(t, environ...)
	var tok bytes.Buffer
	if err := run(t.Context(), []string{"token", "--sub", "conformance", "--agent", "conformance", "--scope", strings.Join(append(scopes, "conformance:diagnose"), " ")},
		environ, nil, &tok, &tok); err != nil {
		t.Fatalf("token: %v: %s", err, tok.String())
	}
	sess := connect(t, addr, strings.TrimSpace(tok.String()), nil)
	res, err := sess.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	// Prompts: the conformance build's diagnostic prompt, or none at all
	// (prompts/list is "method not found": no prompts capability).
	prompts, err := sess.ListPrompts(t.Context(), nil)
	var rpcErr *jsonrpc.Error
	switch {
	case diagnosticsBuilt && (err != nil || !slices.Equal(promptNames(prompts), diagnosticPromptNames)):
		t.Errorf("prompts/list = %+v, %v; want the diagnostic prompts %q", prompts, err, diagnosticPromptNames)
	case !diagnosticsBuilt && (!errors.As(err, &rpcErr) || rpcErr.Code != jsonrpc.CodeMethodNotFound):
		t.Errorf("prompts/list = %+v, %v; want method not found", prompts, err)
	}
	var tools []string
	for _, tool := range res.Tools {
		tools = append(tools, tool.Name)
	}
	for what, names := range map[string][]string{"tools/list": tools, "cobranca contracts": contracts} {
		var diag []string
		for _, n := range names {
			if !strings.Contains(n, ".") { // a product tool is domain.verb
				diag = append(diag, n)
			}
		}
		slices.Sort(diag)
		want := []string(nil)
		if diagnosticsBuilt {
			want = diagnosticNames
		}
		if !slices.Equal(diag, want) {
			t.Errorf("%s lists the diagnostic tools %q, want %q (conformance build: %v)", what, diag, want, diagnosticsBuilt)
		}
		if !slices.Contains(names, "collections.analyze_portfolio") {
			t.Errorf("%s = %q, want the product's tools", what, names)
		}
	}
}

// connect opens a go-sdk client session on 2026-07-28 to the server at
// addr, with token; opts may set the client's handlers.
func connect(t *testing.T, addr, token string, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	return connectVersion(t, addr, token, "2026-07-28", opts)
}

// connectVersion is connect speaking version.
func connectVersion(t *testing.T, addr, token, version string, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	client := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, opts)
	sess, err := client.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: "http://" + addr + "/mcp",
		HTTPClient: &http.Client{Transport: bearer(token)}}, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		sess.Close()
		// No idle connection (and its goroutines and buffers) outlives the
		// test: TestMemoryReturner measures what the process holds.
		http.DefaultTransport.(*http.Transport).CloseIdleConnections()
	})
	return sess
}
