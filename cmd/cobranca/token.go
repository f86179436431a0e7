package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/cobranca/cobranca/internal/auth"
)

// newAuthenticator builds token verification from the configuration; in
// development mode it also signs `cobranca token`'s tokens.
func newAuthenticator(ctx context.Context, ac auth.Config, log *slog.Logger) (*auth.Authenticator, error) {
	ac.Logger = log
	a, err := auth.New(ctx, ac)
	if err != nil {
		return nil, fmt.Errorf("configuration:\n%w", err)
	}
	return a, nil
}

// token prints a development access token that `cobranca serve`, with the
// same COBRANCA_ADDR and COBRANCA_DATA_DIR, accepts.
func token(ctx context.Context, e env, fs *flagSet, args []string) error {
	sub := fs.String("sub", "", "the token's subject (`NAME`, the sub claim); required")
	scope := fs.String("scope", "", "space-separated `SCOPES`, e.g. \"collections:read\"")
	agent := fs.String("agent", "", "mint an agent's token: act {\"sub\": `NAME`} and client_id NAME")
	acr := fs.String("acr", "", "authentication context class (`ACR`, the acr claim), for step-up")
	ttl := fs.Duration("ttl", time.Hour, "lifetime")
	var roles repeated
	fs.Var(&roles, "role", "a `ROLE` the person holds, in the roles claim (COBRANCA_ROLES_CLAIM), e.g. collections.approver, which approves critical calls (repeatable)")
	if err := fs.parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("token: unexpected argument %q", fs.Arg(0))
	}
	if *sub == "" {
		return errors.New("token: --sub is required")
	}
	if *ttl <= 0 {
		return errors.New("token: --ttl must be positive")
	}
	scopes, err := auth.ParseScope(*scope)
	if err != nil {
		return fmt.Errorf("token: --scope: %w", err)
	}
	cfg, err := loadSettings(e.environ)
	if err != nil {
		return fmt.Errorf("configuration:\n%w", err)
	}
	if !cfg.auth.DevMode() {
		return fmt.Errorf("token: refused outside development mode: tokens come from COBRANCA_ISSUER (%s)", cfg.Issuer)
	}
	a, err := newAuthenticator(ctx, cfg.auth, slog.New(slog.DiscardHandler))
	if err != nil {
		return err
	}
	for _, r := range roles {
		if err := auth.CheckRole(r); err != nil {
			return fmt.Errorf("token: --role: %w", err)
		}
	}
	tok, err := a.Mint(auth.MintOptions{Subject: *sub, Scopes: scopes, Agent: *agent, ACR: *acr, TTL: *ttl, Roles: roles})
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(e.stdout, tok)
	return err
}
