package mcpapi

import (
	"encoding/json"
	"net/http"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/cobranca/cobranca/internal/collections"
	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestREADMEProtocols keeps the README's list of protocol revisions, the
// fast path's and go-sdk's in step, and shows that each listed revision is
// served and a revision off the list refused.
func TestREADMEProtocols(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, sentence, ok := strings.Cut(string(readme), "protocol revisions ")
	if !ok {
		t.Fatal(`README.md does not list its "protocol revisions"`)
	}
	sentence, _, _ = strings.Cut(sentence, ";")
	listed := regexp.MustCompile("`(\\d{4}-\\d{2}-\\d{2})`").FindAllStringSubmatch(sentence, -1)
	var readmeList []string
	for _, m := range listed {
		readmeList = append(readmeList, m[1])
	}

	fastList := slices.Clone(servedProtocols)

	sdkList := mcp.SupportedProtocolVersions()
	if diff := cmp.Diff(sdkList, readmeList); diff != "" {
		t.Errorf("README.md's protocol revisions differ from go-sdk's (-sdk +README):\n%s", diff)
	}
	if diff := cmp.Diff(sdkList, fastList); diff != "" {
		t.Errorf("the fast path's protocol revisions differ from go-sdk's (-sdk +fastpath.go):\n%s", diff)
	}

	h := newTestHandler(t)
	call := func(id string, params string) string {
		return `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":` + params + `}`
	}
	for _, v := range readmeList {
		c := fastCase{body: call("1", `{"name":"`+collections.AnalyzeName+`","arguments":`+validArgs()+`}`), hdr: map[string]string{"Mcp-Protocol-Version": v}}
		if v == protocol20260728 {
			c.body = call("1", `{`+meta2026+`,"name":"`+collections.AnalyzeName+`","arguments":`+validArgs()+`}`)
			c.hdr["Mcp-Method"], c.hdr["Mcp-Name"] = "tools/call", collections.AnalyzeName
		}
		rec := serve(h, c)
		if rec.Code != http.StatusOK || !hasResult(rec.Body.Bytes()) {
			t.Errorf("revision %s: %d %s, want 200 with a result", v, rec.Code, rec.Body)
		}
	}
	for _, v := range []string{"2024-10-07", "2025-01-01", "1999-01-01"} {
		rec := serve(h, fastCase{body: call("1", `{"name":"`+collections.AnalyzeName+`","arguments":`+validArgs()+`}`), hdr: map[string]string{"Mcp-Protocol-Version": v}})
		if rec.Code != http.StatusBadRequest {
			t.Errorf("revision %s off the list: %d %s, want 400", v, rec.Code, rec.Body)
		}
	}
}

// hasResult reports whether body, JSON or one SSE event, is a JSON-RPC
// response with a result.
func hasResult(body []byte) bool {
	s := string(body)
	if i := strings.Index(s, "data: "); i >= 0 {
		s, _, _ = strings.Cut(s[i+len("data: "):], "\n")
	}
	var msg struct {
		Result json.RawMessage `json:"result"`
	}
	return json.Unmarshal([]byte(s), &msg) == nil && len(msg.Result) > 0
}
