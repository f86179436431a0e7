package auth

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// StepUp is a step-up authentication requirement (RFC 9470): the user
// must have authenticated with one of ACRValues (any, when empty) and no
// longer than MaxAge ago (any time, when zero).
type StepUp struct {
	ACRValues []string
	MaxAge    time.Duration
}

// StepUpRequirement returns the requirement for a contract demanding
// step-up within maxAge, with the acr values of COBRANCA_STEPUP_ACR.
func (a *Authenticator) StepUpRequirement(maxAge time.Duration) StepUp {
	return StepUp{ACRValues: slices.Clone(a.cfg.StepUpACR), MaxAge: maxAge}
}

// StepUpError says why a principal does not meet a StepUp; answer it with
// WriteStepUpRequired(w, err.Required).
type StepUpError struct {
	Required StepUp
	Reason   string // safe to show: "acr not allowed", ...
}

func (e *StepUpError) Error() string { return "auth: step-up authentication required: " + e.Reason }

// CheckStepUp reports whether p meets req at time now; the error is a
// *StepUpError. Under a MaxAge, an auth_time more than the tokens' maximum
// leeway (a minute) after now does not count as recent.
func CheckStepUp(req StepUp, p *Principal, now time.Time) error {
	fail := func(reason string) error { return &StepUpError{Required: req, Reason: reason} }
	if p == nil {
		return fail("no authenticated user")
	}
	if len(req.ACRValues) > 0 && !slices.Contains(req.ACRValues, p.ACR) {
		return fail("authentication context class not allowed")
	}
	if req.MaxAge > 0 {
		if p.AuthTime.IsZero() {
			return fail("authentication time unknown")
		}
		if now.Sub(p.AuthTime) > req.MaxAge {
			return fail("authentication is too old")
		}
		// An auth_time ahead of our clock (beyond the leeway tokens get) would pass max_age
		// for as long as it is ahead, and a session keeps it for hours.
		if p.AuthTime.Sub(now) > maxLeeway {
			return fail("authentication time is in the future")
		}
	}
	return nil
}

// description is the error_description of the challenge for req.
func (req StepUp) description() string {
	if len(req.ACRValues) == 0 && req.MaxAge <= 0 {
		return "stronger user authentication is required"
	}
	desc := "this action needs authentication"
	if len(req.ACRValues) > 0 {
		desc += " with " + strings.Join(req.ACRValues, " or ")
	}
	if req.MaxAge > 0 {
		desc += fmt.Sprintf(" within the last %v", req.MaxAge)
	}
	return desc
}

// Message says, to a person or a model, what req demands: "this action
// needs a recent, stronger sign-in (acr_values="…", max_age=N)".
func (req StepUp) Message() string {
	msg := "this action needs a recent, stronger sign-in"
	switch {
	case len(req.ACRValues) > 0:
		msg += fmt.Sprintf(" (acr_values=%q", strings.Join(req.ACRValues, " "))
		if req.MaxAge > 0 {
			msg += fmt.Sprintf(", max_age=%d", int64(req.MaxAge/time.Second))
		}
		msg += ")"
	case req.MaxAge > 0:
		msg += fmt.Sprintf(" (max_age=%d)", int64(req.MaxAge/time.Second))
	}
	return msg
}
