package auth

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Config configures the Authenticator. cmd/cobranca (loadSettings) fills it
// from internal/config's plain values; each field names the variable it
// comes from.
//
// With Issuer empty the server runs in development mode: it signs its own
// tokens with a key kept in DataDir and accepts only those. Production
// refuses that.
type Config struct {
	// Issuer is the authorization server's issuer identifier; a token's iss
	// must equal it. COBRANCA_ISSUER. Empty selects development mode.
	Issuer string
	// Resource is this server's resource identifier (RFC 8707); a token's
	// aud must contain it. COBRANCA_RESOURCE. In development mode it
	// defaults to BaseURL + "/mcp".
	Resource string
	// JWKSURL is where the issuer publishes its signing keys.
	// COBRANCA_JWKS_URL. Exactly one of JWKSURL and PublicKeyFile is needed
	// outside development mode.
	JWKSURL string
	// PublicKeyFile is a PEM file holding the issuer's public key, for
	// installs that cannot reach a JWKS. COBRANCA_JWT_PUBLIC_KEY.
	PublicKeyFile string
	// AgentClientIDs lists client ids whose tokens are agents even without
	// an act claim. COBRANCA_AGENT_CLIENT_IDS (comma separated).
	AgentClientIDs []string
	// StepUpACR lists the acr values that satisfy step-up authentication.
	// COBRANCA_STEPUP_ACR (comma separated).
	StepUpACR []string
	// RolesClaim names the claim a token's roles are read from (a JSON array
	// of strings, or a space-separated string). COBRANCA_ROLES_CLAIM.
	// Default DefaultRolesClaim.
	RolesClaim string
	// AcceptJWTTyp also accepts access tokens whose typ is JWT, or that
	// have none, besides RFC 9068's at+jwt. COBRANCA_ACCEPT_JWT_TYP.
	AcceptJWTTyp bool
	// Production forbids development mode. COBRANCA_ENV=production.
	Production bool
	// DataDir holds the development signing key. COBRANCA_DATA_DIR.
	DataDir string
	// BaseURL is the server's own public URL, e.g. http://localhost:8080;
	// in development mode it is the issuer.
	BaseURL string
	// ResourceName is shown to users by MCP clients (RFC 9728
	// resource_name). Defaults to "cobranca".
	ResourceName string

	// Leeway tolerates clock skew on exp, nbf and iat. Default and maximum
	// 60s.
	Leeway time.Duration
	// JWKSRefreshInterval is the least time between two JWKS fetches caused
	// by unknown key ids. Default 30s.
	JWKSRefreshInterval time.Duration
	// JWKSMaxAge is how long fetched keys are trusted before they are
	// fetched again, so that keys withdrawn by the issuer stop working.
	// Default 15 minutes.
	JWKSMaxAge time.Duration
	// HTTPClient fetches the JWKS. Default: a client with a 10s timeout.
	HTTPClient *http.Client
	// Now is the clock. Default time.Now.
	Now func() time.Time
	// Logger receives the development mode warning and rejected tokens'
	// reasons (never the tokens). Default: discard.
	Logger *slog.Logger
}

const (
	maxLeeway                  = 60 * time.Second
	defaultJWKSRefreshInterval = 30 * time.Second
	defaultJWKSMaxAge          = 15 * time.Minute
)

// DevMode reports whether c selects development mode.
func (c Config) DevMode() bool { return c.Issuer == "" }

