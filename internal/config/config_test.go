package config

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"log/slog"
	"math/big"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func TestLoadDefaults(t *testing.T) {
	c, err := Load([]string{"PATH=/usr/bin", "HOME=/root"})
	if err != nil {
		t.Fatal(err)
	}
	want := Config{Env: "development", Addr: "127.0.0.1:8080", MaxBodyBytes: 1 << 20, LogLevel: slog.LevelInfo, LogFormat: "auto", DataDir: "./data", MemoryLimit: 40 << 20,
		MetricsAddr: "127.0.0.1:9090", MaxConns: 1024, MaxConnsPerAddr: 64,
		RateLimits:       RateSpecs{Principal: "600/1m,burst=60", Origin: "1200/1m,burst=120", Write: "60/1m,burst=10", Critical: "10/1h,burst=3"},
		RateStoreTimeout: 200 * time.Millisecond, Replicas: 1, AutoMigrate: true,
		AuditSpoolMax: 64 << 20, FastPath: true, IdempotencyTTL: 24 * time.Hour, ApprovalTTL: 15 * time.Minute, MaxFileBytes: 20 << 20, RolesClaim: "roles", MailWorkers: 16, MailRescueAfter: time.Hour,
		ApprovalDigestAfter: 10, ApprovalDigestWindow: 10 * time.Minute, NotifyLanguage: "pt-BR",
		ServiceName: "cobranca", TraceSampler: SamplerParentOn, TraceSamplerArg: 1, OTLPTimeout: 10 * time.Second, OTLPCompression: CompressionNone}
	if diff := cmp.Diff(want, c, cmpopts.IgnoreUnexported(Config{})); diff != "" {
		t.Errorf("Load(defaults) (-want +got):\n%s", diff)
	}
}

func TestLoadValues(t *testing.T) {
	c, err := Load([]string{
		"COBRANCA_ADDR=0.0.0.0:9000",
		"COBRANCA_ALLOWED_ORIGINS=https://ops.example.com, http://localhost:3000",
		"COBRANCA_ALLOWED_HOSTS=MCP.example.com",
		"COBRANCA_MAX_BODY_BYTES=2048",
		"COBRANCA_ENV=production",
		"COBRANCA_LOG_LEVEL=debug",
		"COBRANCA_LOG_FORMAT=text",
		"COBRANCA_ISSUER=https://idp.example.com",
		"COBRANCA_RESOURCE=https://mcp.example.com/mcp",
		"COBRANCA_JWKS_URL=https://idp.example.com/jwks.json",
		"COBRANCA_AGENT_CLIENT_IDS=ledger-bot, collector-bot",
		"COBRANCA_STEPUP_ACR=urn:cobranca:mfa",
		"COBRANCA_AUDIT_KEY=0123456789abcdef0123456789abcdef",
		"COBRANCA_REQUEST_STATE_KEYS=k2:0123456789abcdef0123456789abcdef,k1:fedcba9876543210fedcba9876543210",
		"COBRANCA_FASTPATH=off",
		"COBRANCA_LINK_KEYS=l1:0123456789abcdef0123456789abcdef",
		"COBRANCA_PUBLIC_URL=https://cobranca.example.com/",
		"COBRANCA_MAX_FILE_BYTES=1MiB",
		"COBRANCA_SMTP_URL=smtp://mailer:pw@mail.example.com:587",
		"COBRANCA_MAIL_FROM=cobranca@example.com",
		"COBRANCA_OIDC_CLIENT_ID=cobranca-pages",
		"COBRANCA_OIDC_CLIENT_SECRET=s3cret-of-the-pages",
	})
	if err != nil {
		t.Fatal(err)
	}
	if c.OIDCClientID != "cobranca-pages" || c.OIDCClientSecret != "s3cret-of-the-pages" {
		t.Errorf("OIDCClientID %q, OIDCClientSecret set %t", c.OIDCClientID, c.OIDCClientSecret != "")
	}
	if c.LinkKeys != "l1:0123456789abcdef0123456789abcdef" || c.PublicURL != "https://cobranca.example.com/" || c.MaxFileBytes != 1<<20 {
		t.Errorf("LinkKeys set %t, PublicURL %q, MaxFileBytes %d", c.LinkKeys != "", c.PublicURL, c.MaxFileBytes)
	}
	if c.FastPath || !strings.HasPrefix(c.RequestStateKeys, "k2:") {
		t.Errorf("FastPath = %v, RequestStateKeys as written = %t", c.FastPath, strings.HasPrefix(c.RequestStateKeys, "k2:"))
	}
	if c.Addr != "0.0.0.0:9000" || !c.Production() || c.MaxBodyBytes != 2048 || c.LogLevel != slog.LevelDebug || c.LogFormat != "text" {
		t.Errorf("Load = %+v", c)
	}
	if diff := cmp.Diff([]string{"https://ops.example.com", "http://localhost:3000"}, c.AllowedOrigins); diff != "" {
		t.Errorf("AllowedOrigins (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"mcp.example.com"}, c.AllowedHosts); diff != "" {
		t.Errorf("AllowedHosts (-want +got):\n%s", diff)
	}
}

// TestLoadErrors: every problem is reported at once, each naming its variable.
func TestLoadErrors(t *testing.T) {
	_, err := Load([]string{
		"COBRANCA_ADDR=8080",
		"COBRANCA_MAX_BODY_BYTES=lots",
		"COBRANCA_ALLOWED_ORIGINS=ops.example.com",
		"COBRANCA_ENV=staging",
		"COBRANCA_LOG_LEVEL=loud",
		"COBRANCA_LOG_FORMAT=xml",
		"COBRANCA_ADRR=127.0.0.1:1",
		"COBRANCA_AUDIT_SPOOL_MAX=0",
	})
	if err == nil {
		t.Fatal("Load accepted invalid values")
	}
	for _, name := range []string{"COBRANCA_ADDR:", "COBRANCA_MAX_BODY_BYTES:", "COBRANCA_ALLOWED_ORIGINS:", "COBRANCA_ENV:", "COBRANCA_LOG_LEVEL:", "COBRANCA_LOG_FORMAT:", "COBRANCA_ADRR: unknown variable", "COBRANCA_AUDIT_SPOOL_MAX:"} {
		if !strings.Contains(err.Error(), name) {
			t.Errorf("error does not name %s:\n%v", name, err)
		}
	}
}

// TestConfigDocListsEveryVariable keeps docs/configuration.md's table honest.
func TestConfigDocListsEveryVariable(t *testing.T) {
	doc, err := os.ReadFile("../../docs/configuration.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range Variables() {
		if !strings.Contains(string(doc), "| `"+v[0]+"` |") {
			t.Errorf("docs/configuration.md has no configuration table row for %s", v[0])
		}
	}
}

// TestRateLimitVariables: the budgets are kept as written (cmd/cobranca
// parses them with the limiter's syntax); the other rate-limit settings are
// checked here.
func TestRateLimitVariables(t *testing.T) {
	c, err := Load([]string{
		"COBRANCA_RATE_PRINCIPAL=off", "COBRANCA_RATE_WRITE=5/s,burst=2", "COBRANCA_REPLICAS=3",
		"COBRANCA_RATE_STORE_TIMEOUT=50ms", "COBRANCA_TRUSTED_PROXY_HEADER=fly-client-ip",
	})
	if err != nil {
		t.Fatal(err)
	}
	want := RateSpecs{Principal: "off", Origin: "1200/1m,burst=120", Write: "5/s,burst=2", Critical: "10/1h,burst=3"}
	if c.RateLimits != want || c.RateStoreTimeout != 50*time.Millisecond || c.Replicas != 3 || c.TrustedProxyHeader != "Fly-Client-Ip" {
		t.Errorf("Load = %+v, %v, %d, %q; want %+v, 50ms, 3, Fly-Client-Ip", c.RateLimits, c.RateStoreTimeout, c.Replicas, c.TrustedProxyHeader, want)
	}
	_, err = Load([]string{"COBRANCA_REPLICAS=0", "COBRANCA_RATE_STORE_TIMEOUT=1m", "COBRANCA_TRUSTED_PROXY_HEADER=X Forwarded"})
	for _, name := range []string{"COBRANCA_REPLICAS", "COBRANCA_RATE_STORE_TIMEOUT", "COBRANCA_TRUSTED_PROXY_HEADER"} {
		if err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("error does not name %s: %v", name, err)
		}
	}
}

