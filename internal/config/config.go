// Package config loads cobranca's configuration from the environment into one
// Config value of plain values, validated at once, with every problem
// reported together.
//
// It is a leaf: it imports no service package and no SDK. cmd/cobranca turns
// the values into the services' options (auth.Config, limits.Options, …) and
// checks the rules that belong to a service — the rate-limit spec syntax,
// token verification settings, the audit spool's least bound — reporting
// them together with Load's problems, each naming its variable.
package config

import (
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Config is the whole configuration of a cobranca process.
type Config struct {
	// Env is "development" (default) or "production".
	Env string
	// Addr is the listen address of `cobranca serve`.
	Addr string
	// AllowedOrigins lists the Origin values (scheme://host[:port]) browsers
	// may send to the MCP endpoint; requests with any other Origin get 403.
	AllowedOrigins []string
	// AllowedHosts lists the Host header values accepted besides loopback
	// names; a deployment behind a proxy names its public host here.
	AllowedHosts []string
	// MaxBodyBytes bounds a request body; larger ones get 413 unparsed.
	MaxBodyBytes int64
	// LogLevel is the minimum slog level.
	LogLevel slog.Level
	// LogFormat is "json", "text", or "auto": text when the log goes to a
	// terminal, JSON otherwise (the process decides; see LogFormatAuto).
	LogFormat string
	// DataDir holds the embedded database and development keys.
	DataDir string
	// MemoryLimit is the Go runtime's soft memory limit for serve, in bytes.
	MemoryLimit int64
	// DebugAddr, when set, is a loopback host:port where serve exposes the
	// Go runtime's profiles (net/http/pprof) on a listener of its own.
	DebugAddr string
	// MetricsAddr is the host:port of the listener that serves /metrics;
	// empty means none. Never the public listener.
	MetricsAddr string
	// MaxConns caps the public listener's open connections; MaxConnsPerAddr
	// caps one client address's (IPv6: its /64). 0 means no cap.
	MaxConns        int
	MaxConnsPerAddr int

	// Issuer is the OAuth authorization server tokens must come from; empty
	// means development mode (a local signing key and `cobranca token`).
	Issuer string
	// Resource is this server's resource identifier, the audience tokens
	// must name (RFC 8707).
	Resource string
	// JWKSURL is where the issuer publishes its signing keys.
	JWKSURL string
	// JWTPublicKey is a PEM public key file used instead of a JWKS.
	JWTPublicKey string
	// AgentClientIDs are OAuth client ids whose tokens count as agents.
	AgentClientIDs []string
	// StepUpACR are the acr values that satisfy step-up authentication.
	StepUpACR []string
	// RolesClaim names the token claim a person's roles are read from (approver roles).
	RolesClaim string
	// AcceptJWTTyp also accepts access tokens typed JWT (or untyped), for
	// issuers that do not write RFC 9068's at+jwt. COBRANCA_ACCEPT_JWT_TYP.
	AcceptJWTTyp bool
	// OIDCClientID is cobranca's own web client at the issuer, with which people sign in to
	// its pages (internal/signin). Required in production; development defaults to the
	// development authorization server's built-in client (cmd/cobranca).
	OIDCClientID string
	// OIDCClientSecret is that client's secret, for an issuer that wants one; empty for a
	// public client (PKCE only). Secret.
	OIDCClientSecret string

	// RateLimits are the budgets per principal, per origin and per tier,
	// as written (`N/PERIOD[,burst=B]` or `off`): the syntax is the
	// limiter's, limits.ParseSpec.
	RateLimits RateSpecs
	// RateStoreTimeout bounds each rate-limit decision in the store.
	RateStoreTimeout time.Duration
	// DrainDelay is how long a stopping server goes on serving while
	// /readyz already answers 503, for load balancers that learn of the stop
	// by polling readiness; 0: new requests are refused at once.
	DrainDelay time.Duration
	// Replicas is how many processes share the budgets; each takes its
	// share when it must decide alone (store down).
	Replicas int
	// TrustedProxyHeader names the header the proxy in front sets to the
	// client's address; empty means the connection's remote address.
	TrustedProxyHeader string

	// DatabaseURL is postgres://… for PostgreSQL, or empty or sqlite:PATH for
	// the embedded SQLite database (default: cobranca.db in DataDir). Secret:
	// it may carry a password.
	DatabaseURL string
	// AutoMigrate applies pending migrations when `cobranca serve` starts.
	AutoMigrate bool
	// TransactionPooler says DatabaseURL reaches PostgreSQL through a pooler in
	// transaction mode (PgBouncer's pool_mode=transaction): River polls for
	// jobs instead of listening, and the rate limiter's pool sets no session
	// parameter. Its URL names a default_query_exec_mode without named
	// prepared statements.
	TransactionPooler bool
	// AuditKey is the HMAC key of the audit log's argument and result
	// digests and of new events' MACs: the first entry of
	// COBRANCA_AUDIT_KEY; empty in development means a key generated in
	// DataDir. Secret.
	AuditKey string
	// AuditOldKeys are the entries after the first: earlier audit keys,
	// under which audit verify checks the events they sealed. Secret.
	AuditOldKeys []string
	// AuditSigningKey is the Ed25519 key file (PEM) that signs audit
	// checkpoints; empty means audit-signing.pem in DataDir.
	AuditSigningKey string
	// AuditSpoolMax bounds the audit spool file in DataDir, in bytes.
	AuditSpoolMax int64
	// RequestStateKeys seal the request states of in-band confirmations, as
	// written: "id:secret" entries separated by commas, the current key
	// first (internal/reqstate's rules; cmd/cobranca parses it). Empty in
	// development means a key generated in DataDir. Secret.
	RequestStateKeys string
	// FastPath lets the MCP endpoint answer the bulk low-tier call itself
	// (COBRANCA_FASTPATH=on, the default); off sends every call to go-sdk.
	FastPath bool
	// IdempotencyTTL is how long a completed idempotency key keeps its
	// stored answer.
	IdempotencyTTL time.Duration
	// ApprovalTTL is how long a critical call's pending action waits for a
	// person's decision and, approved, for the agent's retry.
	ApprovalTTL time.Duration
	// MaxFileBytes bounds a stored file (`cobranca files add`).
	MaxFileBytes int64
	// LinkKeys sign download links, as written: "id:secret" entries
	// separated by commas, the current key first (the rules of
	// RequestStateKeys; cmd/cobranca parses both alike). Empty in
	// development means a key generated in DataDir. Secret.
	LinkKeys string
	// PublicURL is where people reach the server from outside (download
	// links point there), as written: https in production; its shape is
	// the links' rule (files.NewLinks). Empty in development means BaseURL.
	PublicURL string
	// SMTPURL is the server that delivers e-mail, as written (smtp:// with
	// STARTTLS required, smtps://, or ?starttls=off for a local relay; the
	// outbox's rule, checked by cmd/cobranca). Empty: .eml files in
	// DataDir/outbox. Secret: it may carry a password.
	SMTPURL string
	// MailFrom is the address e-mail is sent from; its domain is the
	// right-hand side of Message-IDs. Empty in development means
	// cobranca@localhost.
	MailFrom string
	// MailWorkers is how many messages the outbox sends at once in this
	// process (one SMTP connection each).
	MailWorkers int
	// MailRescueAfter is how long a message may be in the sending before
	// it counts as lost (its process died) and is sent again.
	MailRescueAfter time.Duration
	// ApproverEmails are the addresses told, through the outbox, when an approval waits, as
	// written one by one (bare addresses: the outbox's rule, checked by cmd/cobranca); none:
	// no e-mail.
	ApproverEmails []string
	// ApprovalWebhookURL is where a JSON notification is posted when an approval waits (a
	// Slack, Teams or Google Chat incoming webhook); empty: none. Secret: such URLs carry
	// their credential in the path.
	ApprovalWebhookURL string
	// ApprovalWebhookSecret keys the HMAC-SHA256 signature of each post; required with the
	// URL. Secret.
	ApprovalWebhookSecret string
	// ApprovalDigestAfter is how many approvals a digest window notifies one by one; those
	// created after them in the window are told in one digest at its end.
	ApprovalDigestAfter int
	// ApprovalDigestWindow is the length of a digest window (windows are aligned to the
	// clock: 10m windows start at :00, :10, …).
	ApprovalDigestWindow time.Duration
	// NotifyLanguage is the language of the approvers' notifications: "pt-BR" or "en".
	NotifyLanguage string

	// OTLPEndpoint is the base URL of the OpenTelemetry collector that
	// receives traces over OTLP/HTTP (spans go to its /v1/traces); empty
	// means tracing off.
	OTLPEndpoint string
	// OTLPHeaders are the headers sent with every export (a hosted
	// collector's API key). Secret.
	OTLPHeaders map[string]string
	// ServiceName is the traces' service.name.
	ServiceName string
	// TraceSampler is one of the Sampler* values; TraceSamplerArg is the
	// ratio of the ratio samplers, from 0 to 1.
	TraceSampler    string
	TraceSamplerArg float64
	// OTLPTimeout bounds one export request to the collector (a batch of
	// spans; a request that fails may be retried).
	OTLPTimeout time.Duration
	// OTLPCompression is CompressionGzip or CompressionNone: how export
	// bodies are sent.
	OTLPCompression string
	// OTLPCertificate is the path of the PEM file of CA certificates trusted
	// for an https endpoint, as written; empty means the system's roots.
	// OTLPRootCAs is its contents, read at Load and known to hold at least
	// one certificate (telemetry builds the pool).
	OTLPCertificate string
	OTLPRootCAs     []byte
	// TracingDisabled is OTEL_SDK_DISABLED=true: no tracing, even with
	// OTLPEndpoint set.
	TracingDisabled bool
	// ContactPacing is the least time between two contacts of one customer
	// that collections.analyze_portfolio keeps (nextContactAfter); 0 means
	// no pacing.
	ContactPacing time.Duration
	// LedgerRequired is COBRANCA_LEDGER_REQUIRED=true: a reminder may name only invoices the
	// receivables ledger knows, so that every send can check that they are still owed.
	LedgerRequired bool
	// PixKey, PixMerchantName and PixMerchantCity are the operator's PIX receiving account as
	// written (COBRANCA_PIX_*); cmd/cobranca checks them with the BR Code's rules (internal/pix).
	// No key: reminders carry no PIX code.
	PixKey, PixMerchantName, PixMerchantCity string

	// read is each variable's value as Load read it (set, else the default), in the table's
	// order: what LogValue logs.
	read []string
}

// RateSpecs are the rate-limit budgets as written, one per variable.
type RateSpecs struct {
	Principal string // COBRANCA_RATE_PRINCIPAL
	Origin    string // COBRANCA_RATE_ORIGIN
	Write     string // COBRANCA_RATE_WRITE
	Critical  string // COBRANCA_RATE_CRITICAL
}

// The names of the variables whose values cmd/cobranca checks with a
// service's rules, so that its errors name them.
const (
	VarRatePrincipal = "COBRANCA_RATE_PRINCIPAL"
	VarRateOrigin    = "COBRANCA_RATE_ORIGIN"
	VarRateWrite     = "COBRANCA_RATE_WRITE"
	VarRateCritical  = "COBRANCA_RATE_CRITICAL"
	VarAuditSpoolMax = "COBRANCA_AUDIT_SPOOL_MAX"
	VarStateKeys     = "COBRANCA_REQUEST_STATE_KEYS"
	VarLinkKeys      = "COBRANCA_LINK_KEYS"
	VarSMTPURL       = "COBRANCA_SMTP_URL"
	VarMailFrom      = "COBRANCA_MAIL_FROM"
	VarPublicURL     = "COBRANCA_PUBLIC_URL"
	VarAllowedHosts  = "COBRANCA_ALLOWED_HOSTS"
	VarTrustedProxy  = "COBRANCA_TRUSTED_PROXY_HEADER"
	VarOIDCClientID  = "COBRANCA_OIDC_CLIENT_ID"
	VarStepUpACR     = "COBRANCA_STEPUP_ACR"
	VarRolesClaim    = "COBRANCA_ROLES_CLAIM"
	VarAcceptJWTTyp  = "COBRANCA_ACCEPT_JWT_TYP"
	VarOIDCSecret    = "COBRANCA_OIDC_CLIENT_SECRET"
	VarOTLPEndpoint  = "OTEL_EXPORTER_OTLP_ENDPOINT"
	VarOTLPHeaders   = "OTEL_EXPORTER_OTLP_HEADERS"
	VarOTLPTimeout   = "OTEL_EXPORTER_OTLP_TIMEOUT"
	VarOTLPCompress  = "OTEL_EXPORTER_OTLP_COMPRESSION"
	VarOTLPCert      = "OTEL_EXPORTER_OTLP_CERTIFICATE"
	VarSDKDisabled   = "OTEL_SDK_DISABLED"
	// VarContactPacing is also the default of `cobranca analyze --pacing`.
	VarContactPacing  = "COBRANCA_CONTACT_PACING"
	VarLedgerRequired = "COBRANCA_LEDGER_REQUIRED"
	VarPixKey         = "COBRANCA_PIX_KEY"
	VarPixName        = "COBRANCA_PIX_MERCHANT_NAME"
	VarPixCity        = "COBRANCA_PIX_MERCHANT_CITY"
	VarApproverEmails = "COBRANCA_APPROVER_EMAILS"
	VarWebhookURL     = "COBRANCA_APPROVAL_WEBHOOK_URL"
	VarWebhookSecret  = "COBRANCA_APPROVAL_WEBHOOK_SECRET"
	VarNotifyLanguage = "COBRANCA_NOTIFY_LANGUAGE"
)

// The values of OTEL_TRACES_SAMPLER cobranca takes: the OpenTelemetry
// specification's names.
const (
	SamplerAlwaysOn    = "always_on"
	SamplerRatio       = "traceidratio"
	SamplerParentOn    = "parentbased_always_on"
	SamplerParentRatio = "parentbased_traceidratio"
)

// The values of OTEL_EXPORTER_OTLP_COMPRESSION.
const (
	CompressionGzip = "gzip"
	CompressionNone = "none"
)

// DefaultOTLPTimeout is OTEL_EXPORTER_OTLP_TIMEOUT's default, the OTLP
// specification's.
const DefaultOTLPTimeout = 10 * time.Second

// The values of COBRANCA_LOG_FORMAT.
const (
	LogFormatAuto = "auto"
	LogFormatJSON = "json"
	LogFormatText = "text"
)

// Production reports whether cobranca runs in production mode.
func (c Config) Production() bool { return c.Env == "production" }

// LogValue is the configuration as read, one attribute per variable of the
// table (the name without COBRANCA_, lower case), in the table's order. The
// table's logged column keeps secrets out: a secret is logged as whether it
// is set, a URL with its password redacted; it is the one place that decides.
func (c Config) LogValue() slog.Value {
	attrs := make([]slog.Attr, 0, len(c.read))
	for i, val := range c.read {
		v := variables[i]
		key := strings.ToLower(strings.TrimPrefix(v.name, "COBRANCA_"))
		switch v.logged {
		case secret:
			attrs = append(attrs, slog.Bool(key+"_set", val != ""))
		case secretURL:
			attrs = append(attrs, slog.String(key, redactURL(val)))
		default:
			attrs = append(attrs, slog.String(key, val))
		}
	}
	return slog.GroupValue(attrs...)
}

// redactURL drops the password of a database URL, and anything that does
// not parse as a URL at all.
func redactURL(s string) string {
	if s == "" || strings.HasPrefix(s, "sqlite:") {
		return s
	}
	u, err := url.Parse(s)
	if err != nil {
		return "(unparseable)"
	}
	return u.Redacted()
}

// BaseURL is how a local client reaches the server: a wildcard listen
// address is reached as localhost. Development mode's issuer is this URL.
// Public is the URL people reach the server at: COBRANCA_PUBLIC_URL, or
// in development, unset, BaseURL.
func (c Config) Public() string {
	if c.PublicURL != "" {
		return c.PublicURL
	}
	return c.BaseURL()
}

func (c Config) BaseURL() string { return c.localURL("localhost") }

// LoopbackURL is how a process beside the server (its container's health
// check) reaches it without a name to resolve: a wildcard listen address
// is reached as 127.0.0.1. "" when Addr is not host:port.
func (c Config) LoopbackURL() string { return c.localURL("127.0.0.1") }

// localURL is the server's http URL on Addr, with a wildcard (or empty)
// host replaced by wildcard.
func (c Config) localURL(wildcard string) string {
	host, port, err := net.SplitHostPort(c.Addr)
	if err != nil {
		return ""
	}
	if ip := net.ParseIP(host); host == "" || ip != nil && ip.IsUnspecified() {
		host = wildcard
	}
	return "http://" + net.JoinHostPort(host, port)
}

// variable describes one environment variable cobranca reads: COBRANCA_*,
// and the OpenTelemetry variables of tracing (OTEL_*).
type variable struct {
	name   string
	def    string
	need   need
	logged logged
	doc    string
	apply  func(c *Config, v string) error
}

// logged says how a variable's value appears in the log (Config.LogValue).
type logged uint8

const (
	// shown: as read (set, else the default).
	shown logged = iota
	// secret: whether it is set, never its value.
	secret
	// secretURL: the URL with its password redacted (url.URL.Redacted).
	secretURL
)

// requiredBecause is why production requires each required variable, said
// when it is missing (its table entry says more).
var requiredBecause = map[string]string{
	VarOIDCClientID:      "people sign in to the approval page with it",
	"COBRANCA_AUDIT_KEY": "the audit log's digests and event MACs are keyed with it, and audit verify needs it",
	VarStateKeys:         "every replica must open the request states the others seal",
	VarLinkKeys:          "every replica must verify the download links the others sign",
	VarPublicURL:         "download links, approval pages and sign-in redirects point at it",
	VarSMTPURL:           "without it e-mail is only written to files",
	VarMailFrom:          "e-mail needs a sender address",
}

// need says whether production requires a variable, and who says so.
type need uint8

const (
	optional need = iota
	// required: Load refuses production without it.
	required
	// requiredByService: production requires it, by a rule that belongs to a service and is
	// checked there, naming the variable (token verification: COBRANCA_ISSUER and
	// COBRANCA_RESOURCE; the served contracts' step-up: COBRANCA_STEPUP_ACR).
	requiredByService
)

// RequiredInProduction lists the variables a production deployment must set, in the table's
// order: fly.toml, docker-compose.yml and docs/operations.md name each (deploy_test.go holds
// them to it).
func RequiredInProduction() []string {
	var out []string
	for _, v := range variables {
		if v.need != optional {
			out = append(out, v.name)
		}
	}
	return out
}

// Variables lists every environment variable cobranca reads, with its default
// and meaning; docs/configuration.md's table is this list.
func Variables() [][3]string {
	out := make([][3]string, 0, len(variables))
	for _, v := range variables {
		out = append(out, [3]string{v.name, v.def, v.doc})
	}
	return out
}

var variables = []variable{
	{"COBRANCA_ENV", "development", optional, shown, "`development` or `production`. Production refuses development conveniences (generated keys, auto-migrate by default).", func(c *Config, v string) error {
		if v != "development" && v != "production" {
			return errors.New(`must be "development" or "production"`)
		}
		c.Env = v
		return nil
	}},
	{"COBRANCA_ADDR", "127.0.0.1:8080", optional, shown, "Listen address (host:port).", func(c *Config, v string) error {
		if _, _, err := net.SplitHostPort(v); err != nil {
			return fmt.Errorf("must be host:port: %v", err)
		}
		c.Addr = v
		return nil
	}},
	{"COBRANCA_ALLOWED_ORIGINS", "", optional, shown, "Comma-separated Origins (scheme://host[:port]) allowed to call /mcp from a browser. Requests with another Origin get 403.", func(c *Config, v string) error {
		list, err := splitList(v, func(s string) error {
			u, err := url.Parse(s)
			if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Path != "" || u.RawQuery != "" {
				return fmt.Errorf("%q is not an origin like https://ops.example.com", s)
			}
			return nil
		})
		c.AllowedOrigins = list
		return err
	}},
	{VarAllowedHosts, "", optional, shown, "Comma-separated Host header values accepted besides localhost, 127.0.0.1 and [::1] (any port). Behind a proxy, name the public host.", func(c *Config, v string) error {
		list, err := splitList(v, func(s string) error {
			if strings.ContainsAny(s, "/ @") {
				return fmt.Errorf("%q is not a host[:port]", s)
			}
			return nil
		})
		for i := range list {
			list[i] = strings.ToLower(list[i])
		}
		c.AllowedHosts = list
		return err
	}},
	{"COBRANCA_MAX_BODY_BYTES", "1048576", optional, shown, "Largest accepted request body in bytes; larger bodies get 413 before they are parsed.", func(c *Config, v string) error {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 1024 || n > 64<<20 {
			return errors.New("must be a whole number of bytes from 1024 to 67108864")
		}
		c.MaxBodyBytes = n
		return nil
	}},
	{"COBRANCA_LOG_LEVEL", "info", optional, shown, "`debug`, `info`, `warn` or `error`.", func(c *Config, v string) error {
		return c.LogLevel.UnmarshalText([]byte(v))
	}},
	{"COBRANCA_LOG_FORMAT", LogFormatAuto, optional, shown, "`auto` (text when the log goes to a terminal, JSON otherwise), `json` or `text`.", func(c *Config, v string) error {
		if v != LogFormatAuto && v != LogFormatJSON && v != LogFormatText {
			return errors.New(`must be "auto", "json" or "text"`)
		}
		c.LogFormat = v
		return nil
	}},
	{"COBRANCA_ISSUER", "", requiredByService, shown, "OAuth issuer whose access tokens are accepted (`iss`). Unset: development mode — a signing key kept in COBRANCA_DATA_DIR and `cobranca token`; production refuses it.", func(c *Config, v string) error {
		c.Issuer = v
		return nil
	}},
	{"COBRANCA_RESOURCE", "", requiredByService, shown, "This server's resource URL (RFC 8707), which tokens' `aud` must contain, e.g. `https://mcp.example.com/mcp`. Development default: `http://<COBRANCA_ADDR>/mcp`.", func(c *Config, v string) error {
		c.Resource = v
		return nil
	}},
	{"COBRANCA_JWKS_URL", "", optional, shown, "The issuer's JWKS; keys are cached and refetched on an unknown `kid`.", func(c *Config, v string) error {
		c.JWKSURL = v
		return nil
	}},
	{"COBRANCA_JWT_PUBLIC_KEY", "", optional, shown, "PEM file with the issuer's public key, instead of COBRANCA_JWKS_URL (air-gapped installs).", func(c *Config, v string) error {
		c.JWTPublicKey = v
		return nil
	}},
	{"COBRANCA_AGENT_CLIENT_IDS", "", optional, shown, "Comma-separated OAuth client ids whose tokens are AI agents even without an `act` claim.", func(c *Config, v string) error {
		list, err := splitList(v, func(string) error { return nil })
		c.AgentClientIDs = list
		return err
	}},
	{VarStepUpACR, "", requiredByService, shown, "Comma-separated `acr` values that satisfy step-up authentication (RFC 9470). Required in production when a served tool requires step-up (every critical one): without it step-up would mean only a recent sign-in, of any strength.", func(c *Config, v string) error {
		list, err := splitList(v, func(string) error { return nil })
		c.StepUpACR = list
		return err
	}},
	{VarRolesClaim, "roles", optional, shown, "The top-level token claim holding a person's roles (a JSON array of strings, or one space-separated string), read from access tokens and the approval page's ID tokens: deciding a critical call needs one of the roles its contract names (`approverRoles`, e.g. `collections.approver`). At most 64 roles; a token breaking the rules is refused.", asWritten(func(c *Config) *string { return &c.RolesClaim })},
	{VarAcceptJWTTyp, "false", optional, shown, "Access tokens must carry the JOSE header `typ` `at+jwt` (or `application/at+jwt`, in any case), as RFC 9068 asks, so that another kind of JWT the issuer signs (an ID token, a logout token) is never taken for one. `true` also accepts `typ` `JWT`, or none, for issuers that write that (many do: check a token's header); `false`: at+jwt only.", func(c *Config, v string) error {
		b, err := strconv.ParseBool(v)
		if err != nil || v != "true" && v != "false" {
			return errors.New(`must be "true" or "false"`)
		}
		c.AcceptJWTTyp = b
		return nil
	}},
	{VarOIDCClientID, "", required, shown, "The OAuth client id of cobranca's own web pages (the approval page) at COBRANCA_ISSUER: people sign in to them with OpenID Connect (authorization code + PKCE); register the redirect URI `<COBRANCA_PUBLIC_URL>/signin/callback` there. Required in production; development default: `cobranca-web`, the development authorization server's built-in client.", asWritten(func(c *Config) *string { return &c.OIDCClientID })},
	{VarOIDCSecret, "", optional, secret, "That client's secret, if the issuer gives it one (a confidential client); unset for a public client. Never logged.", asWritten(func(c *Config) *string { return &c.OIDCClientSecret })},
	{"COBRANCA_DATA_DIR", "./data", optional, shown, "Directory for the embedded database and development keys.", func(c *Config, v string) error {
		if v == "" {
			return errors.New("must not be empty")
		}
		c.DataDir = v
		return nil
	}},
	{"COBRANCA_MEMORY_LIMIT", "40MiB", optional, shown, "Soft memory limit of the Go runtime for `serve` (`N`, `NKiB`, `NMiB`, `NGiB`): a ceiling. The collector is paced by GOGC (400 unless set), which keeps the heap under it at the usual live heap; the collector runs hard only near it. After a burst (a spike of calls, a connection flood) the memory held beyond the live heap is given back within about 10 s.", func(c *Config, v string) error {
		n, err := parseBytes(v)
		if err != nil || n < 16<<20 {
			return errors.New("must be a size of at least 16MiB, like 48MiB or 1GiB")
		}
		c.MemoryLimit = n
		return nil
	}},
	{"COBRANCA_DEBUG_ADDR", "", optional, shown, "Loopback `ip:port` where `serve` exposes Go profiles (`/debug/pprof/`) on a listener of its own, for profiling under load; unset: no such listener. A non-loopback address is refused.", func(c *Config, v string) error {
		if v == "" {
			return nil
		}
		host, _, err := net.SplitHostPort(v)
		if err != nil {
			return fmt.Errorf("must be host:port: %v", err)
		}
		if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
			return fmt.Errorf("%q is not a loopback IP address (like 127.0.0.1 or ::1): profiles reveal the process's memory layout and must not be reachable from outside", host)
		}
		c.DebugAddr = v
		return nil
	}},
	{"COBRANCA_METRICS_ADDR", "127.0.0.1:9090", optional, shown, "`host:port` of the listener that serves Prometheus metrics at `/metrics`, or `off`. Never the public listener; loopback by default, a private address for a scraper elsewhere. Must differ from COBRANCA_ADDR.", func(c *Config, v string) error {
		if v == "off" {
			return nil
		}
		_, port, err := net.SplitHostPort(v)
		if err != nil {
			return fmt.Errorf("must be host:port or off: %v", err)
		}
		if _, addrPort, err := net.SplitHostPort(c.Addr); err == nil && port == addrPort && port != "0" {
			return fmt.Errorf("port %s is COBRANCA_ADDR's: /metrics is never served on the public listener", port)
		}
		c.MetricsAddr = v
		return nil
	}},
	{"COBRANCA_DRAIN_DELAY", "0s", optional, shown, "On SIGTERM, how long the server goes on answering requests while `/readyz` already answers 503, before it refuses new ones and finishes those in flight (README, \"Lifecycle\"): for a load balancer that learns of a stop only by polling readiness, set it to the poll interval times the failures it waits for. The platform's kill timeout must exceed it plus 20 s. A duration up to 60s; `0s`: refuse new requests at once.", durationIn(0, time.Minute, "must be a duration from 0s to 60s, like 5s", func(c *Config) *time.Duration { return &c.DrainDelay })},
	{"COBRANCA_MAX_CONNS", "1024", optional, shown, "Most connections the public listener holds open. At the cap a new connection is admitted and the one waiting longest without a complete request (not yet sent, or idle between requests) is closed; one that is being answered never is. Lowered at start to half the process's open-file limit if that is less. `0`: no cap.", func(c *Config, v string) error {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 || n > 1_000_000 || n > 0 && n < 16 {
			return errors.New("must be 0 (no cap) or a whole number from 16 to 1000000")
		}
		c.MaxConns = n
		return nil
	}},
	{VarRatePrincipal, "600/1m,burst=60", optional, shown, "Requests to /mcp per principal (subject + client), all replicas together: `N/PERIOD[,burst=B]` (PERIOD like `1s`, `1m`, `1h`; burst defaults to N) or `off`. Over it: 429 with Retry-After.", asWritten(func(c *Config) *string { return &c.RateLimits.Principal })},
	{VarRateOrigin, "1200/1m,burst=120", optional, shown, "Requests to /mcp and to download links per client IP (IPv6: per /64), checked before the token: `N/PERIOD[,burst=B]` or `off`.", asWritten(func(c *Config) *string { return &c.RateLimits.Origin })},
	{VarRateWrite, "60/1m,burst=10", optional, shown, "Calls of medium-, high- and critical-tier tools per principal (dry runs, approved retries and repeats included), one unit each, or more for a call its contract weighs by its size (its `cost`: bulk_send_reminders by the drafts it selects): `N/PERIOD[,burst=B]` or `off`. Over it: tool error `rate_limited` with `retryAfterMs`.", asWritten(func(c *Config) *string { return &c.RateLimits.Write })},
	{VarRateCritical, "10/1h,burst=3", optional, shown, "Approvals critical calls ask people for, per principal: spent once each time a call creates a pending approval (not by its dry run, polls, the approved retry or a repeat): `N/PERIOD[,burst=B]` or `off`.", asWritten(func(c *Config) *string { return &c.RateLimits.Critical })},
	{"COBRANCA_RATE_STORE_TIMEOUT", "200ms", optional, shown, "How long a rate-limit decision may wait for the store. Past it the store counts as down: medium tier and above fail closed with `unavailable`; the rest is limited locally.", durationIn(time.Millisecond, 10*time.Second, "must be a duration from 1ms to 10s, like 200ms", func(c *Config) *time.Duration { return &c.RateStoreTimeout })},
	{"COBRANCA_REPLICAS", "1", optional, shown, "How many server processes share the rate limits. While the store is down each one limits locally with 1/REPLICAS of every budget.", intIn(1, 1000, func(c *Config) *int { return &c.Replicas })},
	{VarTrustedProxy, "", optional, shown, "Header the proxy in front sets to the client's address, for the per-origin limit (e.g. `Fly-Client-IP`; for `X-Forwarded-For` the rightmost address is used). Unset: the connection's address. Set it only behind a proxy that always overwrites or appends it.", func(c *Config, v string) error {
		if strings.ContainsAny(v, " :\t,") {
			return fmt.Errorf("%q is not a header name", v)
		}
		c.TrustedProxyHeader = http.CanonicalHeaderKey(v)
		return nil
	}},
	{"COBRANCA_MAX_CONNS_PER_ADDR", "auto", optional, shown, "Most open connections of one client address (IPv6: one /64); over it a new connection is closed at once. `auto`: 64, or no cap behind a proxy (COBRANCA_TRUSTED_PROXY_HEADER set), where every connection comes from the proxy. `0`: no cap.", func(c *Config, v string) error {
		if v == "auto" {
			c.MaxConnsPerAddr = 64
			if c.TrustedProxyHeader != "" { // applied first
				c.MaxConnsPerAddr = 0
			}
			return nil
		}
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 || n > 1_000_000 {
			return errors.New("must be auto, 0 (no cap) or a whole number up to 1000000")
		}
		c.MaxConnsPerAddr = n
		return nil
	}},
	{"COBRANCA_DATABASE_URL", "", optional, secretURL, "`postgres://USER:PASSWORD@HOST/DB` for PostgreSQL; unset or `sqlite:PATH` for the embedded SQLite database (default `cobranca.db` in COBRANCA_DATA_DIR).", func(c *Config, v string) error {
		if path, ok := strings.CutPrefix(v, "sqlite:"); ok {
			if path == "" {
				return errors.New("sqlite: needs a path, like sqlite:/var/lib/cobranca/cobranca.db")
			}
		} else if !strings.HasPrefix(v, "postgres://") && !strings.HasPrefix(v, "postgresql://") {
			return errors.New("must be a postgres:// or postgresql:// URL, or sqlite:PATH")
		}
		c.DatabaseURL = v
		return nil
	}},
	{"COBRANCA_AUTO_MIGRATE", "auto", optional, shown, "Apply pending migrations when `serve` starts: `true`, `false`, or `auto` (on in development, off in production, where `cobranca migrate` runs them as the owner role).", func(c *Config, v string) error {
		if v == "auto" {
			c.AutoMigrate = !c.Production() // COBRANCA_ENV is applied first
			return nil
		}
		b, err := strconv.ParseBool(v)
		if err != nil {
			return errors.New("must be true, false or auto")
		}
		c.AutoMigrate = b
		return nil
	}},
	{"COBRANCA_DATABASE_POOLER", "none", optional, shown, "`transaction` when COBRANCA_DATABASE_URL reaches PostgreSQL through a pooler in transaction mode (PgBouncer's `pool_mode = transaction`): River then polls for jobs (no LISTEN), and the URL must carry `default_query_exec_mode=cache_describe` (or `exec`), which keeps pgx from named prepared statements. Migrations go straight to PostgreSQL (`cobranca migrate`), so COBRANCA_AUTO_MIGRATE must be false. `none`: a direct connection. See docs/operations.md, PgBouncer.", func(c *Config, v string) error {
		switch v {
		case "none":
			return nil
		case "transaction":
		default:
			return errors.New("must be none or transaction")
		}
		// COBRANCA_DATABASE_URL and COBRANCA_AUTO_MIGRATE are applied first.
		if !strings.HasPrefix(c.DatabaseURL, "postgres://") && !strings.HasPrefix(c.DatabaseURL, "postgresql://") {
			return errors.New("transaction needs a postgres:// COBRANCA_DATABASE_URL")
		}
		if !pooledExecMode(c.DatabaseURL) {
			return errors.New("transaction needs default_query_exec_mode=cache_describe (or describe_exec, exec, simple_protocol) in COBRANCA_DATABASE_URL: a pooler in transaction mode loses named prepared statements between transactions")
		}
		if c.AutoMigrate {
			return errors.New("transaction needs COBRANCA_AUTO_MIGRATE=false: migrations take a session lock, so run cobranca migrate with a URL straight to PostgreSQL")
		}
		c.TransactionPooler = true
		return nil
	}},
	{"COBRANCA_AUDIT_KEY", "", required, secret, "Secret key (at least 32 bytes) of the audit log's HMAC digests of arguments and results and, through a derived key, of every event's MAC (`cobranca audit verify` needs it). A comma-separated list rotates it: the first key seals new events, the others are earlier keys whose events `audit verify` still checks (see docs/operations.md, Key rotation; `cobranca audit rotate-key`). Required in production; development generates one in COBRANCA_DATA_DIR.", func(c *Config, v string) error {
		keys := strings.Split(v, ",")
		seen := make(map[string]bool, len(keys))
		for i, k := range keys {
			if len(k) < 32 {
				return fmt.Errorf("key %d of %d must be at least 32 bytes", i+1, len(keys))
			}
			if seen[k] {
				return fmt.Errorf("key %d of %d is given twice", i+1, len(keys))
			}
			seen[k] = true
		}
		c.AuditKey, c.AuditOldKeys = keys[0], keys[1:]
		return nil
	}},
	{VarStateKeys, "", required, secret, "Keys that seal the request state of an in-band confirmation (HMAC-SHA256), so that any replica opens it: comma-separated `id:secret` entries, the first the current key and the others still accepted while states sealed under them live (rotation: docs/operations.md, Key rotation). id is 1–16 of `[A-Za-z0-9._-]`; secret at least 32 bytes. They also seal the pages' sign-in cookie (10 minutes). Required in production; development generates one in COBRANCA_DATA_DIR.", asWritten(func(c *Config) *string { return &c.RequestStateKeys })},
	{"COBRANCA_FASTPATH", "on", optional, shown, "`on` lets the MCP endpoint answer plain calls of the bulk low-tier tool itself, byte for byte as go-sdk would and through the same pipeline; `off` sends every request to go-sdk (a switch for production, should the fast path ever misbehave).", func(c *Config, v string) error {
		switch v {
		case "on":
			c.FastPath = true
		case "off":
			c.FastPath = false
		default:
			return errors.New("must be on or off")
		}
		return nil
	}},
	{"COBRANCA_AUDIT_SIGNING_KEY", "", optional, shown, "Ed25519 private key file (PEM, PKCS #8) that signs `cobranca audit checkpoint`; created if missing. Default `audit-signing.pem` in COBRANCA_DATA_DIR.", func(c *Config, v string) error {
		c.AuditSigningKey = v
		return nil
	}},
	{VarAuditSpoolMax, "64MiB", optional, shown, "Bound of the audit spool, the file `audit-spool` in COBRANCA_DATA_DIR that keeps the audit events of low-tier calls answered while the database is down, until it is back (`N`, `NKiB`, `NMiB`, `NGiB`; at least 64KiB). An event is about 600 bytes. Events that do not fit are lost and counted in a gap event.", func(c *Config, v string) error {
		n, err := parseBytes(v)
		if err != nil || n == 0 {
			return errors.New("must be a size, like 64MiB or 1GiB")
		}
		c.AuditSpoolMax = n // its least bound is the spool's: cmd/cobranca checks it
		return nil
	}},
	{"COBRANCA_IDEMPOTENCY_TTL", "24h", optional, shown, "How long a tool call with side effects is remembered under its `idempotencyKey`: a retry with the same key and arguments within it gets the stored answer and causes nothing new; past it the key is free again. A Go duration from `1m` to `720h` (30 days).", durationIn(time.Minute, 30*24*time.Hour, "must be a duration from 1m to 720h (30 days), like 24h", func(c *Config) *time.Duration { return &c.IdempotencyTTL })},
	{"COBRANCA_APPROVAL_TTL", "15m", optional, shown, "How long a critical call's approval lives: a person must approve the exact call, and the agent retry it, within it; past it the approval reads `expired` and the retry gets `approval_expired`. A Go duration from `1m` to `24h`.", durationIn(time.Minute, 24*time.Hour, "must be a duration from 1m to 24h, like 15m", func(c *Config) *time.Duration { return &c.ApprovalTTL })},
	{"COBRANCA_MAX_FILE_BYTES", "20MiB", optional, shown, "Largest file `cobranca files add` stores (`N`, `NKiB`, `NMiB`, `NGiB`; from 1KiB to 512MiB). A larger one is refused with `file_too_large` before it is read whole.", func(c *Config, v string) error {
		n, err := parseBytes(v)
		if err != nil || n < 1<<10 || n > 512<<20 {
			return errors.New("must be a size from 1KiB to 512MiB, like 20MiB")
		}
		c.MaxFileBytes = n
		return nil
	}},
	{VarLinkKeys, "", required, secret, "Keys that sign download links (HMAC-SHA256 over the link id, the file id and the expiry; the key's id is in the URL): comma-separated `id:secret` entries, the first the current key and the others still accepted (rotation: docs/operations.md, Key rotation). Rules as COBRANCA_REQUEST_STATE_KEYS. Required in production; development generates one in COBRANCA_DATA_DIR (`link.key`).", asWritten(func(c *Config) *string { return &c.LinkKeys })},
	{VarPublicURL, "", required, shown, "The server's public base URL, which download links, approval pages and sign-in redirects point at (`https://cobranca.example.com`). Required in production, and https there; development default: `http://<COBRANCA_ADDR>`, and in development it is also the issuer of the development authorization server.", func(c *Config, v string) error {
		// The URL's shape is the links' rule (files.NewLinks, checked by
		// cmd/cobranca); https in production is the deployment's.
		if scheme, _, _ := strings.Cut(v, ":"); c.Production() && !strings.EqualFold(scheme, "https") { // COBRANCA_ENV is applied first
			return errors.New("must be https in production: a download link is a credential")
		}
		c.PublicURL = v
		return nil
	}},
	{VarSMTPURL, "", required, secretURL, "Where e-mail is delivered: `smtp://USER:PASSWORD@HOST:587` (STARTTLS required; port 587 by default), `smtps://USER:PASSWORD@HOST` (implicit TLS; 465), or `smtp://HOST:25?starttls=off` for a local relay without TLS. The password is never logged. Unset: messages are written as `.eml` files in COBRANCA_DATA_DIR/outbox/ (development); required in production. See \"E-mail delivery\".", asWritten(func(c *Config) *string { return &c.SMTPURL })},
	{VarMailFrom, "", required, shown, "The address e-mail is sent from (`cobranca@example.com`, bare); its domain ends every Message-ID. Required in production; development default: `cobranca@localhost`.", asWritten(func(c *Config) *string { return &c.MailFrom })},
	{"COBRANCA_MAIL_WORKERS", "16", optional, shown, "How many messages this process sends at once, each on an SMTP connection of its own: lower it to what the mail server accepts from one client (all replicas together send REPLICAS times as many). See \"E-mail delivery\".", intIn(1, 256, func(c *Config) *int { return &c.MailWorkers })},
	{"COBRANCA_MAIL_RESCUE_AFTER", "1h", optional, shown, "How long a message may stay in the sending before it counts as lost — its process died between taking it and recording it — and is sent again, under the same Message-ID (one send is also cut off after half as long, or after 1m if that is less, so that it is recorded before it could count as lost). A duration from 1s to 24h. See \"E-mail delivery\".", durationIn(time.Second, 24*time.Hour, "must be a duration from 1s to 24h, like 10m", func(c *Config) *time.Duration { return &c.MailRescueAfter })},
	{VarApproverEmails, "", optional, shown, "Who is told by e-mail, through the outbox, when a critical call's approval waits: bare addresses separated by commas (`ana@example.com,rui@example.com`). The message carries the approval's link, tool, requester, times and counts, never customer data. Unset: no e-mail. See \"Approvers told\".", func(c *Config, v string) error {
		list, err := splitList(v, func(string) error { return nil })
		if len(list) == 0 {
			return errors.New("names no address: unset it, or list bare addresses separated by commas")
		}
		if len(list) > 50 {
			return errors.New("must list at most 50 addresses: use a mailing list for more")
		}
		c.ApproverEmails = list
		return err
	}},
	{VarWebhookURL, "", optional, secret, "Where a JSON notification (`{\"text\": …}`, what Slack, Microsoft Teams and Google Chat incoming webhooks accept) is posted when an approval waits, signed with COBRANCA_APPROVAL_WEBHOOK_SECRET. An `https://` URL (`http://` only in development). Never logged: such URLs carry their credential. Unset: no webhook. See \"Approvers told\".", func(c *Config, v string) error {
		u, err := url.Parse(v)
		if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.User != nil || u.Fragment != "" {
			// The value is not quoted: its path may be the webhook's credential.
			return errors.New("must be an https:// URL without user info or fragment")
		}
		if u.Scheme == "http" && c.Production() { // COBRANCA_ENV is applied first
			return errors.New("must be https:// in production")
		}
		c.ApprovalWebhookURL = v
		return nil
	}},
	{VarWebhookSecret, "", optional, secret, "Key (at least 32 bytes) of the HMAC-SHA256 signature of every webhook post: header `X-Cobranca-Signature: sha256=<hex>` over `<X-Cobranca-Timestamp>.<body>`. Required with COBRANCA_APPROVAL_WEBHOOK_URL. Never logged.", func(c *Config, v string) error {
		if len(v) < 32 {
			return errors.New("must be at least 32 bytes")
		}
		c.ApprovalWebhookSecret = v
		return nil
	}},
	{"COBRANCA_APPROVAL_DIGEST_AFTER", "10", optional, shown, "How many approvals of one digest window (COBRANCA_APPROVAL_DIGEST_WINDOW) the approvers are told of one by one; those created after them in the window are told together, in one digest at the window's end. A whole number from 1 to 1000.", intIn(1, 1000, func(c *Config) *int { return &c.ApprovalDigestAfter })},
	{"COBRANCA_APPROVAL_DIGEST_WINDOW", "10m", optional, shown, "The length of a digest window, aligned to the clock (`10m`: windows start at :00, :10, :20…). A duration from 1m to 1h, shorter than COBRANCA_APPROVAL_TTL is best: a digest comes at its window's end.", durationIn(time.Minute, time.Hour, "must be a duration from 1m to 1h, like 10m", func(c *Config) *time.Duration { return &c.ApprovalDigestWindow })},
	{VarNotifyLanguage, "pt-BR", optional, shown, "The language of the approvers' e-mails and webhook posts: `pt-BR` (Portuguese, times in Brasília's) or `en` (English, times in UTC). See \"Approvers told\".", func(c *Config, v string) error {
		for _, lang := range []string{"pt-BR", "en"} {
			if strings.EqualFold(v, lang) {
				c.NotifyLanguage = lang
				return nil
			}
		}
		return errors.New("must be pt-BR or en")
	}},
	{VarOTLPEndpoint, "", optional, secretURL, "Base URL of the OpenTelemetry collector that receives traces over OTLP/HTTP (protobuf), e.g. `http://otel-collector:4318`: spans go to its `/v1/traces`. Unset: no tracing, at no cost. See \"Tracing\".", func(c *Config, v string) error {
		u, err := url.Parse(v)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
			return errors.New("must be an http:// or https:// URL like http://otel-collector:4318, without credentials (they go in OTEL_EXPORTER_OTLP_HEADERS), query or fragment")
		}
		c.OTLPEndpoint = v
		return nil
	}},
	{VarOTLPHeaders, "", optional, secret, "Headers sent with every export of traces, `key=value` pairs separated by commas, values percent-encoded (a hosted collector's API key: `x-api-key=SECRET`). Never logged.", func(c *Config, v string) error {
		c.OTLPHeaders = map[string]string{}
		for i, kv := range strings.Split(v, ",") {
			k, val, ok := strings.Cut(kv, "=")
			k = strings.TrimSpace(k)
			dec, err := url.PathUnescape(strings.TrimSpace(val))
			if !ok || k == "" || strings.ContainsAny(k, " \t\"(),/:;<=>?@[\\]{}") || err != nil {
				// The entry is not quoted: it may hold a secret.
				return fmt.Errorf("entry %d is not key=value with a header name and a percent-encoded value", i+1)
			}
			c.OTLPHeaders[k] = dec
		}
		return nil
	}},
	{VarOTLPTimeout, "10000", optional, shown, "How long one request exporting a batch of spans to the collector may take, in milliseconds: a whole number from 1 to 600000 (10 minutes). A request that takes longer is abandoned and counts as a failed export. Only with OTEL_EXPORTER_OTLP_ENDPOINT: set without it, it is refused.", func(c *Config, v string) error {
		ms, err := strconv.Atoi(v)
		if err != nil || ms < 1 || ms > 600000 {
			return errors.New("must be a whole number of milliseconds from 1 to 600000, like 10000")
		}
		c.OTLPTimeout = time.Duration(ms) * time.Millisecond
		return nil
	}},
	{VarOTLPCompress, CompressionNone, optional, shown, "How export requests' bodies are sent: `" + CompressionGzip + "` (compressed; `Content-Encoding: gzip`) or `" + CompressionNone + "`. Only with OTEL_EXPORTER_OTLP_ENDPOINT: set without it, it is refused.", func(c *Config, v string) error {
		if v != CompressionGzip && v != CompressionNone {
			return fmt.Errorf("must be %s or %s", CompressionGzip, CompressionNone)
		}
		c.OTLPCompression = v
		return nil
	}},
	{VarOTLPCert, "", optional, shown, "Path of a PEM file of CA certificates to trust, instead of the system's, for an `https://` OTEL_EXPORTER_OTLP_ENDPOINT (a collector with a private CA). Read at start: it must be readable and hold at least one certificate. Refused without an endpoint or with an `http://` one.", func(c *Config, v string) error {
		b, err := os.ReadFile(v)
		if err != nil {
			return fmt.Errorf("cannot read the CA certificates: %w", err)
		}
		if !x509.NewCertPool().AppendCertsFromPEM(b) {
			return fmt.Errorf("%s holds no PEM certificate (-----BEGIN CERTIFICATE-----)", v)
		}
		c.OTLPCertificate, c.OTLPRootCAs = v, b
		return nil
	}},
	{"OTEL_SERVICE_NAME", "cobranca", optional, shown, "The traces' `service.name`: name each deployment (`cobranca-staging`) to tell them apart in the tracing backend. Its `service.version` is the build's (`cobranca version`).", asWritten(func(c *Config) *string { return &c.ServiceName })},
	{"OTEL_TRACES_SAMPLER", SamplerParentOn, optional, shown, "Which requests are traced: `" + SamplerParentOn + "` (every one, unless the caller's W3C `traceparent` says it is not sampled), `" + SamplerParentRatio + "` (the caller's decision, else a ratio), `" + SamplerAlwaysOn + "` or `" + SamplerRatio + "` (ignore the caller's: a client cannot make you trace more).", func(c *Config, v string) error {
		switch v {
		case SamplerAlwaysOn, SamplerRatio, SamplerParentOn, SamplerParentRatio:
			c.TraceSampler = v
			return nil
		}
		return fmt.Errorf("must be %s, %s, %s or %s", SamplerParentOn, SamplerParentRatio, SamplerAlwaysOn, SamplerRatio)
	}},
	{"OTEL_TRACES_SAMPLER_ARG", "1", optional, shown, "The ratio of requests traced by the ratio samplers, from 0 to 1 (`0.05`: one in twenty).", func(c *Config, v string) error {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || !(f >= 0 && f <= 1) {
			return errors.New("must be a number from 0 to 1, like 0.05")
		}
		c.TraceSamplerArg = f
		return nil
	}},
	{VarSDKDisabled, "false", optional, shown, "`true` turns tracing off even with OTEL_EXPORTER_OTLP_ENDPOINT set (the OpenTelemetry off switch; the other OTEL_* variables are still checked); `false`: tracing as OTEL_EXPORTER_OTLP_ENDPOINT says.", func(c *Config, v string) error {
		switch strings.ToLower(v) {
		case "true":
			c.TracingDisabled = true
		case "false":
			c.TracingDisabled = false
		default:
			return errors.New(`must be "true" or "false"`)
		}
		return nil
	}},
	{VarContactPacing, "0", optional, shown, "Least time between two contacts of one customer: `collections.analyze_portfolio` gives an account `nextContactAfter` (the customer's `lastContactedAt` plus this) when that is later than the start of `asOf`; the account stays in the queue. A Go duration (`72h`) or whole days (`3d`), at most 365 days; `0`: no pacing. `cobranca analyze --pacing` defaults to it.", func(c *Config, v string) error {
		d, err := ParsePacing(v)
		c.ContactPacing = d
		return err
	}},
	{VarLedgerRequired, "false", optional, shown, "`true`: a reminder may name only invoices the receivables ledger knows — `collections.prepare_reminder` refuses an invoice it does not know (`invoice_not_found`), and `collections.send_reminder` and `collections.bulk_send_reminders` refuse (or skip) a draft naming one — so that every send checks that each invoice is still owed. `false`: such an invoice is marked \"not in the ledger — payment cannot be checked\" in previews and sent unchecked. The production templates set it.", func(c *Config, v string) error {
		if v != "true" && v != "false" {
			return errors.New(`must be "true" or "false"`)
		}
		c.LedgerRequired = v == "true"
		return nil
	}},
	{VarPixKey, "", optional, shown, "The PIX key payments go to: every reminder in BRL then carries a PIX code (copia-e-cola and QR) for its open amount, with a txid that names the draft so the payment matches its invoices. One of the five kinds: CPF or CNPJ (numeric or alphanumeric, punctuation allowed: `12.ABC.345/01DE-35`; check digits verified), e-mail (at most 77 characters), phone `+55` DDD number, or the random key (UUID). Needs COBRANCA_PIX_MERCHANT_NAME and COBRANCA_PIX_MERCHANT_CITY. Unset: no PIX codes. An invalid key stops the start.", asWritten(func(c *Config) *string { return &c.PixKey })},
	{VarPixName, "", optional, shown, "The receiving account's name, as the payer's bank app shows it before paying: 1 to 25 characters of printable ASCII (no accents), no space at either end. Only with COBRANCA_PIX_KEY.", asWritten(func(c *Config) *string { return &c.PixMerchantName })},
	{VarPixCity, "", optional, shown, "The receiving account's city (`SAO PAULO`): 1 to 15 characters of printable ASCII (no accents), no space at either end. Only with COBRANCA_PIX_KEY.", asWritten(func(c *Config) *string { return &c.PixMerchantCity })},
}

