package main

import (
	"net/http"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// agentSession is an MCP client's session with `cobranca serve` at addr, carrying token: closed
// when the test ends.
type agentSession struct {
	t    *testing.T
	sess *mcp.ClientSession
}

func connectAgent(t *testing.T, addr, token string) *agentSession {
	t.Helper()
	client := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	sess, err := client.Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: "http://" + addr + "/mcp",
		HTTPClient: &http.Client{Transport: bearer(token)}}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sess.Close() })
	return &agentSession{t: t, sess: sess}
}

// call calls tool with args; a transport error fails the test, a tool's error is the result.
func (a *agentSession) call(tool string, args map[string]any) *mcp.CallToolResult {
	a.t.Helper()
	res, err := a.sess.CallTool(a.t.Context(), &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		a.t.Fatalf("%s: %v", tool, err)
	}
	return res
}

// fields is res's structured content, failing the test (naming what) when res is an error.
func (a *agentSession) fields(what string, res *mcp.CallToolResult) map[string]any {
	a.t.Helper()
	m, ok := res.StructuredContent.(map[string]any)
	if res.IsError || !ok {
		a.t.Fatalf("%s = %+v, want a result", what, res)
	}
	return m
}
