package sqlite_test

import (
	"context"
	"math/rand/v2"
	"path/filepath"
	"testing"
	"time"

	"github.com/cobranca/cobranca/internal/limits"
	"github.com/cobranca/cobranca/internal/limits/limitstest"
	limitssqlite "github.com/cobranca/cobranca/internal/limits/sqlite"
	"github.com/cobranca/cobranca/internal/store/sqlite"
)

func open(t testing.TB) *sqlite.DB {
	t.Helper()
	ctx := context.Background()
	db, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "cobranca.db"), nil)
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
	c := limitstest.NewClock()
	limitstest.Run(t, func(t *testing.T) limitstest.Backend {
		return limitssqlite.New(open(t), c.Now)
	}, c.Advance, 0)
}

// TestMatchesGCRA: on a fake clock the store decides exactly as the pure
// arithmetic does, step by step.
func TestMatchesGCRA(t *testing.T) {
	c := limitstest.NewClock()
	b := limitssqlite.New(open(t), c.Now)
	lim := limits.Limit{Rate: 7, Period: time.Second, Burst: 4}
	r := rand.New(rand.NewPCG(3, 4))
	var tat time.Time
	for i := range 500 {
		c.Advance(time.Duration(r.Int64N(int64(lim.Interval()))))
		var want limits.Decision
		want, tat = limits.GCRA(lim, tat, c.Now())
		got, err := b.Take(context.Background(), "k", lim)
		if err != nil || got != want {
			t.Fatalf("step %d: Take = %+v, %v; GCRA = %+v", i, got, err, want)
		}
	}
}

func BenchmarkTake(b *testing.B) {
	limitstest.Bench(b, limitssqlite.New(open(b), time.Now))
}
