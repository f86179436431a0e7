// Package server assembles cobranca's HTTP surface: every route is listed in
// Routes, with the middleware that guards it.
package server

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/cobranca/cobranca/internal/auth"
	"github.com/cobranca/cobranca/internal/authserver"
	"github.com/cobranca/cobranca/internal/contract"
	"github.com/cobranca/cobranca/internal/failure"
	"github.com/cobranca/cobranca/internal/files"
	"github.com/cobranca/cobranca/internal/limits"
	"github.com/cobranca/cobranca/internal/mcpapi"
	"github.com/cobranca/cobranca/internal/request"
	"github.com/cobranca/cobranca/internal/signin"
	"github.com/cobranca/cobranca/internal/store"
	"github.com/cobranca/cobranca/internal/telemetry"
	"github.com/cobranca/cobranca/internal/web"
	"github.com/go-chi/chi/v5"
	"go.opentelemetry.io/otel/trace"
)

// Deps are what the routes need, built by the composition root.
type Deps struct {
	Logger         *slog.Logger
	MCP            *mcpapi.Handler
	AllowedOrigins []string
	AllowedHosts   []string
	MaxBodyBytes   int64
	// Auth verifies the bearer token in front of /mcp and /contracts and
	// publishes the protected resource metadata. Required.
	Auth *auth.Authenticator
	// Limits enforces the per-origin budget before the token is verified and
	// the per-principal budget after; nil serves without rate limits.
	Limits *limits.Limiter
	// Ready answers /readyz: nil when the store answers and its migrations
	// are current. Nil means always ready (no store).
	Ready func(ctx context.Context) error
	// Downloads serves files.DownloadPattern (internal/files): the signed
	// link is the credential, so no token, Host or Origin check guards it.
	// Nil: no downloads.
	Downloads http.Handler
	// AuthServer is the development authorization server
	// (internal/authserver), served at authserver.Paths; nil outside
	// development mode, where none of those paths exists.
	AuthServer http.Handler
	// Web serves the pages for people (internal/web): sign-in (GET /signin, GET
	// /signin/callback, POST /signout) and the approval page (GET and POST
	// /approvals/{id}). A session cookie, not a bearer token, is their credential;
	// their forms are checked for cross-site posts and CSRF tokens there. And the console
	// (GET /console and below; its forms, POST below /console). Nil: no pages.
	Web http.Handler
	// Admin runs the forbidden tools for people: the admin API (POST /admin/write-offs, GET
	// /admin/contracts), with a person's bearer token or, through Sessions, a signed-in
	// person's session (the write-off page, served by Web). Nil: no admin API.
	Admin AdminRunner
	// WriteOffTool is the forbidden tool POST /admin/write-offs runs with a bearer token
	// (collections.write_off_invoice): the routes name no tool of their own.
	WriteOffTool string
	Sessions     Sessions
	// Tracing, when not nil, gives every request a server span (trace.go),
	// continuing the caller's W3C traceparent. Nil: no tracing, at no cost.
	Tracing trace.TracerProvider
}

// The platform's health checks: liveness and readiness.
const (
	pathHealthz = "/healthz"
	pathReadyz  = "/readyz"
)

// probe reports whether path is a platform's health check: answered while
// the server drains (Drain), and not traced (a probe every few seconds would
// be a trace every few seconds).
func probe(path string) bool { return path == pathHealthz || path == pathReadyz }