func TestStoreVariables(t *testing.T) {
	const key = "0123456789abcdef0123456789abcdef"
	tests := []struct {
		name    string
		env     []string
		want    func(c Config) bool
		wantErr string
	}{
		{"development defaults", nil, func(c Config) bool { return c.DatabaseURL == "" && c.AutoMigrate && c.AuditKey == "" }, ""},
		{"production does not auto-migrate", []string{"COBRANCA_ENV=production", "COBRANCA_AUDIT_KEY=" + key, "COBRANCA_REQUEST_STATE_KEYS=k:" + key,
			"COBRANCA_LINK_KEYS=k:" + key, "COBRANCA_PUBLIC_URL=https://c.example.com",
			"COBRANCA_SMTP_URL=smtps://mail.example.com", "COBRANCA_MAIL_FROM=c@example.com", "COBRANCA_OIDC_CLIENT_ID=pages"},
			func(c Config) bool { return !c.AutoMigrate }, ""},
		{"explicit auto-migrate", []string{"COBRANCA_AUTO_MIGRATE=false"}, func(c Config) bool { return !c.AutoMigrate }, ""},
		{"postgres", []string{"COBRANCA_DATABASE_URL=postgres://app:secret@db/cobranca"}, func(c Config) bool { return c.DatabaseURL == "postgres://app:secret@db/cobranca" }, ""},
		{"sqlite path", []string{"COBRANCA_DATABASE_URL=sqlite:/var/lib/c.db"}, func(c Config) bool { return c.DatabaseURL == "sqlite:/var/lib/c.db" }, ""},
		{"bad url", []string{"COBRANCA_DATABASE_URL=mysql://x"}, nil, "COBRANCA_DATABASE_URL"},
		{"empty sqlite path", []string{"COBRANCA_DATABASE_URL=sqlite:"}, nil, "COBRANCA_DATABASE_URL"},
		{"bad auto-migrate", []string{"COBRANCA_AUTO_MIGRATE=sometimes"}, nil, "COBRANCA_AUTO_MIGRATE"},
		{"transaction pooler", []string{"COBRANCA_DATABASE_URL=postgres://app@pgbouncer/c?default_query_exec_mode=cache_describe", "COBRANCA_AUTO_MIGRATE=false", "COBRANCA_DATABASE_POOLER=transaction"},
			func(c Config) bool { return c.TransactionPooler }, ""},
		{"no pooler by default", []string{"COBRANCA_DATABASE_URL=postgres://app@db/c"}, func(c Config) bool { return !c.TransactionPooler }, ""},
		{"pooler with prepared statements", []string{"COBRANCA_DATABASE_URL=postgres://app@pgbouncer/c", "COBRANCA_AUTO_MIGRATE=false", "COBRANCA_DATABASE_POOLER=transaction"}, nil, "default_query_exec_mode"},
		{"pooler with auto-migrate", []string{"COBRANCA_DATABASE_URL=postgres://app@pgbouncer/c?default_query_exec_mode=exec", "COBRANCA_AUTO_MIGRATE=true", "COBRANCA_DATABASE_POOLER=transaction"}, nil, "COBRANCA_AUTO_MIGRATE=false"},
		{"pooler on sqlite", []string{"COBRANCA_DATABASE_POOLER=transaction", "COBRANCA_AUTO_MIGRATE=false"}, nil, "COBRANCA_DATABASE_POOLER"},
		{"bad pooler", []string{"COBRANCA_DATABASE_POOLER=session"}, nil, "COBRANCA_DATABASE_POOLER"},
		{"short audit key", []string{"COBRANCA_AUDIT_KEY=short"}, nil, "COBRANCA_AUDIT_KEY"},
		{"rotated audit key", []string{"COBRANCA_AUDIT_KEY=" + key + "-new," + key}, func(c Config) bool {
			return c.AuditKey == key+"-new" && len(c.AuditOldKeys) == 1 && c.AuditOldKeys[0] == key
		}, ""},
		{"short old audit key", []string{"COBRANCA_AUDIT_KEY=" + key + ",short"}, nil, "COBRANCA_AUDIT_KEY: key 2 of 2 must be at least 32 bytes"},
		{"audit key twice", []string{"COBRANCA_AUDIT_KEY=" + key + "," + key}, nil, "COBRANCA_AUDIT_KEY: key 2 of 2 is given twice"},
		{"production needs an audit key", []string{"COBRANCA_ENV=production"}, nil, "COBRANCA_AUDIT_KEY: required"},
		{"production needs request-state keys", []string{"COBRANCA_ENV=production", "COBRANCA_AUDIT_KEY=" + key}, nil, "COBRANCA_REQUEST_STATE_KEYS: required"},
		{"production needs link keys", []string{"COBRANCA_ENV=production"}, nil, "COBRANCA_LINK_KEYS: required"},
		{"production needs an SMTP server", []string{"COBRANCA_ENV=production"}, nil, "COBRANCA_SMTP_URL: required"},
		{"production needs a sender address", []string{"COBRANCA_ENV=production"}, nil, "COBRANCA_MAIL_FROM: required"},
		{"production needs a public URL", []string{"COBRANCA_ENV=production"}, nil, "COBRANCA_PUBLIC_URL: required"},
		{"production needs the pages' OIDC client", []string{"COBRANCA_ENV=production"}, nil, "COBRANCA_OIDC_CLIENT_ID: required"},
		{"development has a default OIDC client", nil, func(c Config) bool { return c.OIDCClientID == "" && c.OIDCClientSecret == "" }, ""},
		{"production's public URL is https", []string{"COBRANCA_ENV=production", "COBRANCA_PUBLIC_URL=http://c.example.com"}, nil, "COBRANCA_PUBLIC_URL: must be https"},
		{"production's public URL is https, in any case", []string{"COBRANCA_ENV=production", "COBRANCA_PUBLIC_URL=HTTP://c.example.com"}, nil, "COBRANCA_PUBLIC_URL: must be https"},
		{"development's may be http", []string{"COBRANCA_PUBLIC_URL=http://localhost:8080/x/"}, func(c Config) bool { return c.PublicURL == "http://localhost:8080/x/" }, ""},
		{"at+jwt only by default", nil, func(c Config) bool { return !c.AcceptJWTTyp }, ""},
		{"JWT accepted when asked", []string{"COBRANCA_ACCEPT_JWT_TYP=true"}, func(c Config) bool { return c.AcceptJWTTyp }, ""},
		{"JWT typ flag is true or false", []string{"COBRANCA_ACCEPT_JWT_TYP=1"}, nil, "COBRANCA_ACCEPT_JWT_TYP: must be"},
		{"file size bounds", []string{"COBRANCA_MAX_FILE_BYTES=1GiB"}, nil, "COBRANCA_MAX_FILE_BYTES"},
		{"file size not a size", []string{"COBRANCA_MAX_FILE_BYTES=big"}, nil, "COBRANCA_MAX_FILE_BYTES"},
		{"fast path on or off", []string{"COBRANCA_FASTPATH=maybe"}, nil, "COBRANCA_FASTPATH"},
	}
	for _, tt := range tests {
		c, err := Load(tt.env)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("%s: Load = %v, want an error naming %s", tt.name, err, tt.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: Load = %v", tt.name, err)
			continue
		}
		if !tt.want(c) {
			t.Errorf("%s: Load = %+v", tt.name, c)
		}
	}
}

