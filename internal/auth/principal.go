package auth

import (
	"context"
	"log/slog"
	"slices"
	"time"
)

// Kind says whether a caller is an AI agent or a human. It is decided from
// the token, never from anything the caller claims in a request.
type Kind string

const (
	// KindAgent is a token carrying an RFC 8693 "act" claim, or issued to a
	// client id listed in COBRANCA_AGENT_CLIENT_IDS.
	KindAgent Kind = "agent"
	// KindHuman is every other token.
	KindHuman Kind = "human"
)

// Principal is the verified identity behind a request.
type Principal struct {
	Subject  string    // sub
	ClientID string    // client_id, or azp when client_id is absent
	Actor    string    // act.sub, when the token carries an RFC 8693 actor; else the client id of a listed agent client
	Scopes   []string  // from scope and scp (see ParseScope), without duplicates
	Roles    []string  // the roles claim (COBRANCA_ROLES_CLAIM), sorted, without duplicates
	ACR      string    // acr
	AuthTime time.Time // auth_time; zero when absent
	Kind     Kind
	TokenID  string    // jti
	Expiry   time.Time // exp
}

// LogValue keeps log lines to who is calling. The Principal never holds the
// token itself, and only these fields are logged.
func (p *Principal) LogValue() slog.Value {
	if p == nil {
		return slog.StringValue("anonymous")
	}
	attrs := []slog.Attr{
		slog.String("subject", p.Subject),
		slog.String("client", p.ClientID),
		slog.String("kind", string(p.Kind)),
	}
	if p.Actor != "" {
		attrs = append(attrs, slog.String("actor", p.Actor))
	}
	return slog.GroupValue(attrs...)
}

// IsAgent reports whether the principal is an AI agent.
func (p *Principal) IsAgent() bool { return p != nil && p.Kind == KindAgent }

// HasScope reports whether the principal was granted scope.
func (p *Principal) HasScope(scope string) bool {
	return p != nil && slices.Contains(p.Scopes, scope)
}

// MissingScopes returns the scopes in required that the principal was not
// granted, in the order of required, without duplicates. A nil principal
// lacks every scope.
func (p *Principal) MissingScopes(required []string) []string {
	var missing []string
	for _, s := range required {
		if !p.HasScope(s) && !slices.Contains(missing, s) {
			missing = append(missing, s)
		}
	}
	return missing
}

type principalKey struct{}

// WithPrincipal returns a copy of ctx carrying p.
func WithPrincipal(ctx context.Context, p *Principal) context.Context {
	return context.WithValue(ctx, principalKey{}, p)
}

// PrincipalFrom returns the principal stored by WithPrincipal (the
// Middleware does that for every authenticated request).
func PrincipalFrom(ctx context.Context) (*Principal, bool) {
	p, ok := ctx.Value(principalKey{}).(*Principal)
	return p, ok && p != nil
}