// MaxContactPacing bounds COBRANCA_CONTACT_PACING.
const MaxContactPacing = 365 * 24 * time.Hour

// ParsePacing reads a contact pacing as COBRANCA_CONTACT_PACING writes it:
// a Go duration (72h, 36h30m) or whole days (3d), from 0 (no pacing) to
// MaxContactPacing.
func ParsePacing(v string) (time.Duration, error) {
	bad := errors.New("must be a duration like 72h or whole days like 3d, from 0 (no pacing) to 365d")
	var d time.Duration
	if days, ok := strings.CutSuffix(v, "d"); ok {
		n, err := strconv.Atoi(days)
		if err != nil || n < 0 || n > int(MaxContactPacing/(24*time.Hour)) || days != strconv.Itoa(n) {
			return 0, bad
		}
		d = time.Duration(n) * 24 * time.Hour
	} else {
		var err error
		if d, err = time.ParseDuration(v); err != nil {
			return 0, bad
		}
	}
	if d < 0 || d > MaxContactPacing {
		return 0, bad
	}
	return d, nil
}

// Load builds a Config from environ (as os.Environ returns it): the
// COBRANCA_* variables and the OTEL_* ones the table names. Unknown
// COBRANCA_* variables, unknown OTEL_* ones set to a value (the exporter and
// the SDK would read some of them unchecked; see otelUnknown) and invalid
// values are errors naming the variable; all of them are reported together.
// The rules that belong to a service are not checked here (see the package
// comment).
func Load(environ []string) (Config, error) {
	set := map[string]string{}
	for _, kv := range environ {
		k, v, ok := strings.Cut(kv, "=")
		if ok && (strings.HasPrefix(k, "COBRANCA_") || strings.HasPrefix(k, "OTEL_")) {
			set[k] = v
		}
	}
	given := maps.Clone(set)
	c := Config{read: make([]string, len(variables))}
	var errs, missing []error
	for i, v := range variables {
		val, ok := set[v.name]
		if !ok || val == "" {
			val = v.def
		}
		delete(set, v.name)
		c.read[i] = val
		if val == "" && v.need == required {
			missing = append(missing, errors.New(v.name+": required in production ("+requiredBecause[v.name]+")"))
		}
		if val == "" && v.def == "" {
			continue
		}
		if err := v.apply(&c, val); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", v.name, err))
		}
	}
	// The exporter's settings do nothing without an endpoint, and a
	// certificate nothing without TLS: a setting that does nothing is a
	// mistake (a forgotten endpoint, a misspelt scheme), not a default.
	for _, name := range []string{VarOTLPHeaders, VarOTLPTimeout, VarOTLPCompress, VarOTLPCert} {
		if given[name] == "" {
			continue
		}
		if given[VarOTLPEndpoint] == "" {
			errs = append(errs, fmt.Errorf("%s: set without %s, where it does nothing: set the endpoint, or unset it", name, VarOTLPEndpoint))
		} else if u, err := url.Parse(c.OTLPEndpoint); name == VarOTLPCert && err == nil && u.Scheme == "http" {
			errs = append(errs, fmt.Errorf("%s: the endpoint %s is http://, where CA certificates do nothing: use https://, or unset it", name, VarOTLPEndpoint))
		}
	}
	unknown := make([]string, 0, len(set))
	for k, v := range set {
		// An OTEL_* variable set empty is unset, as OpenTelemetry reads it.
		if strings.HasPrefix(k, "COBRANCA_") || v != "" {
			unknown = append(unknown, k)
		}
	}
	slices.Sort(unknown)
	for _, k := range unknown {
		if strings.HasPrefix(k, "OTEL_") {
			errs = append(errs, fmt.Errorf("%s: %s", k, otelUnknown(k)))
			continue
		}
		errs = append(errs, fmt.Errorf("%s: unknown variable (see docs/configuration.md)", k))
	}
	// A webhook post unsigned would be one anybody could forge; a key alone does nothing.
	switch {
	case given[VarWebhookURL] != "" && given[VarWebhookSecret] == "":
		errs = append(errs, fmt.Errorf("%s: required with %s: every post is signed with it", VarWebhookSecret, VarWebhookURL))
	case given[VarWebhookURL] == "" && given[VarWebhookSecret] != "":
		errs = append(errs, fmt.Errorf("%s: set without %s, where it does nothing: set the URL, or unset it", VarWebhookSecret, VarWebhookURL))
	}
	if c.Production() {
		errs = append(errs, missing...)
	}
	return c, errors.Join(errs...)
}

