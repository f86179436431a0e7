package auth

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// MaxTokenBytes bounds the size of an access token; longer tokens are
// refused before any parsing.
const MaxTokenBytes = 8 << 10

// TokenError says why a token was refused. Description is safe to send to
// the client; the wrapped cause is for logs only. Neither holds the token.
type TokenError struct {
	Description string
	Err         error
}

func (e *TokenError) Error() string {
	if e.Err == nil {
		return "auth: " + e.Description
	}
	return "auth: " + e.Description + ": " + e.Err.Error()
}

func (e *TokenError) Unwrap() error { return e.Err }

func tokenError(desc string, err error) error { return &TokenError{Description: desc, Err: err} }

// claims are the access token claims cobranca reads (RFC 9068, RFC 8693,
// RFC 9470). The registered claims are spelled out rather than embedded
// from jwt.RegisteredClaims so that the times are numericDates: golang-jwt's
// NumericDate also takes a quoted number ("exp": "1700000000").
type claims struct {
	Issuer    string           `json:"iss,omitempty"`
	Subject   string           `json:"sub,omitempty"`
	Audience  jwt.ClaimStrings `json:"aud,omitempty"`
	ExpiresAt numericDate      `json:"exp"`
	NotBefore numericDate      `json:"nbf"`
	IssuedAt  numericDate      `json:"iat"`
	ID        string           `json:"jti,omitempty"`
	ClientID  string           `json:"client_id,omitempty"`
	AZP       string           `json:"azp,omitempty"`
	Scope     string           `json:"scope,omitempty"`
	SCP       scpClaim         `json:"scp"`
	Act       json.RawMessage  `json:"act,omitempty"`
	ACR       string           `json:"acr,omitempty"`
	AuthTime  numericDate      `json:"auth_time"`
	roleClaims
}

func (c *claims) GetExpirationTime() (*jwt.NumericDate, error) { return c.ExpiresAt.get(), nil }
func (c *claims) GetIssuedAt() (*jwt.NumericDate, error)       { return c.IssuedAt.get(), nil }
func (c *claims) GetNotBefore() (*jwt.NumericDate, error)      { return c.NotBefore.get(), nil }
func (c *claims) GetIssuer() (string, error)                   { return c.Issuer, nil }
func (c *claims) GetSubject() (string, error)                  { return c.Subject, nil }
func (c *claims) GetAudience() (jwt.ClaimStrings, error)       { return c.Audience, nil }

// numericDate is a time claim that, when present, is a JSON number of
// seconds (RFC 7519 §2, NumericDate): a string, null, or any other value is
// refused with errNotNumericDate.
type numericDate struct {
	date *jwt.NumericDate // nil when the claim is absent
}

var errNotNumericDate = errors.New("a time claim (exp, nbf, iat, auth_time) is not a JSON number")

func (d *numericDate) UnmarshalJSON(data []byte) error {
	// encoding/json calls this for a present claim only, null included, and
	// hands over the value without surrounding white space.
	if len(data) == 0 || (data[0] != '-' && (data[0] < '0' || data[0] > '9')) {
		return errNotNumericDate
	}
	var n jwt.NumericDate
	if err := n.UnmarshalJSON(data); err != nil {
		return errNotNumericDate
	}
	d.date = &n
	return nil
}

func (d numericDate) get() *jwt.NumericDate { return d.date }

// scpClaim is an array of scopes; some issuers send one space separated
// string instead. Both are checked as the scope claim is (see scopes).
type scpClaim struct {
	str    string
	list   []string
	isList bool
}

func (s *scpClaim) UnmarshalJSON(data []byte) error {
	if json.Unmarshal(data, &s.str) == nil {
		return nil
	}
	if err := json.Unmarshal(data, &s.list); err != nil {
		return errors.New("scp must be a string or an array of strings")
	}
	s.isList = true
	return nil
}