// Routes returns the whole HTTP surface of cobranca.
func Routes(d Deps) http.Handler {
	r := chi.NewRouter()
	r.Use(requestInfo(d.Logger, d.Tracing))

	if d.Auth == nil {
		panic("server.Routes: Deps.Auth is required: /mcp is never served without token checks")
	}

	// Liveness answers whatever Host a platform health checker sends.
	r.Get(pathHealthz, healthz)
	// Readiness: the store answers and its schema is current.
	r.Get(pathReadyz, readyz(d.Ready, d.Logger))
	// /metrics is not here: MetricsRoutes serves it on a listener of its own.

	// OAuth discovery (RFC 9728) is public; every challenge points here.
	meta := d.Auth.MetadataHandler(contract.Scopes(d.MCP.Contracts()))
	for _, path := range metadataPaths(d.Auth.ResourceMetadataURL()) {
		r.Method(http.MethodGet, path, meta)
	}
	if jwks := d.Auth.JWKSHandler(); jwks != nil { // development mode only
		r.Method(http.MethodGet, auth.JWKSPath, jwks)
	}
	// The development authorization server: discovery, registration, the
	// sign-in page and the token endpoint (development mode only). Like /mcp
	// it answers only the Hosts and browser Origins allowed (no DNS
	// rebinding hands a web page its sign-in), and its writes — clients and
	// codes in the store — come under the per-origin budget.
	if d.AuthServer != nil {
		as := guardOrigin(d.AllowedOrigins, d.AllowedHosts)(d.AuthServer)
		if d.Limits != nil {
			as = d.Limits.Origin(as)
		}
		for _, path := range authserver.Paths {
			r.Handle(path, as)
		}
	}
	// Downloads through signed links (GET and HEAD; the handler answers
	// every other method 405 in the one error shape), under the per-origin
	// budget: each answer reads the store and most are audited.
	if d.Downloads != nil {
		downloads := d.Downloads
		if d.Limits != nil {
			downloads = d.Limits.Origin(downloads)
		}
		r.Handle(files.DownloadPattern, downloads)
		// Any other path under /files/ is a 404 in the one error shape, not
		// net/http's plain text; like getContract's, it never echoes the path.
		r.Handle("/files/*", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			failure.WriteHTTP(w, http.StatusNotFound, &failure.Error{Code: codeNotFound, Message: "no such path: a download link is /files/{fileId}/download?…"})
		}))
	}

	// The pages for people, under the per-origin budget like downloads: every answer reads
	// the store.
	if d.Web != nil {
		pages := d.Web
		if d.Limits != nil {
			pages = d.Limits.Origin(pages)
		}
		r.Method(http.MethodGet, signin.SignInPath, pages)
		r.Method(http.MethodGet, signin.CallbackPath, pages)
		r.Method(http.MethodPost, signin.SignOutPath, pages)
		r.Method(http.MethodGet, web.ApprovalPattern, pages)
		r.Method(http.MethodPost, web.ApprovalPattern, pages)
		// The console: its pages (GET) and, under it, its forms (POST, checked like the
		// approval's: same-site, the session's CSRF token).
		r.Method(http.MethodGet, web.ConsolePath, pages)
		r.Method(http.MethodGet, web.ConsolePath+"/*", pages)
		r.Method(http.MethodPost, web.ConsolePath+"/*", pages)
	}

	bearer := bearerGuard(d)
	r.Group(func(r chi.Router) {
		r.Use(bearer)
		r.Handle("/mcp", d.MCP)
		r.Get("/contracts", listContracts(d.MCP))
		r.Get("/contracts/{name}", getContract(d.MCP))
	})
	if d.Admin != nil {
		adminRoutes(r, d, bearer)
	}
	return r
}

// bearerGuard is what guards every route a bearer token opens: the Host and Origin check, the
// body limit, the per-origin budget, the token, and the per-principal budget.
func bearerGuard(d Deps) func(http.Handler) http.Handler {
	mw := []func(http.Handler) http.Handler{guardOrigin(d.AllowedOrigins, d.AllowedHosts), limitBody(d.MaxBodyBytes)}
	// The origin limit runs before authentication, so that an origin over
	// its budget costs no token verification; its durable decision waits
	// for the principal's, so both take one store round trip.
	if d.Limits != nil {
		mw = append(mw, d.Limits.DeferOrigin)
	}
	mw = append(mw, d.Auth.Middleware, recordCaller)
	if d.Limits != nil {
		mw = append(mw, d.Limits.Principal(principalKey))
	}
	return chi.Chain(mw...).Handler
}

