package mcpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"slices"

	"github.com/cobranca/cobranca/internal/auth"
	"github.com/cobranca/cobranca/internal/contract"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// ScopeChallenger answers a call whose token lacks scopes; the
// *auth.Authenticator is one (403 with error="insufficient_scope").
type ScopeChallenger interface {
	WriteInsufficientScope(w http.ResponseWriter, missing []string)
}

// authorize checks, before anything runs, that the caller's token grants
// every scope the called tools' contracts require. name is the tool of a
// single tools/call ("" for anything else); a batch is read here, since
// older protocol revisions let the SDK run one. Only tools visible to
// agents are checked: a forbidden tool must be answered exactly like an
// unknown one, which the SDK does. On a refusal it has written the 403.
func authorize(scopes ScopeChallenger, tools map[string]*compiled, w http.ResponseWriter, r *http.Request, body []byte, name string) bool {
	if scopes == nil {
		return true
	}
	names := []string{name}
	if trimmed := bytes.TrimLeft(body, " \t\r\n"); len(trimmed) > 0 && trimmed[0] == '[' {
		var batch []envelope
		if json.Unmarshal(body, &batch) == nil {
			names = names[:0]
			for _, env := range batch {
				if env.Method == "tools/call" {
					names = append(names, env.Params.Name)
				}
			}
		}
	}
	p, _ := auth.PrincipalFrom(r.Context())
	var missing []string
	for _, n := range names {
		if t, ok := tools[n]; ok && t.Contract.VisibleToAgents() {
			for _, s := range p.MissingScopes(t.Contract.Permissions) {
				if !slices.Contains(missing, s) {
					missing = append(missing, s)
				}
			}
		}
	}
	if len(missing) == 0 {
		return true
	}
	scopes.WriteInsufficientScope(w, missing)
	return false
}

// errInsufficientScope refuses a call inside the SDK should a request ever
// reach a tool that authorize did not see (a parser disagreement).
var errInsufficientScope = &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: "insufficient scope"}

// permitted is that second check, on the tool actually being run.
func permitted(ctx context.Context, scopes ScopeChallenger, c *contract.Contract) bool {
	if scopes == nil {
		return true
	}
	p, _ := auth.PrincipalFrom(ctx)
	return len(p.MissingScopes(c.Permissions)) == 0
}
