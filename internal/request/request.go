// Package request carries the facts of one HTTP request (its id, and what the
// inner layers learn: the caller, the tool, the outcome) through a context, so
// that the access log line and the audit event agree.
package request

import (
	"context"
	"crypto/rand"
	"encoding/hex"
)

// Info is the mutable record of one request. The outer middleware creates it;
// inner layers fill in what they learn. It is owned by the request's
// goroutine chain and needs no locking: handlers that run tools do so within
// the request.
type Info struct {
	ID      string
	Subject string // authenticated subject, never the token
	Client  string // OAuth client id
	Tool    string
	Outcome string
	Code    string // failure code, when the outcome is not ok
}

type key struct{}

// With returns a context carrying info.
func With(ctx context.Context, info *Info) context.Context {
	return context.WithValue(ctx, key{}, info)
}

// From returns the request's Info. Outside a request it returns a fresh,
// detached Info, so callers never need a nil check.
func From(ctx context.Context) *Info {
	if info, ok := ctx.Value(key{}).(*Info); ok {
		return info
	}
	return &Info{}
}

// NewID returns a random 128-bit request id in hex.
func NewID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	return hex.EncodeToString(b[:])
}

// ValidID reports whether a client-supplied request id is safe to adopt and
// echo: 1 to 64 characters of [A-Za-z0-9._-].
func ValidID(s string) bool {
	if len(s) == 0 || len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}