func TestLogValueRedactsSecrets(t *testing.T) {
	c, err := Load([]string{"COBRANCA_DATABASE_URL=postgres://app:hunter2hunter2@db/cobranca", "COBRANCA_AUDIT_KEY=supersecretsupersecretsupersecret!",
		"COBRANCA_SMTP_URL=smtp://mailer:smtpsecret42@mail.example.com:587", "COBRANCA_OIDC_CLIENT_SECRET=oidcsecret77",
		"OTEL_EXPORTER_OTLP_ENDPOINT=http://otel:4318", "OTEL_EXPORTER_OTLP_HEADERS=x-api-key=otlpsecret55",
		"COBRANCA_REQUEST_STATE_KEYS=k1:statesecretstatesecretstatesecret99", "COBRANCA_LINK_KEYS=k1:linksecretlinksecretlinksecretlink88"})
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	slog.New(slog.NewJSONHandler(&b, nil)).Info("config", "config", c)
	for _, secret := range []string{"hunter2hunter2", "supersecret", "smtpsecret42", "oidcsecret77", "otlpsecret55", "statesecret", "linksecret"} {
		if strings.Contains(b.String(), secret) {
			t.Errorf("log line contains %q:\n%s", secret, b.String())
		}
	}
	for _, want := range []string{`"database_url":"postgres://app:xxxxx@db/cobranca"`, `"audit_key_set":true`, `"link_keys_set":true`} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("log line lacks %s:\n%s", want, b.String())
		}
	}
}

// TestLogValueNamesEveryVariable: the configuration's log line has every variable of the
// table, as read: a variable added to the table is logged without another line of code.
func TestLogValueNamesEveryVariable(t *testing.T) {
	c, err := Load([]string{"COBRANCA_DEBUG_ADDR=127.0.0.1:6060", "COBRANCA_MEMORY_LIMIT=64MiB"})
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	slog.New(slog.NewJSONHandler(&b, nil)).Info("config", "config", c)
	var line struct{ Config map[string]any }
	if err := json.Unmarshal(b.Bytes(), &line); err != nil {
		t.Fatal(err)
	}
	for _, v := range variables {
		key := strings.ToLower(strings.TrimPrefix(v.name, "COBRANCA_"))
		if v.logged == secret {
			key += "_set"
		}
		if _, ok := line.Config[key]; !ok {
			t.Errorf("the log line has no %s (%s):\n%s", key, v.name, b.String())
		}
	}
	for key, want := range map[string]any{"debug_addr": "127.0.0.1:6060", "memory_limit": "64MiB", "max_conns": "1024", "otel_traces_sampler_arg": "1"} {
		if got := line.Config[key]; got != want {
			t.Errorf("%s = %v, want %v", key, got, want)
		}
	}
}

func TestParseBytes(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want int64
		ok   bool
	}{{"48MiB", 48 << 20, true}, {"1GiB", 1 << 30, true}, {"512KiB", 512 << 10, true}, {"1000", 1000, true},
		{"48MB", 0, false}, {"-1MiB", 0, false}, {"", 0, false}, {"9999999999GiB", 0, false}} {
		got, err := parseBytes(tt.in)
		if (err == nil) != tt.ok || got != tt.want {
			t.Errorf("parseBytes(%q) = %d, %v; want %d, ok %v", tt.in, got, err, tt.want, tt.ok)
		}
	}
}

