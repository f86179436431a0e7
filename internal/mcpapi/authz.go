package mcpapi

import (
	"context"
	"net/http"

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
// every scope the called tool's contract requires. name is the tool of a
// tools/call ("" for anything else; batches never get here). Only the tools
// the endpoint serves are checked: a forbidden tool is not one, and must be
// answered exactly like an unknown one, which the SDK does. On a refusal it
// has written the 403.
func authorize(scopes ScopeChallenger, tools map[string]*compiled, w http.ResponseWriter, r *http.Request, name string) bool {
	if scopes == nil {
		return true
	}
	t, ok := tools[name]
	if !ok {
		return true
	}
	p, _ := auth.PrincipalFrom(r.Context())
	missing := p.MissingScopes(t.Contract.Permissions)
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
