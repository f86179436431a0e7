package postgres_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/cobranca/cobranca/internal/limits/limitstest"
	limitspg "github.com/cobranca/cobranca/internal/limits/postgres"
	"github.com/cobranca/cobranca/internal/pgtest"
	"github.com/cobranca/cobranca/internal/store/postgres"
)

var pg = pgtest.New()

func TestMain(m *testing.M) {
	code := m.Run()
	pg.Close()
	os.Exit(code)
}

// open returns the store on a fresh, migrated database.
func open(t testing.TB) *postgres.DB {
	t.Helper()
	ctx := context.Background()
	db, err := postgres.Open(ctx, pg.Database(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if _, err := db.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	return db
}

func TestBackend(t *testing.T) {
	limitstest.Run(t, func(t *testing.T) limitstest.Backend {
		return limitspg.New(open(t).Pool())
	}, time.Sleep, time.Second)
}

func BenchmarkTake(b *testing.B) {
	limitstest.Bench(b, limitspg.New(open(b).Pool()))
}
