package main

import (
	"context"
	"runtime/debug"
	"runtime/metrics"
	"slices"
	"strings"
	"time"

	"github.com/cobranca/cobranca/internal/config"
	"github.com/cobranca/cobranca/internal/ticker"
)

// tuneMemory sets the runtime's soft memory limit as a ceiling and, unless
// GOGC says otherwise, a lazier collector: a call allocates a few hundred
// KB that die with it, and the live heap is about 5 MB, so with GOGC 400
// the heap goal is about 25 MB, under the 40 MiB default limit with room
// for stacks and runtime structures; the limit paces the collector only
// when the live heap grows past about 6 MB. GOGC 200 would keep the goal
// lower but costs three times as much collector CPU per call (measured:
// 0.10 against 0.33 ms per call, docs/benchmarks.md). What the pace does
// not do is give memory back once a burst is over: memoryReturner does.
func tuneMemory(cfg config.Config, environ []string) {
	debug.SetMemoryLimit(cfg.MemoryLimit)
	if !slices.ContainsFunc(environ, func(kv string) bool { return strings.HasPrefix(kv, "GOGC=") }) {
		debug.SetGCPercent(400)
	}
}

// memoryReturner gives memory back to the operating system after a burst.
// The runtime keeps the pages it freed for the heap to grow into again, up
// to about its heap goal, and returns them only slowly; after a burst (a
// connection flood, a spike of calls) the process would hold them at idle,
// close to the memory limit, where the limit makes the collector run hard.
// Once allocation has calmed down and the process holds much more than its
// live heap, it returns the surplus at once.
type memoryReturner struct {
	limit      int64
	samples    []metrics.Sample
	lastAllocs uint64
}

const (
	mAllocs   = "/gc/heap/allocs:bytes"
	mTotal    = "/memory/classes/total:bytes"
	mReleased = "/memory/classes/heap/released:bytes"
	mLive     = "/gc/heap/live:bytes"
)

func newMemoryReturner(limit int64) *memoryReturner {
	r := &memoryReturner{limit: limit}
	for _, name := range []string{mAllocs, mTotal, mReleased, mLive} {
		r.samples = append(r.samples, metrics.Sample{Name: name})
	}
	r.read()
	return r
}

// read returns the bytes allocated since the last read, and what the
// process holds beyond its live heap (what the memory limit counts, less
// the live heap).
func (r *memoryReturner) read() (allocated, surplus uint64) {
	metrics.Read(r.samples)
	allocs, total, released, live := r.samples[0].Value.Uint64(), r.samples[1].Value.Uint64(), r.samples[2].Value.Uint64(), r.samples[3].Value.Uint64()
	allocated, r.lastAllocs = allocs-r.lastAllocs, allocs
	if held := total - released; held > live {
		surplus = held - live
	}
	return allocated, surplus
}

// step returns memory to the system when, since the last step, the
// process allocated less than a quarter of the limit (the burst is over)
// and holds more than a quarter of the limit beyond its live heap.
func (r *memoryReturner) step() bool {
	allocated, surplus := r.read()
	if allocated >= uint64(r.limit/4) || surplus <= uint64(r.limit/4) {
		return false
	}
	debug.FreeOSMemory()
	r.read() // FreeOSMemory's own collection is not the next step's burst
	return true
}

// run steps every interval until ctx ends.
func (r *memoryReturner) run(ctx context.Context, every time.Duration) {
	ticker.Run(ctx, every, func(context.Context) { r.step() })
}
