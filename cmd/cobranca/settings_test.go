package main

import (
	"io"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cobranca/cobranca/internal/auth"
	"github.com/cobranca/cobranca/internal/collections"
	"github.com/cobranca/cobranca/internal/contract"
	"github.com/cobranca/cobranca/internal/contract/contracttest"
	"github.com/cobranca/cobranca/internal/limits"
	"github.com/cobranca/cobranca/internal/pix"
	"github.com/google/go-cmp/cmp"
)

func TestSettingsAuth(t *testing.T) {
	s, err := loadSettings([]string{
		"COBRANCA_ADDR=0.0.0.0:9000",
		"COBRANCA_ISSUER=https://idp.example.com",
		"COBRANCA_RESOURCE=https://mcp.example.com/mcp",
		"COBRANCA_JWT_PUBLIC_KEY=/etc/cobranca/issuer.pem",
		"COBRANCA_AGENT_CLIENT_IDS=ledger-bot, collector-bot",
		"COBRANCA_STEPUP_ACR=urn:cobranca:mfa,phr",
	})
	if err != nil {
		t.Fatal(err)
	}
	want := auth.Config{
		Issuer:         "https://idp.example.com",
		Resource:       "https://mcp.example.com/mcp",
		PublicKeyFile:  "/etc/cobranca/issuer.pem",
		AgentClientIDs: []string{"ledger-bot", "collector-bot"},
		StepUpACR:      []string{"urn:cobranca:mfa", "phr"},
		RolesClaim:     auth.DefaultRolesClaim, // COBRANCA_ROLES_CLAIM's default is auth's
		DataDir:        "./data",
		BaseURL:        "http://localhost:9000",
	}
	if diff := cmp.Diff(want, s.auth); diff != "" {
		t.Errorf("loadSettings: auth (-want +got):\n%s", diff)
	}
}

// TestSettingsDevIssuerIsPublicURL: in development the issuer is the URL people
// reach the server at, so the sign-in pages' redirect (COBRANCA_PUBLIC_URL +
// /signin/callback) is the one the development authorization server registered.
func TestSettingsDevIssuerIsPublicURL(t *testing.T) {
	s, err := loadSettings([]string{"COBRANCA_ADDR=0.0.0.0:9000", "COBRANCA_PUBLIC_URL=http://cobranca.test:8080"})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := s.auth.BaseURL, "http://cobranca.test:8080"; got != want {
		t.Errorf("auth BaseURL = %q, want the public URL %q", got, want)
	}
	s, err = loadSettings([]string{"COBRANCA_ADDR=127.0.0.1:9000"})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := s.auth.BaseURL, "http://127.0.0.1:9000"; got != want {
		t.Errorf("auth BaseURL without a public URL = %q, want the listen address %q", got, want)
	}
}

// TestStepUpACRInProduction: production refuses to start while a served tool requires step-up
// and COBRANCA_STEPUP_ACR is empty (any acr would pass), naming the variable and the tools;
// development, or the variable set, or no such tool, starts.
func TestStepUpACRInProduction(t *testing.T) {
	critical := contracttest.New("test.critical", contract.Critical, "test:write")
	other := contracttest.New("test.high", contract.High, "test:write")
	low := contracttest.New("test.read", contract.Low, "test:read")
	err := checkStepUpACR(true, nil, []*contract.Contract{low, critical, other})
	if err == nil || !strings.Contains(err.Error(), "COBRANCA_STEPUP_ACR: required in production") || !strings.Contains(err.Error(), "test.critical") ||
		strings.Contains(err.Error(), "test.high") || strings.Contains(err.Error(), "test.read") {
		t.Errorf("production, no acr, a critical tool: %v; want the variable and test.critical named, no other tool", err)
	}
	for name, err := range map[string]error{
		"development":     checkStepUpACR(false, nil, []*contract.Contract{critical}),
		"acr set":         checkStepUpACR(true, []string{"phr"}, []*contract.Contract{critical}),
		"no step-up tool": checkStepUpACR(true, nil, []*contract.Contract{low, other}),
	} {
		if err != nil {
			t.Errorf("%s: %v, want none", name, err)
		}
	}
}

// productionEnv is a complete production configuration (with an issuer), which loadSettings
// accepts.
func productionEnv() []string {
	return []string{"COBRANCA_ENV=production", "COBRANCA_ISSUER=https://idp.example.com", "COBRANCA_RESOURCE=https://mcp.example.com/mcp",
		"COBRANCA_JWKS_URL=https://idp.example.com/jwks", "COBRANCA_AUDIT_KEY=0123456789abcdef0123456789abcdef",
		"COBRANCA_REQUEST_STATE_KEYS=k1:fedcba9876543210fedcba9876543210", "COBRANCA_LINK_KEYS=l1:fedcba9876543210fedcba9876543210",
		"COBRANCA_PUBLIC_URL=https://mcp.example.com", "COBRANCA_SMTP_URL=smtps://mail.example.com", "COBRANCA_MAIL_FROM=cobranca@example.com",
		"COBRANCA_OIDC_CLIENT_ID=cobranca-web", "COBRANCA_STEPUP_ACR=phr"}
}

