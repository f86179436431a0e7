package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/cobranca/cobranca/internal/auth"
)

// TestToken: in development mode `cobranca token` prints a token the
// server (same data directory and address) accepts; elsewhere it refuses.
func TestToken(t *testing.T) {
	environ := []string{"COBRANCA_DATA_DIR=" + t.TempDir(), "COBRANCA_ADDR=127.0.0.1:9999"}
	var out, errOut bytes.Buffer
	err := run(t.Context(), []string{"token", "--sub", "alice", "--scope", "collections:read reminders:draft", "--agent", "ledger-copilot"}, environ, nil, &out, &errOut)
	if err != nil {
		t.Fatalf("token: %v (%s)", err, errOut.String())
	}
	cfg, err := loadSettings(environ)
	if err != nil {
		t.Fatal(err)
	}
	a, err := auth.New(t.Context(), cfg.auth)
	if err != nil {
		t.Fatal(err)
	}
	p, err := a.Verify(t.Context(), strings.TrimSpace(out.String()))
	if err != nil {
		t.Fatalf("the server refuses the printed token: %v", err)
	}
	if p.Subject != "alice" || p.Kind != auth.KindAgent || p.Actor != "ledger-copilot" || strings.Join(p.Scopes, " ") != "collections:read reminders:draft" {
		t.Errorf("Principal = %+v", p)
	}

	// --role, repeatable: the roles claim (COBRANCA_ROLES_CLAIM) a person's approval is checked against.
	out.Reset()
	if err := run(t.Context(), []string{"token", "--sub", "bruno", "--role", "collections.approver", "--role", "ops.lead"}, environ, nil, &out, &errOut); err != nil {
		t.Fatalf("token --role: %v (%s)", err, errOut.String())
	}
	if p, err := a.Verify(t.Context(), strings.TrimSpace(out.String())); err != nil || strings.Join(p.Roles, " ") != "collections.approver ops.lead" {
		t.Errorf("token --role collections.approver --role ops.lead: %+v, %v; want both roles", p, err)
	}
	out.Reset()
	if err := run(t.Context(), []string{"token", "--sub", "bruno", "--role", "a b"}, environ, nil, &out, &errOut); err == nil || !strings.Contains(err.Error(), "--role") || out.Len() > 0 {
		t.Errorf("token --role \"a b\" = %q, %v; want a refusal naming --role", out.String(), err)
	}

	out.Reset()
	err = run(t.Context(), []string{"token", "--sub", "alice", "--scope", "collections:read\treminders:draft"}, environ, nil, &out, &errOut)
	if err == nil || !strings.Contains(err.Error(), "--scope") || out.Len() > 0 {
		t.Errorf("token with a tab in --scope = %q, %v; want a refusal naming --scope", out.String(), err)
	}

	refused := map[string][]string{
		"production": productionEnv(),
		"issuer set": {"COBRANCA_ISSUER=https://idp.example.com", "COBRANCA_RESOURCE=https://mcp.example.com/mcp", "COBRANCA_JWKS_URL=https://idp.example.com/jwks"},
	}
	for name, env := range refused {
		out.Reset()
		err := run(t.Context(), []string{"token", "--sub", "alice"}, env, nil, &out, &errOut)
		if err == nil || !strings.Contains(err.Error(), "development mode") || out.Len() > 0 {
			t.Errorf("%s: token = %q, %v; want a refusal naming development mode", name, out.String(), err)
		}
	}
}
