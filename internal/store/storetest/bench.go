package storetest

import (
	"context"
	"testing"

	"github.com/cobranca/cobranca/internal/pgtest"
	"github.com/cobranca/cobranca/internal/store"
)

// Case is one call a benchmark measures.
type Case struct {
	Name string
	Call func() error
}

// BenchCases runs, on a fresh migrated database of each dialect (SQLite, then PostgreSQL on
// pg, as its owner), the yardstick's Insert as case bare_insert and then the cases setup
// returns for that database, each with Parallel: the tools' cost and the yardstick's, in the
// same run.
func BenchCases(b *testing.B, pg *pgtest.Cluster, setup func(b *testing.B, db store.DB) []Case) {
	for _, f := range Fixtures(pg) {
		b.Run(string(f.Dialect), func(b *testing.B) {
			db := f.Migrated(b)
			for _, c := range withYardstick(b, db, setup) {
				b.Run(c.Name, func(b *testing.B) { Parallel(b, c.Call) })
			}
		})
	}
}

// BenchRoundTrips counts, on PostgreSQL on pg, the round trips of the yardstick and of each
// case setup returns, one call at a time, through CountRoundTrips' proxy, and reports them as
// roundtrips/call (the time is not the point: the proxy adds a hop to every round trip).
func BenchRoundTrips(b *testing.B, pg *pgtest.Cluster, setup func(b *testing.B, db store.DB) []Case) {
	f := Fixtures(pg)[1]
	where := f.NewDatabase(b)
	if _, err := f.Open(b, where).Migrate(context.Background()); err != nil {
		b.Fatal(err)
	}
	u, rt := CountRoundTrips(b, where)
	for _, c := range withYardstick(b, f.Open(b, u), setup) {
		b.Run(c.Name, func(b *testing.B) {
			// Once first: pgx prepares a statement on a connection the first time it runs
			// there, a round trip that later calls do not make.
			if err := c.Call(); err != nil {
				b.Fatal(err)
			}
			rt.Reset()
			for b.Loop() {
				if err := c.Call(); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(rt.Load())/float64(b.N), "roundtrips/call")
		})
	}
}

func withYardstick(b *testing.B, db store.DB, setup func(b *testing.B, db store.DB) []Case) []Case {
	y := NewYardstick(b, db)
	yardstick := Case{"bare_insert", func() error { return y.Insert(context.Background(), nil) }}
	return append([]Case{yardstick}, setup(b, db)...)
}
