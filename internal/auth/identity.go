package auth

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Limits on the identity claims a principal is made of. They reach the
// audit log and the access log as they are, so they must be text a person
// can read and the store can keep: internal/server's tests hold them within
// what internal/auditlog accepts.
const (
	// MaxIdentityBytes bounds sub, acr and jti.
	MaxIdentityBytes = 255
	// MaxClientIDBytes bounds client_id, azp and act.sub: under Client ID
	// Metadata Documents (the MCP authorization spec) a client id is an
	// HTTPS URL, and act.sub is often an agent's client id.
	MaxClientIDBytes = 1024
)

// refusedInIdentity holds the characters refused anywhere in an identity
// claim: every one that is not visible text or can make it read otherwise
// than it is. Identity claims are ids, not prose: none needs them.
var refusedInIdentity = []*unicode.RangeTable{
	unicode.Cc,             // C0, DEL, C1 controls
	unicode.Cf,             // format: zero-width, bidi embeddings, BOM, tags...
	unicode.Zl, unicode.Zp, // line and paragraph separators
	unicode.Bidi_Control,                       // ALM, LRM, RLM, embeddings, isolates
	unicode.Other_Default_Ignorable_Code_Point, // fillers, U+034F, U+115F...
	unicode.Variation_Selector,
	unicode.Noncharacter_Code_Point,
}

// checkIdentity returns a TokenError when the claim named name, of value v,
// is present (or required) but not acceptable (see CheckText). The
// description names the claim and the rule, never the value.
func checkIdentity(name, v string, limit int) error {
	if err := CheckText(v, limit); err != nil {
		te := err.(*TextError)
		return tokenError("token has an invalid "+name+" claim: "+te.Rule, te.Cause)
	}
	return nil
}

// TextError says which rule of CheckText a value breaks. Rule is safe to
// show; the cause (the offending character's code point and offset) is for
// logs. Neither holds the value.
type TextError struct {
	Rule  string
	Cause error
}

func (e *TextError) Error() string { return e.Rule }

func (e *TextError) Unwrap() error { return e.Cause }

// CheckText applies the identity claims' rules to v, an id or a short name
// that reaches logs, the audit log and pages as it is: valid UTF-8, no
// control, format, invisible or bidirectional character, not blank, at most
// limit bytes. The error is a *TextError.
func CheckText(v string, limit int) error {
	bad := func(rule string, cause error) error { return &TextError{Rule: rule, Cause: cause} }
	if len(v) > limit {
		return bad(fmt.Sprintf("longer than %d bytes", limit), nil)
	}
	if !utf8.ValidString(v) {
		return bad("not valid UTF-8", nil)
	}
	for i, r := range v {
		if r < 0x20 || r == 0x7f || unicode.In(r, refusedInIdentity...) {
			return bad("it contains a control, format, invisible or bidirectional character",
				fmt.Errorf("U+%04X at byte %d", r, i))
		}
	}
	if strings.TrimFunc(v, unicode.IsSpace) == "" {
		return bad("blank", nil)
	}
	return nil
}

// checkIdentities applies checkIdentity to every identity claim of c that
// is present (sub is required, and checked for presence before).
func (c *claims) checkIdentities(actSub string) error {
	for _, f := range []struct {
		name, v string
		limit   int
	}{
		{"sub", c.Subject, MaxIdentityBytes},
		{"client_id", c.ClientID, MaxClientIDBytes},
		{"azp", c.AZP, MaxClientIDBytes},
		{"act.sub", actSub, MaxClientIDBytes},
		{"acr", c.ACR, MaxIdentityBytes},
		{"jti", c.ID, MaxIdentityBytes},
	} {
		if f.v == "" {
			continue
		}
		if err := checkIdentity(f.name, f.v, f.limit); err != nil {
			return err
		}
	}
	return nil
}
