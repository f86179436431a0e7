package main

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// tasks are serve's background work and the resources it holds, stopped in the reverse of
// the order they started: what started last (and may use what started before it) stops
// first. Each stop has a deadline of its own, so one that hangs costs its timeout and an
// error, never the stops after it.
type tasks struct {
	stops []taskStop
}

type taskStop struct {
	name    string
	timeout time.Duration
	stop    func(context.Context) error
}

// taskStopTimeout bounds a stop that names no timeout of its own.
const taskStopTimeout = 10 * time.Second

// run starts fn in a goroutine with a context of its own, canceled when the task stops,
// and returns that cancel (to tell the task early that it should stop; stop still waits
// for it). The task's stop waits until fn returns, up to timeout (0: taskStopTimeout).
// ctx gives values only: its cancellation does not stop the task.
func (t *tasks) run(ctx context.Context, name string, timeout time.Duration, fn func(context.Context)) context.CancelFunc {
	ctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan struct{})
	go func() {
		defer close(done)
		fn(ctx)
	}()
	t.onStop(name, timeout, func(stopCtx context.Context) error {
		cancel()
		select {
		case <-done:
			return nil
		case <-stopCtx.Done():
			return context.Cause(stopCtx)
		}
	})
	return cancel
}

// onStop adds a stop that is not a goroutine's: a listener to shut down, a store to close.
func (t *tasks) onStop(name string, timeout time.Duration, stop func(context.Context) error) {
	if timeout <= 0 {
		timeout = taskStopTimeout
	}
	t.stops = append(t.stops, taskStop{name: name, timeout: timeout, stop: stop})
}

// stop runs every stop, last added first, each under its own timeout (ctx's values, not its
// cancellation: a stop runs after the signal that canceled serve's context), and returns
// their errors joined, each naming its task. It stops each task once: a second call does
// nothing.
func (t *tasks) stop(ctx context.Context) error {
	var errs []error
	for i := len(t.stops) - 1; i >= 0; i-- {
		s := t.stops[i]
		sctx, cancel := context.WithTimeoutCause(context.WithoutCancel(ctx), s.timeout,
			fmt.Errorf("did not stop within %v", s.timeout))
		if err := s.stop(sctx); err != nil {
			errs = append(errs, fmt.Errorf("stop %s: %w", s.name, err))
		}
		cancel()
	}
	t.stops = nil
	return errors.Join(errs...)
}