// TestDebugAddr: the profiling listener is off by default and only ever
// binds a loopback address.
func TestDebugAddr(t *testing.T) {
	c, err := Load(nil)
	if err != nil || c.DebugAddr != "" {
		t.Fatalf("default: DebugAddr %q, err %v; want off", c.DebugAddr, err)
	}
	for _, ok := range []string{"127.0.0.1:6060", "[::1]:6060", "127.0.0.2:0"} {
		if c, err := Load([]string{"COBRANCA_DEBUG_ADDR=" + ok}); err != nil || c.DebugAddr != ok {
			t.Errorf("%s: DebugAddr %q, err %v", ok, c.DebugAddr, err)
		}
	}
	for _, bad := range []string{"0.0.0.0:6060", ":6060", "10.0.0.5:6060", "example.com:6060", "localhost:6060", "6060"} {
		if _, err := Load([]string{"COBRANCA_DEBUG_ADDR=" + bad}); err == nil || !strings.Contains(err.Error(), "COBRANCA_DEBUG_ADDR:") {
			t.Errorf("%s: err %v, want one naming COBRANCA_DEBUG_ADDR", bad, err)
		}
	}
}

// TestMetricsAddr: /metrics has a listener of its own, loopback by default,
// which can be turned off and is never the public port.
func TestMetricsAddr(t *testing.T) {
	for _, tt := range []struct {
		env     []string
		want    string
		wantErr bool
	}{
		{nil, "127.0.0.1:9090", false},
		{[]string{"COBRANCA_METRICS_ADDR=off"}, "", false},
		{[]string{"COBRANCA_METRICS_ADDR=10.0.0.5:9091"}, "10.0.0.5:9091", false},
		{[]string{"COBRANCA_ADDR=0.0.0.0:9090"}, "", true},
		{[]string{"COBRANCA_ADDR=0.0.0.0:8080", "COBRANCA_METRICS_ADDR=127.0.0.1:8080"}, "", true},
		{[]string{"COBRANCA_METRICS_ADDR=9090"}, "", true},
	} {
		c, err := Load(tt.env)
		if tt.wantErr {
			if err == nil || !strings.Contains(err.Error(), "COBRANCA_METRICS_ADDR:") {
				t.Errorf("Load(%q) = %v, want an error naming COBRANCA_METRICS_ADDR", tt.env, err)
			}
			continue
		}
		if err != nil || c.MetricsAddr != tt.want {
			t.Errorf("Load(%q): MetricsAddr %q, err %v; want %q", tt.env, c.MetricsAddr, err, tt.want)
		}
	}
}

// TestConnCaps: the connection caps, and the per-address cap that steps
// aside behind a proxy, where every connection has the proxy's address.
func TestConnCaps(t *testing.T) {
	for _, tt := range []struct {
		env             []string
		total, perAddr  int
		wantErrVariable string
	}{
		{nil, 1024, 64, ""},
		{[]string{"COBRANCA_TRUSTED_PROXY_HEADER=Fly-Client-IP"}, 1024, 0, ""},
		{[]string{"COBRANCA_TRUSTED_PROXY_HEADER=Fly-Client-IP", "COBRANCA_MAX_CONNS_PER_ADDR=500"}, 1024, 500, ""},
		{[]string{"COBRANCA_MAX_CONNS=0", "COBRANCA_MAX_CONNS_PER_ADDR=0"}, 0, 0, ""},
		{[]string{"COBRANCA_MAX_CONNS=20000", "COBRANCA_MAX_CONNS_PER_ADDR=10"}, 20000, 10, ""},
		{[]string{"COBRANCA_MAX_CONNS=8"}, 0, 0, "COBRANCA_MAX_CONNS:"},
		{[]string{"COBRANCA_MAX_CONNS=many"}, 0, 0, "COBRANCA_MAX_CONNS:"},
		{[]string{"COBRANCA_MAX_CONNS_PER_ADDR=-1"}, 0, 0, "COBRANCA_MAX_CONNS_PER_ADDR:"},
	} {
		c, err := Load(tt.env)
		if tt.wantErrVariable != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErrVariable) {
				t.Errorf("Load(%q) = %v, want an error naming %s", tt.env, err, tt.wantErrVariable)
			}
			continue
		}
		if err != nil || c.MaxConns != tt.total || c.MaxConnsPerAddr != tt.perAddr {
			t.Errorf("Load(%q): caps %d, %d, err %v; want %d, %d", tt.env, c.MaxConns, c.MaxConnsPerAddr, err, tt.total, tt.perAddr)
		}
	}
}

func TestApprovalTTL(t *testing.T) {
	checkDuration(t, "COBRANCA_APPROVAL_TTL", func(c Config) time.Duration { return c.ApprovalTTL }, []durationCase{
		{"15m", 15 * time.Minute}, {"1m", time.Minute}, {"24h", 24 * time.Hour}, {"59s", 0}, {"25h", 0}, {"soon", 0}, {"-5m", 0},
	})
}

// durationCase is a value of a duration variable and what Load makes of it
// (0: refused).
type durationCase struct {
	v    string
	want time.Duration
}

// checkDuration loads each case of variable and checks what get reads, or
// that the error names the variable.
func checkDuration(t *testing.T, variable string, get func(Config) time.Duration, cases []durationCase) {
	t.Helper()
	for _, tt := range cases {
		c, err := Load([]string{variable + "=" + tt.v})
		if tt.want == 0 {
			if err == nil || !strings.Contains(err.Error(), variable+": ") {
				t.Errorf("Load(%s=%s) = %v, want an error naming the variable", variable, tt.v, err)
			}
			continue
		}
		if err != nil || get(c) != tt.want {
			t.Errorf("Load(%s=%s) = %v, %v; want %v", variable, tt.v, get(c), err, tt.want)
		}
	}
}

func TestIdempotencyTTL(t *testing.T) {
	checkDuration(t, "COBRANCA_IDEMPOTENCY_TTL", func(c Config) time.Duration { return c.IdempotencyTTL }, []durationCase{
		{"1m", time.Minute},
		{"90m", 90 * time.Minute},
		{"720h", 30 * 24 * time.Hour},
		{"59s", 0},
		{"720h1s", 0},
		{"-24h", 0},
		{"1d", 0},
		{"24", 0},
	})
}