// MetricsRoutes is the whole surface of the metrics listener
// (COBRANCA_METRICS_ADDR), which is never the public one: GET /metrics,
// the Prometheus exposition of metrics. Like /healthz it answers whatever
// Host a scraper sends; it carries counts by tool, tier and outcome only,
// no identity, address or payload.
func MetricsRoutes(metrics http.Handler) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", metrics)
	return mux
}

// metadataPaths are where the metadata is served: both well-known paths
// MCP clients try, and the one RFC 9728 derives from the configured
// resource, if that is a third.
func metadataPaths(metadataURL string) []string {
	paths := []string{"/.well-known/oauth-protected-resource", "/.well-known/oauth-protected-resource/mcp"}
	if u, err := url.Parse(metadataURL); err == nil && !slices.Contains(paths, u.Path) {
		paths = append(paths, u.Path)
	}
	return paths
}

// recordCaller puts the authenticated subject and client on the access log
// line (never the token).
func recordCaller(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if p, ok := auth.PrincipalFrom(r.Context()); ok {
			info := request.From(r.Context())
			info.Subject, info.Client = p.Subject, p.ClientID
		}
		next.ServeHTTP(w, r)
	})
}

// principalKey names the caller for the per-principal budget.
func principalKey(r *http.Request) (string, bool) {
	p, ok := auth.PrincipalFrom(r.Context())
	if !ok {
		return "", false
	}
	return limits.PrincipalKey(p.Subject, p.ClientID), true
}

func healthz(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	_, _ = w.Write([]byte("ok\n"))
}

// readyz answers 200 when ready and 503 otherwise, saying only which check failed; the
// cause is logged.
func readyz(ready func(context.Context) error, log *slog.Logger) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		if ready != nil {
			ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
			defer cancel()
			if err := ready(ctx); err != nil {
				msg := "not ready: store unavailable\n"
				switch {
				case errors.Is(err, ErrDraining):
					msg = "not ready: shutting down\n"
				case errors.Is(err, store.ErrPendingMigrations):
					msg = "not ready: migrations pending\n"
				}
				if !errors.Is(err, ErrDraining) { // serve logged the shutdown once
					log.WarnContext(r.Context(), "not ready", "err", err)
				}
				w.WriteHeader(http.StatusServiceUnavailable)
				_, _ = w.Write([]byte(msg))
				return
			}
		}
		_, _ = w.Write([]byte("ready\n"))
	}
}

func listContracts(h *mcpapi.Handler) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		writeContracts(w, h.Contracts())
	}
}

// writeContracts answers a listing of contracts: {"contracts": [...]}.
func writeContracts(w http.ResponseWriter, cs []*contract.Contract) {
	writeJSON(w, http.StatusOK, map[string]any{"contracts": cs})
}

// codeNotFound answers a path or name the server does not have.
const codeNotFound failure.Code = "not_found"

func getContract(h *mcpapi.Handler) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		name := chi.URLParam(r, "name")
		i := slices.IndexFunc(h.Contracts(), func(c *contract.Contract) bool { return c.Name == name })
		if i < 0 {
			// The answer never repeats the path: what a caller sent is not
			// echoed back (issue 10), and an unknown name costs nothing to send.
			failure.WriteHTTP(w, http.StatusNotFound, &failure.Error{Code: codeNotFound, Message: "no tool by that name"})
			return
		}
		writeJSON(w, http.StatusOK, h.Contracts()[i])
	}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}

