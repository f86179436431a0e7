//go:build !386 && !arm && !mips && !mipsle

package outbox_test

import (
	"context"
	"errors"
	"testing"

	"github.com/riverqueue/river/rivermigrate"

	"github.com/cobranca/cobranca/internal/store"
	"github.com/cobranca/cobranca/internal/store/postgres"
	"github.com/cobranca/cobranca/internal/store/sqlite"
	"github.com/cobranca/cobranca/internal/store/storetest"
)

// TestReadyWantsRiversMigrations: Migrate applies River's migrations with ours, and Ready
// reports the store behind when one of River's is missing.
func TestReadyWantsRiversMigrations(t *testing.T) {
	for _, f := range storetest.Fixtures(pg) {
		t.Run(string(f.Dialect), func(t *testing.T) {
			ctx := context.Background()
			db := f.Migrated(t)
			if err := db.Ready(ctx); err != nil {
				t.Fatalf("Ready after Migrate = %v", err)
			}
			down := &rivermigrate.MigrateOpts{MaxSteps: 1}
			var err error
			switch d := db.(type) {
			case *postgres.DB:
				var m *rivermigrate.Migrator[pgxTx]
				if m, err = rivermigrate.New(d.RiverDriver(), nil); err == nil {
					_, err = m.Migrate(ctx, rivermigrate.DirectionDown, down)
				}
			case *sqlite.DB:
				var m *rivermigrate.Migrator[sqlTx]
				if m, err = rivermigrate.New(d.RiverDriver(), nil); err == nil {
					_, err = m.Migrate(ctx, rivermigrate.DirectionDown, down)
				}
			}
			if err != nil {
				t.Fatal(err)
			}
			if err := db.Ready(ctx); !errors.Is(err, store.ErrPendingMigrations) {
				t.Fatalf("Ready with River's last migration undone = %v, want %v", err, store.ErrPendingMigrations)
			}
			if _, err := db.Migrate(ctx); err != nil {
				t.Fatal(err)
			}
			if err := db.Ready(ctx); err != nil {
				t.Fatalf("Ready after Migrate again = %v", err)
			}
		})
	}
}