// TestServedStepUpToolNeedsACR: the product serves a critical tool (send_reminder), so
// production without COBRANCA_STEPUP_ACR does not start, and says which variable and tool.
func TestServedStepUpToolNeedsACR(t *testing.T) {
	if _, err := loadSettings(productionEnv()); err != nil {
		t.Fatalf("a complete production configuration: %v", err)
	}
	env := slices.DeleteFunc(productionEnv(), func(kv string) bool { return strings.HasPrefix(kv, "COBRANCA_STEPUP_ACR=") })
	_, err := loadSettings(env)
	if err == nil || !strings.Contains(err.Error(), "COBRANCA_STEPUP_ACR: required in production") || !strings.Contains(err.Error(), collections.SendReminderName) {
		t.Errorf("production without COBRANCA_STEPUP_ACR: %v; want a refusal naming the variable and %s", err, collections.SendReminderName)
	}
}

// TestProductionRefusesDevelopmentMode: without an issuer, production does
// not start, and the error names what to set, together with config.Load's
// own problems.
func TestProductionRefusesDevelopmentMode(t *testing.T) {
	_, err := loadSettings([]string{"COBRANCA_ENV=production", "COBRANCA_LOG_LEVEL=loud"})
	if err == nil {
		t.Fatal("loadSettings accepted production without an issuer")
	}
	for _, want := range []string{"COBRANCA_LOG_LEVEL:", "refuses development mode", "COBRANCA_ISSUER", "COBRANCA_RESOURCE", "COBRANCA_JWKS_URL or COBRANCA_JWT_PUBLIC_KEY", "COBRANCA_AUDIT_KEY: required"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not mention %s:\n%v", want, err)
		}
	}
}

// TestSettingsLimits: the budgets are parsed with the limiter's syntax, the
// defaults included, and the default store timeout is the limiter's own.
func TestSettingsLimits(t *testing.T) {
	s, err := loadSettings(nil)
	if err != nil {
		t.Fatal(err)
	}
	want := limits.Options{
		Policies: limits.Policies{
			Principal: limits.Limit{Rate: 600, Period: time.Minute, Burst: 60},
			Origin:    limits.Limit{Rate: 1200, Period: time.Minute, Burst: 120},
			Write:     limits.Limit{Rate: 60, Period: time.Minute, Burst: 10},
			Critical:  limits.Limit{Rate: 10, Period: time.Hour, Burst: 3},
		},
		StoreTimeout: limits.DefaultStoreTimeout, Replicas: 1,
	}
	if diff := cmp.Diff(want, s.limits); diff != "" {
		t.Errorf("loadSettings(defaults): limits (-want +got):\n%s", diff)
	}
	s, err = loadSettings([]string{
		"COBRANCA_RATE_PRINCIPAL=off", "COBRANCA_RATE_WRITE=5/s,burst=2", "COBRANCA_REPLICAS=3",
		"COBRANCA_RATE_STORE_TIMEOUT=50ms", "COBRANCA_TRUSTED_PROXY_HEADER=fly-client-ip",
	})
	if err != nil {
		t.Fatal(err)
	}
	want.Policies.Principal = limits.Limit{}
	want.Policies.Write = limits.Limit{Rate: 5, Period: time.Second, Burst: 2}
	want.StoreTimeout, want.Replicas, want.TrustedProxyHeader = 50*time.Millisecond, 3, "Fly-Client-Ip"
	if diff := cmp.Diff(want, s.limits); diff != "" {
		t.Errorf("loadSettings: limits (-want +got):\n%s", diff)
	}
}

// TestSettingsErrors: config.Load's problems and those of the services'
// rules are reported at once, each naming its variable, and a value that
// is not a size is reported once, not again for its bound.
func TestSettingsErrors(t *testing.T) {
	_, err := loadSettings([]string{
		"COBRANCA_ADDR=8080",
		"COBRANCA_ADRR=127.0.0.1:1",
		"COBRANCA_ISSUER=idp.example.com",
		"COBRANCA_JWKS_URL=https://idp.example.com/jwks.json",
		"COBRANCA_RESOURCE=https://mcp.example.com/mcp",
		"COBRANCA_RATE_ORIGIN=lots",
		"COBRANCA_RATE_CRITICAL=10/1d",
		"COBRANCA_REPLICAS=0",
		"COBRANCA_AUDIT_SPOOL_MAX=65535",
	})
	if err == nil {
		t.Fatal("loadSettings accepted invalid values")
	}
	for _, name := range []string{"COBRANCA_ADDR:", "COBRANCA_ADRR: unknown variable", "COBRANCA_ISSUER:", "COBRANCA_RATE_ORIGIN:", "COBRANCA_RATE_CRITICAL:", "COBRANCA_REPLICAS:", "COBRANCA_AUDIT_SPOOL_MAX: must be a size of at least 64KiB"} {
		if !strings.Contains(err.Error(), name) {
			t.Errorf("error does not name %s:\n%v", name, err)
		}
	}
	for url, ok := range map[string]bool{
		"https://c.example.com/":      true,
		"http://localhost:8080/x/":    true,
		"https://c.example.com/?a=1":  false,
		"https://c.example.com/#top":  false,
		"https://user@c.example.com/": false,
		"/files":                      false,
		"ftp://c.example.com":         false,
	} {
		_, err := loadSettings([]string{"COBRANCA_PUBLIC_URL=" + url})
		if (err == nil) != ok || err != nil && !strings.Contains(err.Error(), "COBRANCA_PUBLIC_URL: must be an absolute http(s) URL") {
			t.Errorf("COBRANCA_PUBLIC_URL=%s: loadSettings = %v, want ok %v", url, err, ok)
		}
	}
	for _, tt := range []struct {
		spool string
		ok    bool
	}{{"64KiB", true}, {"65536", true}, {"65535", false}, {"0", false}, {"lots", false}} {
		_, err := loadSettings([]string{"COBRANCA_AUDIT_SPOOL_MAX=" + tt.spool})
		if (err == nil) != tt.ok {
			t.Errorf("COBRANCA_AUDIT_SPOOL_MAX=%s: loadSettings = %v, want ok %v", tt.spool, err, tt.ok)
		}
		if err != nil && strings.Count(err.Error(), "COBRANCA_AUDIT_SPOOL_MAX") != 1 {
			t.Errorf("COBRANCA_AUDIT_SPOOL_MAX=%s: error names it %d times, want once:\n%v", tt.spool, strings.Count(err.Error(), "COBRANCA_AUDIT_SPOOL_MAX"), err)
		}
	}
}