// otelHints say what to do instead of setting an OpenTelemetry variable
// cobranca refuses, for those an operator is likely to try.
var otelHints = map[string]string{
	"OTEL_EXPORTER_OTLP_PROTOCOL": "cobranca exports traces over OTLP/HTTP as protobuf only",
	"OTEL_EXPORTER_OTLP_INSECURE": "the endpoint's scheme decides: http:// or https://",
	"OTEL_RESOURCE_ATTRIBUTES":    "the traces' resource is service.name (OTEL_SERVICE_NAME) and service.version (the build's)",
}

// otelUnknown is the error of an OTEL_* variable the table does not name.
// cobranca refuses them all, set to a value: the exporter and the SDK read
// several on their own (OTEL_EXPORTER_OTLP_TRACES_*, _PROTOCOL, _INSECURE,
// _CLIENT_CERTIFICATE, OTEL_BSP_*, the OTEL_*_LIMIT span limits,
// OTEL_RESOURCE_ATTRIBUTES, OTEL_GO_X_*…), and the others would be silently
// ignored; either way the server would not do what the operator asked, and
// nothing would say so.
func otelUnknown(name string) string {
	var read []string
	for _, v := range variables {
		if strings.HasPrefix(v.name, "OTEL_") {
			read = append(read, v.name)
		}
	}
	msg := "unknown variable: cobranca reads only " + strings.Join(read, ", ") + " (see docs/configuration.md)"
	generic := name
	if rest, ok := strings.CutPrefix(name, "OTEL_EXPORTER_OTLP_TRACES_"); ok {
		generic = "OTEL_EXPORTER_OTLP_" + rest
	}
	switch {
	case generic == VarOTLPEndpoint:
		return msg + "; use " + VarOTLPEndpoint + ", the collector's base URL: spans go to its /v1/traces"
	case generic != name && slices.Contains(read, generic):
		return msg + "; use " + generic + ", which is cobranca's for its traces"
	case otelHints[generic] != "":
		return msg + "; " + otelHints[generic]
	}
	return msg
}

