package server

import (
	"fmt"
	"io"
	"net/http"
	"runtime/pprof"
	"runtime/trace"
	"strconv"
	"time"
)

// MaxProfileSeconds bounds how long one CPU profile or execution trace of
// the debug listener runs; the listener's write timeout is set from it.
const MaxProfileSeconds = 60

// Debug is the handler of the optional debug listener (COBRANCA_DEBUG_ADDR):
// the Go runtime's profiles, in the formats `go tool pprof` and `go tool
// trace` read. It is mounted on a loopback listener of its own, never on the
// public mux. It is written on runtime/pprof rather than net/http/pprof,
// whose import registers the same pages on http.DefaultServeMux of every
// server in the process; and it caps how long a profile may run.
//
//	GET /debug/pprof/                 the profiles and their counts
//	GET /debug/pprof/profile?seconds= a CPU profile (default 30 s)
//	GET /debug/pprof/trace?seconds=   an execution trace (default 1 s)
//	GET /debug/pprof/{name}?debug=    heap, allocs, goroutine, block, mutex, threadcreate
func Debug() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /debug/pprof/{$}", profileIndex)
	mux.HandleFunc("GET /debug/pprof/profile", cpuProfile)
	mux.HandleFunc("GET /debug/pprof/trace", executionTrace)
	mux.HandleFunc("GET /debug/pprof/{name}", namedProfile)
	return mux
}

func profileIndex(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	fmt.Fprintf(w, "profile\tCPU profile, ?seconds=1..%d (default 30)\ntrace\texecution trace, ?seconds=1..%d (default 1)\n", MaxProfileSeconds, MaxProfileSeconds)
	for _, p := range pprof.Profiles() {
		fmt.Fprintf(w, "%s\t%d\n", p.Name(), p.Count())
	}
}

// seconds reads ?seconds=, an integer from 1 to MaxProfileSeconds.
func seconds(w http.ResponseWriter, r *http.Request, def int) (time.Duration, bool) {
	n := def
	if v := r.URL.Query().Get("seconds"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n < 1 || n > MaxProfileSeconds {
			http.Error(w, fmt.Sprintf("seconds: must be a whole number from 1 to %d", MaxProfileSeconds), http.StatusBadRequest)
			return 0, false
		}
	}
	return time.Duration(n) * time.Second, true
}

// wait blocks for d or until the client goes away.
func wait(r *http.Request, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-r.Context().Done():
	}
}

func cpuProfile(w http.ResponseWriter, r *http.Request) {
	timed(w, r, "profile", 30, pprof.StartCPUProfile, pprof.StopCPUProfile)
}

func executionTrace(w http.ResponseWriter, r *http.Request) {
	timed(w, r, "trace", 1, trace.Start, trace.Stop)
}

// timed records a profile into w for ?seconds= (default def), or until the
// client goes away.
func timed(w http.ResponseWriter, r *http.Request, name string, def int, start func(io.Writer) error, stop func()) {
	d, ok := seconds(w, r, def)
	if !ok {
		return
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Content-Disposition", `attachment; filename="`+name+`"`)
	if err := start(w); err != nil {
		http.Error(w, "could not start a "+name+": "+err.Error(), http.StatusConflict)
		return
	}
	wait(r, d)
	stop()
}

func namedProfile(w http.ResponseWriter, r *http.Request) {
	p := pprof.Lookup(r.PathValue("name"))
	if p == nil {
		http.Error(w, "no such profile", http.StatusNotFound)
		return
	}
	debug := 0
	if v := r.URL.Query().Get("debug"); v != "" {
		var err error
		if debug, err = strconv.Atoi(v); err != nil || debug < 0 || debug > 2 {
			http.Error(w, "debug: must be 0, 1 or 2", http.StatusBadRequest)
			return
		}
	}
	if debug > 0 {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	} else {
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Header().Set("Content-Disposition", `attachment; filename="`+p.Name()+`"`)
	}
	_ = p.WriteTo(w, debug)
}