// TestMailWorkers: COBRANCA_MAIL_WORKERS takes 1 to 256, COBRANCA_MAIL_RESCUE_AFTER 1s to 24h;
// anything else is refused, naming the variable.
func TestMailWorkers(t *testing.T) {
	for _, tc := range []struct {
		v    string
		want int
	}{{"1", 1}, {"64", 64}, {"256", 256}} {
		c, err := Load([]string{"COBRANCA_MAIL_WORKERS=" + tc.v})
		if err != nil || c.MailWorkers != tc.want {
			t.Errorf("COBRANCA_MAIL_WORKERS=%s: %d, %v; want %d", tc.v, c.MailWorkers, err, tc.want)
		}
	}
	for _, v := range []string{"0", "-1", "257", "many"} {
		if _, err := Load([]string{"COBRANCA_MAIL_WORKERS=" + v}); err == nil || !strings.Contains(err.Error(), "COBRANCA_MAIL_WORKERS") {
			t.Errorf("COBRANCA_MAIL_WORKERS=%q: %v, want an error naming it", v, err)
		}
	}
	if c, err := Load([]string{"COBRANCA_MAIL_RESCUE_AFTER=90s"}); err != nil || c.MailRescueAfter != 90*time.Second {
		t.Errorf("COBRANCA_MAIL_RESCUE_AFTER=90s: %v, %v", c.MailRescueAfter, err)
	}
	for _, v := range []string{"500ms", "25h", "soon"} {
		if _, err := Load([]string{"COBRANCA_MAIL_RESCUE_AFTER=" + v}); err == nil || !strings.Contains(err.Error(), "COBRANCA_MAIL_RESCUE_AFTER") {
			t.Errorf("COBRANCA_MAIL_RESCUE_AFTER=%q: %v, want an error naming it", v, err)
		}
	}
}

// TestRequiredInProduction: the table's need is what Load checks — production without a
// required variable is an error naming it, development is not — and what
// RequiredInProduction lists (with the variables a service's rule requires).
func TestRequiredInProduction(t *testing.T) {
	_, err := Load([]string{"COBRANCA_ENV=production"})
	_, devErr := Load(nil)
	if devErr != nil {
		t.Fatalf("Load(development) = %v", devErr)
	}
	listed := RequiredInProduction()
	var inLoad int
	for _, v := range variables {
		msg := v.name + ": required in production"
		switch v.need {
		case required:
			inLoad++
			if requiredBecause[v.name] == "" {
				t.Errorf("%s is required in production without a reason in requiredBecause", v.name)
			}
			if err == nil || !strings.Contains(err.Error(), msg) {
				t.Errorf("Load(production, %s unset) does not say %q:\n%v", v.name, msg, err)
			}
		case requiredByService, optional:
			if err != nil && strings.Contains(err.Error(), msg) {
				t.Errorf("Load says %q, but the table leaves that to a service or does not require it", msg)
			}
		}
		if got := slices.Contains(listed, v.name); got != (v.need != optional) {
			t.Errorf("RequiredInProduction() lists %s: %t, want %t", v.name, got, v.need != optional)
		}
	}
	if inLoad == 0 || len(listed) <= inLoad {
		t.Errorf("the table requires %d variables in Load and lists %v: want some of each kind", inLoad, listed)
	}
}

// TestTracingVariables: the OpenTelemetry variables are read although they
// are not COBRANCA_*, checked, and their errors name them without quoting a
// header's value (another OTEL_* variable is refused: TestUnknownOTELVariables).
func TestTracingVariables(t *testing.T) {
	c, err := Load([]string{
		"OTEL_EXPORTER_OTLP_ENDPOINT=https://otel.example.com:4318/prefix/",
		"OTEL_EXPORTER_OTLP_HEADERS=x-api-key=abc%2C123, x-team = ops",
		"OTEL_SERVICE_NAME=cobranca-staging",
		"OTEL_TRACES_SAMPLER=parentbased_traceidratio",
		"OTEL_TRACES_SAMPLER_ARG=0.25",
		"OTEL_EXPORTER_OTLP_TIMEOUT=1000",
	})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"x-api-key": "abc,123", "x-team": "ops"}
	if c.OTLPEndpoint != "https://otel.example.com:4318/prefix/" || !cmp.Equal(c.OTLPHeaders, want) || c.ServiceName != "cobranca-staging" ||
		c.TraceSampler != SamplerParentRatio || c.TraceSamplerArg != 0.25 || c.OTLPTimeout != time.Second {
		t.Errorf("Load = %q, %v, %q, %q, %v, %v", c.OTLPEndpoint, c.OTLPHeaders, c.ServiceName, c.TraceSampler, c.TraceSamplerArg, c.OTLPTimeout)
	}
	for _, tc := range []struct{ name, value string }{
		{VarOTLPEndpoint, "otel-collector:4318"},
		{VarOTLPEndpoint, "grpc://otel:4317"},
		{VarOTLPEndpoint, "http://user:pw@otel:4318"},
		{VarOTLPEndpoint, "http://otel:4318/?x=1"},
		{"OTEL_EXPORTER_OTLP_HEADERS", "x-api-key"},
		{"OTEL_EXPORTER_OTLP_HEADERS", "=hunter2"},
		{"OTEL_EXPORTER_OTLP_HEADERS", "bad key=hunter2"},
		{"OTEL_EXPORTER_OTLP_HEADERS", "x-api-key=hunter2%zz"},
		{"OTEL_TRACES_SAMPLER", "jaeger_remote"},
		{"OTEL_TRACES_SAMPLER_ARG", "1.5"},
		{"OTEL_TRACES_SAMPLER_ARG", "NaN"},
	} {
		_, err := Load([]string{tc.name + "=" + tc.value})
		if err == nil || !strings.Contains(err.Error(), tc.name+":") {
			t.Errorf("%s=%s: %v, want an error naming it", tc.name, tc.value, err)
		} else if strings.Contains(err.Error(), "hunter2") {
			t.Errorf("%s=%s: the error quotes the value: %v", tc.name, tc.value, err)
		}
	}
}

// TestContactPacing: COBRANCA_CONTACT_PACING takes a Go duration or whole
// days, from 0 (off, the default) to 365 days; anything else is refused,
// naming the variable.
func TestContactPacing(t *testing.T) {
	if c, err := Load(nil); err != nil || c.ContactPacing != 0 {
		t.Errorf("Load(unset) = %v, %v; want no pacing", c.ContactPacing, err)
	}
	for _, tt := range []durationCase{{"3d", 72 * time.Hour}, {"1d", 24 * time.Hour}, {"365d", 365 * 24 * time.Hour}, {"72h", 72 * time.Hour},
		{"36h30m", 36*time.Hour + 30*time.Minute}, {"8760h", 365 * 24 * time.Hour}, {"0", 0}, {"0d", 0}, {"0s", 0}} {
		c, err := Load([]string{VarContactPacing + "=" + tt.v})
		if err != nil || c.ContactPacing != tt.want {
			t.Errorf("Load(%s=%s) = %v, %v; want %v", VarContactPacing, tt.v, c.ContactPacing, err, tt.want)
		}
	}
	for _, v := range []string{"366d", "8760h1s", "-1d", "-1h", "3 d", "3D", "+3d", "03d", "1.5d", "d", "3days", "3", "soon", "9999999999999d"} {
		if _, err := Load([]string{VarContactPacing + "=" + v}); err == nil || !strings.Contains(err.Error(), VarContactPacing+": ") {
			t.Errorf("Load(%s=%q) = %v, want an error naming the variable", VarContactPacing, v, err)
		}
	}
}