// TestSettingsPix: the PIX account is checked with the BR Code's rules at start, and what is
// wrong stops it naming the variable; a checked account reaches the collections tools.
func TestSettingsPix(t *testing.T) {
	const key, name, city = "COBRANCA_PIX_KEY=", "COBRANCA_PIX_MERCHANT_NAME=", "COBRANCA_PIX_MERCHANT_CITY="
	s, err := loadSettings([]string{key + "12.ABC.345/01DE-35", name + "Fulano de Tal", city + "SAO PAULO"})
	if err != nil {
		t.Fatalf("loadSettings with a valid PIX account: %v", err)
	}
	want := &pix.Merchant{Key: pix.Key{Kind: pix.KindCNPJ, Value: "12ABC34501DE35"}, Name: "Fulano de Tal", City: "SAO PAULO"}
	if diff := cmp.Diff(want, collectionSettings(s).Pix); diff != "" {
		t.Errorf("collectionSettings(...).Pix (-want +got):\n%s", diff)
	}
	if s, err := loadSettings(nil); err != nil || collectionSettings(s).Pix != nil {
		t.Errorf("loadSettings(nil): Pix %v, %v; want none", collectionSettings(s).Pix, err)
	}
	for _, tt := range []struct {
		env  []string
		want []string // each error, naming its variable
	}{
		{[]string{key + "123.456.789-00", name + "Fulano", city + "RIO"}, []string{"COBRANCA_PIX_KEY: looks like a CPF"}},
		{[]string{key + "fulano", name + "Fulano", city + "RIO"}, []string{"COBRANCA_PIX_KEY: is none of the five kinds"}},
		{[]string{key + "+5511987654321", name + "Fulano de Tal Comércio", city + "RIO"}, []string{"COBRANCA_PIX_MERCHANT_NAME: holds a character"}},
		{[]string{key + "+5511987654321", name + "Fulano", city + "SAO PAULO CAPITAL"}, []string{"COBRANCA_PIX_MERCHANT_CITY: has 17 characters"}},
		{[]string{key + "+5511987654321"}, []string{"COBRANCA_PIX_MERCHANT_NAME: required with COBRANCA_PIX_KEY", "COBRANCA_PIX_MERCHANT_CITY: required with COBRANCA_PIX_KEY"}},
		{[]string{name + "Fulano", city + "RIO"}, []string{"COBRANCA_PIX_MERCHANT_NAME: set without COBRANCA_PIX_KEY", "COBRANCA_PIX_MERCHANT_CITY: set without COBRANCA_PIX_KEY"}},
		{[]string{key + "x", "COBRANCA_RATE_ORIGIN=lots"}, []string{"COBRANCA_RATE_ORIGIN:", "COBRANCA_PIX_MERCHANT_NAME: required"}},
	} {
		_, err := loadSettings(tt.env)
		if err == nil {
			t.Errorf("loadSettings(%q) = nil, want %q", tt.env, tt.want)
			continue
		}
		for _, w := range tt.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("loadSettings(%q) = %v; want it to say %q", tt.env, err, w)
			}
		}
	}
	// serve itself refuses an invalid key, before it opens anything.
	dir := t.TempDir()
	err = run(t.Context(), []string{"serve"}, []string{"COBRANCA_DATA_DIR=" + dir, "COBRANCA_ADDR=127.0.0.1:0", key + "11.222.333/0001-82", name + "Fulano", city + "RIO"}, nil, io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "COBRANCA_PIX_KEY: looks like a CNPJ") {
		t.Errorf("serve with an invalid PIX key = %v, want a refusal naming COBRANCA_PIX_KEY", err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("serve wrote %d files in the data directory before refusing", len(entries))
	}
}
