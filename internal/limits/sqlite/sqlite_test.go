package sqlite_test

import (
	"context"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/cobranca/cobranca/internal/limits"
	"github.com/cobranca/cobranca/internal/limits/limitstest"
	limitssqlite "github.com/cobranca/cobranca/internal/limits/sqlite"
	"github.com/cobranca/cobranca/internal/store/sqlite"
	"github.com/cobranca/cobranca/internal/store/storetest"
)

func TestBackend(t *testing.T) {
	c := limitstest.NewClock()
	limitstest.Run(t, func(t *testing.T) limitstest.Backend {
		return limitssqlite.New(storetest.SQLite(t), c.Now)
	}, c.Advance, 0)
}

// TestCost: costs of more than one unit, through two handles on one file.
func TestCost(t *testing.T) {
	c := limitstest.NewClock()
	f := storetest.Fixtures(nil)[0]
	limitstest.RunCost(t, func(t *testing.T) (limitstest.Backend, limitstest.Backend) {
		where := f.NewDatabase(t)
		first := f.Open(t, where)
		if _, err := first.(*sqlite.DB).Migrate(context.Background()); err != nil {
			t.Fatal(err)
		}
		return limitssqlite.New(first, c.Now), limitssqlite.New(f.Open(t, where), c.Now)
	}, 0)
}

// TestMatchesGCRA: on a fake clock the store decides exactly as the pure
// arithmetic does, step by step.
func TestMatchesGCRA(t *testing.T) {
	c := limitstest.NewClock()
	b := limitssqlite.New(storetest.SQLite(t), c.Now)
	lim := limits.Limit{Rate: 7, Period: time.Second, Burst: 4}
	r := rand.New(rand.NewPCG(3, 4))
	var tat time.Time
	for i := range 500 {
		c.Advance(time.Duration(r.Int64N(int64(lim.Interval()))))
		var want limits.Decision
		want, tat = limits.GCRA(lim, limits.Cost{}, tat, c.Now())
		got, err := b.Take(context.Background(), "k", lim)
		if err != nil || got != want {
			t.Fatalf("step %d: Take = %+v, %v; GCRA = %+v", i, got, err, want)
		}
	}
}

func BenchmarkTake(b *testing.B) {
	limitstest.Bench(b, limitssqlite.New(storetest.SQLite(b), time.Now))
}
