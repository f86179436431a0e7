package auth

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Roles are what the issuer says a person may do beyond the scopes a client was granted:
// deciding a critical call needs one of the roles its contract names (approverRoles). They
// come from the claim COBRANCA_ROLES_CLAIM names, in access tokens and ID tokens alike.
const (
	// DefaultRolesClaim is the claim roles are read from unless COBRANCA_ROLES_CLAIM names
	// another (RFC 9068 §2.2.3.1, RFC 7643 "roles").
	DefaultRolesClaim = "roles"
	// MaxRoles bounds how many roles a token may carry: a token with more is refused, as one
	// with a role that breaks the identity rules is.
	MaxRoles = 64
)

// reservedClaims are the claims cobranca reads for other purposes: the roles claim cannot be
// one of them.
var reservedClaims = []string{"iss", "sub", "aud", "exp", "nbf", "iat", "jti", "client_id", "azp",
	"scope", "scp", "act", "acr", "auth_time", "amr", "nonce"}

// CheckRolesClaim reports whether name can be the roles claim (COBRANCA_ROLES_CLAIM): a
// top-level claim name, visible text without spaces, not a claim cobranca reads otherwise.
func CheckRolesClaim(name string) error {
	if err := CheckRole(name); err != nil {
		return err
	}
	if slices.Contains(reservedClaims, name) {
		return fmt.Errorf("%q is a claim cobranca reads for another purpose", name)
	}
	return nil
}

// CheckRole applies the identity rules (CheckText, MaxIdentityBytes) to one role, which may
// not hold a space either: a roles claim may be one space-separated string.
func CheckRole(r string) error {
	if err := CheckText(r, MaxIdentityBytes); err != nil {
		return err
	}
	if strings.Contains(r, " ") {
		return &TextError{Rule: "it contains a space"}
	}
	return nil
}

// checkRoles applies CheckRole to each of roles and bounds their number; the error names the
// rule, never a role.
func checkRoles(roles []string) error {
	if len(roles) > MaxRoles {
		return &TextError{Rule: fmt.Sprintf("more than %d roles", MaxRoles)}
	}
	for _, r := range roles {
		if err := CheckRole(r); err != nil {
			return err
		}
	}
	return nil
}

// parseRoles reads a roles claim's value: a JSON array of strings, or one string of
// space-separated roles. Absent or null is no roles. Duplicates are dropped.
func parseRoles(raw json.RawMessage) ([]string, error) {
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return nil, nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return ParseRoles(s)
	}
	var roles []string
	if err := json.Unmarshal(raw, &roles); err != nil {
		return nil, &TextError{Rule: "neither an array of strings nor a space-separated string"}
	}
	return sortedRoles(roles)
}

// ParseRoles reads space-separated roles, as a roles claim may hold them (and the development
// sign-in page's field): each under CheckRole, at most MaxRoles; sorted, each once. The error
// is a *TextError naming the rule, never a role.
func ParseRoles(s string) ([]string, error) {
	return sortedRoles(strings.FieldsFunc(s, func(c rune) bool { return c == ' ' }))
}

func sortedRoles(roles []string) ([]string, error) {
	if err := checkRoles(roles); err != nil {
		return nil, err
	}
	slices.Sort(roles)
	return slices.Compact(roles), nil
}

// roleClaims holds, next to the claims, the value of the roles claim, whose name is
// configured: claims' UnmarshalJSON reads it when rolesName is set.
type roleClaims struct {
	rolesName string          // the claim to read; empty reads none
	roles     json.RawMessage // its value, when present
}

// UnmarshalJSON decodes the claims, then the roles claim when the payload may hold it (the
// second pass is skipped for tokens that do not name it: agents' tokens on the hot path).
func (c *claims) UnmarshalJSON(data []byte) error {
	type plain claims // without this method
	if err := json.Unmarshal(data, (*plain)(c)); err != nil {
		return err
	}
	if c.rolesName == "" || !bytes.Contains(data, []byte(`"`+c.rolesName+`"`)) {
		return nil
	}
	var all map[string]json.RawMessage
	if err := json.Unmarshal(data, &all); err != nil {
		return err
	}
	c.roles = all[c.rolesName]
	return nil
}

// principalRoles reads c's roles claim; the error is a *TokenError naming the claim.
func (c *claims) principalRoles() ([]string, error) {
	roles, err := parseRoles(c.roles)
	if err != nil {
		var te *TextError
		if errors.As(err, &te) {
			return nil, tokenError("token has an invalid "+c.rolesName+" claim: "+te.Rule, te.Cause)
		}
		return nil, tokenError("token has an invalid "+c.rolesName+" claim", err)
	}
	return roles, nil
}

// HasAnyRole reports whether the principal holds one of roles.
func (p *Principal) HasAnyRole(roles []string) bool {
	return p != nil && slices.ContainsFunc(roles, func(r string) bool { return slices.Contains(p.Roles, r) })
}
