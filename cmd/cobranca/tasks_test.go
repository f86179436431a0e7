package main

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestTasksStopInReverse: what started last stops first, goroutine tasks and plain stops
// alike, and a task's context ends only when the task is stopped, not with the parent's.
func TestTasksStopInReverse(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		var order []string
		record := func(s string) {
			mu.Lock()
			defer mu.Unlock()
			order = append(order, s)
		}
		parent, cancelParent := context.WithCancel(t.Context())
		var bg tasks
		bg.onStop("store", 0, func(context.Context) error { record("store"); return nil })
		bg.run(parent, "sealer", 0, func(ctx context.Context) { <-ctx.Done(); record("sealer") })
		bg.run(parent, "outbox", 0, func(ctx context.Context) { <-ctx.Done(); record("outbox") })
		bg.onStop("listener", 0, func(context.Context) error { record("listener"); return nil })

		cancelParent()
		synctest.Wait()
		if len(order) != 0 {
			t.Fatalf("the parent's cancellation stopped %v; only stop may", order)
		}
		if err := bg.stop(parent); err != nil {
			t.Fatalf("stop = %v", err)
		}
		if diff := cmp.Diff([]string{"listener", "outbox", "sealer", "store"}, order); diff != "" {
			t.Errorf("stop order (-want +got):\n%s", diff)
		}
		if err := bg.stop(parent); err != nil || len(order) != 4 {
			t.Errorf("a second stop = %v and stopped %v again", err, order[4:])
		}
	})
}

// TestTasksStopTimeout: a task that does not stop within its timeout costs that timeout and
// an error naming it; the stops after it still run, and every error is returned.
func TestTasksStopTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		storeClosed := false
		var bg tasks
		bg.onStop("store", 0, func(context.Context) error { storeClosed = true; return errors.New("close: disk full") })
		bg.run(t.Context(), "spool", 3*time.Second, func(context.Context) { <-release }) // ignores its context
		stopOutbox := bg.run(t.Context(), "outbox", 0, func(ctx context.Context) { <-ctx.Done() })

		stopOutbox() // told early, as the shutdown tells the outbox; stop still waits for it
		start := time.Now()
		err := bg.stop(t.Context())
		if got := time.Since(start); got != 3*time.Second {
			t.Errorf("stop took %v, want the spool's 3s timeout", got)
		}
		if !storeClosed {
			t.Error("the store was not closed after the spool's stop timed out")
		}
		for _, want := range []string{"stop spool: did not stop within 3s", "stop store: close: disk full"} {
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("stop = %v, want it to say %q", err, want)
			}
		}
		if err != nil && strings.Contains(err.Error(), "outbox") {
			t.Errorf("stop = %v: the outbox stopped in time", err)
		}
		close(release)
	})
}
