package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/cobranca/cobranca/internal/limits"
	"github.com/cobranca/cobranca/internal/limits/limitstest"
	limitspg "github.com/cobranca/cobranca/internal/limits/postgres"
	"github.com/cobranca/cobranca/internal/pgtest"
	"github.com/cobranca/cobranca/internal/store/postgres"
	"github.com/cobranca/cobranca/internal/store/storetest"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

var pg = pgtest.New()

func TestMain(m *testing.M) { pg.Run(m) }

// open returns the store on a fresh, migrated database (a copy of a migrated template).
func open(t testing.TB) *postgres.DB {
	t.Helper()
	db, err := postgres.Open(context.Background(), storetest.MigratedPostgres(t, pg), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func TestBackend(t *testing.T) {
	limitstest.Run(t, func(t *testing.T) limitstest.Backend {
		return limitspg.New(open(t).Pool())
	}, time.Sleep, time.Second)
}

// TestCost: costs of more than one unit, through two pools on one database.
func TestCost(t *testing.T) {
	limitstest.RunCost(t, func(t *testing.T) (limitstest.Backend, limitstest.Backend) {
		ctx := context.Background()
		url := storetest.MigratedPostgres(t, pg)
		var pools [2]*pgxpool.Pool
		for i := range pools {
			db, err := postgres.Open(ctx, url, nil)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { db.Close() })
			pools[i] = db.Pool()
		}
		return limitspg.New(pools[0]), limitspg.New(pools[1])
	}, time.Second)
}

func BenchmarkTake(b *testing.B) {
	limitstest.Bench(b, limitspg.New(open(b).Pool()))
}

// TestOpenCommitsAsync: Open's pool commits asynchronously, and only it:
// the store's pool, which audit events use, keeps synchronous commits.
func TestOpenCommitsAsync(t *testing.T) {
	ctx := context.Background()
	url := pg.Database(t)
	// The test cluster runs with synchronous_commit off; this database gets
	// it back on, so that the store's pool has something to keep.
	plain, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close(ctx)
	if _, err := plain.Exec(ctx, `DO $$ BEGIN EXECUTE format('ALTER DATABASE %I SET synchronous_commit = on', current_database()); END $$`); err != nil {
		t.Fatal(err)
	}
	db, err := postgres.Open(ctx, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	b, err := limitspg.Open(ctx, url, 2, false)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if _, err := b.Take(ctx, "k", limits.Limit{Rate: 10, Period: time.Second, Burst: 10}); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name string
		pool *pgxpool.Pool
		want string
	}{{"limits", b.Pool(), "off"}, {"store", db.Pool(), "on"}} {
		var got string
		if err := tt.pool.QueryRow(ctx, `SHOW synchronous_commit`).Scan(&got); err != nil {
			t.Fatal(err)
		}
		if got != tt.want {
			t.Errorf("%s pool: synchronous_commit = %q, want %q", tt.name, got, tt.want)
		}
	}
}
