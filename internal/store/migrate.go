package store

import (
	"context"
	"database/sql"
	"fmt"
	"io/fs"
	"log/slog"
	"path"

	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"
	"github.com/riverqueue/river/riverdriver"
	"github.com/riverqueue/river/rivermigrate"
)

// migrationLockID is the PostgreSQL advisory lock key under which replicas take turns to
// migrate ("cobranca" in ASCII). Advisory locks are per database.
const migrationLockID int64 = 0x636f6272616e6361

// Migrator applies the embedded migrations of one dialect with goose. Both implementations
// embed one; it is exported for them, not for other packages.
type Migrator struct {
	provider *goose.Provider
	// exclusive, when set, is held around Migrate. SQLite uses it: goose has no SQLite locker.
	exclusive func(ctx context.Context) (unlock func(), err error)
}

// NewMigrator returns a Migrator for db. On PostgreSQL, Migrate holds a session advisory lock,
// so replicas starting at once apply each migration once and the others wait. On SQLite,
// exclusive (may be nil) is held around Migrate instead.
func NewMigrator(db *sql.DB, dialect Dialect, fsys fs.FS, logger *slog.Logger, exclusive func(ctx context.Context) (func(), error)) (*Migrator, error) {
	var opts []goose.ProviderOption
	var gd goose.Dialect
	switch dialect {
	case Postgres:
		gd = goose.DialectPostgres
		locker, err := lock.NewPostgresSessionLocker(
			lock.WithLockID(migrationLockID),
			lock.WithLockTimeout(1, 600), // poll every second, up to ten minutes
		)
		if err != nil {
			return nil, fmt.Errorf("migration lock: %w", err)
		}
		opts = append(opts, goose.WithSessionLocker(locker))
	case SQLite:
		gd = goose.DialectSQLite3
	default:
		return nil, fmt.Errorf("migrations: unknown dialect %q", dialect)
	}
	if logger != nil {
		opts = append(opts, goose.WithSlog(logger))
	}
	opts = append(opts, goose.WithDisableGlobalRegistry(true))
	p, err := goose.NewProvider(gd, db, fsys, opts...)
	if err != nil {
		return nil, fmt.Errorf("migrations: %w", err)
	}
	return &Migrator{provider: p, exclusive: exclusive}, nil
}

// Up applies the pending migrations.
func (m *Migrator) Up(ctx context.Context) ([]Migration, error) {
	if m.exclusive != nil {
		unlock, err := m.exclusive(ctx)
		if err != nil {
			return nil, fmt.Errorf("migrate: %w", err)
		}
		defer unlock()
	}
	res, err := m.provider.Up(ctx)
	out := make([]Migration, 0, len(res))
	for _, r := range res {
		if r.Error != nil {
			continue
		}
		out = append(out, Migration{Version: r.Source.Version, Name: path.Base(r.Source.Path), Applied: true, Duration: r.Duration})
	}
	if err != nil {
		return out, fmt.Errorf("migrate: %w", err)
	}
	return out, nil
}

// Status lists every known migration.
func (m *Migrator) Status(ctx context.Context) ([]Migration, error) {
	st, err := m.provider.Status(ctx)
	if err != nil {
		return nil, fmt.Errorf("migration status: %w", err)
	}
	out := make([]Migration, 0, len(st))
	for _, s := range st {
		out = append(out, Migration{
			Version:   s.Source.Version,
			Name:      path.Base(s.Source.Path),
			Applied:   s.State == goose.StateApplied,
			AppliedAt: s.AppliedAt,
		})
	}
	return out, nil
}

// Current returns ErrPendingMigrations when a migration is not applied yet.
func (m *Migrator) Current(ctx context.Context) error {
	pending, err := m.provider.HasPending(ctx)
	if err != nil {
		return fmt.Errorf("migration status: %w", err)
	}
	if pending {
		return ErrPendingMigrations
	}
	return nil
}

// MigrateRiver applies River's own migrations (the job queue's river_* tables) through driver.
// River keeps their versions in a table of its own (river_migration). Both implementations
// call it from Migrate, before their own migrations, under their migration lock.
func MigrateRiver[TTx any](ctx context.Context, driver riverdriver.Driver[TTx]) error {
	m, err := rivermigrate.New(driver, nil)
	if err != nil {
		return fmt.Errorf("river migrate: %w", err)
	}
	if _, err := m.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
		return fmt.Errorf("river migrate: %w", err)
	}
	return nil
}

// RiverCurrent returns ErrPendingMigrations when one of River's migrations is not applied.
func RiverCurrent[TTx any](ctx context.Context, driver riverdriver.Driver[TTx]) error {
	m, err := rivermigrate.New(driver, nil)
	if err != nil {
		return fmt.Errorf("river migrations: %w", err)
	}
	res, err := m.Validate(ctx, nil)
	if err != nil {
		return fmt.Errorf("river migrations: %w", err)
	}
	if !res.OK {
		return ErrPendingMigrations
	}
	return nil
}