// writeCAFile writes a PEM file holding one self-signed CA certificate and
// returns its path and contents.
func writeCAFile(t *testing.T) (string, []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test CA"}, NotBefore: time.Now().Add(-time.Hour),
		NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	b := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	path := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return path, b
}

// TestOTLPExporterVariables: the exporter's timeout, compression and CA
// certificates are config's, each value checked with an error naming its
// variable, and each refused where it would do nothing (no endpoint; a
// certificate for an http:// endpoint).
func TestOTLPExporterVariables(t *testing.T) {
	ca, caPEM := writeCAFile(t)
	dir := t.TempDir()
	notPEM := filepath.Join(dir, "not.pem")
	if err := os.WriteFile(notPEM, []byte("not a certificate\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	keyOnly := filepath.Join(dir, "key.pem")
	if err := os.WriteFile(keyOnly, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: []byte("x")}), 0o600); err != nil {
		t.Fatal(err)
	}
	const https, http = VarOTLPEndpoint + "=https://otel.example.com:4318", VarOTLPEndpoint + "=http://otel:4318"
	for _, tc := range []struct {
		name    string
		env     []string
		want    func(c Config) bool
		wantErr string
	}{
		{"defaults, with an endpoint", []string{https}, func(c Config) bool {
			return c.OTLPTimeout == DefaultOTLPTimeout && c.OTLPCompression == CompressionNone && c.OTLPCertificate == "" && c.OTLPRootCAs == nil
		}, ""},
		{"timeout 1ms", []string{http, VarOTLPTimeout + "=1"}, func(c Config) bool { return c.OTLPTimeout == time.Millisecond }, ""},
		{"timeout 10 minutes", []string{http, VarOTLPTimeout + "=600000"}, func(c Config) bool { return c.OTLPTimeout == 10*time.Minute }, ""},
		{"timeout 0", []string{http, VarOTLPTimeout + "=0"}, nil, VarOTLPTimeout + ": must be a whole number of milliseconds"},
		{"timeout over 10 minutes", []string{http, VarOTLPTimeout + "=600001"}, nil, VarOTLPTimeout + ": must be"},
		{"timeout not a number", []string{http, VarOTLPTimeout + "=abc"}, nil, VarOTLPTimeout + ": must be"},
		{"timeout as a duration", []string{http, VarOTLPTimeout + "=10s"}, nil, VarOTLPTimeout + ": must be"},
		{"timeout negative", []string{http, VarOTLPTimeout + "=-5"}, nil, VarOTLPTimeout + ": must be"},
		{"headers without an endpoint", []string{VarOTLPHeaders + "=x-api-key=k"}, nil, VarOTLPHeaders + ": set without " + VarOTLPEndpoint},
		{"timeout without an endpoint", []string{VarOTLPTimeout + "=5000"}, nil, VarOTLPTimeout + ": set without " + VarOTLPEndpoint},
		{"gzip", []string{http, VarOTLPCompress + "=gzip"}, func(c Config) bool { return c.OTLPCompression == CompressionGzip }, ""},
		{"no compression", []string{http, VarOTLPCompress + "=none"}, func(c Config) bool { return c.OTLPCompression == CompressionNone }, ""},
		{"compression zstd", []string{http, VarOTLPCompress + "=zstd"}, nil, VarOTLPCompress + ": must be gzip or none"},
		{"compression GZIP", []string{http, VarOTLPCompress + "=GZIP"}, nil, VarOTLPCompress + ": must be"},
		{"compression without an endpoint", []string{VarOTLPCompress + "=gzip"}, nil, VarOTLPCompress + ": set without " + VarOTLPEndpoint},
		{"certificate", []string{https, VarOTLPCert + "=" + ca}, func(c Config) bool { return c.OTLPCertificate == ca && string(c.OTLPRootCAs) == string(caPEM) }, ""},
		{"certificate missing", []string{https, VarOTLPCert + "=" + filepath.Join(dir, "absent.pem")}, nil, VarOTLPCert + ": cannot read"},
		{"certificate a directory", []string{https, VarOTLPCert + "=" + dir}, nil, VarOTLPCert + ": cannot read"},
		{"certificate not PEM", []string{https, VarOTLPCert + "=" + notPEM}, nil, VarOTLPCert + ": " + notPEM + " holds no PEM certificate"},
		{"certificate a key", []string{https, VarOTLPCert + "=" + keyOnly}, nil, VarOTLPCert + ": " + keyOnly + " holds no PEM certificate"},
		{"certificate without an endpoint", []string{VarOTLPCert + "=" + ca}, nil, VarOTLPCert + ": set without " + VarOTLPEndpoint},
		{"certificate for http", []string{http, VarOTLPCert + "=" + ca}, nil, VarOTLPCert + ": the endpoint " + VarOTLPEndpoint + " is http://"},
		{"empty is unset", []string{VarOTLPTimeout + "=", VarOTLPCompress + "=", VarOTLPCert + "="}, func(c Config) bool {
			return c.OTLPTimeout == DefaultOTLPTimeout && c.OTLPCompression == CompressionNone && c.OTLPCertificate == ""
		}, ""},
	} {
		c, err := Load(tc.env)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%s: Load = %v, want an error saying %q", tc.name, err, tc.wantErr)
			}
			continue
		}
		if err != nil || !tc.want(c) {
			t.Errorf("%s: Load = %v, %v", tc.name, err, c.LogValue())
		}
	}
	// Every problem at once: an invalid endpoint does not add "set
	// without" errors for the settings that go with it.
	_, err := Load([]string{VarOTLPEndpoint + "=otel:4318", VarOTLPTimeout + "=abc", VarOTLPCompress + "=brotli", VarOTLPCert + "=" + notPEM})
	for _, want := range []string{VarOTLPEndpoint + ": must be", VarOTLPTimeout + ": must be", VarOTLPCompress + ": must be", VarOTLPCert + ": " + notPEM} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Load(all invalid) = %v, want %q among the errors", err, want)
		}
	}
	if err != nil && strings.Contains(err.Error(), "set without") {
		t.Errorf("Load(invalid endpoint) says a setting is set without it: %v", err)
	}
}

