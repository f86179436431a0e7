// Package failure defines cobranca's domain error: a stable code a client can
// branch on, a message that is safe to show to a model or a person, the field
// it concerns, and the wrapped cause that only the logs see.
//
// One table (HTTPStatus, and the tool-result encoding in mcpapi) maps these
// errors to what crosses the wire; nothing else decides how an error looks.
package failure

import (
	"errors"
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

// Error is a domain error.
type Error struct {
	Code       Code
	Field      string        // JSON path of the offending argument, if any
	Message    string        // safe to return to the caller
	RetryAfter time.Duration // for retryable refusals, when to come back
	Err        error         // cause; logged, never returned to the caller
}

func (e *Error) Error() string {
	msg := e.Message
	if e.Field != "" {
		msg = e.Field + ": " + msg
	}
	if e.Err != nil {
		return string(e.Code) + ": " + msg + ": " + e.Err.Error()
	}
	return string(e.Code) + ": " + msg
}

func (e *Error) Unwrap() error { return e.Err }

// As returns the *Error in err's chain, if any.
func As(err error) (*Error, bool) {
	var e *Error
	ok := errors.As(err, &e)
	return e, ok
}
