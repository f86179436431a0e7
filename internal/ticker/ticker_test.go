package ticker

import (
	"context"
	"sync/atomic"
	"testing"
	"time"
)

// TestRun: fn runs on every tick, not before the first, and Run returns once ctx ends.
func TestRun(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	var calls atomic.Int32
	done := make(chan struct{})
	start := time.Now()
	var first atomic.Int64
	go func() {
		Run(ctx, 10*time.Millisecond, func(context.Context) {
			if calls.Add(1) == 1 {
				first.Store(int64(time.Since(start)))
			}
		})
		close(done)
	}()
	deadline := time.Now().Add(10 * time.Second)
	for calls.Load() < 3 {
		if time.Now().After(deadline) {
			t.Fatalf("fn ran %d times in 10 s, want 3", calls.Load())
		}
		time.Sleep(time.Millisecond)
	}
	if d := time.Duration(first.Load()); d < 10*time.Millisecond {
		t.Errorf("first call after %v, want one interval (10ms)", d)
	}
	cancel()
	select {
	case <-done:
	case <-time.After(2 * time.Second):
		t.Fatal("Run did not return within 2 s of its context's end")
	}
	n := calls.Load()
	time.Sleep(30 * time.Millisecond)
	if calls.Load() != n {
		t.Error("fn ran after Run returned")
	}
}