// TestSDKDisabled: OTEL_SDK_DISABLED is the standard off switch, read
// rather than refused; false or unset leaves tracing to the endpoint.
func TestSDKDisabled(t *testing.T) {
	for _, tc := range []struct {
		v       string
		want    bool
		wantErr bool
	}{{"", false, false}, {"false", false, false}, {"true", true, false}, {"TRUE", true, false}, {"False", false, false},
		{"1", false, true}, {"yes", false, true}, {"off", false, true}} {
		c, err := Load([]string{VarOTLPEndpoint + "=http://otel:4318", VarSDKDisabled + "=" + tc.v})
		if tc.wantErr {
			if err == nil || !strings.Contains(err.Error(), VarSDKDisabled+": must be") {
				t.Errorf("%s=%s: %v, want an error naming it", VarSDKDisabled, tc.v, err)
			}
			continue
		}
		if err != nil || c.TracingDisabled != tc.want || c.OTLPEndpoint == "" {
			t.Errorf("%s=%s: TracingDisabled %t, endpoint %q, %v; want %t", VarSDKDisabled, tc.v, c.TracingDisabled, c.OTLPEndpoint, err, tc.want)
		}
	}
}

// TestUnknownOTELVariables: an OTEL_* variable the table does not name is
// refused when set to a value, naming it and listing what cobranca reads;
// a per-signal OTEL_EXPORTER_OTLP_TRACES_* variable whose generic one
// cobranca reads points there. Set empty, it is unset.
func TestUnknownOTELVariables(t *testing.T) {
	var read []string
	for _, v := range Variables() {
		if strings.HasPrefix(v[0], "OTEL_") {
			read = append(read, v[0])
		}
	}
	for _, name := range []string{VarOTLPEndpoint, "OTEL_EXPORTER_OTLP_HEADERS", VarOTLPTimeout, VarOTLPCompress, VarOTLPCert,
		"OTEL_SERVICE_NAME", "OTEL_TRACES_SAMPLER", "OTEL_TRACES_SAMPLER_ARG", VarSDKDisabled} {
		if !slices.Contains(read, name) {
			t.Errorf("the table does not read %s", name)
		}
	}
	list := "cobranca reads only " + strings.Join(read, ", ") + " (see docs/configuration.md)"
	for _, tc := range []struct{ env, want string }{
		{"OTEL_FOO=bar", "OTEL_FOO: unknown variable: " + list},
		{"OTEL_EXPORTER_OTLP_PROTOCOL=grpc", "OTEL_EXPORTER_OTLP_PROTOCOL: unknown variable: " + list + "; cobranca exports traces over OTLP/HTTP as protobuf only"},
		{"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL=http/json", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: unknown variable: " + list + "; cobranca exports traces over OTLP/HTTP"},
		{"OTEL_EXPORTER_OTLP_INSECURE=true", "OTEL_EXPORTER_OTLP_INSECURE: unknown variable: " + list + "; the endpoint's scheme decides"},
		{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=http://otel:4318/v1/traces", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: unknown variable: " + list + "; use " + VarOTLPEndpoint + ", the collector's base URL"},
		{"OTEL_EXPORTER_OTLP_TRACES_HEADERS=k=v", "OTEL_EXPORTER_OTLP_TRACES_HEADERS: unknown variable: " + list + "; use OTEL_EXPORTER_OTLP_HEADERS,"},
		{"OTEL_EXPORTER_OTLP_TRACES_TIMEOUT=abc", "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT: unknown variable: " + list + "; use " + VarOTLPTimeout + ","},
		{"OTEL_EXPORTER_OTLP_TRACES_COMPRESSION=gzip", "; use " + VarOTLPCompress + ","},
		{"OTEL_EXPORTER_OTLP_TRACES_CERTIFICATE=/ca.pem", "; use " + VarOTLPCert + ","},
		{"OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE=/c.pem", "OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE: unknown variable: " + list},
		{"OTEL_EXPORTER_OTLP_METRICS_ENDPOINT=http://otel:4318", "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT: unknown variable: " + list},
		{"OTEL_BSP_MAX_QUEUE_SIZE=10", "OTEL_BSP_MAX_QUEUE_SIZE: unknown variable: " + list},
		{"OTEL_SPAN_ATTRIBUTE_COUNT_LIMIT=1", "OTEL_SPAN_ATTRIBUTE_COUNT_LIMIT: unknown variable: " + list},
		{"OTEL_RESOURCE_ATTRIBUTES=deployment.environment=prod", "OTEL_RESOURCE_ATTRIBUTES: unknown variable: " + list + "; the traces' resource is service.name"},
		{"OTEL_GO_X_OBSERVABILITY=true", "OTEL_GO_X_OBSERVABILITY: unknown variable: " + list},
		{"OTEL_TRACES_EXPORTER=otlp", "OTEL_TRACES_EXPORTER: unknown variable: " + list},
	} {
		_, err := Load([]string{VarOTLPEndpoint + "=http://otel:4318", tc.env})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Load(%s) = %v, want an error saying %q", tc.env, err, tc.want)
		}
	}
	// Several at once, each named, with the other problems; set empty, one
	// is unset.
	_, err := Load([]string{"OTEL_FOO=1", "OTEL_BAR=2", "OTEL_EMPTY=", "COBRANCA_ADRR=x", "OTEL_TRACES_SAMPLER=nope"})
	for _, want := range []string{"OTEL_FOO: unknown variable", "OTEL_BAR: unknown variable", "COBRANCA_ADRR: unknown variable", "OTEL_TRACES_SAMPLER: must be"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Load(several) = %v, want %q among the errors", err, want)
		}
	}
	if err != nil && strings.Contains(err.Error(), "OTEL_EMPTY") {
		t.Errorf("Load refuses an OTEL_* variable set empty: %v", err)
	}
	if _, err := Load([]string{"OTEL_FOO=", "OTEL_EXPORTER_OTLP_PROTOCOL="}); err != nil {
		t.Errorf("Load(OTEL_* set empty) = %v, want them unset", err)
	}
}

