package mcpapi

import (
	"strings"
	"testing"
)

// TestReadRequestRules pins the front's reading where it departs from
// jsontext's defaults (which refuse duplicate names and invalid UTF-8 as
// malformed JSON): a duplicate member of the request or its params is
// refused as a duplicate; inside arguments, duplicates and escaped lone
// surrogates are the tool's business, as they are go-sdk's; raw bytes that
// are not UTF-8 make a body malformed, but for a string value the front
// judges itself.
func TestReadRequestRules(t *testing.T) {
	call := func(args string) string {
		return `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a.b","arguments":` + args + `}}`
	}
	for _, tt := range []struct {
		name, body string
		want       *refusal // nil: accepted
		tool       string
	}{
		{"plain call", call(`{"x":1}`), nil, "a.b"},
		{"duplicate inside arguments", call(`{"x":1,"x":2}`), nil, "a.b"},
		{"lone surrogate inside arguments", call(`{"x":"\ud800"}`), nil, "a.b"},
		{"surrogate pair split by a letter", call(`{"x":"\ud800\u0041"}`), nil, "a.b"},
		{"raw invalid UTF-8 inside arguments", call("{\"x\":\"\xff\"}"), &refuseParse, "a.b"},
		{"raw invalid UTF-8 in a key", "{\"jsonrpc\":\"2.0\",\"id\":1,\"\xffmethod\":\"ping\"}", &refuseParse, ""},
		{"raw invalid UTF-8 in the method", "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"\xff\"}", &refuseParse, ""},
		{"raw invalid UTF-8 in the id", "{\"jsonrpc\":\"2.0\",\"id\":\"\xff\",\"method\":\"ping\"}", &refuseID, ""},
		{"duplicate method", `{"jsonrpc":"2.0","id":1,"method":"ping","method":"ping"}`, &refuseDuplicate, ""},
		{"duplicate arguments", strings.Replace(call(`{}`), `"arguments"`, `"arguments":{},"arguments"`, 1), &refuseDuplicate, "a.b"},
		{"escaped key read as go-sdk reads it", `{"jsonrpc":"2.0","id":1,"m\u0065thod":"tools/call","params":{"n\u0061me":"a.b"}}`, nil, "a.b"},
		{"trailing value", call(`{}`) + `{}`, &refuseTrailing, "a.b"},
		{"trailing garbage", call(`{}`) + `x`, &refuseTrailing, "a.b"},
		{"malformed after the name", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a.b","arguments":{"x":}}}`, &refuseParse, "a.b"},
		{"second name malformed", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a.b","name":tru}}`, &refuseParse, ""},
		{"arguments too deep", call(strings.Repeat(`[`, maxDepth+1) + strings.Repeat(`]`, maxDepth+1)), &refuseTooDeep, "a.b"},
		{"arguments as deep as allowed", call(`{"x":` + strings.Repeat(`[`, maxDepth-1) + strings.Repeat(`]`, maxDepth-1) + `}`), nil, "a.b"},
		{"not an object", `[1]`, &refuseBatch, ""},
		{"JSON, not a request", `"x"`, &refuseInvalid, ""},
		{"not JSON", `{"jsonrpc"`, &refuseParse, ""},
	} {
		req, bad := readRequest([]byte(tt.body))
		if bad != tt.want {
			t.Errorf("%s: readRequest(%q) refusal = %v, want %v", tt.name, tt.body, bad, tt.want)
		}
		if req.name != tt.tool {
			t.Errorf("%s: readRequest(%q) tool = %q, want %q", tt.name, tt.body, req.name, tt.tool)
		}
	}
}
