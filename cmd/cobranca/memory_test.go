package main

import (
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
)

var sink [][]byte

// memoryChild is set in the environment of the process TestMemoryReturner
// runs in.
const memoryChild = "COBRANCA_TEST_MEMORY_CHILD"

// TestMemoryReturner: under the server's pacing (GOGC 400, a 40 MiB
// limit), a burst of allocation leaves the process holding memory far
// beyond its live heap; once the burst is over the returner gives it back,
// and while a burst goes on it does not. It measures the whole process, so
// it runs in a process of its own: the goroutines other tests of this
// package leave behind (servers draining, audit writers) allocate while it
// measures, and on a loaded machine made its last step find memory to
// return.
func TestMemoryReturner(t *testing.T) {
	if os.Getenv(memoryChild) != "1" {
		cmd := exec.Command(os.Args[0], "-test.run", "^TestMemoryReturner$", "-test.count", "1", "-test.v")
		cmd.Env = append(os.Environ(), memoryChild+"=1")
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), "--- PASS: TestMemoryReturner") {
			t.Fatalf("the returner's test in a process of its own: %v\n%s", err, out)
		}
		return
	}
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
