package limitstest

import (
	"context"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cobranca/cobranca/internal/limits"
)

// Bench measures decisions per second on one hot key and spread over 1 000
// keys, from one goroutine and from many, and chains of two hot keys (an
// authenticated request's origin and principal). The limit admits every
// request, so each decision is a write (the costlier path; a refusal writes
// nothing). A chain counts as one decision: its two keys' work is the
// price of one request at the HTTP edge.
func Bench(b *testing.B, backend Backend) {
	ctx := context.Background()
	lim := limits.Limit{Rate: 1_000_000, Period: time.Second, Burst: 1_000_000}
	keys := make([]string, 1000)
	for i := range keys {
		keys[i] = "bench:" + strconv.Itoa(i)
	}
	report := func(b *testing.B) {
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "decisions/s")
	}
	for _, n := range []int{1, 1000} {
		name := "hot_key"
		if n > 1 {
			name = strconv.Itoa(n) + "_keys"
		}
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				if _, err := backend.Take(ctx, keys[i%n], lim); err != nil {
					b.Fatal(err)
				}
				i++
			}
			report(b)
		})
		b.Run(name+"/parallel", func(b *testing.B) {
			b.ReportAllocs()
			b.SetParallelism(8)
			var next atomic.Int64
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if _, err := backend.Take(ctx, keys[int(next.Add(1))%n], lim); err != nil {
						b.Error(err)
						return
					}
				}
			})
			report(b)
		})
	}
	chain := []limits.Request{{Key: "bench:origin", Limit: lim}, {Key: "bench:principal", Limit: lim}}
	b.Run("chain_of_2", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := backend.TakeChain(ctx, chain); err != nil {
				b.Fatal(err)
			}
		}
		report(b)
	})
	b.Run("chain_of_2/parallel", func(b *testing.B) {
		b.ReportAllocs()
		b.SetParallelism(8)
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if _, err := backend.TakeChain(ctx, chain); err != nil {
					b.Error(err)
					return
				}
			}
		})
		report(b)
	})
}