// scopes returns the scope-tokens of the scope and scp claims, without
// duplicates; an error says which claim is invalid (and, for the log, why).
func (c *claims) scopes() ([]string, error) {
	scope, err := ParseScope(c.Scope)
	if err != nil {
		return nil, tokenError("token has an invalid scope claim", err)
	}
	var scp []string
	if c.SCP.isList {
		for _, s := range c.SCP.list {
			if err = checkScopeToken(s); err != nil {
				break
			}
		}
		scp = c.SCP.list
	} else {
		scp, err = ParseScope(c.SCP.str)
	}
	if err != nil {
		return nil, tokenError("token has an invalid scp claim", err)
	}
	var out []string
	for _, s := range append(scope, scp...) {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out, nil
}

// ParseScope splits an OAuth scope string (RFC 6749 §3.3: scope-token
// *( SP scope-token ), scope-token = 1*NQCHAR) into its scope-tokens. Only
// the space character separates them; runs of spaces and spaces at either
// end are tolerated (they cannot change which scopes are named). Any other
// character outside NQCHAR — a tab, a newline, a quote, a backslash,
// anything beyond ASCII — makes the whole scope invalid: the error names
// the character and its position, never the scope.
func ParseScope(scope string) ([]string, error) {
	var out []string
	for tok := range strings.SplitSeq(scope, " ") {
		if tok == "" {
			continue
		}
		if err := checkScopeToken(tok); err != nil {
			return nil, err
		}
		out = append(out, tok)
	}
	return out, nil
}

// checkScopeToken reports whether tok is one scope-token: 1*NQCHAR, where
// NQCHAR = %x21 / %x23-5B / %x5D-7E.
func checkScopeToken(tok string) error {
	if tok == "" {
		return errors.New("empty scope-token")
	}
	for i := 0; i < len(tok); i++ {
		if c := tok[i]; c < 0x21 || c == '"' || c == '\\' || c > 0x7e {
			return fmt.Errorf("byte 0x%02x at offset %d of a scope-token is not an RFC 6749 NQCHAR", c, i)
		}
	}
	return nil
}

// verifier checks access tokens against one issuer, one audience and one
// key source.
type verifier struct {
	keys     keySource
	parser   *jwt.Parser
	agentIDs []string
	roles    string // the roles claim's name
	jwtTyp   bool   // Config.AcceptJWTTyp
	now      func() time.Time
	leeway   time.Duration
	verified *verifiedCache
}

// verifiedCacheSize bounds the verified-token cache (about 300 bytes each).
const verifiedCacheSize = 10000

func newVerifier(cfg Config, keys keySource) *verifier {
	return &verifier{
		keys: keys,
		parser: jwt.NewParser(
			jwt.WithValidMethods(allowedAlgs),
			jwt.WithIssuer(cfg.Issuer),
			jwt.WithAudience(cfg.Resource),
			jwt.WithExpirationRequired(),
			jwt.WithIssuedAt(),
			jwt.WithLeeway(cfg.Leeway),
			jwt.WithTimeFunc(cfg.Now),
			jwt.WithStrictDecoding(),
		),
		agentIDs: cfg.AgentClientIDs,
		roles:    cfg.RolesClaim,
		jwtTyp:   cfg.AcceptJWTTyp,
		now:      cfg.Now,
		leeway:   cfg.Leeway,
		verified: newVerifiedCache(verifiedCacheSize),
	}
}

// verify checks token and returns the principal it names. Every failure
// is a *TokenError.
func (v *verifier) verify(ctx context.Context, token string) (*Principal, error) {
	if len(token) > MaxTokenBytes {
		return nil, tokenError("token is too large", nil)
	}
	if p, ok := v.verified.get(ctx, token, v.now(), v.leeway, v.keys); ok {
		return p, nil
	}
	c := claims{roleClaims: roleClaims{rolesName: v.roles}}
	var kid string
	var key any
	_, err := v.parser.ParseWithClaims(token, &c, func(t *jwt.Token) (any, error) {
		kid, _ = t.Header["kid"].(string)
		var err error
		key, err = v.key(ctx, t)
		return key, err
	})
	if err != nil {
		return nil, describe(err)
	}
	p, err := c.principal(v.agentIDs)
	if err != nil {
		return nil, err
	}
	v.verified.put(token, p, kid, key)
	return p, nil
}

// principal applies the identity rules to verified claims c: a subject,
// valid scopes, a well-formed act, identity claims a person can read, valid
// roles (the roles claim, when c was decoded with its name); an
// act claim, or a client id in agentIDs, makes an agent. Every failure is a
// *TokenError.
func (c *claims) principal(agentIDs []string) (*Principal, error) {
	if strings.TrimSpace(c.Subject) == "" {
		return nil, tokenError("token has no subject", nil)
	}
	scopes, err := c.scopes()
	if err != nil {
		return nil, err
	}
	var actSub string
	hasAct := len(c.Act) > 0 && !bytes.Equal(c.Act, []byte("null"))
	if hasAct {
		var act struct {
			Sub string `json:"sub"`
		}
		if err := json.Unmarshal(c.Act, &act); err != nil || act.Sub == "" {
			return nil, tokenError("token has a malformed act claim", err)
		}
		actSub = act.Sub
	}
	if err := c.checkIdentities(actSub); err != nil {
		return nil, err
	}
	roles, err := c.principalRoles()
	if err != nil {
		return nil, err
	}
	p := &Principal{
		Subject:  c.Subject,
		ClientID: c.ClientID,
		ACR:      c.ACR,
		TokenID:  c.ID,
		Expiry:   c.ExpiresAt.date.Time,
		Kind:     KindHuman,
		Roles:    roles,
	}
	if p.ClientID == "" {
		p.ClientID = c.AZP
	}
	if c.AuthTime.date != nil {
		p.AuthTime = c.AuthTime.date.Time
	}
	p.Scopes = scopes
	if hasAct {
		p.Actor, p.Kind = actSub, KindAgent
	}
	if p.ClientID != "" && slices.Contains(agentIDs, p.ClientID) {
		// An agent known by its client id is the actor, exactly as one
		// named by an act claim: the audit trail says which agent acted.
		p.Kind = KindAgent
		if p.Actor == "" {
			p.Actor = p.ClientID
		}
	}
	return p, nil
}

// key picks the verification key for t, after the header checks.
func (v *verifier) key(ctx context.Context, t *jwt.Token) (any, error) {
	if !typeAccepted(t.Header, v.jwtTyp) {
		return nil, errBadType
	}
	if _, ok := t.Header["crit"]; ok {
		// RFC 7515 §4.1.11: we understand no extensions, so we must refuse.
		return nil, errors.New("crit header not supported")
	}
	kid, _ := t.Header["kid"].(string)
	key, err := v.keys.publicKey(ctx, kid)
	if err != nil {
		return nil, err
	}
	if err := checkKeyAlg(key, t.Method.Alg()); err != nil {
		return nil, err
	}
	return key, nil
}

var errBadType = errors.New("typ must be at+jwt (RFC 9068), or JWT with COBRANCA_ACCEPT_JWT_TYP=true")

// typeAccepted is RFC 9068 §4's check of an access token's JOSE header:
// typ is at+jwt or application/at+jwt, compared without regard to case (a
// media type, RFC 7515 §4.1.9), so that another JWT of the issuer's (an
// ID token, typ JWT) is never taken for an access token. With acceptJWT
// (COBRANCA_ACCEPT_JWT_TYP) JWT and application/jwt are accepted too, and
// no typ at all, which RFC 7519 §5.1 reads as JWT: what issuers that do
// not follow RFC 9068 write.
func typeAccepted(h map[string]any, acceptJWT bool) bool {
	typ, ok := h["typ"]
	if !ok {
		return acceptJWT
	}
	s, _ := typ.(string)
	switch strings.ToLower(s) {
	case "at+jwt", "application/at+jwt":
		return true
	case "jwt", "application/jwt":
		return acceptJWT
	}
	return false
}

// describe turns a parse error into a TokenError whose description says
// what class of problem it is and nothing more.
func describe(err error) error {
	var desc string
	switch {
	case errors.Is(err, errNotNumericDate):
		desc = "token has a time claim that is not a number"
	case errors.Is(err, jwt.ErrTokenMalformed):
		desc = "token is malformed"
	case errors.Is(err, errUnknownKey):
		desc = "token is signed by an unknown key"
	case errors.Is(err, errBadType):
		desc = "token is not an access token"
	case errors.Is(err, jwt.ErrTokenUnverifiable), errors.Is(err, jwt.ErrTokenSignatureInvalid),
		errors.Is(err, jwt.ErrSignatureInvalid):
		desc = "token signature cannot be verified"
	case errors.Is(err, jwt.ErrTokenExpired):
		desc = "token is expired"
	case errors.Is(err, jwt.ErrTokenNotValidYet), errors.Is(err, jwt.ErrTokenUsedBeforeIssued):
		desc = "token is not valid yet"
	case errors.Is(err, jwt.ErrTokenRequiredClaimMissing):
		desc = "token lacks a required claim"
	case errors.Is(err, jwt.ErrTokenInvalidIssuer):
		desc = "token is from another issuer"
	case errors.Is(err, jwt.ErrTokenInvalidAudience):
		desc = "token is not meant for this resource"
	default:
		desc = "token is invalid"
	}
	return tokenError(desc, err)
}
