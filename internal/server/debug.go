package server

import (
	"net/http"
	"net/http/pprof"
)

// Debug is the handler of the optional debug listener (COBRANCA_DEBUG_ADDR):
// the Go runtime's profiles, as net/http/pprof serves them. It is mounted on
// a loopback listener of its own, never on the public mux, so nothing on
// the MCP port reveals the process's internals.
func Debug() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /debug/pprof/", pprof.Index)
	mux.HandleFunc("GET /debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("GET /debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("GET /debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("GET /debug/pprof/trace", pprof.Trace)
	return mux
}