// requestInfo gives every request an id of its own — the id the audit log
// and error references use, so a caller can never choose it — and writes one
// access line when it ends. A sane client X-Request-Id is logged beside it
// for correlation.
func requestInfo(log *slog.Logger, tracing trace.TracerProvider) func(http.Handler) http.Handler {
	var tracer trace.Tracer
	if tracing != nil {
		tracer = tracing.Tracer(telemetry.ScopeName)
	}
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			start := time.Now()
			id := request.NewID()
			info := &request.Info{ID: id}
			w.Header().Set("X-Request-Id", id)
			sw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
			ctx := request.With(r.Context(), info)
			var span trace.Span
			if tracer != nil && !probe(r.URL.Path) {
				ctx, span = startServerSpan(ctx, tracer, r, id)
			}
			next.ServeHTTP(sw, r.WithContext(ctx))
			attrs := []slog.Attr{
				slog.String("request_id", id),
			}
			if span != nil {
				endServerSpan(span, r, sw.status, info)
				if sc := span.SpanContext(); sc.IsSampled() { // the line finds its trace
					attrs = append(attrs, slog.String("trace_id", sc.TraceID().String()))
				}
			}
			if client := r.Header.Get("X-Request-Id"); request.ValidID(client) {
				attrs = append(attrs, slog.String("client_request_id", client))
			}
			attrs = append(attrs,
				slog.String("method", r.Method),
				slog.String("path", r.URL.Path),
				slog.Int("status", sw.status),
				slog.Float64("duration_ms", float64(time.Since(start).Microseconds())/1000),
			)
			if info.Subject != "" {
				attrs = append(attrs, slog.String("subject", info.Subject), slog.String("client_id", info.Client))
			}
			if info.Tool != "" {
				attrs = append(attrs, slog.String("tool", info.Tool), slog.String("outcome", info.Outcome))
				if info.Code != "" {
					attrs = append(attrs, slog.String("code", info.Code))
				}
			}
			log.LogAttrs(r.Context(), slog.LevelInfo, "request", attrs...)
		})
	}
}

type statusWriter struct {
	http.ResponseWriter
	status int
	wrote  bool
}

func (s *statusWriter) WriteHeader(code int) {
	if !s.wrote {
		s.status, s.wrote = code, true
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusWriter) Write(b []byte) (int, error) {
	s.wrote = true
	return s.ResponseWriter.Write(b)
}

func (s *statusWriter) Flush() {
	if f, ok := s.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (s *statusWriter) Unwrap() http.ResponseWriter { return s.ResponseWriter }

// limitBody refuses a body whose declared length is over the limit with 413
// before anything reads it; bodies without a length are bounded where read.
func limitBody(max int64) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.ContentLength > max {
				http.Error(w, "request body exceeds "+strconv.FormatInt(max, 10)+" bytes", http.StatusRequestEntityTooLarge)
				return
			}
			next.ServeHTTP(w, r)
		})
	}
}

// guardOrigin is the DNS-rebinding protection: the Host header must name a
// loopback address or a configured host, and a browser's Origin must be a
// loopback origin or a configured one. Anything else gets 403.
func guardOrigin(origins, hosts []string) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if !hostAllowed(r.Host, hosts) {
				http.Error(w, "Forbidden: Host not allowed", http.StatusForbidden)
				return
			}
			if o := r.Header.Get("Origin"); o != "" && !originAllowed(o, origins) {
				http.Error(w, "Forbidden: Origin not allowed", http.StatusForbidden)
				return
			}
			next.ServeHTTP(w, r)
		})
	}
}

func hostAllowed(host string, allowed []string) bool {
	host = strings.ToLower(host)
	if slices.Contains(allowed, host) {
		return true
	}
	name := host
	if h, _, err := net.SplitHostPort(host); err == nil {
		name = h
	}
	name = strings.TrimSuffix(strings.TrimPrefix(name, "["), "]")
	if slices.Contains(allowed, name) {
		return true
	}
	return isLoopbackName(name)
}

func originAllowed(origin string, allowed []string) bool {
	if slices.Contains(allowed, origin) {
		return true
	}
	u, err := url.Parse(origin)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") {
		return false
	}
	return isLoopbackName(u.Hostname())
}

func isLoopbackName(name string) bool {
	if name == "localhost" {
		return true
	}
	ip := net.ParseIP(name)
	return ip != nil && ip.IsLoopback()
}
