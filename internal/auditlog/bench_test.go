package auditlog

import (
	"context"
	"testing"
	"time"

	"github.com/cobranca/cobranca/internal/store/storetest"
)

// BenchmarkAppend measures Record (one event, one transaction, as a read-only tool call writes
// it) with the sealer running alongside, as when serving: one writer, and 16 writers at once.
func BenchmarkAppend(b *testing.B) {
	for _, f := range storetest.Fixtures(pg) {
		b.Run(string(f.Dialect), func(b *testing.B) {
			b.Run("serial", func(b *testing.B) {
				l, stop := benchLog(b, f)
				defer stop()
				ctx := context.Background()
				ev := sampleEvent(1)
				b.ReportAllocs()
				for b.Loop() {
					if err := l.Record(ctx, ev); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "appends/s")
			})
			b.Run("parallel16", func(b *testing.B) { benchParallel(b, f, false) })
			b.Run("parallel16_grouped", func(b *testing.B) { benchParallel(b, f, true) })
		})
	}
}

// benchParallel is 16 concurrent writers, each Record a single INSERT or
// through RunWriter's group commit.
func benchParallel(b *testing.B, f storetest.Fixture, grouped bool) {
	l, stop := benchLog(b, f)
	defer stop()
	ctx := context.Background()
	if grouped {
		wctx, stopWriter := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() { l.RunWriter(wctx); close(done) }()
		defer func() { stopWriter(); <-done }()
		for !l.writerUp.Load() {
			time.Sleep(time.Millisecond)
		}
	}
	b.ReportAllocs()
	b.SetParallelism(8) // 8 × GOMAXPROCS(2) = 16 writers on this machine
	b.ResetTimer()
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		ev := sampleEvent(1)
		for pb.Next() {
			if err := l.Record(ctx, ev); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "appends/s")
}

// BenchmarkSeal measures the sealer alone: each iteration seals a batch of 1000 events
// appended beforehand (outside the timer).
func BenchmarkSeal(b *testing.B) {
	for _, f := range storetest.Fixtures(pg) {
		b.Run(string(f.Dialect), func(b *testing.B) {
			db := f.Migrated(b)
			l := newLog(b, db)
			ctx := context.Background()
			ev := sampleEvent(1)
			b.ReportAllocs()
			for b.Loop() {
				b.StopTimer()
				for range sealBatch {
					if err := l.Record(ctx, ev); err != nil {
						b.Fatal(err)
					}
				}
				b.StartTimer()
				if n, err := l.Seal(ctx); err != nil || n != sealBatch {
					b.Fatalf("Seal() = %d, %v", n, err)
				}
			}
			b.ReportMetric(float64(b.N*sealBatch)/b.Elapsed().Seconds(), "events/s")
		})
	}
}

func benchLog(b *testing.B, f storetest.Fixture) (*Log, func()) {
	db := f.Migrated(b)
	l := newLog(b, db)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { l.RunSealer(ctx, 100*time.Millisecond); close(done) }()
	return l, func() {
		cancel()
		<-done
		if rep, err := l.Verify(context.Background()); err != nil || rep.Problem != nil {
			b.Errorf("Verify() after the benchmark = %v, %v", rep, err)
		}
	}
}

// BenchmarkStamp measures what authenticating an event adds to every append: a random nonce
// and the HMAC-SHA256 over the event's canonical encoding.
func BenchmarkStamp(b *testing.B) {
	l, err := New(storetest.SQLite(b), testKey, Options{})
	if err != nil {
		b.Fatal(err)
	}
	ev := sampleEvent(1)
	now := time.Now()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := l.stamp(ev, now); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSpoolAdd measures keeping events in the spool while the store is down: encode,
// append, fsync (the data directory's disk decides), by one caller and by 16 at once, who
// share fsyncs.
func BenchmarkSpoolAdd(b *testing.B) {
	setup := func(b *testing.B) (*Spool, record) {
		s, err := OpenSpool(b.TempDir()+"/"+SpoolFileName, SpoolOptions{MaxBytes: 1 << 30})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { s.Close() })
		l, err := New(storetest.SQLite(b), testKey, Options{Spool: s})
		if err != nil {
			b.Fatal(err)
		}
		r, err := l.stamp(sampleEvent(1), time.Now())
		if err != nil {
			b.Fatal(err)
		}
		return s, r
	}
	b.Run("serial", func(b *testing.B) {
		s, r := setup(b)
		b.ReportAllocs()
		for b.Loop() {
			if err := s.add(&r); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
	})
	b.Run("parallel16", func(b *testing.B) {
		s, r := setup(b)
		b.ReportAllocs()
		b.SetParallelism(8)
		start := time.Now()
		b.RunParallel(func(pb *testing.PB) {
			r := r
			for pb.Next() {
				if err := s.add(&r); err != nil {
					b.Error(err)
					return
				}
			}
		})
		b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "events/s")
	})
}
