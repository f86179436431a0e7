//go:build conformance

package main

//lint:file-ignore SA1019 the suite's scenarios exercise sampling and roots, deprecated since 2026-07-28 (SEP-2577) but still in the protocol

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/cobranca/cobranca/internal/diagnostics"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// serveDiagnostics runs the conformance build's server and returns its
// address and a token holding the diagnostic tools' scope.
func serveDiagnostics(t *testing.T) (addr, token string) {
	t.Helper()
	addr = freeAddr(t)
	environ := []string{"COBRANCA_DATA_DIR=" + t.TempDir(), "COBRANCA_ADDR=" + addr}
	startServe(t, environ...)
	var tok bytes.Buffer
	if err := run(t.Context(), []string{"token", "--sub", "conformance", "--agent", "conformance", "--scope", diagnostics.Scope}, environ, nil, &tok, &tok); err != nil {
		t.Fatalf("token: %v: %s", err, tok.String())
	}
	return addr, strings.TrimSpace(tok.String())
}

// TestDiagnosticRoundTrips: over real HTTP, a real go-sdk client answers
// the diagnostic tools' input requests with its handlers and retries under
// the sealed request state, round after round, until the tool completes.
func TestDiagnosticRoundTrips(t *testing.T) {
	addr, token := serveDiagnostics(t)
	colour := map[string]any{"color": "blue"}
	sess := connect(t, addr, token, &mcp.ClientOptions{
		ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			switch {
			case strings.Contains(req.Params.Message, "color"):
				return &mcp.ElicitResult{Action: "accept", Content: colour}, nil
			case strings.Contains(req.Params.Message, "context"):
				return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"context": "Alice"}}, nil
			}
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Alice"}}, nil
		},
		CreateMessageHandler: func(context.Context, *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			return &mcp.CreateMessageResult{Role: "assistant", Model: "m", Content: &mcp.TextContent{Text: "Paris."}}, nil
		},
	})
	prompt, err := sess.GetPrompt(t.Context(), &mcp.GetPromptParams{Name: diagnostics.PromptName})
	if err != nil || len(prompt.Messages) != 1 || prompt.Messages[0].Content.(*mcp.TextContent).Text != "Context: Alice" {
		t.Errorf("prompts/get %s = %+v, %v; want one message with the context answered", diagnostics.PromptName, prompt, err)
	}
	for tool, want := range map[string]string{
		"test_input_required_result_elicitation": "Hello, Alice!",
		"test_input_required_result_multi_round": "favourite colour blue",
		"test_input_required_result_sampling":    "Paris.",
	} {
		res, err := sess.CallTool(t.Context(), &mcp.CallToolParams{Name: tool})
		if err != nil || res.IsError || len(res.Content) != 1 || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, want) {
			t.Errorf("%s = %+v, %v; want a text containing %q", tool, res, err, want)
		}
	}
}

// TestDiagnosticProtocolErrors: over real HTTP, a tampered request state
// is a JSON-RPC error -32602, and a call needing a capability the client
// did not declare is -32021 with the capability in its data, each with
// HTTP 400 (MCP 2026-07-28), whichever path the front takes.
func TestDiagnosticProtocolErrors(t *testing.T) {
	addr, token := serveDiagnostics(t)
	post := func(tool, params string, caps string) (int, map[string]any) {
		t.Helper()
		body := `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":` + caps + `},"name":"` + tool + `","arguments":{}` + params + `}}`
		resp := postMCP(t, addr, token, tool, body)
		defer resp.Body.Close()
		var m map[string]any
		if err := json.NewDecoder(resp.Body).Decode(&m); err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode, m
	}
	const tool = "test_input_required_result_tampered_state"
	status, first := post(tool, "", `{"elicitation":{}}`)
	result, _ := first["result"].(map[string]any)
	state, _ := result["requestState"].(string)
	if status != http.StatusOK || result["resultType"] != "input_required" || state == "" {
		t.Fatalf("first round: %d %v, want an input-required result with a request state", status, first)
	}
	answer := `,"inputResponses":{"confirm":{"action":"accept","content":{"ok":true}}},"requestState":`
	status, tampered := post(tool, answer+`"`+state+`-TAMPERED"`, `{"elicitation":{}}`)
	if e, _ := tampered["error"].(map[string]any); status != http.StatusBadRequest || e["code"] != float64(-32602) || tampered["id"] != float64(7) {
		t.Errorf("tampered state: %d %v, want HTTP 400 and error -32602 under id 7", status, tampered)
	}
	status, ok := post(tool, answer+`"`+state+`"`, `{"elicitation":{}}`)
	if result, _ := ok["result"].(map[string]any); status != http.StatusOK || result["resultType"] != "complete" || !strings.Contains(string(must(json.Marshal(result["content"]))), "state-ok") {
		t.Errorf("the state as sealed: %d %v, want a complete result saying state-ok", status, ok)
	}
	status, missing := post("test_missing_capability", "", `{}`)
	e, _ := missing["error"].(map[string]any)
	data, _ := e["data"].(map[string]any)
	required, _ := data["requiredCapabilities"].(map[string]any)
	if _, sampling := required["sampling"].(map[string]any); status != http.StatusBadRequest || e["code"] != float64(-32021) || !sampling || len(required) != 1 {
		t.Errorf("missing capability: %d %v, want HTTP 400, -32021 and data.requiredCapabilities {sampling: {}}", status, missing)
	}
}

func must(b []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return b
}

// TestDiagnosticParamHeader: over real HTTP, test_custom_header's region,
// marked x-mcp-header in its listed schema, must come in an Mcp-Param-Region
// header too (SEP-2243): literal or =?base64?…?=; a missing, differing or
// badly encoded header is HTTP 400 and -32020, and the tool never runs.
func TestDiagnosticParamHeader(t *testing.T) {
	addr, token := serveDiagnostics(t)
	call := func(header string, set bool) (int, map[string]any) {
		t.Helper()
		body := `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}},"name":"` + diagnostics.HeaderTool + `","arguments":{"region":"eu"}}}`
		req, err := http.NewRequest(http.MethodPost, "http://"+addr+"/mcp", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		for k, v := range map[string]string{"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
			"Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": diagnostics.HeaderTool, "Authorization": "Bearer " + token} {
			req.Header.Set(k, v)
		}
		if set {
			req.Header.Set("Mcp-Param-Region", header)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var m map[string]any
		if err := json.NewDecoder(resp.Body).Decode(&m); err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode, m
	}
	for _, h := range []string{"eu", "=?base64?ZXU=?="} {
		status, m := call(h, true)
		if result, _ := m["result"].(map[string]any); status != http.StatusOK || !strings.Contains(string(must(json.Marshal(result["content"]))), "Region: eu") {
			t.Errorf("Mcp-Param-Region %q: %d %v, want the tool's answer", h, status, m)
		}
	}
	for _, c := range []struct {
		name, header string
		set          bool
	}{{"missing", "", false}, {"another value", "us", true}, {"Base64 without its padding", "=?base64?ZXU?=", true}, {"not Base64", "=?base64?Z!U=?=", true}} {
		status, m := call(c.header, c.set)
		if e, _ := m["error"].(map[string]any); status != http.StatusBadRequest || e["code"] != float64(-32020) {
			t.Errorf("%s header: %d %v, want HTTP 400 and error -32020", c.name, status, m)
		}
	}
}
