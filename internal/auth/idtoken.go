package auth

import (
	"encoding/json"
	"errors"
)

// PrincipalFromIDToken returns the principal an OpenID Connect ID token names, from the
// token's payload (its JSON claims), which the caller has already verified: signature, iss,
// aud, exp and nonce (internal/signin does that with go-oidc). The identity rules are the
// access tokens' (the same claims, limits and characters): an act claim, or a client id
// (azp, for an ID token) in agentClientIDs, makes an agent; sub is required; auth_time and acr
// are read as they are, for step-up; the roles are the claim rolesClaim names
// (COBRANCA_ROLES_CLAIM). Every failure is a *TokenError.
func PrincipalFromIDToken(payload []byte, agentClientIDs []string, rolesClaim string) (*Principal, error) {
	c := claims{roleClaims: roleClaims{rolesName: rolesClaim}}
	if err := json.Unmarshal(payload, &c); err != nil {
		if errors.Is(err, errNotNumericDate) {
			return nil, tokenError("token has a time claim that is not a number", err)
		}
		return nil, tokenError("token is malformed", err)
	}
	if c.ExpiresAt.date == nil {
		return nil, tokenError("token lacks a required claim", errors.New("exp"))
	}
	return c.principal(agentClientIDs)
}