// withDefaults returns c with zero values replaced by defaults.
func (c Config) withDefaults() Config {
	if c.Leeway == 0 {
		c.Leeway = maxLeeway
	}
	if c.JWKSRefreshInterval == 0 {
		c.JWKSRefreshInterval = defaultJWKSRefreshInterval
	}
	if c.JWKSMaxAge == 0 {
		c.JWKSMaxAge = defaultJWKSMaxAge
	}
	if c.HTTPClient == nil {
		c.HTTPClient = &http.Client{Timeout: 10 * time.Second}
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.ResourceName == "" {
		c.ResourceName = "cobranca"
	}
	if c.RolesClaim == "" {
		c.RolesClaim = DefaultRolesClaim
	}
	if c.DevMode() && !c.Production && c.Resource == "" && c.BaseURL != "" {
		c.Resource = c.BaseURL + "/mcp"
	}
	return c
}

// validate reports every problem in c at once, naming the variables.
func (c Config) validate() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }

	if c.DevMode() {
		if c.Production {
			missing := []string{"COBRANCA_ISSUER"}
			if c.Resource == "" {
				missing = append(missing, "COBRANCA_RESOURCE")
			}
			if c.JWKSURL == "" && c.PublicKeyFile == "" {
				missing = append(missing, "COBRANCA_JWKS_URL or COBRANCA_JWT_PUBLIC_KEY")
			}
			bad("COBRANCA_ENV=production refuses development mode (tokens signed by a local key); missing: %s", strings.Join(missing, ", "))
			return errors.Join(errs...)
		}
		if c.JWKSURL != "" {
			bad("COBRANCA_JWKS_URL is set but COBRANCA_ISSUER is not")
		}
		if c.PublicKeyFile != "" {
			bad("COBRANCA_JWT_PUBLIC_KEY is set but COBRANCA_ISSUER is not")
		}
		if c.DataDir == "" {
			bad("COBRANCA_DATA_DIR is required in development mode (it keeps the signing key)")
		}
		if err := checkURL(c.BaseURL, false); err != nil {
			bad("server base URL %q (the development issuer): %v", c.BaseURL, err)
		}
	} else {
		if err := checkURL(c.Issuer, c.Production); err != nil {
			bad("COBRANCA_ISSUER: %v", err)
		}
		switch {
		case c.JWKSURL == "" && c.PublicKeyFile == "":
			bad("COBRANCA_JWKS_URL or COBRANCA_JWT_PUBLIC_KEY is required with COBRANCA_ISSUER")
		case c.JWKSURL != "" && c.PublicKeyFile != "":
			bad("set only one of COBRANCA_JWKS_URL and COBRANCA_JWT_PUBLIC_KEY")
		case c.JWKSURL != "":
			if err := checkURL(c.JWKSURL, c.Production); err != nil {
				bad("COBRANCA_JWKS_URL: %v", err)
			}
		}
		if c.Resource == "" {
			bad("COBRANCA_RESOURCE is required with COBRANCA_ISSUER (this server's URL, the audience tokens must name)")
		}
	}
	if c.Resource != "" {
		if err := checkURL(c.Resource, c.Production); err != nil {
			bad("COBRANCA_RESOURCE: %v", err)
		} else if u, _ := url.Parse(c.Resource); u.Fragment != "" || u.RawQuery != "" {
			bad("COBRANCA_RESOURCE: must have no query or fragment (RFC 8707)")
		}
	}
	if err := CheckRolesClaim(c.RolesClaim); err != nil {
		bad("COBRANCA_ROLES_CLAIM: %v", err)
	}
	if c.Leeway < 0 || c.Leeway > maxLeeway {
		bad("auth leeway %v: must be between 0 and %v", c.Leeway, maxLeeway)
	}
	if c.JWKSRefreshInterval < 0 || c.JWKSMaxAge < 0 {
		bad("JWKS intervals must not be negative")
	}
	return errors.Join(errs...)
}

// checkURL wants an absolute http(s) URL; https when secure.
func checkURL(s string, secure bool) error {
	if s == "" {
		return errors.New("missing")
	}
	u, err := url.Parse(s)
	if err != nil {
		return errors.New("not a URL")
	}
	switch {
	case u.Host == "":
		return errors.New("must be an absolute URL")
	case u.Scheme == "https":
	case u.Scheme == "http" && !secure:
	case u.Scheme == "http":
		return errors.New("must use https in production")
	default:
		return errors.New("must be an http or https URL")
	}
	return nil
}

// Validate reports every problem in c, naming the environment variables,
// as New would.
func (c Config) Validate() error { return c.withDefaults().validate() }
