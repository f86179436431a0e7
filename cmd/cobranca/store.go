package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/cobranca/cobranca/internal/auditlog"
	"github.com/cobranca/cobranca/internal/config"
	"github.com/cobranca/cobranca/internal/limits"
	limitspg "github.com/cobranca/cobranca/internal/limits/postgres"
	limitssqlite "github.com/cobranca/cobranca/internal/limits/sqlite"
	"github.com/cobranca/cobranca/internal/store"
	"github.com/cobranca/cobranca/internal/store/postgres"
	"github.com/cobranca/cobranca/internal/store/sqlite"
)

// openStore opens the database COBRANCA_DATABASE_URL names: PostgreSQL for postgres://…,
// otherwise SQLite at sqlite:PATH or cobranca.db in the data directory.
func openStore(ctx context.Context, cfg config.Config, log *slog.Logger) (store.DB, error) {
	u := cfg.DatabaseURL
	switch {
	case strings.HasPrefix(u, "postgres://"), strings.HasPrefix(u, "postgresql://"):
		return postgres.Open(ctx, u, log)
	case strings.HasPrefix(u, "sqlite:"):
		return sqlite.Open(ctx, strings.TrimPrefix(u, "sqlite:"), log)
	case u == "":
		return sqlite.Open(ctx, filepath.Join(cfg.DataDir, sqlite.FileName), log)
	}
	return nil, fmt.Errorf("COBRANCA_DATABASE_URL: unsupported scheme")
}

// newLimiter builds the rate limiter on the store's database: on PostgreSQL
// through a small pool of its own whose commits do not wait for the WAL
// flush (limitspg.Open). The returned func releases what it opened.
func newLimiter(ctx context.Context, db store.DB, cfg settings, log *slog.Logger, onRefused func(*http.Request, string, limits.Decision)) (*limits.Limiter, func(), error) {
	var backend limits.Backend
	release := func() {}
	switch db := db.(type) {
	case *postgres.DB:
		pg, err := limitspg.Open(ctx, cfg.DatabaseURL, 8, cfg.TransactionPooler)
		if err != nil {
			return nil, nil, err
		}
		backend, release = pg, pg.Close
	case *sqlite.DB:
		backend = limitssqlite.New(db, time.Now)
	default:
		return nil, nil, fmt.Errorf("rate limits: no backend for %T", db)
	}
	opts := cfg.limits
	opts.Logger = log
	opts.OnRefused = onRefused
	return limits.New(backend, opts), release, nil
}

// auditKey is the audit key: COBRANCA_AUDIT_KEY, or in development a key kept in the data
// directory, created there when create is set. Without create, a missing key file is nil, no
// error: the caller says what it cannot do without it.
func auditKey(cfg config.Config, create bool) ([]byte, error) {
	if cfg.AuditKey != "" {
		return []byte(cfg.AuditKey), nil
	}
	path := filepath.Join(cfg.DataDir, "audit-digest.key")
	if create {
		return auditlog.LoadOrCreateDigestKey(path)
	}
	key, err := auditlog.LoadDigestKey(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	return key, err
}

// openAuditSpool opens the audit spool in the data directory, which each replica has to itself.
func openAuditSpool(cfg config.Config, log *slog.Logger) (*auditlog.Spool, error) {
	if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
		return nil, fmt.Errorf("data directory: %w", err)
	}
	return auditlog.OpenSpool(filepath.Join(cfg.DataDir, auditlog.SpoolFileName),
		auditlog.SpoolOptions{MaxBytes: cfg.AuditSpoolMax, Logger: log})
}

// auditSigningKeyPath is the checkpoint signing key file.
func auditSigningKeyPath(cfg config.Config) string {
	if cfg.AuditSigningKey != "" {
		return cfg.AuditSigningKey
	}
	return filepath.Join(cfg.DataDir, "audit-signing.pem")
}
