package main

import (
	"runtime"
	"runtime/debug"
	"testing"
)

var sink [][]byte

// TestMemoryReturner: under the server's pacing (GOGC 400, a 40 MiB
// limit), a burst of allocation leaves the process holding memory far
// beyond its live heap; once the burst is over the returner gives it back,
// and while a burst goes on it does not.
func TestMemoryReturner(t *testing.T) {
	const limit = 40 << 20
	defer debug.SetGCPercent(debug.SetGCPercent(400))
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(limit))
	// What the process holds beyond its live heap that no return gives
	// back (stacks, runtime metadata: more after other tests ran servers in
	// this process) is the floor the returner is held to.
	debug.FreeOSMemory()
	r := newMemoryReturner(limit)
	_, floor := r.read()

	// A burst: 30 MB live at its peak, as a flood's buffers and stacks were,
	// then dead.
	for range 30 {
		sink = append(sink, make([]byte, 1<<20))
	}
	sink = nil
	runtime.GC()
	if r.step() {
		t.Errorf("step right after a burst of %d MiB returned memory: the burst is not over", 30)
	}
	_, surplus := r.read()
	if surplus <= limit/4 {
		t.Fatalf("after the burst the process holds only %d MiB beyond its live heap: the test shows nothing", surplus>>20)
	}
	if !r.step() {
		t.Fatal("step after the burst did not return memory")
	}
	if _, surplus := r.read(); surplus > floor+8<<20 {
		t.Errorf("after the returner the process holds %d MiB beyond its live heap, want at most 8 more than the %d MiB it held before the burst", surplus>>20, floor>>20)
	}
	if r.step() {
		t.Error("step with nothing to return returned memory again")
	}
}
