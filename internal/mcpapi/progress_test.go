package mcpapi

import (
	"strings"
	"testing"
)

// TestHasProgressToken: a call asks for progress when its _meta names a progressToken that is
// not null, whatever else _meta holds; a malformed _meta asks for nothing.
func TestHasProgressToken(t *testing.T) {
	for _, tt := range []struct {
		meta string
		want bool
	}{
		{``, false},
		{`{}`, false},
		{`{"progressToken":"a"}`, true},
		{`{"progressToken":7}`, true},
		{`{"progressToken":null}`, false},
		{`{"x":{"progressToken":"a"}}`, false},
		{`{"io.modelcontextprotocol/protocolVersion":"2026-07-28","progress\u0054oken":"a"}`, true},
		{`{"progressToken":`, false},
		{`[{"progressToken":"a"}]`, false},
		{`{"progressToken":-1.5e3}`, true},
		// Not a string or a number, or too long: every notification would echo it.
		{`{"progressToken":{"a":1}}`, false},
		{`{"progressToken":["a"]}`, false},
		{`{"progressToken":true}`, false},
		{`{"progressToken":"` + strings.Repeat("a", maxProgressToken-2) + `"}`, true},
		{`{"progressToken":"` + strings.Repeat("a", maxProgressToken-1) + `"}`, false},
		// Named twice: go-sdk keeps the last, which the bounds must hold for.
		{`{"progressToken":"a","progressToken":"` + strings.Repeat("a", 4096) + `"}`, false},
		{`{"progressToken":"a","progress\u0054oken":{"a":1}}`, false},
	} {
		if got := hasProgressToken([]byte(tt.meta)); got != tt.want {
			t.Errorf("hasProgressToken(%s) = %v, want %v", tt.meta, got, tt.want)
		}
	}
}

// TestLastEventData: the data of an event stream's last event, its data lines joined, other
// fields and comments left out.
func TestLastEventData(t *testing.T) {
	for _, tt := range []struct{ stream, want string }{
		{"event: message\ndata: {\"a\":1}\n\n", `{"a":1}`},
		{"event: message\r\ndata: {\"a\":1}\r\n\r\n", `{"a":1}`},
		{": ok\n\nevent: message\ndata: one\n\nid: 2\ndata:two\ndata:  three\n\n", "two\n three"},
		{"event: message\ndata: unterminated", "unterminated"},
		{": only a comment\n\n", ""},
		{"", ""},
	} {
		if got := string(lastEventData([]byte(tt.stream))); got != tt.want {
			t.Errorf("lastEventData(%q) = %q, want %q", tt.stream, got, tt.want)
		}
	}
}
