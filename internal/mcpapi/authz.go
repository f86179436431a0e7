package mcpapi

import (
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// ScopeChallenger answers a call whose token lacks scopes; the
// *auth.Authenticator is one (403 with error="insufficient_scope").
type ScopeChallenger interface {
	WriteInsufficientScope(w http.ResponseWriter, missing []string)
}

// errInsufficientScope refuses, inside the SDK, a call the pipeline denied
// for missing scopes (the front answers 403 before, when it can read the
// tool's name).
var errInsufficientScope = &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: "insufficient scope"}
