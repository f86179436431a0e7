// Package clocktest is a clock tests move: the wall clock plus an offset, safe for concurrent
// use, to inject where code takes a func() time.Time.
package clocktest

import (
	"sync/atomic"
	"time"
)

// Clock is time.Now moved by Advance.
type Clock struct{ offset atomic.Int64 }

// Now is the wall clock plus every Advance so far.
func (c *Clock) Now() time.Time { return time.Now().Add(time.Duration(c.offset.Load())) }

// Advance moves the clock by d (back, when negative).
func (c *Clock) Advance(d time.Duration) { c.offset.Add(int64(d)) }
