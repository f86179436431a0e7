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
// keys, from one goroutine and from many. The limit admits every request, so
// each decision is a write (the costlier path; a refusal writes nothing).
func Bench(b *testing.B, backend limits.Backend) {
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
}
