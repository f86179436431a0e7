package web

import (
	"strings"
	"testing"
)

// TestCSPFormAction: forms post here; when the issuer is another origin, there too — a
// step-up redirect after a form post is held to form-action all along its chain.
func TestCSPFormAction(t *testing.T) {
	for _, tc := range []struct{ issuer, public, want string }{
		{"http://localhost:8080", "http://localhost:8080", "form-action 'self';"},
		{"https://idp.example.com/realms/x", "https://cobranca.example.com", "form-action 'self' https://idp.example.com;"},
		{"https://cobranca.example.com", "https://cobranca.example.com/prefix", "form-action 'self';"},
	} {
		if got := csp(tc.issuer, tc.public); !strings.Contains(got, tc.want) || !strings.HasPrefix(got, "default-src 'none'; style-src 'sha256-") {
			t.Errorf("csp(%s, %s) = %q, want %q", tc.issuer, tc.public, got, tc.want)
		}
	}
}
