package authserver

import (
	"encoding/json"
	"net/http"
)

// oauthError is an OAuth error: RFC 6749 §4.1.2.1 (authorization
// response), §5.2 (token endpoint), RFC 7591 §3.2.2 (registration). Code
// is the standard code; Description is ours, fixed text that may name a
// parameter but never repeats a value the client sent.
type oauthError struct {
	Code        string `json:"error"`
	Description string `json:"error_description,omitempty"`
	status      int
}

func (e *oauthError) Error() string { return e.Code + ": " + e.Description }

// The error codes used.
const (
	errInvalidRequest          = "invalid_request"
	errInvalidClient           = "invalid_client"
	errInvalidGrant            = "invalid_grant"
	errUnsupportedGrantType    = "unsupported_grant_type"
	errUnsupportedResponseType = "unsupported_response_type"
	errInvalidScope            = "invalid_scope"
	errInvalidTarget           = "invalid_target" // RFC 8707
	errAccessDenied            = "access_denied"
	errLoginRequired           = "login_required" // OpenID Connect Core §3.1.2.6
	errServerError             = "server_error"
	errInvalidRedirectURI      = "invalid_redirect_uri"    // RFC 7591
	errInvalidClientMetadata   = "invalid_client_metadata" // RFC 7591
)

func newError(status int, code, desc string) *oauthError {
	return &oauthError{Code: code, Description: desc, status: status}
}

// writeJSON answers v with status, never cached (RFC 6749 §5.1).
func writeJSON(w http.ResponseWriter, status int, v any) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	h.Set("Pragma", "no-cache")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// writeError answers e as JSON; an invalid_client answer names the Basic
// scheme (RFC 6749 §5.2).
func writeError(w http.ResponseWriter, e *oauthError) {
	if e.status == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", `Basic realm="cobranca development"`)
	}
	writeJSON(w, e.status, e)
}
