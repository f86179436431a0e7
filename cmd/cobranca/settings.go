package main

import (
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/cobranca/cobranca/internal/auditlog"
	"github.com/cobranca/cobranca/internal/auth"
	"github.com/cobranca/cobranca/internal/authserver"
	"github.com/cobranca/cobranca/internal/collections"
	"github.com/cobranca/cobranca/internal/config"
	"github.com/cobranca/cobranca/internal/contract"
	"github.com/cobranca/cobranca/internal/files"
	"github.com/cobranca/cobranca/internal/limits"
	"github.com/cobranca/cobranca/internal/outbox"
	"github.com/cobranca/cobranca/internal/pipeline"
	"github.com/cobranca/cobranca/internal/pix"
)

// settings is the configuration (plain values, internal/config) and the
// services' options built from it.
type settings struct {
	config.Config
	auth   auth.Config
	limits limits.Options
	// pix is the PIX receiving account (COBRANCA_PIX_*), checked; nil: none.
	pix *pix.Merchant
}

// loadSettings is how every command reads the environment: config.Load's
// problems and those of the rules that belong to a service (the rate-limit
// spec syntax, token verification, the audit spool's least bound, the
// download links' public URL, the PIX account) are reported together, each
// naming its variable.
func loadSettings(environ []string) (settings, error) {
	cfg, err := config.Load(environ)
	errs := []error{err}
	s := settings{Config: cfg}
	s.auth = auth.Config{
		Issuer:         cfg.Issuer,
		Resource:       cfg.Resource,
		JWKSURL:        cfg.JWKSURL,
		PublicKeyFile:  cfg.JWTPublicKey,
		AgentClientIDs: cfg.AgentClientIDs,
		StepUpACR:      cfg.StepUpACR,
		RolesClaim:     cfg.RolesClaim,
		AcceptJWTTyp:   cfg.AcceptJWTTyp,
		Production:     cfg.Production(),
		DataDir:        cfg.DataDir,
		// Where people and clients reach the server: in development the
		// issuer of its tokens and of the sign-in pages' client, whose
		// redirect URI must match the one the pages send (COBRANCA_PUBLIC_URL).
		BaseURL: cfg.Public(),
	}
	// Token verification settings are checked together (URLs, and
	// combinations such as production without an issuer).
	errs = append(errs, s.auth.Validate())
	s.limits = limits.Options{
		StoreTimeout:       cfg.RateStoreTimeout,
		Replicas:           cfg.Replicas,
		TrustedProxyHeader: cfg.TrustedProxyHeader,
	}
	for _, r := range []struct {
		variable, spec string
		dst            *limits.Limit
	}{
		{config.VarRatePrincipal, cfg.RateLimits.Principal, &s.limits.Policies.Principal},
		{config.VarRateOrigin, cfg.RateLimits.Origin, &s.limits.Policies.Origin},
		{config.VarRateWrite, cfg.RateLimits.Write, &s.limits.Policies.Write},
		{config.VarRateCritical, cfg.RateLimits.Critical, &s.limits.Policies.Critical},
	} {
		l, err := limits.ParseSpec(r.spec)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", r.variable, err))
		}
		*r.dst = l
	}
	// The public URL's shape is the download links' rule.
	if cfg.PublicURL != "" {
		if err := files.CheckPublicURL(cfg.PublicURL); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", config.VarPublicURL, err))
		}
	}
	// The SMTP URL and the sender's address are the outbox's rules.
	if cfg.SMTPURL != "" {
		if _, err := outbox.ParseSMTPURL(cfg.SMTPURL); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", config.VarSMTPURL, err))
		}
	}
	if cfg.MailFrom != "" {
		if err := outbox.CheckAddress(cfg.MailFrom); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", config.VarMailFrom, err))
		}
	}
	// Step-up in production names the acr values a strong sign-in gets.
	tools, err := servedTools(collections.Settings{}, nil, nil)
	if err != nil {
		errs = append(errs, err)
	} else {
		errs = append(errs, checkStepUpACR(cfg.Production(), cfg.StepUpACR, contractsOf(tools)))
	}
	// Zero: config.Load has already reported the value as not a size.
	if cfg.AuditSpoolMax != 0 && cfg.AuditSpoolMax < auditlog.MinSpoolMaxBytes {
		errs = append(errs, fmt.Errorf("%s: must be a size of at least %dKiB, like 64MiB or 1GiB", config.VarAuditSpoolMax, auditlog.MinSpoolMaxBytes>>10))
	}
	s.pix, err = pixMerchant(cfg)
	errs = append(errs, err)
	return s, errors.Join(errs...)
}

