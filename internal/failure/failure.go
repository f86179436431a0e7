// Package failure defines cobranca's domain error: a stable code a client can
// branch on, a message that is safe to show to a model or a person, the field
// it concerns, and the wrapped cause that only the logs see.
//
// What crosses the wire is written here once: Detail is the machine-readable
// error every surface sends (a tool error result's _meta, an HTTP refusal's
// body) and Text its one-line form for people and models.
package failure

import (
	"encoding/json"
	"errors"
	"net/http"
	"time"
)

// Code is a stable, documented error code. Every code a tool can return is
// listed in that tool's contract (failureModes).
type Code string

// Codes raised by the call pipeline itself, whatever the tool. They are added
// to every contract's failure modes.
const (
	Internal    Code = "internal_error"
	RateLimited Code = "rate_limited"
	Unavailable Code = "unavailable"
)

// Codes the call pipeline raises where a contract asks for them: the tier
// rules, idempotency keys and the arguments every tool of a tier shares.
// contract.Finish adds each to the failure modes of the contracts it applies
// to, so that a tool can never answer with one its contract does not list.
const (
	InvalidArguments               Code = "invalid_arguments"                // the arguments do not match the input schema
	InsufficientScope              Code = "insufficient_scope"               // the token lacks a scope the tool requires
	ConfirmationRequired           Code = "confirmation_required"            // a person must confirm; the client cannot be asked in-band
	ConfirmationDeclined           Code = "confirmation_declined"            // the person declined; nothing changed
	ApprovalRequired               Code = "approval_required"                // out-of-band approval of the exact call is required
	ApprovalMismatch               Code = "approval_mismatch"                // the retry's arguments are not the call approved
	ApprovalRejected               Code = "approval_rejected"                // a person rejected the call
	ApprovalExpired                Code = "approval_expired"                 // the approval expired before the call ran
	InsufficientUserAuthentication Code = "insufficient_user_authentication" // RFC 9470 step-up
	IdempotencyConflict            Code = "idempotency_conflict"             // the key was used with other arguments
	RequestInProgress              Code = "request_in_progress"              // the key's first call is still running
	RequestStateInvalid            Code = "request_state_invalid"            // a requestState that does not verify (protocol error)
	MissingClientCapability        Code = "missing_client_capability"        // the client did not declare what the call needs (protocol error)
	DryRunRequired                 Code = "dry_run_required"                 // a mandatory dry run was not made (or not for this plan): dry-run again
	PlanChanged                    Code = "plan_changed"                     // the plan recomputed at the call differs from the dry run's: dry-run again
	PersonRequired                 Code = "person_required"                  // a forbidden tool's call by an agent: only a person runs it
	PersonLacksRole                Code = "person_lacks_role"                // a forbidden tool's call by a person without its adminRoles
)

// Error is a domain error.
type Error struct {
	Code       Code
	Field      string        // JSON path of the offending argument, if any
	Message    string        // safe to return to the caller
	RetryAfter time.Duration // for retryable refusals, when to come back
	Err        error         // cause; logged, never returned to the caller
}

func (e *Error) Error() string {
	if e.Err != nil {
		return e.Text() + ": " + e.Err.Error()
	}
	return e.Text()
}

// Text is what the caller may read of e, in one line: "code: field:
// message", or "code: message" when no field is concerned. The cause is
// never part of it.
func (e *Error) Text() string {
	if e.Field != "" {
		return string(e.Code) + ": " + e.Field + ": " + e.Message
	}
	return string(e.Code) + ": " + e.Message
}

// Detail is the machine-readable form of an Error, the one shape in which
// every surface sends an error to a program: under _meta["io.cobranca/error"]
// of a tool error result, and as {"error": Detail} (Body) in an HTTP
// refusal.
type Detail struct {
	Code         Code   `json:"code"`
	Message      string `json:"message"`
	Field        string `json:"field,omitempty"`
	RetryAfterMs int64  `json:"retryAfterMs,omitempty"`
}

// Detail returns what the caller may read of e; the cause is left out.
func (e *Error) Detail() Detail {
	d := Detail{Code: e.Code, Message: e.Message, Field: e.Field}
	if e.RetryAfter > 0 {
		d.RetryAfterMs = e.RetryAfter.Milliseconds()
	}
	return d
}

// Body is the JSON body of an HTTP error response: {"error": Detail}.
type Body struct {
	Error Detail `json:"error"`
}

// WriteHTTP answers status with e as an HTTP error body, {"error": Detail}.
// Headers the answer needs besides Content-Type (Retry-After,
// Cache-Control) are the caller's to set first.
func WriteHTTP(w http.ResponseWriter, status int, e *Error) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(Body{Error: e.Detail()})
}

func (e *Error) Unwrap() error { return e.Err }

// As returns the *Error in err's chain, if any.
func As(err error) (*Error, bool) {
	var e *Error
	ok := errors.As(err, &e)
	return e, ok
}

// HTTPStatus is the HTTP status of an answer refused with code, at an edge that answers tool
// failures as HTTP (the admin API, its page): the one table from codes to statuses. A code of
// a domain's own (a customer not found, an invoice already written off) is 422: the request
// was understood and the domain refuses it.
func HTTPStatus(code Code) int {
	switch code {
	case InvalidArguments:
		return http.StatusBadRequest
	case InsufficientUserAuthentication:
		return http.StatusUnauthorized
	case InsufficientScope, PersonRequired, PersonLacksRole:
		return http.StatusForbidden
	case IdempotencyConflict, RequestInProgress:
		return http.StatusConflict
	case RateLimited:
		return http.StatusTooManyRequests
	case Unavailable:
		return http.StatusServiceUnavailable
	case Internal:
		return http.StatusInternalServerError
	}
	return http.StatusUnprocessableEntity
}
