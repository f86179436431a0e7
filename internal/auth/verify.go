package auth

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
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
// RFC 9470).
type claims struct {
	jwt.RegisteredClaims
	ClientID string           `json:"client_id,omitempty"`
	AZP      string           `json:"azp,omitempty"`
	Scope    string           `json:"scope,omitempty"`
	SCP      scpClaim         `json:"scp,omitempty"`
	Act      json.RawMessage  `json:"act,omitempty"`
	ACR      string           `json:"acr,omitempty"`
	AuthTime *jwt.NumericDate `json:"auth_time,omitempty"`
}

// scpClaim is an array of scopes; some issuers send one space separated
// string instead.
type scpClaim []string

func (s *scpClaim) UnmarshalJSON(data []byte) error {
	var str string
	if json.Unmarshal(data, &str) == nil {
		*s = strings.Fields(str)
		return nil
	}
	var list []string
	if err := json.Unmarshal(data, &list); err != nil {
		return errors.New("scp must be a string or an array of strings")
	}
	*s = list
	return nil
}

// verifier checks access tokens against one issuer, one audience and one
// key source.
type verifier struct {
	keys     keySource
	parser   *jwt.Parser
	agentIDs []string
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
	var c claims
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
	if c.Subject == "" {
		return nil, tokenError("token has no subject", nil)
	}
	p := &Principal{
		Subject:  c.Subject,
		ClientID: c.ClientID,
		ACR:      c.ACR,
		TokenID:  c.ID,
		Expiry:   c.ExpiresAt.Time,
		Kind:     KindHuman,
	}
	if p.ClientID == "" {
		p.ClientID = c.AZP
	}
	if c.AuthTime != nil {
		p.AuthTime = c.AuthTime.Time
	}
	for _, s := range append(strings.Fields(c.Scope), c.SCP...) {
		if s != "" && !slices.Contains(p.Scopes, s) {
			p.Scopes = append(p.Scopes, s)
		}
	}
	if len(c.Act) > 0 && !bytes.Equal(c.Act, []byte("null")) {
		var act struct {
			Sub string `json:"sub"`
		}
		if err := json.Unmarshal(c.Act, &act); err != nil || act.Sub == "" {
			return nil, tokenError("token has a malformed act claim", err)
		}
		p.Actor, p.Kind = act.Sub, KindAgent
	}
	if p.ClientID != "" && slices.Contains(v.agentIDs, p.ClientID) {
		p.Kind = KindAgent
	}
	v.verified.put(token, p, kid, key)
	return p, nil
}

// key picks the verification key for t, after the header checks.
func (v *verifier) key(ctx context.Context, t *jwt.Token) (any, error) {
	if typ, ok := t.Header["typ"]; ok {
		s, _ := typ.(string)
		switch strings.ToLower(s) {
		case "at+jwt", "application/at+jwt", "jwt":
		default:
			return nil, errBadType
		}
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

var errBadType = errors.New("typ must be at+jwt or JWT")

// describe turns a parse error into a TokenError whose description says
// what class of problem it is and nothing more.
func describe(err error) error {
	var desc string
	switch {
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