// pixMerchant is the PIX receiving account of cfg, checked with the BR Code's rules: nil
// without COBRANCA_PIX_KEY. A key without its name and city, or a name or city without a key
// (where it would do nothing), is refused too: the operator meant an account.
func pixMerchant(cfg config.Config) (*pix.Merchant, error) {
	if cfg.PixKey == "" {
		var errs []error
		for _, v := range []struct{ name, value string }{{config.VarPixName, cfg.PixMerchantName}, {config.VarPixCity, cfg.PixMerchantCity}} {
			if v.value != "" {
				errs = append(errs, fmt.Errorf("%s: set without %s, where it does nothing: set the key, or unset it", v.name, config.VarPixKey))
			}
		}
		return nil, errors.Join(errs...)
	}
	var errs []error
	for _, v := range []struct{ name, value string }{{config.VarPixName, cfg.PixMerchantName}, {config.VarPixCity, cfg.PixMerchantCity}} {
		if v.value == "" {
			errs = append(errs, fmt.Errorf("%s: required with %s: the payer's bank app shows it before paying", v.name, config.VarPixKey))
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	m, err := pix.NewMerchant(cfg.PixKey, cfg.PixMerchantName, cfg.PixMerchantCity)
	var fe *pix.FieldError
	if errors.As(err, &fe) {
		name := map[string]string{"key": config.VarPixKey, "name": config.VarPixName, "city": config.VarPixCity}[fe.Field]
		return nil, fmt.Errorf("%s: %s", name, fe.Message)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", config.VarPixKey, err)
	}
	return &m, nil
}

// checkDevelopmentReach refuses development mode (no COBRANCA_ISSUER: the
// server signs its own tokens, and its development sign-in page lets anyone
// sign in as anyone) when the settings say that the server is reachable
// from elsewhere: a public URL or an allowed Host that is not a loopback
// name, or a trusted proxy header, which exists only behind a forwarder.
// Each error names its variable. COBRANCA_ADDR may be a wildcard (Docker
// publishes the port): a peer on the network is refused by the sign-in page
// itself (authserver's localOnly), a forwarder on this machine is not.
func checkDevelopmentReach(cfg config.Config) error {
	if cfg.Issuer != "" {
		return nil
	}
	const why = "development mode (COBRANCA_ISSUER unset) serves a sign-in page where anyone signs in as anyone, so it answers this machine only; set COBRANCA_ISSUER to serve others"
	var errs []error
	if cfg.PublicURL != "" {
		if u, err := url.Parse(cfg.PublicURL); err != nil || !authserver.LoopbackHost(u.Hostname()) {
			errs = append(errs, fmt.Errorf("%s: names a host other than this machine's loopback (localhost, 127.0.0.1, [::1]): %s", config.VarPublicURL, why))
		}
	}
	for _, h := range cfg.AllowedHosts {
		if !authserver.LoopbackHost((&url.URL{Host: h}).Hostname()) {
			errs = append(errs, fmt.Errorf("%s: %q is not a loopback name: %s", config.VarAllowedHosts, h, why))
		}
	}
	if cfg.TrustedProxyHeader != "" {
		errs = append(errs, fmt.Errorf("%s: set, so a forwarder stands in front: %s", config.VarTrustedProxy, why))
	}
	return errors.Join(errs...)
}

// checkStepUpACR refuses production with COBRANCA_STEPUP_ACR empty while a contract requires
// step-up: any acr would then pass, and step-up would mean only a recent sign-in, however weak.
// The error names the variable and the tools.
func checkStepUpACR(production bool, acr []string, contracts []*contract.Contract) error {
	if !production || len(acr) > 0 {
		return nil
	}
	var names []string
	for _, c := range contracts {
		if c.StepUpAuth.Required {
			names = append(names, c.Name)
		}
	}
	if len(names) == 0 {
		return nil
	}
	return fmt.Errorf("%s: required in production, since %s require step-up: without it any acr passes and step-up means only a recent sign-in; set the acr values your issuer gives a strong sign-in (e.g. phr, or an MFA class)",
		config.VarStepUpACR, strings.Join(names, ", "))
}

// contractsOf returns the contracts of tools.
func contractsOf(tools []pipeline.Tool) []*contract.Contract {
	cs := make([]*contract.Contract, len(tools))
	for i, t := range tools {
		cs[i] = t.Contract
	}
	return cs
}