// asWritten keeps a value as written, for a rule that belongs to a service
// (see the package comment).
func asWritten(field func(c *Config) *string) func(c *Config, v string) error {
	return func(c *Config, v string) error {
		*field(c) = v
		return nil
	}
}

// durationIn parses a Go duration from lo to hi into field; msg says what
// it must be.
// intIn sets field to a whole number from lo to hi.
func intIn(lo, hi int, field func(c *Config) *int) func(c *Config, v string) error {
	return func(c *Config, v string) error {
		n, err := strconv.Atoi(v)
		if err != nil || n < lo || n > hi {
			return fmt.Errorf("must be a whole number from %d to %d", lo, hi)
		}
		*field(c) = n
		return nil
	}
}

func durationIn(lo, hi time.Duration, msg string, field func(c *Config) *time.Duration) func(c *Config, v string) error {
	return func(c *Config, v string) error {
		d, err := time.ParseDuration(v)
		if err != nil || d < lo || d > hi {
			return errors.New(msg)
		}
		*field(c) = d
		return nil
	}
}

func splitList(v string, check func(string) error) ([]string, error) {
	var out []string
	var errs []error
	for _, s := range strings.Split(v, ",") {
		s = strings.TrimSpace(s)
		if s == "" {
			continue
		}
		if err := check(s); err != nil {
			errs = append(errs, err)
			continue
		}
		out = append(out, s)
	}
	return out, errors.Join(errs...)
}

// parseBytes reads a size written N, NKiB, NMiB or NGiB.
func parseBytes(v string) (int64, error) {
	mult := int64(1)
	for _, u := range []struct {
		suffix string
		mult   int64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}} {
		if n, ok := strings.CutSuffix(v, u.suffix); ok {
			v, mult = n, u.mult
			break
		}
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 || n > (1<<50)/mult {
		return 0, errors.New("not a size")
	}
	return n * mult, nil
}

// pooledExecMode reports whether postgres URL u names one of pgx's query exec modes that
// prepare no named statement (default_query_exec_mode), as a pooler in transaction mode needs:
// the default, cache_statement, prepares statements on one server connection and runs them on
// whichever the pooler hands out next.
func pooledExecMode(u string) bool {
	p, err := url.Parse(u)
	if err != nil {
		return false
	}
	switch p.Query().Get("default_query_exec_mode") {
	case "cache_describe", "describe_exec", "exec", "simple_protocol":
		return true
	}
	return false
}