// TestLedgerRequired: COBRANCA_LEDGER_REQUIRED is off unless set to true, and anything but
// true or false is refused naming the variable.
func TestLedgerRequired(t *testing.T) {
	for _, tt := range []struct {
		env  []string
		want bool
	}{{nil, false}, {[]string{VarLedgerRequired + "=false"}, false}, {[]string{VarLedgerRequired + "=true"}, true}} {
		if c, err := Load(tt.env); err != nil || c.LedgerRequired != tt.want {
			t.Errorf("Load(%v) = %v, %v; want %v", tt.env, c.LedgerRequired, err, tt.want)
		}
	}
	for _, v := range []string{"1", "yes", "TRUE"} {
		if _, err := Load([]string{VarLedgerRequired + "=" + v}); err == nil || !strings.Contains(err.Error(), VarLedgerRequired+": ") {
			t.Errorf("Load(%s=%q) = %v, want an error naming the variable", VarLedgerRequired, v, err)
		}
	}
}

// TestPixAccount: the PIX receiving account is kept as written, unchecked — the BR Code's rules
// are internal/pix's, applied by cmd/cobranca — and is empty unless set.
func TestPixAccount(t *testing.T) {
	c, err := Load([]string{VarPixKey + "=12.ABC.345/01DE-35", VarPixName + "=Fulano de Tal", VarPixCity + "=SAO PAULO"})
	if err != nil || c.PixKey != "12.ABC.345/01DE-35" || c.PixMerchantName != "Fulano de Tal" || c.PixMerchantCity != "SAO PAULO" {
		t.Errorf("Load = %q, %q, %q, %v; want the account as written", c.PixKey, c.PixMerchantName, c.PixMerchantCity, err)
	}
	if c, err := Load([]string{VarPixKey + "=not a key"}); err != nil || c.PixKey != "not a key" {
		t.Errorf("Load(%s=not a key) = %q, %v; want it kept for cmd/cobranca to judge", VarPixKey, c.PixKey, err)
	}
	if c, err := Load(nil); err != nil || c.PixKey != "" || c.PixMerchantName != "" || c.PixMerchantCity != "" {
		t.Errorf("Load(nil) = %q, %q, %q, %v; want no account", c.PixKey, c.PixMerchantName, c.PixMerchantCity, err)
	}
}

// TestApproverNotifications: the addresses, the webhook and its key, the digest's settings,
// the language (Portuguese unless told); the webhook URL and key are secrets; a URL without a
// key (posts anyone could forge) or a key without a URL is refused, and so is http:// in
// production.
func TestApproverNotifications(t *testing.T) {
	const key = "webhookkeywebhookkeywebhookkey-32"
	const hook = "https://hooks.slack.com/services/T000/B000/slacksecret99"
	c, err := Load([]string{"COBRANCA_APPROVER_EMAILS= ana@financeiro.test, rui@financeiro.test", VarWebhookURL + "=" + hook, VarWebhookSecret + "=" + key,
		"COBRANCA_APPROVAL_DIGEST_AFTER=3", "COBRANCA_APPROVAL_DIGEST_WINDOW=5m", VarNotifyLanguage + "=en"})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"ana@financeiro.test", "rui@financeiro.test"}, c.ApproverEmails); diff != "" {
		t.Errorf("ApproverEmails (-want +got):\n%s", diff)
	}
	if c.ApprovalWebhookURL != hook || c.ApprovalWebhookSecret != key || c.ApprovalDigestAfter != 3 || c.ApprovalDigestWindow != 5*time.Minute || c.NotifyLanguage != "en" {
		t.Errorf("Load = %q, %q, %d, %v, %q", c.ApprovalWebhookURL, c.ApprovalWebhookSecret, c.ApprovalDigestAfter, c.ApprovalDigestWindow, c.NotifyLanguage)
	}
	if c, err := Load([]string{VarNotifyLanguage + "=PT-br"}); err != nil || c.NotifyLanguage != "pt-BR" {
		t.Errorf("Load(%s=PT-br) = %q, %v; want pt-BR (a tag's case does not matter)", VarNotifyLanguage, c.NotifyLanguage, err)
	}
	var b strings.Builder
	slog.New(slog.NewJSONHandler(&b, nil)).Info("config", "config", c)
	for _, secret := range []string{"slacksecret99", "webhookkey"} {
		if strings.Contains(b.String(), secret) {
			t.Errorf("log line contains %q:\n%s", secret, b.String())
		}
	}
	for _, tc := range []struct {
		env  []string
		want string
	}{
		{[]string{VarWebhookURL + "=" + hook}, VarWebhookSecret + ": required with " + VarWebhookURL},
		{[]string{VarWebhookSecret + "=" + key}, VarWebhookSecret + ": set without " + VarWebhookURL},
		{[]string{VarWebhookURL + "=" + hook, VarWebhookSecret + "=short"}, VarWebhookSecret + ": must be at least 32 bytes"},
		{[]string{VarWebhookURL + "=hooks.slack.com/services/x", VarWebhookSecret + "=" + key}, VarWebhookURL + ": must be an https:// URL"},
		{[]string{VarWebhookURL + "=https://user:pw@hooks.example/x", VarWebhookSecret + "=" + key}, VarWebhookURL + ": must be an https:// URL"},
		{[]string{"COBRANCA_ENV=production", VarWebhookURL + "=http://hooks.example/x", VarWebhookSecret + "=" + key}, VarWebhookURL + ": must be https:// in production"},
		{[]string{VarApproverEmails + "=, ,"}, VarApproverEmails + ": names no address"},
		{[]string{VarApproverEmails + "=" + strings.Repeat("a@b.test,", 51)}, VarApproverEmails + ": must list at most 50"},
		{[]string{"COBRANCA_APPROVAL_DIGEST_AFTER=0"}, "COBRANCA_APPROVAL_DIGEST_AFTER: must be a whole number from 1 to 1000"},
		{[]string{"COBRANCA_APPROVAL_DIGEST_WINDOW=30s"}, "COBRANCA_APPROVAL_DIGEST_WINDOW: must be a duration from 1m to 1h"},
		{[]string{VarNotifyLanguage + "=pt"}, VarNotifyLanguage + ": must be pt-BR or en"},
		{[]string{VarNotifyLanguage + "=en-US"}, VarNotifyLanguage + ": must be pt-BR or en"},
	} {
		_, err := Load(tc.env)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Load(%q) = %v, want %q", tc.env, err, tc.want)
		}
		if err != nil && strings.Contains(err.Error(), "slacksecret99") {
			t.Errorf("Load(%q)'s error quotes the webhook URL: %v", tc.env, err)
		}
	}
	if c, err := Load(nil); err != nil || c.ApproverEmails != nil || c.ApprovalWebhookURL != "" || c.NotifyLanguage != "pt-BR" {
		t.Errorf("Load(unset) = %v, %q, %q, %v; want no one told, in Portuguese", c.ApproverEmails, c.ApprovalWebhookURL, c.NotifyLanguage, err)
	}
}
